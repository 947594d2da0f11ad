package shmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestVM copies this process's own memory, which cross-memory attach
// allows, both ways: a buffer longer than one call copies in pieces of
// maxVMCopy, each checked against the cookie; a copy whose destination
// lies a short distance after its source in their pages goes through the
// bounce buffer, in pieces of bounceSize (where the CPU has fast string
// moves); a cookie that is not the process's word is ErrNotPeer, and
// writes nothing; an address that is not mapped is the kernel's EFAULT.
// Both buffers begin at a page, so that the distances are the offsets'.
func TestVM(t *testing.T) {
	word, cookie := NewCookie()
	defer runtime.KeepAlive(word)
	const n = 2*maxVMCopy + maxVMCopy/2 + 3
	pattern := make([]byte, n)
	for i := range pattern {
		pattern[i] = byte(i*7 + i>>12)
	}
	tests := []struct {
		name   string
		cookie Cookie
		off    int // into the remote buffer; -1 for an unmapped address
		n      int
		want   error
	}{
		{"a few bytes", cookie, 5, 11, nil},
		{"in pieces", cookie, 0, n, nil},
		// A read into the local buffer's page offset 0 from 16 bytes
		// before the next page, and a write from it to remote offset 16:
		// the destination 16 bytes after the source, in pieces.
		{"16 bytes before a page", cookie, 4096 - 16, n - 4096, nil},
		{"16 bytes into a page", cookie, 16, n - 16, nil},
		{"another process's cookie", Cookie{Addr: cookie.Addr, Value: cookie.Value + 1}, 0, 4096, ErrNotPeer},
		{"nothing mapped", cookie, -1, 4096, syscall.EFAULT},
	}
	for _, write := range []bool{false, true} {
		for _, tc := range tests {
			name := "read/" + tc.name
			if write {
				name = "write/" + tc.name
			}
			t.Run(name, func(t *testing.T) {
				remote := pageAligned(n)
				local := pageAligned(tc.n)
				want := make([]byte, n) // remote as it must be after the copy
				if write {
					copy(local, pattern[:tc.n])
				} else {
					copy(remote, pattern)
					copy(want, pattern)
				}
				addr := uint64(8)
				if tc.off >= 0 {
					addr = uint64(uintptr(unsafe.Pointer(&remote[0]))) + uint64(tc.off)
				}
				var v VM
				var err error
				if write {
					err = v.Write(os.Getpid(), tc.cookie, addr, local)
				} else {
					err = v.Read(os.Getpid(), tc.cookie, addr, local)
				}
				runtime.KeepAlive(remote)
				if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
					t.Skipf("cross-memory attach is not allowed here: %v", err)
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				switch {
				case tc.want != nil:
					if write && !bytes.Equal(remote, want) {
						t.Fatal("a failed write changed the remote buffer")
					}
				case write:
					copy(want[tc.off:], local)
					if !bytes.Equal(remote, want) {
						t.Fatalf("the remote buffer differs from what was written at byte %d", tc.off)
					}
				case !bytes.Equal(local, pattern[tc.off:tc.off+tc.n]):
					t.Fatalf("read bytes differ from the remote buffer's from byte %d", tc.off)
				}
			})
		}
	}
}

// pageAligned returns n bytes that begin at a page.
func pageAligned(n int) []byte {
	b := make([]byte, n+4096)
	at := -int(uintptr(unsafe.Pointer(&b[0]))) & 4095
	return b[at : at+n : at+n]
}

// TestVMWriteChecksCookiesOnceFresh: a write trusts a cookie found in
// the process within cookieFresh, and checks it again after that: here
// the word changes after a read found it, as if another process had
// taken the PID, and a write fails with ErrNotPeer once the read is
// cookieFresh old, writing nothing.
func TestVMWriteChecksCookiesOnceFresh(t *testing.T) {
	word, cookie := NewCookie()
	defer runtime.KeepAlive(word)
	var clock time.Duration
	v := VM{clock: func() time.Duration { return clock }}
	remote := make([]byte, 64)
	addr := uint64(uintptr(unsafe.Pointer(&remote[0])))
	if err := v.Read(os.Getpid(), cookie, addr, make([]byte, 8)); err != nil {
		t.Skipf("cross-memory attach is not allowed here: %v", err)
	}
	*word++
	tests := []struct {
		name  string
		after time.Duration // since the read
		want  error
	}{
		{"fresh", cookieFresh - 1, nil},
		{"stale", cookieFresh, ErrNotPeer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock = tc.after
			clear(remote)
			err := v.Write(os.Getpid(), cookie, addr, []byte{1, 2, 3})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			wrote := remote[0] == 1
			if wrote != (tc.want == nil) {
				t.Fatalf("the write wrote %v, want %v", wrote, tc.want == nil)
			}
		})
	}
	runtime.KeepAlive(remote)
}

