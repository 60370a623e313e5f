package actuate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

func TestMarkRoundTrip(t *testing.T) {
	until := time.Date(2026, 12, 5, 18, 4, 5, 0, time.UTC)
	m := Mark{By: "quota", Nodes: "node[05-08]", Until: until, QOS: "gt-teama"}
	dec := "gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf2 snapshot=9: no leaf free"
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", m.String()},
		{"before the decision", dec, m.String() + " | " + dec},
		{"after an admin's text, before the decision", "ticket 42 | " + dec, "ticket 42 | " + m.String() + " | " + dec},
		{"no decision", "ticket 42", "ticket 42 | " + m.String()},
		{"replaces an older mark", "ticket 42 | gangtopo-pin: by=defrag nodes=x until=2026-01-01T00:00:00Z | " + dec,
			"ticket 42 | " + m.String() + " | " + dec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithMark(tt.in, m)
			if got != tt.want {
				t.Fatalf("WithMark:\n got %q\nwant %q", got, tt.want)
			}
			back, ok := ParseMark(got)
			if !ok {
				t.Fatalf("ParseMark(%q) found none", got)
			}
			if diff := cmp.Diff(m, back); diff != "" {
				t.Errorf("ParseMark (-want +got):\n%s", diff)
			}
			if without := WithoutMark(got); without != WithoutMark(tt.in) || ParseMarkOK(without) {
				t.Errorf("WithoutMark(%q) = %q", got, without)
			}
			if d, err := jobsubmit.ParseDecision(got); tt.in != "" && err == nil && d.Text != "no leaf free" {
				t.Errorf("the decision no longer reads: text %q", d.Text)
			}
		})
	}
}

func ParseMarkOK(s string) bool { _, ok := ParseMark(s); return ok }

func TestParseMarkRefusesPartial(t *testing.T) {
	for _, s := range []string{
		"gangtopo-pin: by=quota nodes=n1",                // no expiry
		"gangtopo-pin: by=quota nodes=n1 until=tomorrow", // not a time
		"gangtopo-pin: nodes=n1 until=2026-12-05T18:04:05Z",
		"a user wrote gangtopo-pin: by=quota nodes=n1 until=2026-12-05T18:04:05Z", // not a segment of its own
	} {
		if m, ok := ParseMark(s); ok {
			t.Errorf("ParseMark(%q) = %+v, want none", s, m)
		}
	}
}

// TestPinUndo: an expired pin is undone whole while the job is still
// pinned to what gangtopo set; after an administrator changed the node
// list, only the mark goes.
func TestPinUndo(t *testing.T) {
	until := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	m := Mark{By: "quota", Nodes: "node[05-06]", Until: until, QOS: "gt-teama"}
	ac := WithMark("gangtopo v1 waiting gpus=16: x", m)
	pin := PinChange(Entry{Duty: "quota"}, "42", "gangtopo v1 waiting gpus=16: x", m, "QOS=gt-reclaim")
	if diff := cmp.Diff([]string{"update", "JobId=42", "ReqNodeList=node[05-06]", "AdminComment=" + ac, "QOS=gt-reclaim"}, pin.Args); diff != "" {
		t.Fatalf("PinChange args (-want +got):\n%s", diff)
	}
	tests := []struct {
		name, reqNodes, qos string
		want                []string
	}{
		{"still ours", "node05,node06", "gt-reclaim",
			[]string{"update", "JobId=42", "AdminComment=gangtopo v1 waiting gpus=16: x", "ReqNodeList=", "QOS=gt-teama"}},
		{"changed by an admin", "node07", "gt-reclaim",
			[]string{"update", "JobId=42", "AdminComment=gangtopo v1 waiting gpus=16: x"}},
		{"already in its QOS", "node[05-06]", "gt-teama",
			[]string{"update", "JobId=42", "AdminComment=gangtopo v1 waiting gpus=16: x", "ReqNodeList="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Pin{Mark: m, Job: "42", ReqNodes: tt.reqNodes, QOS: tt.qos, AdminComment: ac}
			if !p.Expired(until) || p.Expired(until.Add(-time.Second)) {
				t.Error("Expired: a pin expires at its until, not before")
			}
			if diff := cmp.Diff(tt.want, p.Undo("quota", "expired").Args); diff != "" {
				t.Errorf("Undo args (-want +got):\n%s", diff)
			}
		})
	}
}
