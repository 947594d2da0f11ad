//go:build unix

package core

import (
	"os"
	"syscall"
)

// dumpSignal is the signal that makes a rank dump its flight recorder
// (dumpOnSignal).
var dumpSignal os.Signal = syscall.SIGUSR1
