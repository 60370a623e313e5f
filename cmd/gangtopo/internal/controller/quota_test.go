package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// quotaLab is the controller over the quota lab's capture (Slurm 22.05.8
// with slurmdbd; testdata/README.md): teamb runs 64 GPUs in its own QOS and
// 64 borrowed (gt-borrow) on the 128 GPUs of lab16; teama's 16-GPU job 52
// waits for Resources, teamb's 8-GPU job 51 for its QOS limit. sacctmgr
// prints the lab's QOS and associations (gt-teama's limit was 48 there)
// and fails when told to; every command the duty runs is logged.
func quotaLab(t *testing.T, sacctmgrFails bool) (*lab, string) {
	t.Helper()
	l := &lab{t: t, bin: t.TempDir()}
	dir := t.TempDir()
	l.out = filepath.Join(dir, "snapshot.json")
	l.topo = "../../../../docs/examples/lab16.yaml"
	log := filepath.Join(dir, "commands.log")
	l.slurm("sinfo", "cat "+abs(t, testdata+"quota_sinfo.json"))
	l.slurm("squeue", "cat "+abs(t, testdata+"quota_squeue.json"))
	qd := "../quotaexec/testdata/"
	// the lab's associations after `gangtopo quota sync --yes` (the
	// capture's account lines predate it: quotaexec's TestCheck uses them)
	assoc := filepath.Join(dir, "assoc.txt")
	synced := "root||normal|\nteama||gt-borrow,gt-reclaim,gt-teama|gt-teama\nteama|root|gt-borrow,gt-reclaim,gt-teama|gt-teama\n" +
		"teamb||gt-borrow,gt-reclaim,gt-teamb|gt-teamb\nteamb|root|gt-borrow,gt-reclaim,gt-teamb|gt-teamb\n"
	if err := os.WriteFile(assoc, []byte(synced), 0o644); err != nil {
		t.Fatal(err)
	}
	fail := ""
	if sacctmgrFails {
		fail = `echo "sacctmgr: error: Problem talking to the database: Connection refused" >&2; exit 1`
	}
	l.slurm("sacctmgr", fail+`
case "$*" in
*"show qos"*) cat `+abs(t, qd+"show-qos.txt")+`;;
*"show association"*) cat `+assoc+`;;
*) echo "sacctmgr $*" >> `+log+`;;
esac`)
	l.slurm("scontrol", `echo "scontrol $*" >> `+log)
	var err error
	l.d, err = daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "debug"}, &l.logs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ctld.Defaults()
	cfg.Quota.Enabled = true
	cfg.Quota.Shares = quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}}
	update := func(ctx context.Context, job string, args ...string) error {
		return slurmstate.UpdateJob(ctx, l.bin, time.Second, job, args)
	}
	l.c, err = New(Config{Topology: l.topo, Output: l.out, Workload: frag.PhillyPrior(1),
		Poll:  &slurmstate.PollConfig{NodesFrom: slurmstate.SinfoJSON, JobsFrom: slurmstate.SqueueJSON, BinDir: l.bin, Timeout: time.Second},
		Quota: &QuotaSetup{Config: cfg, Sacctmgr: quotaexec.Sacctmgr{BinDir: l.bin, Timeout: time.Second}, Update: update}}, l.d)
	if err != nil {
		t.Fatal(err)
	}
	l.cluster = l.c.topo.Cluster
	return l, log
}

