package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWarnIsRateLimited(t *testing.T) {
	type call struct {
		at  time.Duration // from the start
		msg string
	}
	burst := func(msg string, n int, at time.Duration) []call {
		var cs []call
		for i := range n {
			cs = append(cs, call{at + time.Duration(i), msg})
		}
		return cs
	}
	repeat := func(s string, n int) []string {
		var out []string
		for range n {
			out = append(out, s)
		}
		return out
	}
	tests := []struct {
		name  string
		calls []call
		want  []string // the lines written, in order, as "msg suppressed=n"
	}{
		{name: "one", calls: burst("a", 1, 0), want: []string{"a"}},
		{name: "burst passes", calls: burst("a", Burst, 0), want: repeat("a", Burst)},
		{name: "beyond the burst is counted", calls: append(burst("a", Burst+5, 0), call{Interval + Burst + 5, "a"}),
			want: append(repeat("a", Burst), "a suppressed=5")},
		{name: "kinds apart", calls: append(burst("a", Burst+1, 0), call{Burst + 1, "b"}),
			want: append(repeat("a", Burst), "b")},
		{name: "refills", calls: append(burst("a", Burst, 0), burst("a", Burst, 20*Interval)...),
			want: repeat("a", 2*Burst)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
						return slog.Attr{}
					}
					return a
				}})))
			start := time.Unix(1000, 0)
			for _, c := range tt.calls {
				l.now = func() time.Time { return start.Add(c.at) }
				l.Warn(c.msg)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				got = append(got, strings.TrimPrefix(line, "msg="))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
