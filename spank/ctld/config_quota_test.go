package ctld

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/quota"
)

func TestParseQuota(t *testing.T) {
	in := `version: v1
topology: /t.yaml
snapshot: /s.json
quota:
  enabled: true
  shares:
    - {account: TeamA, gpus: 64, cap: 96}
    - account: teamb
      gpus: 32
      lend: false
      qos: b-own
  borrow_qos: lend
  reclaim_qos: take
  frag_weight: 0.5
  borrow_max_gpu_hours: 1024
  raise_interval: 2m
  max_per_cycle: 5
  job_interval: 1m
  pin_timeout: 5m
  timeout: 3s
`
	got, err := ParseConfig(strings.NewReader(in), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := QuotaConfig{Enabled: true,
		// account names are Slurm's: lower case
		Shares:    quota.Shares{{Account: "teama", GPUs: 64, Cap: 96, Lend: true}, {Account: "teamb", GPUs: 32}},
		OwnerQOS:  map[string]string{"teamb": "b-own"},
		BorrowQOS: "lend", ReclaimQOS: "take", FragWeight: 0.5, BorrowMaxGPUHours: 1024, RaiseInterval: 2 * time.Minute, MaxPerCycle: 5,
		JobInterval: time.Minute, PinTimeout: 5 * time.Minute, Timeout: 3 * time.Second}
	if diff := cmp.Diff(want, got.Quota); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.Quota.QOSOf("teama") != "gt-teama" || got.Quota.QOSOf("TeamB") != "b-own" {
		t.Errorf("QOS of teama %q (want gt-teama), teamb %q (want b-own)", got.Quota.QOSOf("teama"), got.Quota.QOSOf("TeamB"))
	}
}

func TestParseQuotaErrors(t *testing.T) {
	const base = "version: v1\ntopology: /t.yaml\nsnapshot: /s.json\nquota:\n"
	tests := []struct{ name, in, want string }{
		{"negative share", base + "  shares: [{account: a, gpus: -8}]\n", "g.yaml:5: quota.shares[0].gpus: -8 is negative (a share is 0 or more GPUs)"},
		{"not a number", base + "  shares: [{account: a, gpus: lots}]\n", `quota.shares[0].gpus: "lots" is not a whole number of GPUs`},
		{"no account", base + "  shares: [{gpus: 8}]\n", "g.yaml:5: quota.shares[0].account: missing"},
		{"account twice", base + "  shares: [{account: a, gpus: 8}, {account: A, gpus: 8}]\n", "quota.shares[1].account: a has a share already"},
		{"cap below share", base + "  shares: [{account: a, gpus: 8, cap: 4}]\n", "quota.shares[0].cap: 4 is below the share's 8 GPUs"},
		{"bad account name", base + "  shares: [{account: \"a b\", gpus: 8}]\n", `quota.shares[0].account: "a b" is not a valid account name`},
		{"unknown share key", base + "  shares: [{account: a, gpu: 8}]\n", "quota.shares[0].gpu: unknown key (want one of account, cap, gpus, lend, qos)"},
		{"unknown key", base + "  sharez: []\n", "g.yaml:5: quota.sharez: unknown key"},
		{"enabled without shares", base + "  enabled: true\n", "quota.shares: missing: quota is enabled but names no account"},
		{"same QOS twice", base + "  shares: [{account: a, gpus: 8, qos: gt-borrow}]\n", `borrow_qos and the QOS of account a are the same QOS "gt-borrow"`},
		{"weight out of range", base + "  frag_weight: 11\n", "quota.frag_weight: 11 out of range (want 0..10)"},
		{"negative borrow bound", base + "  borrow_max_gpu_hours: -1\n", "quota.borrow_max_gpu_hours: -1 out of range (want 0..1000000000)"},
		{"shares not a list", base + "  shares: {a: 8}\n", "quota.shares: want a list of shares"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(strings.NewReader(tc.in), "g.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
