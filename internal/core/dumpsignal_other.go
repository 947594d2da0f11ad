//go:build !unix

package core

import "os"

// dumpSignal is nil where there is no SIGUSR1: a rank then dumps its
// flight recorder when its job fails and when the program calls
// FlightDump, not on a signal.
var dumpSignal os.Signal
