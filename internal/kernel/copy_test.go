package kernel

import (
	"testing"

	"github.com/gocoll/gocoll/internal/testutil"
)

// TestCopyAround: every length, around the 128-byte passes and the
// 4 KiB below which it copies through the caches, and every alignment of
// dst to 32 bytes: the copy is copy's, and nothing beyond dst changes.
func TestCopyAround(t *testing.T) {
	testutil.CheckCopies(t, CopyAround, []int{0, 1, 127, 128, 4095, 4096, 4097, 4096 + 127, 65536 + 37, 1<<20 + 5}, []int{0, 1, 3, 31})
}
