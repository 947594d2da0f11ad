// Package failreport carries a rank's failure to the launcher that started
// it. gocoll run hands every rank a pipe, as the file descriptor named by
// GOCOLL_REPORT_FD, and a rank whose job fails writes one line on it
// naming whom to blame before any of its calls returns the error:
//
//	lost 2,3 <what the rank saw>
//	aborted 1 <what the rank saw>
//
// A survivor usually exits first, and its exit status says only that it
// failed; the report lets the launcher's one-line reason name the rank
// that was lost or aborted instead.
package failreport

import (
	"fmt"
	"strconv"
	"strings"
)

// EnvFD names the environment variable that holds the report pipe's file
// descriptor.
const EnvFD = "GOCOLL_REPORT_FD"

// MaxLine bounds a report line, newline included; a longer reason is cut.
const MaxLine = 4096

// Kind says what happened to the ranks a report blames.
type Kind string

const (
	Lost    Kind = "lost"    // they died, froze or were cut off
	Aborted Kind = "aborted" // one of them aborted the job
)

// Report is one rank's account of why its job failed.
type Report struct {
	Kind   Kind
	Ranks  []int // the ranks to blame, in increasing order
	Reason string
}

// Line encodes r as one line, cut to MaxLine bytes, with any newline in
// the reason replaced.
func (r Report) Line() []byte {
	b := make([]byte, 0, 64+len(r.Reason))
	b = append(b, r.Kind...)
	for i, rank := range r.Ranks {
		if i == 0 {
			b = append(b, ' ')
		} else {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(rank), 10)
	}
	b = append(b, ' ')
	b = append(b, strings.ReplaceAll(r.Reason, "\n", " ")...)
	if len(b) > MaxLine-1 {
		b = b[:MaxLine-1]
	}
	return append(b, '\n')
}

// Parse decodes a line written by Line (without its newline). It rejects
// anything else, with an error that says why.
func Parse(line string) (Report, error) {
	kind, rest, _ := strings.Cut(line, " ")
	list, reason, _ := strings.Cut(rest, " ")
	r := Report{Kind: Kind(kind), Reason: reason}
	if r.Kind != Lost && r.Kind != Aborted {
		return Report{}, fmt.Errorf("failreport: unknown kind %q", kind)
	}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return Report{}, fmt.Errorf("failreport: %q is not a rank", f)
		}
		r.Ranks = append(r.Ranks, n)
	}
	return r, nil
}

// String describes the failure for a person: "ranks 2 and 3 lost: ..." or
// "rank 1 aborted the job: ...".
func (r Report) String() string {
	who := "rank " + RankList(r.Ranks)
	if len(r.Ranks) > 1 {
		who = "ranks " + RankList(r.Ranks)
	}
	if r.Kind == Aborted {
		return fmt.Sprintf("%s aborted the job: %s", who, r.Reason)
	}
	return fmt.Sprintf("%s lost: %s", who, r.Reason)
}

// RankList writes ranks as "2", "2 and 3" or "1, 2 and 5".
func RankList(ranks []int) string {
	var b strings.Builder
	for i, r := range ranks {
		switch {
		case i == 0:
		case i == len(ranks)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(r))
	}
	return b.String()
}
