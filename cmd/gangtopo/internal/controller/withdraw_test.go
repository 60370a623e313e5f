package controller

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// A controller stopping for good ends every hold (a running gang taken out
// first), and clears the preemption pins it set that are still its own.
func TestDefragWithdraw(t *testing.T) {
	now := time.Now()
	d, f, logs := newDefragLab(t, func(c *ctld.DefragConfig) { c.PinPreemption, c.Scope = true, defrag.Scope{} })
	d.setup.Preemption = func(context.Context) (defrag.Preemption, error) {
		return defrag.Preemption{Type: defrag.PreemptPartitionPrio, Mode: "REQUEUE",
			Partitions: map[string]defrag.PartitionRule{"gpu": {PriorityTier: 5}, "scavenger": {PriorityTier: 1}}}, nil
	}
	d.cycle(context.Background(), defragViewIn(t, now, "scavenger"), nil) // pins 40 to node[05-08]
	d.pinned["44"] = pin{at: now, nodes: "node[09-12]"}                   // pinned, then changed by its user
	d.pinned["45"] = pin{at: now, nodes: "node[13-16]"}                   // pinned, and started since
	f.calls = nil
	f.states["41"] = "RUNNING"
	f.holds = []defragrun.Hold{{Name: "gangtopo_defrag_41"}}
	st := &slurmstate.State{Queued: []slurmstate.PendingJob{
		{ID: "40", Target: "40", Job: jobsubmit.Job{ReqNodes: "node05,node06,node07,node08"}},
		{ID: "44", Target: "44", Job: jobsubmit.Job{ReqNodes: "node01"}},
	}}
	left := d.withdraw(context.Background(), st, "gangtopo was removed")
	// the running gang 41 is taken out of its hold before it is deleted;
	// 40 still pends with the nodes it was pinned to: cleared; 44's list
	// is its user's now and 45 no longer pends: left alone
	want := []string{"detach 41", "unhold gangtopo_defrag_41", "pin 40 "}
	if diff := cmp.Diff(want, f.calls); diff != "" || len(left) != 0 {
		t.Errorf("left %v; calls (-want +got):\n%s\nlog:\n%s", left, diff, logs)
	}
	data, err := os.ReadFile(d.cfg.Defrag.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{`"action":"release"`, `"action":"unpin"`} {
		if !strings.Contains(string(data), action) || !strings.Contains(string(data), `"reason":"gangtopo was removed"`) {
			t.Errorf("audit log lacks %s with the reason:\n%s", action, data)
		}
	}
}

// Without a fresh read of Slurm the pins cannot be checked: they are
// named as left, the holds are ended all the same.
func TestDefragWithdrawWithoutSlurmState(t *testing.T) {
	d, f, _ := newDefragLab(t, nil)
	d.pinned["40"] = pin{at: time.Now(), nodes: "node[05-08]"}
	f.holds = []defragrun.Hold{{Name: "gangtopo_defrag_41"}}
	left := d.withdraw(context.Background(), nil, "gone")
	if diff := cmp.Diff([]string{"the preemption pin of job 40"}, left); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"unhold gangtopo_defrag_41"}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// The quota's reclaim pins go back to the account's own QOS with the node
// list cleared, whether or not their pin_timeout has passed.
func TestQuotaWithdraw(t *testing.T) {
	l, log := quotaLab(t, false)
	l.slurm("squeue", "cat "+pinnedCapture(t, "52", "gt-reclaim", "node[09-10]"))
	if left := l.c.Withdraw(context.Background(), "gangtopo was removed"); len(left) != 0 {
		t.Errorf("left %v, want nothing", left)
	}
	if diff := cmp.Diff([]string{"scontrol update JobId=52 QOS=gt-teama ReqNodeList="}, commands(t, log)); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if !strings.Contains(l.logs.String(), `"message":"quota: reclaim pin released (gangtopo was removed)"`) {
		t.Errorf("the release is logged:\n%s", l.logs.String())
	}
}

// A controller with neither duty holds nothing, and reads nothing to say so.
func TestWithdrawWithoutDuties(t *testing.T) {
	l := newLab(t)
	l.slurm("squeue", "echo squeue must not run >&2; exit 1")
	if left := l.c.Withdraw(context.Background(), "gone"); left != nil {
		t.Errorf("left %v", left)
	}
}
