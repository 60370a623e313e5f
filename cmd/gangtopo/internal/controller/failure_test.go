package controller

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// failureLab is a controller with re-binding over the Slurm 24.11.5
// capture of the 16-node lab (slurm-24.11.5/: job 1 on node03, job 2 a
// 16-GPU gang running on node[05-06] in leaf2, job 3 held), job 2 made a
// leaf:required gang the plugin bound at submit; each poll's squeue and
// scontrol --json show nodes are written by the test, and scontrol's
// updates logged.
type failureLab struct {
	*lab
	log, squeue, nodes string
	cfg                ctld.Config
	actions            *ActionsSetup
	gang               jobsubmit.Job // job 2 as the plugin rewrote it
	// requeuing: a running poll shows job 2 as Slurm lists it while it
	// requeues it (pending and completing, its nodes still its own)
	requeuing bool
	// submit and eligible, when set, are job 2's submit and begin times in
	// a pending poll
	submit, eligible time.Time
}

// start starts a controller (again: a restart, its memory gone, its
// snapshot and audit log kept).
func (l *failureLab) start() {
	l.t.Helper()
	var err error
	l.logs.Reset()
	// the process lock is the kernel's until a process ends: a restarted
	// controller's predecessor is gone, this one's lives on in the test
	l.actions.LockPath = filepath.Join(l.t.TempDir(), "controller.lock")
	if l.d, err = daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "debug"}, &l.logs); err != nil {
		l.t.Fatal(err)
	}
	l.c, err = New(Config{Topology: l.topo, Output: l.out, Workload: frag.PhillyPrior(1),
		Poll:   &slurmstate.PollConfig{NodesFrom: slurmstate.ScontrolNodesJSON, JobsFrom: slurmstate.SqueueJSON, BinDir: l.bin, Timeout: time.Second},
		Rebind: &RebindSetup{ConfigPath: "/nonexistent/gangtopo.yaml", Config: l.cfg}, Actions: l.actions}, l.d)
	if err != nil {
		l.t.Fatal(err)
	}
}

func newFailureLab(t *testing.T) *failureLab {
	t.Helper()
	l := &failureLab{lab: &lab{t: t, bin: t.TempDir()}}
	dir := t.TempDir()
	l.out, l.topo = filepath.Join(dir, "snapshot.json"), "../../../../docs/examples/lab16.yaml"
	l.log, l.squeue, l.nodes = filepath.Join(dir, "commands.log"), filepath.Join(dir, "squeue.json"), filepath.Join(dir, "nodes.json")
	l.slurm("squeue", "cat "+l.squeue)
	l.slurm("scontrol", `if [ "$3" = show ]; then cat `+l.nodes+`; else echo "scontrol $*" >> `+l.log+`; fi`)
	l.cfg = ctld.Defaults()
	l.cfg.Jobs = jobsubmit.ScopeGPU
	l.actions = testActions(t, l.bin, &l.cfg)
	l.start()
	l.cluster = l.c.topo.Cluster
	// job 2 as the plugin rewrites `--gpus=16 --gang-topology=leaf` on an
	// empty cluster: 2x8, bound to the four leaves, leaf1 first
	dec, err := jobsubmit.New(l.cfg.Policy, l.cluster)
	if err != nil {
		t.Fatal(err)
	}
	s := occupancy.New(l.cluster)
	if s.Features, err = jobsubmit.NodeFeatures(l.cluster, jobsubmit.DefaultFeaturePrefix); err != nil {
		t.Fatal(err)
	}
	j := jobsubmit.Job{Name: "gang", Partition: "gpu", TresPerJob: "gres:gpu:16", GangTopology: "leaf"}
	res, err := dec.Decide(j, s, 1, place.New(l.cluster, dec.Policy().EngineOptions(nil)))
	if err != nil || res.Action != jobsubmit.Modify {
		t.Fatalf("submit: %v %s", err, res.Log)
	}
	l.gang = res.Apply(j)
	if l.gang.Features != "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]" {
		t.Fatalf("bound at submit to %q", l.gang.Features)
	}
	return l
}

