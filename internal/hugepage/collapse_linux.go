package hugepage

import (
	"bytes"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// collapseRegions has the kernel put the n bytes at addr, whole regions,
// on huge pages. The regions hold memory beyond the buffer, which no Go
// slice may span, so the call takes the addresses as they are.
func collapseRegions(addr, n uintptr) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, n, unix.MADV_COLLAPSE); errno != 0 {
		return errno
	}
	return nil
}

// Available reports whether the host lets a process have huge pages:
// its transparent huge pages are not "never" (an administrator's choice,
// which MADV_COLLAPSE would otherwise override). It reads the setting
// once.
func Available() bool {
	availableOnce.Do(func() {
		mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
		available = err == nil && allows(mode)
	})
	return available
}

// allows reports whether a setting of transparent_hugepage/enabled,
// which brackets the mode in force ("always [madvise] never"), lets a
// process have huge pages.
func allows(mode []byte) bool { return !bytes.Contains(mode, []byte("[never]")) }

var (
	availableOnce sync.Once
	available     bool
)
