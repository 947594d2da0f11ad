//go:build linux

package shm_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

// TestMain fails the package if its tests leave anything in /dev/shm:
// regions must never have a name there, whatever happens to their
// processes.
func TestMain(m *testing.M) {
	before, err := shmFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	after, err := shmFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, f := range after {
		if !slices.Contains(before, f) {
			fmt.Fprintf(os.Stderr, "the tests left /dev/shm/%s behind\n", f)
			code = 1
		}
	}
	os.Exit(code)
}

func shmFiles() ([]string, error) {
	entries, err := os.ReadDir("/dev/shm")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}
