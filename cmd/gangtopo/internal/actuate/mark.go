package actuate

import (
	"fmt"
	"strings"
	"time"
)

// A pin's record lives in the pinned job's AdminComment, which only
// Slurm's administrators (and gangtopo's controller, as SlurmUser) may
// write, so that whoever acts next (this controller after a restart, the
// backup's after a failover) finds it in `squeue --json` and can undo it
// when it expires, and no user can forge or erase it:
//
//	gangtopo-pin: by=quota nodes=node[05-08] until=2026-12-05T18:04:05Z qos=gt-teama | gangtopo v1 waiting ...
//
// The mark goes before gangtopo's decision line, so the decision parses as
// before and a re-binding, which keeps what precedes the decision, keeps
// the mark. Its values hold no blanks.

// markMagic begins a pin's mark.
const markMagic = "gangtopo-pin:"

// Mark is what gangtopo pinned a job to, for whom and until when.
type Mark struct {
	// By is the duty that pinned: defrag (pin_preemption) or quota
	// (reclaim).
	By string
	// Nodes is the ReqNodeList gangtopo set (a host list).
	Nodes string
	// Until is when the pin expires: then it is undone.
	Until time.Time
	// QOS is the QOS to put the job back in when the pin is undone ("":
	// it stays in its QOS).
	QOS string
}

// String is the mark as it is written.
func (m Mark) String() string {
	s := fmt.Sprintf("%s by=%s nodes=%s until=%s", markMagic, m.By, m.Nodes, m.Until.UTC().Format(time.RFC3339))
	if m.QOS != "" {
		s += " qos=" + m.QOS
	}
	return s
}

// ParseMark finds the mark in an AdminComment; ok is false when there is
// none, or it does not read (a mark gangtopo did not write whole).
func ParseMark(adminComment string) (m Mark, ok bool) {
	seg, _, found := markSegment(adminComment)
	if !found {
		return Mark{}, false
	}
	for _, kv := range strings.Fields(strings.TrimPrefix(seg, markMagic)) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "by":
			m.By = v
		case "nodes":
			m.Nodes = v
		case "until":
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return Mark{}, false
			}
			m.Until = t
		case "qos":
			m.QOS = v
		}
	}
	return m, m.By != "" && m.Nodes != "" && !m.Until.IsZero()
}

// WithMark is the AdminComment with m as its mark: any mark it had is
// replaced, and the mark goes before gangtopo's decision line (after what
// else the field holds).
func WithMark(adminComment string, m Mark) string {
	rest := WithoutMark(adminComment)
	i := strings.Index(rest, "gangtopo v1 ")
	switch {
	case rest == "":
		return m.String()
	case i < 0:
		return rest + " | " + m.String()
	}
	return rest[:i] + m.String() + " | " + rest[i:]
}

// WithoutMark is the AdminComment without gangtopo's mark.
func WithoutMark(adminComment string) string {
	_, span, found := markSegment(adminComment)
	if !found {
		return adminComment
	}
	before, after := adminComment[:span[0]], adminComment[span[1]:]
	before = strings.TrimSuffix(before, " | ")
	after = strings.TrimPrefix(after, " | ")
	if before != "" && after != "" {
		return before + " | " + after
	}
	return before + after
}

// markSegment finds the mark: the text from its magic to the next " | "
// (or the end), and that span in s.
func markSegment(s string) (seg string, span [2]int, found bool) {
	i := strings.Index(s, markMagic)
	if i < 0 || i > 0 && !strings.HasSuffix(s[:i], " | ") {
		return "", span, false
	}
	end := len(s)
	if j := strings.Index(s[i:], " | "); j >= 0 {
		end = i + j
	}
	return s[i:end], [2]int{i, end}, true
}
