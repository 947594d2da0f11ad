// Package cputime tells the CPU time a process has used, for the
// benchmarks that report it beside their wall time.
package cputime

import "time"

// Process is the CPU time this process has used, user and system, in
// all its threads: a call's own goroutine, and the links' readers and the
// runtime that work for it. A rank that spins while it waits spends CPU
// time that its wall time does not show. It is 0 where the system does
// not say.
//
// Reading it is a system call, and the part of that call on either side
// of the moment it reads falls between two readings: on the project's
// hosts, 1-1.5 µs of CPU time between two readings with nothing between
// them. What brackets a short call must take that off (Bracket).
func Process() time.Duration { return process() }

// Bracket is the CPU time that n pairs of back-to-back readings of read
// add up to, per pair: what reading the CPU time before and after a call
// adds to the call's own. A caller that brackets many calls subtracts it
// from their mean.
func Bracket(read func() time.Duration, n int) time.Duration {
	if n <= 0 {
		return 0
	}
	var sum time.Duration
	for range n {
		a := read()
		sum += read() - a
	}
	return sum / time.Duration(n)
}
