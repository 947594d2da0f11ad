// Package ratelog bounds how often one kind of log line is written. A job
// under attack (thousands of strangers knocking, each refused) must not
// drown its log or spend its time writing it: a burst of lines of one
// kind goes out at once, then at most one per Interval, and the next line
// that goes out after some were left out says how many.
package ratelog

import (
	"log/slog"
	"sync"
	"time"
)

const (
	// Burst is how many lines of one kind go out before any is left out.
	Burst = 10
	// Interval is the time in which one more line of a kind is allowed
	// once the burst is spent.
	Interval = time.Second
)

// Logger writes warnings through a slog.Logger, each kind (message text)
// limited by a token bucket of Burst lines refilled at one per Interval.
// Its methods are safe for concurrent use.
type Logger struct {
	log *slog.Logger
	now func() time.Time // time.Now; tests set it

	mu    sync.Mutex
	kinds map[string]*kind
}

type kind struct {
	tokens     float64   // lines that may go out now
	at         time.Time // when tokens was last brought up to date
	suppressed int       // lines left out since the last that went out
}

// New returns a Logger that writes to log.
func New(log *slog.Logger) *Logger {
	return &Logger{log: log, now: time.Now, kinds: make(map[string]*kind)}
}

// Warn writes msg with args at warning level unless lines with the same
// msg have spent their allowance; then it only counts it. A line written
// after some were left out carries their number as "suppressed".
func (l *Logger) Warn(msg string, args ...any) {
	l.mu.Lock()
	now := l.now()
	k := l.kinds[msg]
	if k == nil {
		k = &kind{tokens: Burst, at: now}
		l.kinds[msg] = k
	}
	k.tokens = min(Burst, k.tokens+float64(now.Sub(k.at))/float64(Interval))
	k.at = now
	if k.tokens < 1 {
		k.suppressed++
		l.mu.Unlock()
		return
	}
	k.tokens--
	n := k.suppressed
	k.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	l.log.Warn(msg, args...)
}
