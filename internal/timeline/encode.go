package timeline

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// formatName and formatVersion mark a rank's file in its otherData, so
// that Merge tells a rank trace from any other JSON.
const (
	formatName    = "gocoll timeline"
	formatVersion = 1
	mergedName    = "gocoll timeline merged"
)

// pidOf and tidOf are the trace's process and thread ids of a rank and a
// lane. They start at 1, not 0: Perfetto takes pid 0 and tid 0 for the
// kernel's idle task ("swapper") and files their events apart from the
// process that names them. The names carry the rank and the lane.
func pidOf(rank int) int { return rank + 1 }
func tidOf(lane int) int { return lane + 1 }

// appendHeader appends the start of a rank's file: the keys Perfetto
// reads before the events (it reads displayTimeUnit only in the first
// chunk, and stops at a key it does not know), the clock's start in
// otherData, the opening of traceEvents and the rank's process and first
// thread names, one event per line.
func appendHeader(b []byte, rank, size int, start time.Time) []byte {
	b = append(b, `{"displayTimeUnit":"ns","otherData":{"format":"`+formatName+`","version":`...)
	b = strconv.AppendInt(b, formatVersion, 10)
	b = append(b, `,"rank":`...)
	b = strconv.AppendInt(b, int64(rank), 10)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = appendClock(b, start)
	b = append(b, `},"traceEvents":[`...)
	pid := pidOf(rank)
	first := len(b)
	b = appendMeta(b, pid, tidOf(0), "process_name", "name", "rank "+strconv.Itoa(rank))
	b = append(b[:first], b[first+1:]...) // no comma before the first event
	b = appendSortIndex(b, pid, rank)
	b = appendThreadName(b, pid, 0)
	return b
}

// appendClock appends the otherData keys of a wall-clock start: in
// nanoseconds since 1970 as a string, which JavaScript readers do not
// round, and in RFC 3339 for people.
func appendClock(b []byte, start time.Time) []byte {
	b = append(b, `,"start_unix_ns":"`...)
	b = strconv.AppendInt(b, start.UnixNano(), 10)
	b = append(b, `","start":"`...)
	b = start.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendMeta appends a metadata event whose args hold one string.
// Every event goes on a line of its own, after a comma ending the line
// before (but the first), so that a file cut short holds whole lines of
// events but the last.
func appendMeta(b []byte, pid, tid int, name, key, value string) []byte {
	b = appendEventStart(b, "M", pid, tid)
	b = append(b, `,"name":"`...)
	b = append(b, name...)
	b = append(b, `","args":{"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = appendString(b, value)
	return append(b, "}}"...)
}

func appendSortIndex(b []byte, pid, rank int) []byte {
	b = appendEventStart(b, "M", pid, tidOf(0))
	b = append(b, `,"name":"process_sort_index","args":{"sort_index":`...)
	b = strconv.AppendInt(b, int64(rank), 10)
	return append(b, "}}"...)
}

// appendThreadName names lane's thread: "calls" for the blocking calls,
// "async" for the others.
func appendThreadName(b []byte, pid, lane int) []byte {
	name := "async"
	if lane == 0 {
		name = "calls"
	}
	return appendMeta(b, pid, tidOf(lane), "thread_name", "name", name)
}

// appendEventStart appends the separator and the first keys of an event:
// ph first and then ts, where an event has one, because Perfetto's
// tokenizer looks for ts before it parses the event, and older versions
// give up on an escape sequence they meet on the way.
func appendEventStart(b []byte, ph string, pid, tid int) []byte {
	b = append(b, ",\n"+`{"ph":"`...)
	b = append(b, ph...)
	b = append(b, '"')
	return appendIDs(b, pid, tid)
}

func appendIDs(b []byte, pid, tid int) []byte {
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	return strconv.AppendInt(b, int64(tid), 10)
}

// appendSpan appends s as a complete ("X") event.
func appendSpan(b []byte, pid int, s *Span) []byte {
	b = append(b, ",\n"+`{"ph":"X","ts":`...)
	b = appendMicros(b, s.Start)
	b = append(b, `,"dur":`...)
	b = appendMicros(b, max(s.End-s.Start, 0))
	b = appendIDs(b, pid, tidOf(s.Lane))
	b = append(b, `,"name":`...)
	b = appendString(b, s.Name)
	if s.Cat != "" {
		b = append(b, `,"cat":`...)
		b = appendString(b, s.Cat)
	}
	b = append(b, `,"args":{"comm":"0x`...)
	b = strconv.AppendUint(b, s.Comm, 16)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, s.Seq, 10)
	if s.Bytes != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, s.Bytes, 10)
	}
	if s.Peer >= 0 {
		b = append(b, `,"peer":`...)
		b = strconv.AppendInt(b, int64(s.Peer), 10)
	}
	if s.Step >= 0 {
		b = append(b, `,"step":`...)
		b = strconv.AppendInt(b, int64(s.Step), 10)
	}
	if s.Algorithm != "" {
		b = append(b, `,"algorithm":`...)
		b = appendString(b, s.Algorithm)
	}
	if s.Transport != "" {
		b = append(b, `,"transport":`...)
		b = appendString(b, s.Transport)
	}
	return append(b, "}}"...)
}

// appendDropped appends the process-wide instant event that says n spans
// were dropped, the first of them starting at ns.
func appendDropped(b []byte, pid int, n, ns int64) []byte {
	b = append(b, ",\n"+`{"ph":"i","ts":`...)
	b = appendMicros(b, ns)
	b = appendIDs(b, pid, tidOf(0))
	b = append(b, `,"s":"p","name":"`...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, ` spans dropped","cat":"timeline","args":{"dropped":`...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, "}}"...)
}

// appendMicros appends ns nanoseconds as microseconds, the trace format's
// unit, with three decimals: exact, where a float64 division would round
// once ts passes 2^53 ns / 1000 (about 104 days) and print 17 digits
// anyway.
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = uint64(-ns) // also right for math.MinInt64
	}
	b = strconv.AppendUint(b, u/1000, 10)
	f := u % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// appendString appends s as a JSON string. Control characters, quotes and
// backslashes are escaped, with the short escapes where JSON has one;
// invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