// TestVMKnowsEveryPeersCookie: a VM that copies with many processes, as
// a segment's with every other rank, keeps each one's cookie fresh for
// cookieFresh, however many there are, and a PID that shows another
// cookie (another process took it) is not fresh for the old one.
func TestVMKnowsEveryPeersCookie(t *testing.T) {
	var clock time.Duration
	v := VM{clock: func() time.Duration { return clock }}
	const peers = 16
	cookie := func(pid int) Cookie { return Cookie{Addr: 0x1000, Value: uint64(pid) * 7} }
	for pid := 1; pid <= peers; pid++ {
		v.found(pid, cookie(pid))
	}
	for pid := 1; pid <= peers; pid++ {
		if !v.fresh(pid, cookie(pid)) {
			t.Fatalf("process %d's cookie is not fresh after %d others were found", pid, peers-1)
		}
	}
	reused := Cookie{Addr: 0x2000, Value: 99}
	v.found(3, reused)
	if v.fresh(3, cookie(3)) || !v.fresh(3, reused) {
		t.Fatal("a PID's new cookie did not replace its old one")
	}
	if len(v.seen) != peers {
		t.Fatalf("%d cookies kept for %d processes", len(v.seen), peers)
	}
	clock = cookieFresh
	if v.fresh(1, cookie(1)) {
		t.Fatal("a cookie stays fresh past cookieFresh")
	}
}

// BenchmarkVM copies 1 MiB of this process's memory into another buffer
// of it, both ways, with the destination at its source's offset in a
// page and 16 bytes after it, where the kernel's string moves are slow
// on AMD's Zen 3 and Zen 4 and the copy goes through the bounce buffer.
func BenchmarkVM(b *testing.B) {
	word, cookie := NewCookie()
	defer runtime.KeepAlive(word)
	const n = 1 << 20
	remote, local := pageAligned(n+4096), pageAligned(n+4096)
	for _, distance := range []int{0, 16} {
		for _, write := range []bool{false, true} {
			name := fmt.Sprintf("distance%d/read", distance)
			src, dst := remote[:n], local[distance:][:n]
			if write {
				name = fmt.Sprintf("distance%d/write", distance)
				src, dst = local[:n], remote[distance:][:n]
			}
			b.Run(name, func(b *testing.B) {
				var v VM
				b.SetBytes(n)
				for b.Loop() {
					var err error
					if write {
						err = v.Write(os.Getpid(), cookie, uint64(addrOf(dst)), src)
					} else {
						err = v.Read(os.Getpid(), cookie, uint64(addrOf(src)), dst)
					}
					if err != nil {
						b.Skipf("cross-memory attach is not allowed here: %v", err)
					}
				}
			})
		}
	}
	runtime.KeepAlive(remote)
	runtime.KeepAlive(local)
}

// TestFirstReachOf: the cost of a first reach is what a first read took
// more than a warm one, a 4 KiB page, where it took more than twice as
// long; less is what every host's caches cost, and counts as nothing.
func TestFirstReachOf(t *testing.T) {
	tests := []struct {
		name        string
		first, warm time.Duration
		pages       int
		want        time.Duration
	}{
		{"a shadowing hypervisor", 145 * time.Microsecond, 9 * time.Microsecond, 16, 8500 * time.Nanosecond},
		{"alike", 10 * time.Microsecond, 9 * time.Microsecond, 16, 0},
		{"twice as long", 18 * time.Microsecond, 9 * time.Microsecond, 16, 0},
		{"a first read faster than the others", 5 * time.Microsecond, 9 * time.Microsecond, 16, 0},
		{"just over twice", 25 * time.Microsecond, 9 * time.Microsecond, 16, time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstReachOf(tc.first, tc.warm, tc.pages); got != tc.want {
				t.Errorf("firstReachOf(%v, %v, %d) = %v, want %v", tc.first, tc.warm, tc.pages, got, tc.want)
			}
		})
	}
}

// TestFirstReach measures this host once a process, on small pages and
// on huge ones: the same answer every time, and never negative. It logs
// the answers and what the measures took.
func TestFirstReach(t *testing.T) {
	for _, tt := range []struct {
		name    string
		measure func() time.Duration
	}{
		{"small pages", FirstReach},
		{"huge pages", FirstReachHuge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			first := tt.measure()
			took := time.Since(start)
			if first < 0 {
				t.Fatalf("first reach %v", first)
			}
			if again := tt.measure(); again != first {
				t.Errorf("first reach %v, then %v", first, again)
			}
			t.Logf("first reach %v a 4 KiB page here, measured in %v", first, took)
		})
	}
}
