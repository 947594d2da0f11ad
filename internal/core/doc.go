// Package core is the engine behind package comm: the endpoint of each
// rank (links, matching, early messages, failure detection), the
// operations of a communicator and their mismatch checks, the shared
// segments and hierarchies of communicators, and Init and NewLocal.
//
// Package comm shows users the communicator, its options and its errors;
// package collective reaches the rest of the engine through this package
// (SendHeader, RecvHeader, StartCall, EnterCall, Segment, Hierarchy and
// the like). comm.Comm is a defined type over Comm, so the two convert
// into each other at no cost: (*core.Comm)(c).
//
// The user documentation of what comm exports (Init, the options, the
// errors, Send and Recv) lives in package comm.
package core
