// Package timeline records what one rank's collectives did and when, as
// a trace file that Chrome's about:tracing and ui.perfetto.dev open, and
// merges the files of a job's ranks into one trace with a track per rank.
//
// A rank opens a Recorder, adds a Span for each call and for each step
// and wait inside it, and closes it when it leaves the job. `gocoll run
// --trace trace.json` (or GOCOLL_TRACE=trace.json) has every rank write
// RankPath("trace.json", rank) and merges the files when the job ends;
// under other launchers, each rank writes its own file and `gocoll trace
// merge` merges them.
//
// # Format
//
// A file is a trace in the trace-event format's JSON object form
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU),
// with one event per line:
//
//	{"displayTimeUnit":"ns","otherData":{"format":"gocoll timeline","version":1,"rank":3,"size":4,"start_unix_ns":"…","start":"…"},"traceEvents":[
//	{"ph":"M","pid":4,"tid":1,"name":"process_name","args":{"name":"rank 3"}},
//	…
//	{"ph":"X","ts":1523.071,"dur":88.410,"pid":4,"tid":1,"name":"Allreduce","cat":"collective","args":{"comm":"0x1","seq":7,"bytes":4096,"algorithm":"ring","transport":"shm"}},
//	{"ph":"X","ts":1530.502,"dur":20.117,"pid":4,"tid":1,"name":"step 0","cat":"step","args":{"comm":"0x1","seq":7,"bytes":1024,"peer":2,"step":0}}
//	]}
//
// A span is a complete event ("X") whose ts and dur are microseconds, the
// format's unit, printed with three decimals, so nanoseconds survive
// exactly; displayTimeUnit "ns" only asks the viewer to show them. A
// span's args hold the communicator (as a hex string: JavaScript numbers
// cannot hold every uint64), the call's sequence number on it, and the
// bytes, peer, step, algorithm and transport where the span has them.
// Each rank is a process and each lane a thread of it: pid is the rank
// plus one and tid the lane plus one, because Perfetto files pid 0 and
// tid 0 under the kernel's idle task; the metadata events ("M") name them
// "rank N", and "calls" (lane 0, the blocking calls) or "async", and
// order the processes by rank. The viewers nest a step inside its call
// because it lies within the call's time on the same thread; nothing
// links them otherwise.
//
// The header comes first and holds only the keys Perfetto reads there
// (it stops at a key it does not know, and takes displayTimeUnit only
// from the start of a file). It carries the rank, the job's size and the
// clock's wall-clock start, and the names follow at once, so a rank
// killed before Close leaves a file that is cut short but still says
// whose it is and when it started: Merge keeps its events up to the last
// whole line. Within an event, ph and ts come first, which is where
// Perfetto's tokenizer looks for them.
//
// # Recording
//
// Add is on the path of every call, so it copies the span into a
// preallocated buffer under a mutex held for that copy alone: no
// allocation, no system call, no waiting for the file. When the buffer
// fills, it goes to the recorder's writer goroutine, which encodes it by
// hand (strconv appends into one reused buffer, not encoding/json, whose
// reflection and allocation per value would cost more than many of the
// steps it records) while the second buffer takes new spans. Only when
// both are full does Add drop spans; it counts them, and the writer puts
// an instant event in the file where the drops began, saying how many, so
// a gap in the trace is never silent. Each buffer holds 8192 spans.
//
// The writer sorts each buffer by start, and puts a span before the spans
// it contains when they start at the same nanosecond: Add gets a call
// after the steps inside it, since the call ends last, and a viewer that
// meets a step before a call of the same start may fail to nest them.
//
// # Clocks
//
// A recorder's times are time.Since its Open, on the monotonic clock, so
// a span never stretches or goes backwards when NTP steps the wall clock
// during a run. Open also reads the wall clock once, and the header keeps
// that reading (nanoseconds since 1970): it is the only point at which
// one rank's clock meets another's. Ranks on one machine read the same
// wall clock, so their timelines line up to well within a microsecond
// (the moment between the two clocks' readings in time.Now). Ranks on
// different machines line up only as well as the machines' wall clocks
// agree, typically to within a fraction of a millisecond under NTP or
// PTP, and worse without: compare their tracks by the order of events on
// each, not by microseconds across machines.
//
// # Merging
//
// Merge reads every file's header first, places each rank's clock on the
// earliest start among them (ts + its start - the earliest start), and
// then copies the files' events one after another, sorted by rank, each
// on its rank's pid; the viewers sort by time themselves, so the merged
// file needs no global sort, and Merge streams each file instead of
// holding the job's events in memory. It keeps every event, adds an
// instant event on a rank whose file was cut short, and refuses a file
// that is no rank trace (naming it), two files of one rank, and files of
// jobs of different sizes, before it writes anything.
package timeline
