package defragrun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
)

// The hold ends with the gang detached first: were it not FLEX, a
// reservation deleted (or ended) while the gang runs inside would end the
// gang.
func TestReleaseDetachesTheRunningGangFirst(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "RUNNING"}}
	x, _ := testExecutor(t, f)
	if err := x.Release(context.Background(), "40", "gangtopo_defrag_40", time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{detachCmd, deleteCmd}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	f2 := &fakeSlurm{states: map[string]string{"41": "PENDING"}}
	x2, _ := testExecutor(t, f2)
	if err := x2.Release(context.Background(), "41", "gangtopo_defrag_41", time.Now().Add(20*time.Millisecond)); !errors.Is(err, ErrNotStarted) {
		t.Errorf("a gang that does not start: %v, want ErrNotStarted", err)
	}
	if diff := cmp.Diff([]string{"update JobId=41 ReservationName=", "delete ReservationName=gangtopo_defrag_41"}, f2.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// An interrupted wait (SIGINT on defrag apply) ends the hold all the same,
// on a context of its own.
func TestReleaseInterrupted(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING"}}
	x, _ := testExecutor(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := x.Release(ctx, "40", "gangtopo_defrag_40", time.Now().Add(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "the hold is ended") {
		t.Fatalf("err %v, want an interrupt with the hold ended", err)
	}
	if diff := cmp.Diff([]string{detachCmd, deleteCmd}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// tendAudit writes the audit lines of earlier plans: gang 45's plan
// requeued job 12 (ok); gang 46's requeue of job 13 failed; gang 47's hold
// was made but nothing requeued (its process was killed).
func tendAudit(t *testing.T, a actuate.Audit, at time.Time) {
	t.Helper()
	for _, e := range []actuate.Entry{
		{Time: at, Ref: "a", Action: "hold", Gang: "45", Reservation: "gangtopo_defrag_45", Result: "ok"},
		{Time: at, Ref: "b", Action: "attach", Job: "45", Gang: "45", Reservation: "gangtopo_defrag_45", Result: "ok"},
		{Time: at, Ref: "c", Action: "requeue", Job: "12", Gang: "45", Reservation: "gangtopo_defrag_45", Result: "intent"},
		{Time: at, Ref: "d", Action: "hold", Gang: "46", Reservation: "gangtopo_defrag_46", Result: "ok"},
		{Time: at, Ref: "e", Action: "requeue", Job: "13", Gang: "46", Reservation: "gangtopo_defrag_46", Result: "intent"},
		{Time: at, Ref: "e", Action: "requeue", Job: "13", Gang: "46", Reservation: "gangtopo_defrag_46", Result: "scontrol requeue: exit status 1: Requested operation is presently disabled"},
		{Time: at, Ref: "f", Action: "hold", Gang: "47", Reservation: "gangtopo_defrag_47", Result: "intent"},
	} {
		if err := a.Append(e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTend(t *testing.T) {
	now := time.Now()
	hold := func(gang string, made, ends time.Duration) Hold {
		return Hold{Name: HoldPrefix + gang, Start: now.Add(-made), End: now.Add(ends)}
	}
	states := map[string]string{"40": "RUNNING", "41": "PENDING", "42": "PENDING", "43": "COMPLETED",
		"45": "PENDING", "46": "PENDING", "47": "PENDING", "48": "PENDING"}
	holds := []Hold{hold("40", time.Minute, 5*time.Minute), hold("41", 30*time.Second, 5*time.Minute), hold("42", 9*time.Minute, 5*time.Second),
		hold("43", time.Minute, 5*time.Minute), hold("44", time.Minute, 5*time.Minute), hold("45", 3*time.Minute, 5*time.Minute),
		hold("46", time.Minute, 5*time.Minute), hold("47", 3*time.Minute, 5*time.Minute), hold("48", 30*time.Second, 5*time.Minute)}
	ended := func(gangs ...string) []string {
		var out []string
		for _, g := range gangs {
			if st := states[g]; st == "PENDING" || st == "RUNNING" {
				out = append(out, "update JobId="+g+" ReservationName=")
			}
			out = append(out, "delete ReservationName="+HoldPrefix+g)
		}
		return out
	}
	tests := []struct {
		name  string
		off   bool
		audit bool // the audit log reads
		ended []string
		kept  int
	}{
		// 40 runs: released; 41 waits with time left and was made 30 s ago
		// (its requeues may still come): kept; 42's hold runs out: given
		// up; 43 completed and 44 is gone; 45's plan requeued (an intent
		// without outcome counts): kept; 46's requeue failed; 47's plan never
		// requeued, 3 min after its hold: its process is gone; 48 was made
		// 30 s ago: kept
		{"each hold by its gang and its plan", false, true, ended("40", "42", "43", "44", "46", "47"), 3},
		// without the log, the plan rules are skipped: 45, 46, 47, 48 kept
		{"the audit log does not read", false, false, ended("40", "42", "43", "44"), 5},
		{"switched off: every hold of a waiting gang is put back", true, true, ended("40", "41", "42", "43", "44", "45", "46", "47", "48"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSlurm{states: map[string]string{}, holds: holds}
			for k, v := range states {
				f.states[k] = v
			}
			delete(f.states, "44")
			x, _ := testExecutor(t, f)
			tendAudit(t, x.Audit, now.Add(-2*time.Minute))
			if !tt.audit { // the door keeps its own log: only Tend's reading fails
				x.Audit.Path = t.TempDir() // a directory: Changes fails
			}
			kept, err := x.Tend(context.Background(), 15*time.Second, tt.off)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.ended, f.calls); diff != "" || kept != tt.kept {
				t.Errorf("kept %d (want %d), calls (-want +got):\n%s", kept, tt.kept, diff)
			}
		})
	}
}

func TestParseHolds(t *testing.T) {
	tests := []struct {
		name, out string
		want      []Hold
	}{
		{"22.05.8, one line each (scontrol -o)",
			"ReservationName=maint StartTime=2026-12-03T18:32:09 EndTime=2026-12-03T18:42:09 Nodes=node01\n" +
				"ReservationName=gangtopo_defrag_40 StartTime=2026-12-05T17:35:02 EndTime=2026-12-05T17:36:02 Duration=00:01:00 Nodes=node[05-08] NodeCnt=4 CoreCnt=256 Features=(null) PartitionName=(null) Flags=FLEX,IGNORE_JOBS,SPEC_NODES,NO_HOLD_JOBS_AFTER_END TRES=cpu=256 Users=alice Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n",
			[]Hold{{Name: "gangtopo_defrag_40", Nodes: "node[05-08]", Users: "alice", Flags: "FLEX,IGNORE_JOBS,SPEC_NODES,NO_HOLD_JOBS_AFTER_END",
				Start: time.Date(2026, 12, 5, 17, 35, 2, 0, time.Local), End: time.Date(2026, 12, 5, 17, 36, 2, 0, time.Local)}}},
		// an administrator's comment (24.11+, last) holding words that read
		// as fields stays the comment: Nodes and Users are read in order
		{"a comment with Key= words",
			"ReservationName=gangtopo_defrag_41 StartTime=2026-12-05T17:35:02 EndTime=2026-12-05T17:36:02 Duration=00:01:00 Nodes=node[01-04] NodeCnt=4 CoreCnt=256 Features=(null) PartitionName=(null) Flags=FLEX TRES=cpu=256 Users=bob Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) MaxStartDelay=(null) Comment=moved Nodes=node16 Users=root EndTime=2099-01-01T00:00:00\n",
			[]Hold{{Name: "gangtopo_defrag_41", Nodes: "node[01-04]", Users: "bob", Flags: "FLEX",
				Start: time.Date(2026, 12, 5, 17, 35, 2, 0, time.Local), End: time.Date(2026, 12, 5, 17, 36, 2, 0, time.Local)}}},
		// captured on the lab: 24.11.5 prints no Watts; 26.05.5 prints
		// AllowedPartitions and QOS before Users
		{"24.11.5", "ReservationName=gangtopo_defrag_2 StartTime=2026-12-05T18:38:29 EndTime=2026-12-05T18:48:29 Duration=00:10:00 Nodes=node[05-08] NodeCnt=4 CoreCnt=256 Features=(null) PartitionName=(null) Flags=FLEX,IGNORE_JOBS,SPEC_NODES,NO_HOLD_JOBS_AFTER_END TRES=cpu=256 Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) MaxStartDelay=(null)" + "\n",
			[]Hold{{Name: "gangtopo_defrag_2", Nodes: "node[05-08]", Users: "root", Flags: "FLEX,IGNORE_JOBS,SPEC_NODES,NO_HOLD_JOBS_AFTER_END",
				Start: time.Date(2026, 12, 5, 18, 38, 29, 0, time.Local), End: time.Date(2026, 12, 5, 18, 48, 29, 0, time.Local)}}},
		{"26.05.5", "ReservationName=gangtopo_defrag_2 StartTime=2026-12-05T18:38:36 EndTime=2026-12-05T18:48:36 Duration=00:10:00 Nodes=node[05-08] NodeCnt=4 CoreCnt=256 Features=(null) PartitionName=(null) Flags=FLEX,IGNORE_JOBS,SPEC_NODES,NO_HOLD_JOBS_AFTER_END TRES=cpu=256 AllowedPartitions=(null) QOS=(null) Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) MaxStartDelay=(null)" + "\n",
			[]Hold{{Name: "gangtopo_defrag_2", Nodes: "node[05-08]", Users: "root", Flags: "FLEX,IGNORE_JOBS,SPEC_NODES,NO_HOLD_JOBS_AFTER_END",
				Start: time.Date(2026, 12, 5, 18, 38, 36, 0, time.Local), End: time.Date(2026, 12, 5, 18, 48, 36, 0, time.Local)}}},
		{"none", "No reservations in the system\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseHolds(tt.out)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(got) > 0 && got[0].Gang() != strings.TrimPrefix(tt.want[0].Name, HoldPrefix) {
				t.Errorf("gang %q", got[0].Gang())
			}
		})
	}
}
