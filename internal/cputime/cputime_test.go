package cputime

import (
	"testing"
	"time"
)

// fakeClock is a CPU-time clock whose every reading costs step: what
// one reading adds to the next one's figure.
type fakeClock struct{ now, step time.Duration }

func (c *fakeClock) read() time.Duration {
	c.now += c.step
	return c.now
}

func TestBracket(t *testing.T) {
	tests := []struct {
		name string
		step time.Duration
		n    int
		want time.Duration
	}{
		{"a reading's cost", 700 * time.Nanosecond, 100, 700 * time.Nanosecond},
		{"free readings", 0, 10, 0},
		{"no pairs", time.Microsecond, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeClock{step: tc.step}
			if got := Bracket(c.read, tc.n); got != tc.want {
				t.Errorf("Bracket = %v, want %v", got, tc.want)
			}
		})
	}
}
