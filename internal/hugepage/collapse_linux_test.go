package hugepage

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/internal/testutil"
)

// regions maps n huge pages' worth of anonymous memory at an aligned
// address, with advice applied first (0 for none), and fills it with a
// pattern of its byte offsets.
func regions(t *testing.T, n int, advice int) []byte {
	t.Helper()
	raw, err := unix.Mmap(-1, 0, (n+1)*Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(raw) })
	skip := (Size - int(uintptr(unsafe.Pointer(&raw[0]))%Size)) % Size
	mem := raw[skip : skip+n*Size]
	if advice != 0 {
		if err := unix.Madvise(mem, advice); err != nil {
			t.Fatal(err)
		}
	}
	for i := range mem {
		mem[i] = byte(i * 7 >> 12)
	}
	return mem
}

// checkPattern fails unless mem still holds what regions wrote, but
// where written says a byte was rewritten.
func checkPattern(t *testing.T, mem []byte, written func(i int) (byte, bool)) {
	t.Helper()
	for i, v := range mem {
		want := byte(i * 7 >> 12)
		if w, ok := written(i); ok {
			want = w
		}
		if v != want {
			t.Fatalf("byte %d is %d after the collapse, want %d", i, v, want)
		}
	}
}

// TestAvailableFollowsTheHost: a host set to never gives no huge pages,
// and a Collapser then does not ask; always and madvise do.
func TestAvailableFollowsTheHost(t *testing.T) {
	for _, tt := range []struct {
		mode string
		want bool
	}{
		{"[always] madvise never\n", true},
		{"always [madvise] never\n", true},
		{"always madvise [never]\n", false},
	} {
		if got := allows([]byte(tt.mode)); got != tt.want {
			t.Errorf("allows(%q) = %v, want %v", tt.mode, got, tt.want)
		}
	}
}

// needHugePages skips a test where the host gives no huge pages, saying
// why.
func needHugePages(t *testing.T) {
	t.Helper()
	if !Available() {
		t.Skip("this host's transparent huge pages are set to never (/sys/kernel/mm/transparent_hugepage/enabled)")
	}
}

// TestCollapseBacksABufferWithHugePages collapses the region around a
// buffer that comes back, and leaves every byte of the region as it was.
func TestCollapseBacksABufferWithHugePages(t *testing.T) {
	needHugePages(t)
	mem := regions(t, 2, 0)
	buf := mem[Size/4 : Size/4+Size/2] // inside the first region
	if kib := testutil.AnonHugeKiB(t, unsafe.Pointer(&mem[0])); kib != 0 {
		t.Fatalf("%d KiB on huge pages before any collapse", kib)
	}
	var c Collapser
	for use := 1; use <= 2; use++ {
		asked, err := c.Use(buf)
		if errors.Is(err, unix.EINVAL) {
			t.Skipf("the kernel refuses MADV_COLLAPSE of written anonymous memory (%v): Linux before 6.1?", err)
		}
		if err != nil || asked != (use == 2) {
			t.Fatalf("use %d: asked %v, %v", use, asked, err)
		}
	}
	if kib := testutil.AnonHugeKiB(t, unsafe.Pointer(&mem[0])); kib != Size>>10 {
		t.Fatalf("%d KiB of the buffer's mapping on huge pages, want the region around it, %d", kib, Size>>10)
	}
	checkPattern(t, mem, func(int) (byte, bool) { return 0, false })
}

// TestCollapseKeepsWhatOthersWriteMeanwhile writes into the region, away
// from the buffer, while it is collapsed: as Go's heap puts other objects
// beside a buffer, which other goroutines may be writing.
func TestCollapseKeepsWhatOthersWriteMeanwhile(t *testing.T) {
	needHugePages(t)
	mem := regions(t, 1, 0)
	buf := mem[Size/2 : Size/2+Min]
	var c Collapser
	c.Use(buf)
	var stop atomic.Bool
	var wg sync.WaitGroup
	lastRound := make([]int, 4)
	for w := range lastRound {
		wg.Go(func() {
			// Writer w rewrites every 4096th byte from w*4096+17 on,
			// its round number in each, until told to stop.
			for round := 1; !stop.Load() || round < 3; round++ {
				for i := w*4096 + 17; i < Size/2; i += len(lastRound) * 4096 {
					mem[i] = byte(round)
				}
				lastRound[w] = round
			}
		})
	}
	_, err := c.Use(buf)
	stop.Store(true)
	wg.Wait()
	if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINVAL) {
		t.Fatal(err)
	}
	checkPattern(t, mem, func(i int) (byte, bool) {
		if i >= Size/2 || i%4096 != 17 {
			return 0, false
		}
		return byte(lastRound[i/4096%len(lastRound)]), true
	})
}

// TestCollapseLeavesMemoryMarkedNoHugePage: the kernel refuses, and the
// memory stays on small pages.
func TestCollapseLeavesMemoryMarkedNoHugePage(t *testing.T) {
	needHugePages(t)
	mem := regions(t, 1, unix.MADV_NOHUGEPAGE)
	var c Collapser
	c.Use(mem)
	if asked, err := c.Use(mem); !asked || err == nil {
		t.Fatalf("asked %v, %v; want the kernel asked and refusing", asked, err)
	}
	if kib := testutil.AnonHugeKiB(t, unsafe.Pointer(&mem[0])); kib != 0 {
		t.Fatalf("%d KiB on huge pages, want none", kib)
	}
	checkPattern(t, mem, func(int) (byte, bool) { return 0, false })
}