// poll writes the capture as the next poll sees it: job 2 running on
// node[05-06] (running) or pending after `restarts` requeues with reason;
// the nodes in states set to those states (scontrol's JSON state lists).
func (l *failureLab) poll(running bool, restarts int, reason string, states map[string][]string) {
	l.t.Helper()
	edit := func(name string, f func(map[string]any)) {
		data, err := os.ReadFile(testdata + "slurm-24.11.5/" + name)
		if err != nil {
			l.t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			l.t.Fatal(err)
		}
		f(doc)
		out, _ := json.Marshal(doc)
		dst := l.squeue
		if name != "squeue.json" {
			dst = l.nodes
		}
		if err := os.WriteFile(dst, out, 0o644); err != nil {
			l.t.Fatal(err)
		}
	}
	edit("squeue.json", func(doc map[string]any) {
		for _, x := range doc["jobs"].([]any) {
			job := x.(map[string]any)
			if job["job_id"].(float64) != 2 {
				continue
			}
			job["features"], job["admin_comment"], job["required_nodes"] = l.gang.Features, l.gang.AdminComment, ""
			job["tres_per_node"], job["tres_per_job"] = strings.Replace(l.gang.TresPerNode, "gres:", "gres/", 1), l.gang.TresPerJob
			job["restart_cnt"] = restarts
			if running && l.requeuing {
				job["job_state"] = []string{"PENDING", "COMPLETING", "EXPEDITING"} // as 26.05.5 lists it during EpilogSlurmctld
			}
			if !running {
				job["job_state"], job["nodes"], job["state_reason"] = []string{"PENDING"}, "", reason
				job["job_resources"], job["gres_detail"] = nil, []string{}
				job["max_nodes"] = job["node_count"]
				for k, at := range map[string]time.Time{"submit_time": l.submit, "eligible_time": l.eligible} {
					if !at.IsZero() {
						job[k] = map[string]any{"set": true, "infinite": false, "number": at.Unix()}
					}
				}
			}
		}
	})
	edit("scontrol_nodes.json", func(doc map[string]any) {
		for _, x := range doc["nodes"].([]any) {
			n := x.(map[string]any)
			name := n["name"].(string)
			if !running && (name == "node05" || name == "node06") {
				n["state"], n["alloc_cpus"], n["gres_used"] = []string{"IDLE"}, 0, "gpu:h100:0(IDX:N/A)"
			}
			if st, ok := states[name]; ok {
				n["state"] = st
			}
		}
	})
}

