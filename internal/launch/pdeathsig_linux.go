package launch

import "syscall"

// dieWithParent has the kernel kill the rank when the thread that started
// it exits: with the launcher, however the launcher ends.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
