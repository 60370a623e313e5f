package quotaexec

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// readAccounting reads testdata/NAME-qos.txt and NAME-assoc.txt, in the
// formats Read asks sacctmgr for (testdata/README.md: where each comes
// from).
func readAccounting(t *testing.T, name string) *Accounting {
	t.Helper()
	q, err := os.ReadFile("testdata/" + name + "-qos.txt")
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile("testdata/" + name + "-assoc.txt")
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
	acc := readAccounting(t, "oldsync")
	wantQOS := map[string]QOS{
		"normal":     {Name: "normal", GrpGPUs: -1, PreemptMode: "cluster", Description: "Normal QOS default"},
		"gt-borrow":  {Name: "gt-borrow", GrpGPUs: 64, PreemptMode: "requeue", Description: "gt-borrow"},
		"gt-teama":   {Name: "gt-teama", GrpGPUs: 48, PreemptMode: "cluster", Description: "gt-teama"}, // cpu=64,gres/gpu=48
		"gt-teamb":   {Name: "gt-teamb", GrpGPUs: 64, PreemptMode: "cluster", Description: "gt-teamb"},
		"gt-reclaim": {Name: "gt-reclaim", GrpGPUs: -1, Preempt: []string{"gt-borrow"}, PreemptMode: "cluster", Description: "gt-reclaim"},
	}
	if diff := cmp.Diff(wantQOS, acc.QOS); diff != "" {
		t.Errorf("QOS (-want +got):\n%s", diff)
	}
	got := map[string]Assoc{}
	for n, a := range acc.Accounts {
		a.Lines = nil
		got[n] = a
	}
	wantAssoc := map[string]Assoc{
		// root's two lines differ: only normal is common; defaults differ
		"root": {Account: "root", QOS: []string{"normal"}},
		// teama's own line allows normal, root's the gt- QOS: nothing common
		"teama": {Account: "teama", QOS: []string{}},
		"teamb": {Account: "teamb", QOS: []string{}},
		"teamc": {Account: "teamc", QOS: []string{"gt-borrow", "gt-reclaim", "normal"}, DefaultQOS: "gt-borrow", OwnDefault: "gt-borrow"},
	}
	if diff := cmp.Diff(wantAssoc, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("associations (-want +got):\n%s", diff)
	}
	synced := readAccounting(t, "synced")
	if q := synced.QOS["gt-teama"]; !q.Ours || q.Mark != (Mark{Role: RoleOwn, Account: "teama"}) {
		t.Errorf("gt-teama's record: %+v", q)
	}
}

func TestParseErrors(t *testing.T) {
	if _, err := ParseQOS("a|b\n"); err == nil || !strings.Contains(err.Error(), `"a|b" is not name|grptres|preempt|preemptmode|description`) {
		t.Errorf("ParseQOS: %v", err)
	}
	if _, err := ParseQOS("a|gres/gpu=x|||\n"); err == nil || !strings.Contains(err.Error(), "QOS a: GrpTRES \"gres/gpu=x\": gres/gpu is not a count") {
		t.Errorf("ParseQOS: %v", err)
	}
	if _, err := ParseAssocs("a|b|c|d\n"); err == nil {
		t.Error("ParseAssocs accepted a short line")
	}
}

