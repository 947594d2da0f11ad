// Package linkerr holds the errors that every link implementation returns
// alike, so that tcp and mem links cannot be told apart by their errors.
package linkerr

import (
	"fmt"
	"net"
)

// Interrupted is the error of a write (WriteMessage, WriteParts) whose
// context ended while the message was partly sent. The link has been
// closed: a half-sent message cannot be taken back. It wraps both the
// context's error and net.ErrClosed.
type Interrupted struct {
	Net   string // "tcp", "mem"
	Cause error  // the context's error
	Sent  int64  // bytes of the message (header included) that went out
	Total int64  // bytes of the whole message
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("%s: write interrupted after %d of %d bytes (%v); link closed", e.Net, e.Sent, e.Total, e.Cause)
}

// Unwrap returns the context's error and net.ErrClosed.
func (e *Interrupted) Unwrap() []error { return []error{e.Cause, net.ErrClosed} }

// Overrun is the error of a ReadPayload that asks for more bytes than the
// current message has left. Nothing was read.
func Overrun(netw string, want int, remain uint64) error {
	return fmt.Errorf("%s: ReadPayload of %d bytes, but only %d bytes of payload remain", netw, want, remain)
}

// LengthMismatch is the error of a write whose payload, whole or in
// parts, does not have the length its header announces. Nothing was
// sent.
func LengthMismatch(netw string, payload int, length uint64) error {
	return fmt.Errorf("%s: write: payload of %d bytes, header says %d", netw, payload, length)
}
