package collective

import (
	"context"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gocoll/gocoll/comm"
	"github.com/gocoll/gocoll/internal/core"
	"github.com/gocoll/gocoll/internal/hugepage"
	"github.com/gocoll/gocoll/internal/testutil"
)

// TestHugePagesForSingleCopies: a rank asks for the aligned regions
// around its buffer of a call that may copy once to go on huge pages,
// once, at the buffer's second call; not where single copies are off,
// nor where huge pages are, nor for a buffer below hugepage.Min, nor for
// registered memory. The kernel is not asked: a hook records what would
// have been.
func TestHugePagesForSingleCopies(t *testing.T) {
	const calls = 3
	tests := []struct {
		name       string
		opts       []comm.Option
		elems      int
		registered bool
		asked      bool
	}{
		{"cma", []comm.Option{comm.WithSingleCopy(core.SingleCopyCMA)}, hugepage.Min / 4, false, true},
		{"auto", []comm.Option{comm.WithSingleCopy(core.SingleCopyAuto)}, 1 << 18, false, true},
		{"single copies off", []comm.Option{comm.WithSingleCopy(core.SingleCopyNone)}, 1 << 18, false, false},
		{"huge pages off", []comm.Option{comm.WithSingleCopy(core.SingleCopyCMA), comm.WithHugePages(false)}, 1 << 18, false, false},
		{"below Min", []comm.Option{comm.WithSingleCopy(core.SingleCopyCMA)}, hugepage.Min/4 - 1, false, false},
		{"registered", []comm.Option{comm.WithSingleCopy(core.SingleCopyCMA)}, 1 << 18, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 2
			var mu sync.Mutex
			asked := make([][][2]uintptr, n)
			hook := core.WithHugePageCollapse(func(rank int, addr, size uintptr) error {
				mu.Lock()
				defer mu.Unlock()
				asked[rank] = append(asked[rank], [2]uintptr{addr, size})
				return nil
			})
			cs := shmJob(t, n, append(tt.opts, comm.Option(hook))...)
			// Where ranks outnumber CPUs, auto lets Bcasts go through the
			// slots only (core's singlePolicy).
			require.False(t, (*core.Comm)(cs[0]).Segment().Crowded(), "two ranks of this process")
			bufs := make([][]float32, n)
			for r := range bufs {
				if tt.registered {
					b, err := Alloc[float32](tt.elems)
					require.NoError(t, err)
					t.Cleanup(func() { Free(b) })
					bufs[r] = b
				} else {
					bufs[r] = make([]float32, tt.elems)
				}
				for i := range bufs[r] {
					bufs[r][i] = float32(r*7 + i%1000)
				}
			}
			want := append([]float32(nil), bufs[0]...)
			for call := 1; call <= calls; call++ {
				allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
					return Bcast(ctx, c, bufs[c.Rank()], 0)
				})
				for r := range bufs {
					require.Equal(t, want, bufs[r], "rank %d's buffer after call %d", r, call)
				}
			}
			for r := range n {
				if !tt.asked {
					require.Empty(t, asked[r], "rank %d", r)
					continue
				}
				require.Equal(t, [][2]uintptr{regions(bufs[r])}, asked[r], "rank %d", r)
			}
		})
	}
}

// regions is where the aligned huge-page regions around b begin, and
// their length.
func regions[T any](b []T) [2]uintptr {
	start, n := hugepage.Around(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b))*unsafe.Sizeof(b[0]))
	return [2]uintptr{start, n}
}

// TestSingleCopyBuffersEndOnHugePages: with the kernel asked for real,
// the buffers of two ranks' single copies are on huge pages after their
// second call, every result right. Each buffer lies in an anonymous
// mapping of its own, so that /proc/self/smaps tells of it alone.
func TestSingleCopyBuffersEndOnHugePages(t *testing.T) {
	if !hugepage.Available() {
		t.Skip("this host's transparent huge pages are set to never (/sys/kernel/mm/transparent_hugepage/enabled)")
	}
	const n, elems = 2, 1 << 18 // 1 MiB of float32
	cs := shmJob(t, n, comm.WithSingleCopy(core.SingleCopyCMA))
	bufs := make([][]float32, n)
	for r := range bufs {
		raw, err := unix.Mmap(-1, 0, 3*hugepage.Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Munmap(raw) })
		skip := (hugepage.Size - int(uintptr(unsafe.Pointer(&raw[0])))%hugepage.Size) % hugepage.Size
		bufs[r] = unsafe.Slice((*float32)(unsafe.Pointer(&raw[skip+hugepage.Size/4])), elems)
		for i := range bufs[r] {
			bufs[r][i] = float32(r*3 + i%977)
		}
	}
	want := append([]float32(nil), bufs[0]...)
	for range 3 {
		allOK(t, cs, func(ctx context.Context, c *comm.Comm) error {
			return Bcast(ctx, c, bufs[c.Rank()], 0)
		})
	}
	for r := range n {
		require.Equal(t, want, bufs[r], "rank %d's buffer", r)
		require.GreaterOrEqual(t, testutil.AnonHugeKiB(t, unsafe.Pointer(unsafe.SliceData(bufs[r]))), hugepage.Size>>10, "rank %d's buffer on huge pages", r)
	}
}