func TestMark(t *testing.T) {
	tests := []struct {
		desc string
		want Mark
		ok   bool
	}{
		{"gangtopo-quota v1 role=own account=teama default=normal", Mark{Role: RoleOwn, Account: "teama", Default: "normal"}, true},
		{"gangtopo-quota v1 role=own account=teama default=-", Mark{Role: RoleOwn, Account: "teama"}, true},
		{"gangtopo-quota v1 role=borrow", Mark{Role: RoleBorrow}, true},
		{"GANGTOPO-QUOTA V1 ROLE=RECLAIM", Mark{Role: RoleReclaim}, true}, // Slurm may show it in any case
		{"gt-teama", Mark{}, false},                   // sacctmgr's default: the name
		{"gangtopo-quota v1 role=own", Mark{}, false}, // own names its account
		{"gangtopo-quota v1 role=borrow account=x", Mark{}, false},
		{"gangtopo-quota v1 role=other", Mark{}, false},
		{"gangtopo-quota v1 role=borrow size=3", Mark{}, false}, // not written whole by gangtopo
		{"see gangtopo-quota v1 role=borrow", Mark{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseMark(tt.desc)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseMark(%q) = %+v, %v; want %+v, %v", tt.desc, got, ok, tt.want, tt.ok)
		}
		if ok {
			if back, _ := ParseMark(got.String()); back != got {
				t.Errorf("%+v does not read back: %q", got, got.String())
			}
		}
	}
}

func labConfig() ctld.QuotaConfig {
	c := ctld.DefaultQuota()
	c.Enabled = true
	c.Shares = quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}}
	return c
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		acc    string
		shares quota.Shares
		qos    string // account teama's qos:
		want   []string
		none   bool
	}{
		{name: "after sync", acc: "synced", none: true},
		{name: "an earlier sync's QOS are not gangtopo's", acc: "oldsync", want: []string{
			`QOS gt-borrow (quota.borrow_qos) exists, and gangtopo did not create it (its description "gt-borrow" has no "gangtopo-quota v1" record)`,
			"if an earlier gangtopo quota sync created gt-teama, run gangtopo quota sync --adopt --yes",
			"account teama may not use its QOS gt-teama (its associations' common QOS: none)"}},
		{name: "users may use the borrow and reclaim QOS", acc: "oldsync", want: []string{
			"the association account=teama user=root may use QOS gt-borrow,gt-reclaim: any of its users could put jobs there",
			"the association account=root user=root may use QOS gt-reclaim",
			"the association account=teamc may use QOS gt-borrow,gt-reclaim"}},
		{name: "a shared QOS", acc: "synced", qos: "normal", want: []string{
			`QOS normal (qos of account teama in quota.shares) exists, and gangtopo did not create it (its description "Normal QOS default"`,
			"Leave the name out of gangtopo.yaml (gangtopo quota sync then creates gt-teama)"}},
		{name: "a QOS of gangtopo's in another role", acc: "synced", qos: "gt-borrow", want: []string{
			"QOS gt-borrow (qos of account teama in quota.shares) is gangtopo's borrow QOS by its description"}},
		{name: "an unknown account", acc: "synced", shares: quota.Shares{{Account: "teamz", GPUs: 8}}, want: []string{
			"account teamz is not in Slurm's accounting", "Slurm knows root, teama, teamb", "QOS gt-teamz (qos of account teamz in quota.shares) does not exist"}},
		// 64 + 65 = 129 > 128
		{name: "past the cluster", acc: "synced", shares: quota.Shares{{Account: "teama", GPUs: 64}, {Account: "teamb", GPUs: 65}},
			want: []string{"sum to 129 GPUs, past the cluster's 128"}},
		{name: "negative", acc: "synced", shares: quota.Shares{{Account: "teama", GPUs: -1}}, want: []string{"account teama: share -1 is negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := labConfig()
			if tt.shares != nil {
				cfg.Shares = tt.shares
			}
			if tt.qos != "" {
				cfg.OwnerQOS = map[string]string{"teama": tt.qos}
			}
			err := Check(cfg, 128, readAccounting(t, tt.acc))
			if tt.none && err != nil {
				t.Errorf("Check: %v", err)
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
		})
	}
}

func TestCheckEnforce(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"AccountingStorageEnforce = associations,limits,qos", ""},
		{"AccountingStorageEnforce = associations,limits,qos,safe,wckeys", ""}, // "all", as scontrol prints it
		{"AccountingStorageEnforce = associations,limits", "without qos: "},
		{"AccountingStorageEnforce = none", "without limits and qos"},
		{"AccountingStorageType = accounting_storage/none", "prints no AccountingStorageEnforce"},
	} {
		err := CheckEnforce("ClusterName = lab\n" + tt.line + "\n")
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%q: %v, want %q", tt.line, err, tt.want)
		}
	}
}

func TestDesiredAndSteps(t *testing.T) {
	acc := readAccounting(t, "synced") // gt-borrow 64, gt-teama 48, gt-teamb 64, gt-reclaim 0
	cfg := labConfig()
	// teamb holds 64 own + 16 borrowed; teama idle: pool = 64 (teama lends)
	l := quota.Compute(cfg.Shares, 128, []quota.Job{{Account: "teamb", GPUs: 64, Running: true},
		{Account: "teamb", GPUs: 16, Running: true, Borrowing: true}}, nil, 0)
	// teama has a 16-GPU job in the reclaim QOS
	want := Desired(cfg, &l, map[string]int{"teama": 16}, 16, 0)
	// teama: 64 - 16; teamb: 64; borrow: 16 running + (64 - 16) left;
	// reclaim: the 16 there
	if diff := cmp.Diff(Limits{"gt-teama": 48, "gt-teamb": 64, "gt-borrow": 64, "gt-reclaim": 16}, want); diff != "" {
		t.Errorf("desired (-want +got):\n%s", diff)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want = Limits{"gt-teama": 56, "gt-teamb": 32, "gt-borrow": 64, "gt-reclaim": 16, "normal": 8}
	last := map[string]time.Time{"gt-teama": now.Add(-30 * time.Second), "gt-reclaim": now.Add(-time.Second)}
	// raising gt-teama (48 -> 56) waits for the interval; lowering gt-teamb
	// is at once; the reclaim QOS follows what is in it at once; normal is
	// not gangtopo's: never changed
	steps, held := Steps(acc, want, last, now, time.Minute, "gt-reclaim")
	var got []string
	for _, s := range steps {
		got = append(got, s.String())
	}
	if diff := cmp.Diff([]string{"sacctmgr -i modify qos where name=gt-reclaim set GrpTRES=gres/gpu=16",
		"sacctmgr -i modify qos where name=gt-teamb set GrpTRES=gres/gpu=32"}, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gt-teama"}, held); diff != "" {
		t.Errorf("held (-want +got):\n%s", diff)
	}
	last["gt-teama"] = now.Add(-time.Minute)
	if steps, _ = Steps(acc, want, last, now, time.Minute, "gt-reclaim"); len(steps) != 3 {
		t.Errorf("after the interval: %+v", steps)
	}
}