func (l *failureLab) updates() []string {
	data, _ := os.ReadFile(l.log)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

func (l *failureLab) cycle() {
	l.t.Helper()
	if err := l.c.Cycle(context.Background()); err != nil {
		l.t.Fatalf("cycle: %v\n%s", err, l.logs.String())
	}
}

func (l *failureLab) restarts(result string) float64 {
	return testutil.ToFloat64(l.c.rebind.failures.m.restarts.WithLabelValues(result))
}

// node06 fails under the gang; Slurm requeues it (BeginTime, restart 1).
// leaf2 keeps node05, node07 and node08 healthy and free: the gang is
// re-bound with leaf2 first (then the most free GPUs first: leaf1 has
// job 1's 3 GPUs on node03), once.
func TestRequeuedGangBackInItsLeaf(t *testing.T) {
	l := newFailureLab(t)
	l.poll(true, 0, "", nil)
	l.cycle()
	l.poll(true, 0, "", map[string][]string{"node06": {"MIXED", "DRAIN"}})
	l.cycle()
	if got := testutil.ToFloat64(l.c.rebind.failures.m.under); got != 1 {
		t.Errorf("gangtopo_running_gangs_on_failed_nodes = %v, want 1", got)
	}
	if len(l.updates()) != 0 {
		t.Fatalf("updates while it runs: %v", l.updates())
	}
	l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
	got := l.updates()
	if len(got) != 1 || !strings.HasPrefix(got[0], "scontrol update JobId=2 Features=[gt_leaf2|gt_leaf3|gt_leaf1|gt_leaf4] AdminComment=gangtopo v1 placed request=leaf:required gpus=16 shape=2x8 domain=leaf2 tier=leaf bound=leaf2,leaf3,leaf1,leaf4 ") {
		t.Fatalf("updates %q; want job 2 bound to leaf2 first\n%s", got, l.logs.String())
	}
	if strings.Contains(got[0], "node06") {
		t.Errorf("placed on the failed node: %s", got[0])
	}
	if l.restarts("old_domain") != 1 {
		t.Errorf("gangtopo_failure_restarts_total{old_domain} = %v, want 1", l.restarts("old_domain"))
	}
	for _, want := range []string{"re-bound a gang requeued after a node failure", `"old_domain":"leaf2"`, `"failed":["node06"]`} {
		if !strings.Contains(l.logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, l.logs.String())
		}
	}
	// the next poll shows it pending as before (Slurm has not taken the
	// update into its listing yet, or the begin time has not come): once
	l.c.now = func() time.Time { return time.Now().Add(time.Second) }
	l.cycle()
	if len(l.updates()) != 1 {
		t.Errorf("updated again: %q", l.updates())
	}
}

// The same caught while Slurm requeues the gang (woken by EpilogSlurmctld:
// wake.go): listed pending and completing, still on node[05-06], its
// restart count raised. It is re-bound there and then, with leaf2 first:
// its own nodes count as free for its restart.
func TestRequeuingGangBackInItsLeaf(t *testing.T) {
	l := newFailureLab(t)
	l.poll(true, 0, "", nil)
	l.cycle()
	l.requeuing = true
	l.poll(true, 1, "None", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
	got := l.updates()
	if len(got) != 1 || !strings.HasPrefix(got[0], "scontrol update JobId=2 Features=[gt_leaf2|gt_leaf3|gt_leaf1|gt_leaf4] ") {
		t.Fatalf("updates %q; want job 2 bound to leaf2 first while Slurm requeues it\n%s", got, l.logs.String())
	}
	if l.restarts("old_domain") != 1 {
		t.Errorf("gangtopo_failure_restarts_total{old_domain} = %v, want 1", l.restarts("old_domain"))
	}
	// the requeue done, it pends: handled already, not updated again
	l.requeuing = false
	l.c.now = func() time.Time { return time.Now().Add(time.Second) }
	l.poll(false, 1, "None", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
	if len(l.updates()) != 1 {
		t.Errorf("updated again after the requeue: %q", l.updates())
	}
}

// The controller restarts between node06's failure and the requeue: the
// new one has not seen the gang running, but the snapshot the old one
// published lists it on node[05-06], so it re-binds it with leaf2 first
// all the same. Without that snapshot (removed) it does not know where the
// gang ran and leaves it to plain re-binding.
func TestRequeuedGangAfterControllerRestart(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(map[bool]string{true: "snapshot kept", false: "snapshot removed"}[keep], func(t *testing.T) {
			l := newFailureLab(t)
			l.poll(true, 0, "", nil)
			l.cycle()
			if !keep {
				if err := os.Remove(l.out); err != nil {
					t.Fatal(err)
				}
			}
			l.start()
			if keep && !strings.Contains(l.logs.String(), `"jobs":2,`) {
				t.Errorf("the restarted controller did not read the two running jobs from the snapshot:\n%s", l.logs.String())
			}
			l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}})
			l.cycle()
			got := l.updates()
			if !keep {
				if len(got) != 0 || l.restarts("old_domain") != 0 {
					t.Errorf("updates %q without knowing where the gang ran; want none", got)
				}
				if !strings.Contains(l.logs.String(), "not seen running by this controller, nor in the snapshot it started from") {
					t.Errorf("log does not say why the gang is left:\n%s", l.logs.String())
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], "scontrol update JobId=2 Features=[gt_leaf2|") {
				t.Fatalf("updates %q; want job 2 bound to leaf2 first\n%s", got, l.logs.String())
			}
			if l.restarts("old_domain") != 1 {
				t.Errorf("gangtopo_failure_restarts_total{old_domain} = %v, want 1", l.restarts("old_domain"))
			}
		})
	}
}

