package shmem

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// TestVMReaderRead reads this process's own memory, which
// process_vm_readv allows: a buffer longer than one call reads in pieces
// of maxVMRead, each checked against the cookie; a cookie that is not the
// process's word is ErrNotPeer, and an address that is not mapped the
// kernel's EFAULT.
func TestVMReaderRead(t *testing.T) {
	word, cookie := NewCookie()
	defer runtime.KeepAlive(word)
	src := make([]byte, 2*maxVMRead+maxVMRead/2+3)
	for i := range src {
		src[i] = byte(i*7 + i>>12)
	}
	addr := uint64(uintptr(unsafe.Pointer(&src[0])))
	tests := []struct {
		name   string
		cookie Cookie
		addr   uint64
		n      int
		want   error
	}{
		{"a few bytes", cookie, addr + 5, 11, nil},
		{"in pieces", cookie, addr, len(src), nil},
		{"another process's cookie", Cookie{Addr: cookie.Addr, Value: cookie.Value + 1}, addr, 4096, ErrNotPeer},
		{"nothing mapped", cookie, 8, 4096, syscall.EFAULT},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r VMReader
			dst := make([]byte, tc.n)
			err := r.Read(os.Getpid(), tc.cookie, tc.addr, dst)
			if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
				t.Skipf("process_vm_readv is not allowed here: %v", err)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Read = %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				return
			}
			off := int(tc.addr - addr)
			for i, b := range dst {
				if b != src[off+i] {
					t.Fatalf("byte %d is %d, want %d", i, b, src[off+i])
				}
			}
		})
	}
	runtime.KeepAlive(src)
}
