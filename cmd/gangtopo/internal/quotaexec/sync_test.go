package quotaexec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/quota"
)

func commandsOf(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func TestSyncPlan(t *testing.T) {
	tests := []struct {
		name  string
		acc   string
		adopt bool
		extra quota.Shares
		want  []string
		err   string
	}{{
		name: "fresh: gangtopo's QOS created with their records, the accounts given their own",
		acc:  "fresh",
		want: []string{
			"sacctmgr -i add qos gt-borrow set Description=gangtopo-quota v1 role=borrow PreemptMode=requeue GrpTRES=gres/gpu=0",
			// capped: the controller opens it by what it puts there
			"sacctmgr -i add qos gt-reclaim set Description=gangtopo-quota v1 role=reclaim Preempt=gt-borrow GrpTRES=gres/gpu=0",
			// teama had no default of its own: recorded as none
			"sacctmgr -i add qos gt-teama set Description=gangtopo-quota v1 role=own account=teama default=- GrpTRES=gres/gpu=64 Preempt=",
			"sacctmgr -i add qos gt-teamb set Description=gangtopo-quota v1 role=own account=teamb default=- GrpTRES=gres/gpu=64 Preempt=",
			// only their own: never the borrow or the reclaim QOS
			"sacctmgr -i modify account where name=teama set QOS+=gt-teama DefaultQOS=gt-teama",
			"sacctmgr -i modify account where name=teamb set QOS+=gt-teamb DefaultQOS=gt-teamb",
		},
	}, {
		name: "after sync: nothing to do",
		acc:  "synced",
	}, {
		name: "an earlier sync's QOS are refused",
		acc:  "oldsync",
		err:  "QOS gt-borrow (quota.borrow_qos) exists, and gangtopo did not create it",
	}, {
		name:  "adopted: records written, the grants an earlier sync made taken away",
		acc:   "oldsync",
		adopt: true,
		extra: quota.Shares{{Account: "teamc", GPUs: 0}},
		want: []string{
			"sacctmgr -i modify qos where name=gt-borrow set Description=gangtopo-quota v1 role=borrow",
			"sacctmgr -i modify qos where name=gt-reclaim set Description=gangtopo-quota v1 role=reclaim GrpTRES=gres/gpu=0",
			"sacctmgr -i modify qos where name=gt-teama set Description=gangtopo-quota v1 role=own account=teama default=-",
			"sacctmgr -i modify qos where name=gt-teamb set Description=gangtopo-quota v1 role=own account=teamb default=-",
			// teamc's default is the borrow QOS, gangtopo's: what it was
			// before is not known
			"sacctmgr -i add qos gt-teamc set Description=gangtopo-quota v1 role=own account=teamc default=- GrpTRES=gres/gpu=0 Preempt=",
			// root's user line alone lists the reclaim QOS
			"sacctmgr -i modify user where name=root account=root set QOS-=gt-reclaim",
			"sacctmgr -i modify user where name=root account=teama set QOS-=gt-borrow,gt-reclaim",
			"sacctmgr -i modify user where name=root account=teamb set QOS-=gt-borrow,gt-reclaim",
			// teamc's own line lists both: its users follow it
			"sacctmgr -i modify account where name=teamc set QOS-=gt-borrow,gt-reclaim",
			"sacctmgr -i modify account where name=teama set QOS+=gt-teama DefaultQOS=gt-teama",
			"sacctmgr -i modify account where name=teamb set QOS+=gt-teamb DefaultQOS=gt-teamb",
			"sacctmgr -i modify account where name=teamc set QOS+=gt-teamc DefaultQOS=gt-teamc",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := labConfig()
			cfg.Shares = append(cfg.Shares, tt.extra...)
			plan, err := SyncPlan(cfg, readAccounting(t, tt.acc), tt.adopt)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || plan != nil {
					t.Fatalf("SyncPlan: %v, %q; want the error %q and no plan", err, commandsOf(plan), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, commandsOf(plan)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncRecordsTheDefault: an account whose association had a default
// QOS of its own gets it recorded in its own QOS's description, and quota
// off puts it back.
func TestSyncRecordsTheDefault(t *testing.T) {
	acc := readAccounting(t, "fresh")
	a := acc.Accounts["teama"]
	a.OwnDefault, a.DefaultQOS = "normal", "normal"
	acc.Accounts["teama"] = a
	plan, err := SyncPlan(labConfig(), acc, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan[2].String(); !strings.Contains(got, "add qos gt-teama set Description=gangtopo-quota v1 role=own account=teama default=normal ") {
		t.Errorf("gt-teama created as %q: want the default normal recorded", got)
	}
	synced := readAccounting(t, "synced")
	q := synced.QOS["gt-teama"]
	q.Mark.Default = "normal"
	synced.QOS["gt-teama"] = q
	off := PlanOff(synced, &slurmstate.State{})
	if diff := cmp.Diff([]string{"sacctmgr -i modify account where name=teama set QOS-=gt-teama DefaultQOS=normal",
		"sacctmgr -i modify account where name=teamb set QOS-=gt-teamb DefaultQOS=-1"}, commandsOf(off.Accounts)); diff != "" {
		t.Errorf("quota off's accounts (-want +got):\n%s", diff)
	}
}

// TestPlanOff: after a sync, lending and a reclaim, quota off puts the
// accounts back, moves the pending jobs out of gangtopo's QOS (taking
// the reclaim pin out), removes the QOS no job runs in and keeps the one
// a job still runs in.
func TestPlanOff(t *testing.T) {
	until := "2026-12-05T18:04:05Z"
	pin := "gangtopo-pin: by=quota nodes=node[09-10] until=" + until + " qos=gt-teama"
	pending := func(id, qos, reqNodes, admin string) slurmstate.PendingJob {
		pj := slurmstate.PendingJob{ID: id, Target: id, Facts: slurmstate.JobFacts{QOS: qos, AdminComment: admin, Known: true}}
		pj.Job.ReqNodes = reqNodes
		return pj
	}
	st := &slurmstate.State{
		Queued: []slurmstate.PendingJob{
			pending("60", "gt-borrow", "", ""),
			pending("61", "gt-reclaim", "node[09-10]", pin),
			pending("62", "normal", "", ""),
			pending("63", "normal", "node01", "gangtopo-pin: by=defrag nodes=node01 until="+until),
		},
		Jobs: []slurmstate.Job{{ID: "70", Facts: slurmstate.JobFacts{QOS: "gt-teamb"}}, {ID: "71", Facts: slurmstate.JobFacts{QOS: "normal"}}},
	}
	p := PlanOff(readAccounting(t, "synced"), st)
	if diff := cmp.Diff([]string{"sacctmgr -i modify account where name=teama set QOS-=gt-teama DefaultQOS=-1",
		"sacctmgr -i modify account where name=teamb set QOS-=gt-teamb DefaultQOS=-1"}, commandsOf(p.Accounts)); diff != "" {
		t.Errorf("accounts (-want +got):\n%s", diff)
	}
	var jobs []string
	for _, c := range p.Jobs {
		if !c.Undo {
			t.Errorf("%s is not an undo: it would not be made while actions are off", c.Command)
		}
		jobs = append(jobs, c.Cmd+" "+strings.Join(c.Args, " "))
	}
	// 61: the mark out, its node list cleared (still the pin's), its QOS
	// its association's default; 60 likewise; 62 and 63 are not in
	// gangtopo's QOS, and 63's pin is the defragmentation's
	if diff := cmp.Diff([]string{"scontrol update JobId=61 AdminComment= ReqNodeList= QOS=",
		"scontrol update JobId=60 QOS="}, jobs); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sacctmgr -i delete qos where name=gt-reclaim", "sacctmgr -i delete qos where name=gt-borrow",
		"sacctmgr -i delete qos where name=gt-teama"}, commandsOf(p.Remove)); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"QOS gt-teamb: 1 jobs still run in it (70); it is removed by quota off once they end"}, p.Kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}
