//go:build !linux

package launch

import "syscall"

// dieWithParent does nothing where there is no parent-death signal: there
// a launcher killed with SIGKILL leaves its ranks running until they fail
// to reach each other or finish.
func dieWithParent(*syscall.SysProcAttr) {}
