/*
Package wire is the frame format of gocoll's messages: the fixed-size
header in front of every message, the call record that every frame of a
collective carries, and the table of which algorithms run which
collective. It is internal: users see none of it; the engine
(internal/core), package collective and the transports use it.

# The frame header

Every message starts with a 64-byte [Header], all fields little-endian at
fixed offsets:

	offset  size  field
	     0     2  magic "GC"
	     2     1  version (HeaderVersion)
	     3     1  flags
	     4     1  kind of operation
	     5     1  element type
	     6     1  codec of the payload
	     7     1  reduction op
	     8     8  communicator id
	    16     8  collective sequence number
	    24     8  tag
	    32     8  element count of the whole operation
	    40     8  payload length in bytes
	    48     4  root rank, -1 for none
	    52     1  algorithm of the collective
	    53     3  reserved, zero
	    56     8  element offset of this payload

[Header.MarshalTo] writes one and [Header.Unmarshal] reads and validates
one. Validation makes the fields safe to act on: known enum values, a
payload length within [MaxPayload] and within the operation's element
count, flags, op, root, sequence number and algorithm consistent with the
kind. A peer that sends a header failing it is broken or hostile: the
error wraps [ErrBadHeader], and the link it came on must be closed.

# Calls

The kind, element type, op, element count, root and [Algorithm] of a
header together are the [Call] it belongs to ([Header.Call]): what every
rank of a communicator must agree on for one collective operation. Since
every frame carries its call, a receiver can tell a peer that called
something else from one that is merely late, and say what each called
([Call.String]: "Allreduce(10 × float32, sum) with ring").
*/
package wire