func commands(t *testing.T, log string) []string {
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func TestQuotaDutyReclaims(t *testing.T) {
	l, log := quotaLab(t, false)
	if _, err := l.c.cycle(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	// gt-teama back to its share 64 (a raise from the lab's 48: the first
	// raise of the QOS is not held). teama runs nothing and waits for its
	// 16-GPU job 52: it keeps 16 of its idle 64 back for it and lends 48
	// (quota.Ledger); teamb already borrows 64, more than the 48 lent, so
	// gt-borrow stays at 64 running there + max(0, pool 48 - borrowed 64)
	// = 64, unchanged, and teamb's job 51 may not borrow more. (A rule
	// under which a waiting team lends nothing gives the same commands
	// here: quotaexec's TestPlanMoves tells the two apart.) teama's job 52 (16
	// GPUs, within its share) is pinned to one leaf's two nodes whose two
	// borrowed 8-GPU jobs Slurm will requeue; nothing of teamb's own 64 GPUs
	// (node01-08, gt-teamb) is touched.
	got := commands(t, log)
	if len(got) != 2 {
		t.Fatalf("commands: %q\nlogs:\n%s", got, l.logs.String())
	}
	if diff := cmp.Diff("sacctmgr -i modify qos where name=gt-teama set GrpTRES=gres/gpu=64", got[0]); diff != "" {
		t.Errorf("limit (-want +got):\n%s", diff)
	}
	pin := got[1]
	if !strings.HasPrefix(pin, "scontrol update JobId=52 QOS=gt-reclaim ReqNodeList=node") {
		t.Fatalf("reclaim: %q", pin)
	}
	nodes := strings.TrimPrefix(pin, "scontrol update JobId=52 QOS=gt-reclaim ReqNodeList=")
	// the borrowed jobs run on node09-16 (leaf3 node09-12, leaf4
	// node13-16); a 16-GPU job takes two whole nodes of one leaf, and never
	// node01-08, where teamb's own (non-borrowing) jobs run
	names, err := hostlist.Expand(nodes)
	if err != nil || len(names) != 2 {
		t.Fatalf("pinned to %q: want two nodes", nodes)
	}
	leaf := func(n string) string {
		if n >= "node09" && n <= "node12" {
			return "leaf3"
		}
		if n >= "node13" && n <= "node16" {
			return "leaf4"
		}
		return "not borrowed: " + n
	}
	if leaf(names[0]) != leaf(names[1]) || strings.HasPrefix(leaf(names[0]), "not") || strings.HasPrefix(leaf(names[1]), "not") {
		t.Errorf("pinned to %v: want two nodes of one leaf among node09-16", names)
	}
	if !strings.Contains(l.logs.String(), `"message":"quota: entitled job pinned to reclaim borrowed GPUs"`) ||
		!strings.Contains(l.logs.String(), `"message":"quota: QOS limit changed"`) {
		t.Errorf("every change is logged:\n%s", l.logs.String())
	}
}

func TestQuotaDutyChangesNothingWhenSacctmgrFails(t *testing.T) {
	l, log := quotaLab(t, true)
	if _, err := l.c.cycle(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := commands(t, log); got != nil {
		t.Errorf("commands run while sacctmgr fails: %q", got)
	}
	if !strings.Contains(l.logs.String(), "sacctmgr failed; the limits in force stay, no job is moved") {
		t.Errorf("no error logged:\n%s", l.logs.String())
	}
}

// A pin that did not start its job is released: the capture with teama's
// job 52 as the controller leaves it after a reclaim (QOS gt-reclaim,
// ReqNodeList node[09-10]) but still waiting. A controller that finds it
// so times it from then: nothing at the first cycle, nothing before
// pin_timeout (2 minutes), then job 52 goes back to gt-teama with its node
// list cleared, once.
func TestQuotaDutyReleasesAStalePin(t *testing.T) {
	l, log := quotaLab(t, false)
	squeue := pinnedCapture(t, "52", "gt-reclaim", "node[09-10]")
	l.slurm("squeue", "cat "+squeue)
	t0 := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	release := "scontrol update JobId=52 QOS=gt-teama ReqNodeList="
	for _, step := range []struct {
		at   time.Duration
		want int // release commands logged so far
	}{{0, 0}, {90 * time.Second, 0}, {2*time.Minute + 5*time.Second, 1}} {
		at := t0.Add(step.at)
		l.c.now = func() time.Time { return at }
		if _, err := l.c.cycle(context.Background(), at); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range commands(t, log) {
			if c == release {
				n++
			}
		}
		if n != step.want {
			t.Fatalf("at +%s: %d releases, want %d; commands %q", step.at, n, step.want, commands(t, log))
		}
	}
	if !strings.Contains(l.logs.String(), `"message":"quota: reclaim pin released; the job is planned again"`) {
		t.Errorf("the release is logged:\n%s", l.logs.String())
	}
}

// pinnedCapture is the quota lab's squeue --json with job id in QOS qos,
// its node list nodes.
func pinnedCapture(t *testing.T, id, qos, nodes string) string {
	t.Helper()
	data, err := os.ReadFile(testdata + "quota_squeue.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range doc["jobs"].([]any) {
		job := j.(map[string]any)
		if fmt.Sprint(job["job_id"]) == id {
			job["qos"], job["required_nodes"], found = qos, nodes, true
		}
	}
	if !found {
		t.Fatalf("no job %s in the capture", id)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "squeue.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
