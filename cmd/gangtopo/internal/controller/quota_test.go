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

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// quotaOpts vary the quota lab.
type quotaOpts struct {
	sacctmgrFails bool   // every sacctmgr command fails (slurmdbd down)
	modifyFails   string // changes of this QOS fail ("*": every change)
	assoc         string // the associations sacctmgr prints (default: after sync)
	enforce       string // slurm.conf's AccountingStorageEnforce
	edit          func(*ctld.Config)
}

// quotaLab is the controller over the quota lab's capture (Slurm 22.05.8
// with slurmdbd; testdata/README.md): teamb runs 64 GPUs in its own QOS and
// 64 borrowed (gt-borrow) on the 128 GPUs of lab16; teama's 16-GPU job 52
// waits for Resources, teamb's 8-GPU job 51 for its QOS limit. sacctmgr
// prints the QOS and associations after `gangtopo quota sync --yes`
// (quotaexec's testdata synced: gt-teama's limit was 48) and fails when
// told to; every change the duty makes is logged.
func quotaLab(t *testing.T, o quotaOpts) (*lab, string) {
	t.Helper()
	l := &lab{t: t, bin: t.TempDir()}
	dir := t.TempDir()
	l.out = filepath.Join(dir, "snapshot.json")
	l.topo = "../../../../docs/examples/lab16.yaml"
	log := filepath.Join(dir, "commands.log")
	l.slurm("sinfo", "cat "+abs(t, testdata+"quota_sinfo.json"))
	l.slurm("squeue", "cat "+abs(t, testdata+"quota_squeue.json"))
	qd := "../quotaexec/testdata/"
	assoc := abs(t, qd+"synced-assoc.txt")
	if o.assoc != "" {
		assoc = filepath.Join(dir, "assoc.txt")
		if err := os.WriteFile(assoc, []byte(o.assoc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fail, modify, refuse := "", `echo "sacctmgr $*" >> `+log, `echo " Nothing modified" >&2; exit 1`
	if o.sacctmgrFails {
		fail = `echo "sacctmgr: error: Problem talking to the database: Connection refused" >&2; exit 1`
	}
	failing := "no such QOS"
	switch o.modifyFails {
	case "*":
		modify += "; " + refuse
	case "":
	default:
		failing = "name=" + o.modifyFails + " "
	}
	l.slurm("sacctmgr", fail+`
case "$*" in
*"show qos"*) cat `+abs(t, qd+"synced-qos.txt")+`;;
*"show association"*) cat `+assoc+`;;
*"`+failing+`"*) `+modify+"; "+refuse+`;;
*) `+modify+`;;
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
	if o.edit != nil {
		o.edit(&cfg)
	}
	actions := testActions(t, l.bin, &cfg) // before cfg is copied into the setup
	enforce := o.enforce
	if enforce == "" {
		enforce = "associations,limits,qos"
	}
	show := func(context.Context) (string, error) { return "AccountingStorageEnforce = " + enforce + "\n", nil }
	l.c, err = New(Config{Topology: l.topo, Output: l.out, Workload: frag.PhillyPrior(1),
		Poll:    &slurmstate.PollConfig{NodesFrom: slurmstate.SinfoJSON, JobsFrom: slurmstate.SqueueJSON, BinDir: l.bin, Timeout: 10 * time.Second},
		Quota:   &QuotaSetup{Config: cfg, Sacctmgr: quotaexec.Sacctmgr{BinDir: l.bin, Timeout: 10 * time.Second}, ShowConfig: show},
		Actions: actions}, l.d)
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

// cycleAt runs one controller cycle at a given time.
func (l *lab) cycleAt(at time.Time) {
	l.t.Helper()
	l.c.now = func() time.Time { return at }
	if _, err := l.c.cycle(context.Background(), at); err != nil {
		l.t.Fatal(err)
	}
}

func TestQuotaDutyReclaims(t *testing.T) {
	l, log := quotaLab(t, quotaOpts{})
	now := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	l.cycleAt(now)
	// gt-teama back to its share 64 (a raise from the lab's 48: the first
	// raise of the QOS is not held). teama runs nothing and waits for its
	// 16-GPU job 52: it keeps 16 of its idle 64 back for it and lends 48
	// (quota.Ledger); teamb already borrows 64, more than the 48 lent, so
	// gt-borrow stays at 64 running there + max(0, pool 48 - borrowed 64)
	// = 64, unchanged, and teamb's job 51 may not borrow more. (A rule
	// under which a waiting team lends nothing gives the same commands
	// here: quotaexec's TestPlanMoves tells the two apart.) teama's job 52 (16
	// GPUs, within its share) is pinned to one leaf's two nodes whose two
	// borrowed 8-GPU jobs Slurm will requeue; the reclaim QOS's cap goes
	// from 0 (nothing there) to its 16 GPUs just before; nothing of teamb's
	// own 64 GPUs (node01-08, gt-teamb) is touched.
	got := commands(t, log)
	if len(got) != 3 {
		t.Fatalf("commands: %q\nlogs:\n%s", got, l.logs.String())
	}
	want := []string{"sacctmgr -i modify qos where name=gt-teama set GrpTRES=gres/gpu=64",
		"sacctmgr -i modify qos where name=gt-reclaim set GrpTRES=gres/gpu=16"}
	if diff := cmp.Diff(want, got[:2]); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	pin := strings.Fields(got[2])
	if len(pin) < 4 {
		t.Fatalf("reclaim: %q", got[2])
	}
	nodes := strings.TrimPrefix(pin[3], "ReqNodeList=")
	// in one update: the node list, the mark (whose pin, where, until when
	// (pin_timeout 2m), the QOS the job goes back to when it is undone),
	// the reclaim QOS
	wantPin := "scontrol update JobId=52 ReqNodeList=" + nodes + " AdminComment=gangtopo-pin: by=quota nodes=" + nodes +
		" until=2026-12-04T06:02:00Z qos=gt-teama QOS=gt-reclaim"
	if got[2] != wantPin {
		t.Errorf("pin %q, want %q", got[2], wantPin)
	}
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
	for _, msg := range []string{"quota: entitled job pinned to reclaim borrowed GPUs", "quota: QOS limit changed"} {
		if !strings.Contains(l.logs.String(), `"message":"`+msg+`"`) {
			t.Errorf("not logged: %s\n%s", msg, l.logs.String())
		}
	}
	audited(t, l, []string{"limit  gt-teama", "limit  gt-reclaim", "pin 52 gt-reclaim"})
}

// audited checks the audit log's changes (action and what they acted
// on), each written before it was made.
func audited(t *testing.T, l *lab, want []string) {
	t.Helper()
	changes, _, err := actuate.Audit{Path: l.c.duties.conf.cfg.Actions.AuditLog}.Changes(time.Now().Add(24*time.Hour*365), 100*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range changes {
		got = append(got, strings.TrimSpace(e.Action+" "+e.Job+" "+e.QOS))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

// TestQuotaDutyChangesNothing: whatever makes the duty distrust Slurm's
// state, it changes nothing and says why every cycle.
func TestQuotaDutyChangesNothing(t *testing.T) {
	grant := strings.Replace(readFile(t, "../quotaexec/testdata/synced-assoc.txt"), "teama|root||gt-teama,normal|", "teama|root||gt-reclaim,gt-teama,normal|", 1)
	for _, tt := range []struct {
		name string
		o    quotaOpts
		want string
	}{
		{"sacctmgr fails", quotaOpts{sacctmgrFails: true}, "sacctmgr failed; the limits in force stay, no job is moved"},
		{"Slurm does not enforce QOS", quotaOpts{enforce: "associations,limits"}, "without qos any user may put a job in any QOS"},
		{"a user may use the reclaim QOS", quotaOpts{assoc: grant}, "the association account=teama user=root may use QOS gt-reclaim"},
		{"quotas are off", quotaOpts{edit: func(c *ctld.Config) { c.Quota.Enabled = false }}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, log := quotaLab(t, tt.o)
			l.cycleAt(time.Now())
			if got := commands(t, log); got != nil {
				t.Errorf("commands run: %q", got)
			}
			if !strings.Contains(l.logs.String(), tt.want) {
				t.Errorf("not logged %q:\n%s", tt.want, l.logs.String())
			}
		})
	}
}

// TestQuotaDutyStopsAfterAFailedLimit: a QOS limit that cannot be changed
// ends the cycle's changes: no job is moved or pinned on limits that are
// not what the plan counted on. In the quota lab the cycle raises
// gt-teama to 64, then the reclaim QOS's cap from 0 to 16 for teama's
// 16-GPU job 52, then pins 52 (TestQuotaDutyReclaims).
func TestQuotaDutyStopsAfterAFailedLimit(t *testing.T) {
	teama := "sacctmgr -i modify qos where name=gt-teama set GrpTRES=gres/gpu=64"
	reclaim := "sacctmgr -i modify qos where name=gt-reclaim set GrpTRES=gres/gpu=16"
	for _, tt := range []struct {
		name  string
		fails string // the QOS whose changes sacctmgr refuses
		want  []string
	}{
		// the first change fails: nothing after it
		{"every change fails", "*", []string{teama}},
		{"the account's own QOS", "gt-teama", []string{teama}},
		// the plan's limits are made; the cap a pin needs is not: no pin
		// (job 52 in gt-reclaim on a cap of 0 would wait there, pinned,
		// for nothing), and nothing more this cycle
		{"the reclaim QOS's cap before a pin", "gt-reclaim", []string{teama, reclaim}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, log := quotaLab(t, quotaOpts{modifyFails: tt.fails})
			l.cycleAt(time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC))
			if diff := cmp.Diff(tt.want, commands(t, log)); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if !strings.Contains(l.logs.String(), "changing a QOS limit failed or was refused; the limits in force stay and nothing more is changed this cycle") {
				t.Errorf("not logged:\n%s", l.logs.String())
			}
		})
	}
}

// TestQuotaDutyMoveLimits: teama's four 16-GPU jobs wait in the borrow
// QOS although each is within its share (64): each is moved to gt-teama,
// at most quota.max_per_cycle (2) updates a cycle, and a job moved is not
// moved again within job_interval (30 s) though Slurm (the capture) still
// shows it where it was.
func TestQuotaDutyMoveLimits(t *testing.T) {
	l, log := quotaLab(t, quotaOpts{edit: func(c *ctld.Config) { c.Quota.MaxPerCycle = 2 }})
	l.slurm("squeue", "cat "+fourInBorrow(t))
	t0 := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	for _, step := range []struct {
		at   time.Duration
		want []string // jobs moved this cycle
	}{
		{0, []string{"52", "53"}},                // max_per_cycle 2
		{10 * time.Second, []string{"54", "55"}}, // 52 and 53 within job_interval
		{20 * time.Second, nil},                  // all four within it
		{35 * time.Second, []string{"52", "53"}}, // 52 and 53 past it
	} {
		before := len(commands(t, log))
		l.cycleAt(t0.Add(step.at))
		var moved []string
		for _, c := range commands(t, log)[before:] {
			if id, ok := strings.CutPrefix(c, "scontrol update JobId="); ok {
				if !strings.HasSuffix(id, " QOS=gt-teama") {
					t.Errorf("at +%s: %q", step.at, c)
				}
				moved = append(moved, strings.Fields(id)[0])
			}
		}
		if diff := cmp.Diff(step.want, moved); diff != "" {
			t.Errorf("at +%s: moved (-want +got):\n%s", step.at, diff)
		}
	}
}

// fourInBorrow is the quota lab's capture with teama's job 52 four
// times (52-55), each waiting in the borrow QOS.
func fourInBorrow(t *testing.T) string {
	t.Helper()
	return editCapture(t, func(jobs []map[string]any) []map[string]any {
		var out []map[string]any
		for _, j := range jobs {
			if fmt.Sprint(j["job_id"]) == "52" {
				for _, id := range []int{52, 53, 54, 55} {
					c := map[string]any{}
					for k, v := range j {
						c[k] = v
					}
					c["job_id"], c["qos"] = id, "gt-borrow"
					out = append(out, c)
				}
				continue
			}
			out = append(out, j)
		}
		return out
	})
}

// TestQuotaDutyCountsFailedUpdates: an update that ran counts against
// quota.max_per_cycle (2) whether Slurm made it or not: slurmctld did the
// work, and a job that keeps failing must not let the cycle run through
// every other job.
func TestQuotaDutyCountsFailedUpdates(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fails string   // the job whose update scontrol refuses
		tried []string // the jobs whose update ran
	}{
		{"none fails", "", []string{"52", "53"}},
		{"52 fails: it counts", "52", []string{"52", "53"}},
		{"53 fails: it counts", "53", []string{"52", "53"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, log := quotaLab(t, quotaOpts{edit: func(c *ctld.Config) { c.Quota.MaxPerCycle = 2 }})
			l.slurm("squeue", "cat "+fourInBorrow(t))
			l.slurm("scontrol", `echo "scontrol $*" >> `+log+`
case "$*" in *"JobId=`+tt.fails+` "*) echo "scontrol: error: Invalid job id specified" >&2; exit 1;; esac`)
			l.cycleAt(time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC))
			var tried []string
			for _, c := range commands(t, log) {
				if id, ok := strings.CutPrefix(c, "scontrol update JobId="); ok {
					tried = append(tried, strings.Fields(id)[0])
				}
			}
			if diff := cmp.Diff(tt.tried, tried); diff != "" {
				t.Errorf("updates run (-want +got):\n%s", diff)
			}
		})
	}
}

// A reclaim pin that did not start its job expires: whoever leads undoes
// it (the generic expiry, pins.go) and the duty counts it. The capture
// with teama's job 52 as the controller leaves it after a reclaim (QOS
// gt-reclaim, ReqNodeList node[09-10], the pin's mark until 06:02): before
// then nothing, after it the mark out, the node list cleared and the QOS
// put back, once.
func TestQuotaDutyReleasesAStalePin(t *testing.T) {
	l, log := quotaLab(t, quotaOpts{})
	mark := "gangtopo-pin: by=quota nodes=node[09-10] until=2026-12-04T06:02:00Z qos=gt-teama"
	l.slurm("squeue", "cat "+editCapture(t, func(jobs []map[string]any) []map[string]any {
		for _, j := range jobs {
			if fmt.Sprint(j["job_id"]) == "52" {
				j["qos"], j["required_nodes"], j["admin_comment"] = "gt-reclaim", "node[09-10]", mark
			}
		}
		return jobs
	}))
	t0 := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	release := "scontrol update JobId=52 AdminComment= ReqNodeList= QOS=gt-teama"
	for _, step := range []struct {
		at   time.Duration
		want int // release commands logged so far
	}{{0, 0}, {90 * time.Second, 0}, {2*time.Minute + 5*time.Second, 1}} {
		l.cycleAt(t0.Add(step.at))
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

// TestQuotaDutyPutsBackAStray: a waiting job in the reclaim QOS without a
// quota pin (its mark was taken out while a user had changed its node
// list) would preempt wherever it likes: it goes back to its own QOS.
func TestQuotaDutyPutsBackAStray(t *testing.T) {
	l, log := quotaLab(t, quotaOpts{})
	l.slurm("squeue", "cat "+editCapture(t, func(jobs []map[string]any) []map[string]any {
		for _, j := range jobs {
			if fmt.Sprint(j["job_id"]) == "52" {
				j["qos"] = "gt-reclaim"
			}
		}
		return jobs
	}))
	l.cycleAt(time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC))
	found := false
	for _, c := range commands(t, log) {
		found = found || c == "scontrol update JobId=52 QOS=gt-teama"
		if strings.Contains(c, "JobId=52 ReqNodeList") {
			t.Errorf("the stray was pinned: %q", c)
		}
	}
	if !found {
		t.Errorf("job 52 not put back: %q", commands(t, log))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// editCapture is the quota lab's squeue --json with its jobs changed by
// edit.
func editCapture(t *testing.T, edit func([]map[string]any) []map[string]any) string {
	t.Helper()
	return editJSON(t, testdata+"quota_squeue.json", "jobs", edit)
}

// editJSON is a copy of a capture whose list under key edit changed.
func editJSON(t *testing.T, path, key string, edit func([]map[string]any) []map[string]any) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &doc); err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	for _, j := range doc[key].([]any) {
		items = append(items, j.(map[string]any))
	}
	doc[key] = edit(items)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	copyTo := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(copyTo, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return copyTo
}

// TestQuotaDutyDoesNotPinAJobThatFits: teamb's borrowed jobs on node15
// and node16 ended, and Slurm has not looked at teama's job 52 yet
// (reason None): it fits the free nodes now, so nothing is pinned and
// nothing preempted (Slurm starts it there itself).
func TestQuotaDutyDoesNotPinAJobThatFits(t *testing.T) {
	l, log := quotaLab(t, quotaOpts{})
	l.slurm("sinfo", "cat "+editJSON(t, testdata+"quota_sinfo.json", "nodes", func(nodes []map[string]any) []map[string]any {
		for _, n := range nodes {
			if n["name"] == "node15" || n["name"] == "node16" {
				n["state"], n["gres_used"], n["alloc_cpus"], n["idle_cpus"] = "idle", "gpu:h100:0(IDX:N/A)", 0, 64
			}
		}
		return nodes
	}))
	l.slurm("squeue", "cat "+editCapture(t, func(jobs []map[string]any) []map[string]any {
		var out []map[string]any
		for _, j := range jobs {
			switch fmt.Sprint(j["job_id"]) {
			case "49", "50":
				continue
			case "52":
				j["state_reason"] = "None"
			}
			out = append(out, j)
		}
		return out
	}))
	l.cycleAt(time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC))
	for _, c := range commands(t, log) {
		if strings.HasPrefix(c, "scontrol") || strings.Contains(c, "gt-reclaim") {
			t.Errorf("a job that fits now was pinned: %q", c)
		}
	}
}

// TestQuotaDutyPinsEachJobOnItsOwnNodes: the jobs pinned in one cycle
// never share nodes or victims. teama (share 64) waits with 16-GPU jobs
// copied from job 52; teamb borrows node09-16, one 8-GPU job a node, the
// last started on node14-16 (the cheapest to take). After each pin its
// nodes (and the jobs Slurm will requeue there) count as taken for the
// rest of the cycle, so the next job frees the next cheapest pair, and the
// reclaim QOS's cap grows by 16 GPUs a pin.
func TestQuotaDutyPinsEachJobOnItsOwnNodes(t *testing.T) {
	for _, tt := range []struct {
		name     string
		jobs     []int    // teama's waiting 16-GPU jobs
		decision string   // theirs (AdminComment), if any
		pins     []string // "job nodes", in the order made
		limit    []int    // gt-reclaim's caps, in the order set
	}{
		{name: "one job", jobs: []int{52}, pins: []string{"52 node[15-16]"}, limit: []int{16}},
		// 47 (node13) started 3 s before 48-50: node15-16 first, then
		// node13-14 (48 and the older 47) rather than a pair of leaf3
		{name: "two jobs", jobs: []int{52, 53}, pins: []string{"52 node[15-16]", "53 node[13-14]"}, limit: []int{16, 32}},
		// teamb's 64 borrowed GPUs all go back, 16 a job, leaf4 first:
		// four pins on four pairs of nodes
		{name: "four jobs", jobs: []int{52, 53, 54, 55}, pins: []string{"52 node[15-16]", "53 node[13-14]", "54 node[11-12]", "55 node[09-10]"},
			limit: []int{16, 32, 48, 64}},
		// bound to leaf4 by gangtopo's decision (a preferred leaf): two
		// fill it; the third is not planned on leaf3, out of its binding
		{name: "three jobs bound to leaf4", jobs: []int{52, 53, 54},
			decision: "gangtopo v1 waiting request=leaf:preferred gpus=16 bound=leaf4 snapshot=9: no leaf has room",
			pins:     []string{"52 node[15-16]", "53 node[13-14]"}, limit: []int{16, 32}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, log := quotaLab(t, quotaOpts{})
			l.slurm("squeue", "cat "+editCapture(t, func(jobs []map[string]any) []map[string]any {
				return copiesOf52(jobs, tt.jobs, tt.decision)
			}))
			l.cycleAt(time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC))
			var pins []string
			var caps []int
			for _, c := range commands(t, log) {
				var cap int
				if _, err := fmt.Sscanf(c, "sacctmgr -i modify qos where name=gt-reclaim set GrpTRES=gres/gpu=%d", &cap); err == nil {
					caps = append(caps, cap)
				}
				if f := strings.Fields(c); len(f) > 3 && strings.HasPrefix(f[3], "ReqNodeList=") {
					pins = append(pins, strings.TrimPrefix(f[2], "JobId=")+" "+strings.TrimPrefix(f[3], "ReqNodeList="))
				}
			}
			if diff := cmp.Diff(tt.pins, pins); diff != "" {
				t.Errorf("pins (-want +got):\n%s\ncommands %q", diff, commands(t, log))
			}
			if diff := cmp.Diff(tt.limit, caps); diff != "" {
				t.Errorf("gt-reclaim caps (-want +got):\n%s", diff)
			}
		})
	}
}

// copiesOf52 is the capture's jobs with job 52 (teama, 16 GPUs, waiting
// in gt-teama) once for each id, with gangtopo's decision in its
// AdminComment if one is given.
func copiesOf52(jobs []map[string]any, ids []int, decision string) []map[string]any {
	var out []map[string]any
	for _, j := range jobs {
		if fmt.Sprint(j["job_id"]) != "52" {
			out = append(out, j)
			continue
		}
		for _, id := range ids {
			c := map[string]any{}
			for k, v := range j {
				c[k] = v
			}
			c["job_id"] = id
			if decision != "" {
				c["admin_comment"] = decision
			}
			out = append(out, c)
		}
	}
	return out
}
