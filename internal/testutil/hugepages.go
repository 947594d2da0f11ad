package testutil

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// AnonHugeKiB is what /proc/self/smaps says of the mapping that holds
// the memory at p: how many of its kibibytes are on transparent huge
// pages. Give the memory a mapping of its own for the answer to be its
// alone.
func AnonHugeKiB(t testing.TB, p unsafe.Pointer) int {
	t.Helper()
	addr := uint64(uintptr(p))
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for line := range strings.Lines(string(smaps)) {
		var lo, hi uint64
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if kib := 0; in && strings.HasPrefix(line, "AnonHugePages:") {
			fmt.Sscanf(strings.TrimPrefix(line, "AnonHugePages:"), "%d", &kib)
			return kib
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return 0
}
