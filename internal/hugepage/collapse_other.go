//go:build !linux

package hugepage

// collapseRegions is never called: see Available.
func collapseRegions(addr, n uintptr) error { return nil }

// Available is false: transparent huge pages are a Linux feature.
func Available() bool { return false }
