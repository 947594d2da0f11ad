package shmem

import "time"

// A Parker is what a waiter that parks (Waiter.SetPark) waits on and a
// knock (Bell.Knock) wakes it with: a channel that holds one wake-up, so
// that a knock that came before the park ends it at once, and the park's
// timer. A Parker belongs to one waiting goroutine at a time; Wake may
// be called from any.
type Parker struct {
	c chan struct{}
	t *time.Timer
}

// NewParker returns a Parker with no wake-up pending.
func NewParker() *Parker {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Parker{c: make(chan struct{}, 1), t: t}
}

// Park waits for a Wake, for d at most.
func (p *Parker) Park(d time.Duration) {
	p.t.Reset(d)
	select {
	case <-p.c:
	case <-p.t.C:
	}
	p.t.Stop()
}

// Wake ends the current park, or else the next one.
func (p *Parker) Wake() {
	select {
	case p.c <- struct{}{}:
	default:
	}
}
