package core

import "github.com/gocoll/gocoll/internal/tuning"

// Tuning is the tuning table loaded by WithTuning or GOCOLL_TUNING, or
// nil. Communicators split from c share it.
func (c *Comm) Tuning() *tuning.Table { return c.ep.opts.tuning }

// Transport is the transport the communicator was made with, as
// WithTransport names it: auto, tcp, shm or mem. Tuning tables are keyed
// by it.
func (c *Comm) Transport() string { return c.ep.opts.transport }
