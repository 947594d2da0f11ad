package core

import (
	"errors"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/gocoll/gocoll/internal/failreport"
)

// launcherPipe is the report pipe gocoll run handed this process, or nil.
// It is opened once and kept for the life of the process: an *os.File
// that the garbage collector finalized would close the descriptor, which
// the next file opened might then get.
var launcherPipe = sync.OnceValue(func() *os.File {
	fd, err := strconv.Atoi(os.Getenv(failreport.EnvFD))
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), "gocoll-report")
})

// reportTo returns where Init's endpoint reports its failure: the
// launcher's pipe when env names one.
func reportTo(env func(string) (string, bool)) io.Writer {
	if _, ok := env(failreport.EnvFD); !ok {
		return nil
	}
	if f := launcherPipe(); f != nil {
		return f
	}
	return nil
}

// report tells the launcher whom failure blames, if it blames anyone and
// the launcher listens (see package failreport). A write error is of no
// consequence: the launcher hears the exit status anyway.
func report(w io.Writer, failure error) {
	if w == nil {
		return
	}
	var r failreport.Report
	var pe *PeerError
	var ae *AbortError
	switch {
	case errors.As(failure, &ae):
		r = failreport.Report{Kind: failreport.Aborted, Ranks: []int{ae.Rank}, Reason: ae.Reason}
	case errors.As(failure, &pe):
		r = failreport.Report{Kind: failreport.Lost, Ranks: pe.Ranks, Reason: pe.Err.Error()}
		if len(r.Ranks) == 0 {
			r.Ranks = []int{pe.Rank}
		}
	default:
		return
	}
	_, _ = w.Write(r.Line())
}