// node06 fails and node07, node08 are drained: leaf2 has one healthy
// node, too few for 2x8 until a repair: the gang is bound to the leaves
// that hold it now, the engine's choice (leaf4) first, leaf2 last.
func TestRequeuedGangElsewhere(t *testing.T) {
	l := newFailureLab(t)
	l.poll(true, 0, "", nil)
	l.cycle()
	l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}, "node07": {"IDLE", "DRAIN"}, "node08": {"IDLE", "DRAIN"}})
	l.cycle()
	got := l.updates()
	if len(got) != 1 || !strings.HasPrefix(got[0], "scontrol update JobId=2 Features=[gt_leaf4|gt_leaf1|gt_leaf3|gt_leaf2] AdminComment=") {
		t.Fatalf("updates %q; want leaf2 last\n%s", got, l.logs.String())
	}
	if l.restarts("elsewhere") != 1 {
		t.Errorf("gangtopo_failure_restarts_total{elsewhere} = %v, want 1", l.restarts("elsewhere"))
	}
	// leaf2 (node05-08) has node05 healthy; spine1 (leaf1, leaf2) 5 of 8
	// (node16, drained in the capture, makes leaf4 and spine2 degraded too)
	for _, c := range []struct {
		tier, domain string
		want         float64
	}{{"leaf", "leaf2", 1}, {"spine", "spine1", 5}, {"leaf", "leaf4", 3}} {
		if got := testutil.ToFloat64(l.c.m.healthy.WithLabelValues(c.tier, c.domain)); got != c.want {
			t.Errorf("gangtopo_degraded_domain_healthy_nodes{%s,%s} = %v, want %v", c.tier, c.domain, got, c.want)
		}
	}
	if got := testutil.ToFloat64(l.c.m.degraded.WithLabelValues("leaf")); got != 2 {
		t.Errorf("gangtopo_degraded_domains{leaf} = %v, want 2", got)
	}
}

// Requeued with every node it ran on healthy (a preemption, an
// administrator's requeue), or held by its requeue: not a failure's to
// handle.
func TestRequeueWithoutFailure(t *testing.T) {
	for _, tt := range []struct {
		name   string
		reason string
		states map[string][]string
	}{
		{"no node failed", "BeginTime", nil},
		{"held at requeue", "JobHeldUser", map[string][]string{"node06": {"DOWN"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newFailureLab(t)
			l.poll(true, 0, "", nil)
			l.cycle()
			l.poll(false, 1, tt.reason, tt.states)
			l.cycle()
			if got := l.updates(); len(got) != 0 {
				t.Errorf("updates %q; want none", got)
			}
		})
	}
}

// Off (rebind.after_failure: false): the requeued gang is left to plain
// re-binding, which leaves a job in BeginTime alone.
func TestRequeuedGangOff(t *testing.T) {
	l := newFailureLab(t)
	l.c.rebind.cfg.Rebind.AfterFailure = false
	l.c.duties.conf.cfg.Rebind.AfterFailure = false
	l.poll(true, 0, "", nil)
	l.cycle()
	l.poll(false, 1, "BeginTime", map[string][]string{"node06": {"DOWN"}})
	l.cycle()
	if got := l.updates(); len(got) != 0 {
		t.Errorf("updates %q; want none", got)
	}
}
