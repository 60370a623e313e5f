package quotaexec

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// The captures come from the quota lab (Slurm 22.05.8 with slurmdbd):
// sacctmgr -nP show qos format=name,grptres,preempt,preemptmode, and
// show association format=account,user,qos,defaultqos.
func readAccounting(t *testing.T) *Accounting {
	t.Helper()
	q, err := os.ReadFile("testdata/show-qos.txt")
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile("testdata/show-assoc.txt")
	if err != nil {
		t.Fatal(err)
	}
	qos, err := ParseQOS(string(q))
	if err != nil {
		t.Fatal(err)
	}
	assocs, err := ParseAssocs(string(a))
	if err != nil {
		t.Fatal(err)
	}
	return &Accounting{QOS: qos, Accounts: assocs}
}

func TestParse(t *testing.T) {
	acc := readAccounting(t)
	wantQOS := map[string]QOS{
		"normal":     {Name: "normal", GrpGPUs: -1, PreemptMode: "cluster"},
		"gt-borrow":  {Name: "gt-borrow", GrpGPUs: 64, PreemptMode: "requeue"},
		"gt-teama":   {Name: "gt-teama", GrpGPUs: 48, PreemptMode: "cluster"}, // cpu=64,gres/gpu=48
		"gt-teamb":   {Name: "gt-teamb", GrpGPUs: 64, PreemptMode: "cluster"},
		"gt-reclaim": {Name: "gt-reclaim", GrpGPUs: -1, Preempt: []string{"gt-borrow"}, PreemptMode: "cluster"},
	}
	if diff := cmp.Diff(wantQOS, acc.QOS); diff != "" {
		t.Errorf("QOS (-want +got):\n%s", diff)
	}
	wantAssoc := map[string]Assoc{
		// root's two lines differ: only normal is common; defaults differ
		"root": {Account: "root", QOS: []string{"normal"}},
		// teama's own line allows normal, root's the gt- QOS: nothing common
		"teama": {Account: "teama", QOS: []string{}},
		"teamb": {Account: "teamb", QOS: []string{}},
		"teamc": {Account: "teamc", QOS: []string{"gt-borrow", "gt-reclaim", "normal"}, DefaultQOS: "gt-borrow"},
	}
	if diff := cmp.Diff(wantAssoc, acc.Accounts); diff != "" {
		t.Errorf("associations (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := ParseQOS("a|b\n"); err == nil || !strings.Contains(err.Error(), `"a|b" is not name|grptres|preempt|preemptmode`) {
		t.Errorf("ParseQOS: %v", err)
	}
	if _, err := ParseQOS("a|gres/gpu=x||\n"); err == nil || !strings.Contains(err.Error(), "QOS a: GrpTRES \"gres/gpu=x\": gres/gpu is not a count") {
		t.Errorf("ParseQOS: %v", err)
	}
	if _, err := ParseAssocs("a|b\n"); err == nil {
		t.Error("ParseAssocs accepted a short line")
	}
}

func labConfig() ctld.QuotaConfig {
	c := ctld.DefaultQuota()
	c.Enabled = true
	c.Shares = quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}}
	return c
}

func TestCheck(t *testing.T) {
	acc := readAccounting(t)
	tests := []struct {
		name   string
		shares quota.Shares
		want   []string // substrings; none: fine
	}{
		{"the lab's shares", quota.Shares{{Account: "teama", GPUs: 64}, {Account: "teamb", GPUs: 64}},
			[]string{"account teama may not use QOS gt-teama", "account teamb may not use QOS gt-borrow"}},
		{"an unknown account", quota.Shares{{Account: "teamz", GPUs: 8}},
			[]string{"account teamz is not in Slurm's accounting", "Slurm knows root, teama, teamb, teamc", "QOS gt-teamz does not exist"}},
		// 64 + 65 = 129 > 128
		{"past the cluster", quota.Shares{{Account: "teama", GPUs: 64}, {Account: "teamb", GPUs: 65}}, []string{"sum to 129 GPUs, past the cluster's 128"}},
		{"negative", quota.Shares{{Account: "teamc", GPUs: -1}}, []string{"account teamc: share -1 is negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := labConfig()
			cfg.Shares = tt.shares
			err := Check(cfg, 128, acc)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
		})
	}
}

func TestDesiredAndSteps(t *testing.T) {
	acc := readAccounting(t) // gt-borrow 64, gt-teama 48, gt-teamb 64
	cfg := labConfig()
	// teamb holds 64 own + 16 borrowed; teama idle: pool = 64 (teama lends)
	l := quota.Compute(cfg.Shares, 128, []quota.Job{{Account: "teamb", GPUs: 64, Running: true},
		{Account: "teamb", GPUs: 16, Running: true, Borrowing: true}}, nil, 0)
	// teama has a 16-GPU job in the reclaim QOS
	want := Desired(cfg, &l, map[string]int{"teama": 16}, 16)
	// teama: 64 - 16; teamb: 64; borrow: 16 running + (64 - 16) left
	if diff := cmp.Diff(Limits{"gt-teama": 48, "gt-teamb": 64, "gt-borrow": 64}, want); diff != "" {
		t.Errorf("desired (-want +got):\n%s", diff)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want = Limits{"gt-teama": 56, "gt-teamb": 32, "gt-borrow": 64}
	// raising gt-teama (48 -> 56) waits for the interval; lowering gt-teamb is at once
	steps, held := Steps(acc, want, map[string]time.Time{"gt-teama": now.Add(-30 * time.Second)}, now, time.Minute)
	if len(steps) != 1 || steps[0].QOS != "gt-teamb" || steps[0].From != 64 || steps[0].To != 32 ||
		steps[0].String() != "sacctmgr -i modify qos where name=gt-teamb set GrpTRES=gres/gpu=32" {
		t.Errorf("steps %+v", steps)
	}
	if diff := cmp.Diff([]string{"gt-teama"}, held); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	steps, _ = Steps(acc, want, map[string]time.Time{"gt-teama": now.Add(-time.Minute)}, now, time.Minute)
	if len(steps) != 2 {
		t.Errorf("after the interval: %+v", steps)
	}
}

func TestSyncPlan(t *testing.T) {
	acc := readAccounting(t)
	cfg := labConfig()
	cfg.Shares = append(cfg.Shares, quota.Share{Account: "teamc", GPUs: 0})
	var got []string
	for _, c := range SyncPlan(cfg, acc) {
		got = append(got, c.String())
	}
	want := []string{
		// gt-borrow and gt-reclaim are as they should be; gt-teama and
		// gt-teamb exist with limits (the controller's to keep)
		"sacctmgr -i add qos gt-teamc set GrpTRES=gres/gpu=0 Preempt=",
		"sacctmgr -i modify account where name=teama set QOS+=gt-teama,gt-borrow,gt-reclaim DefaultQOS=gt-teama",
		"sacctmgr -i modify account where name=teamb set QOS+=gt-teamb,gt-borrow,gt-reclaim DefaultQOS=gt-teamb",
		"sacctmgr -i modify account where name=teamc set QOS+=gt-teamc DefaultQOS=gt-teamc",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
