package ctld

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

func TestParseConfig(t *testing.T) {
	in := `version: v1
topology: /etc/gangtopo/cluster.yaml
snapshot: /var/lib/gangtopo/snapshot.json
jobs: gpu
default_topology: leaf:preferred
on_failure: closed
max_snapshot_age: 2m
reload_interval: 250ms
deadline: 20ms
pending_hold: 0s
decision_field: comment
feature_prefix: topo_
partitions: [gpu, big]
trusted_uids: [64030]
go_max_procs: 0
bind_nodes: 4
slurm_topology: block
rebind:
  enabled: false
  max_per_cycle: 3
  job_interval: 30s
  after_failure: false
  restart_at_once: true
  timeout: 2s
spares:
  tier: spine
  per_domain: 2
whole_node_gangs: true
actions:
  enabled: false
  dry_run: true
  audit_log: /srv/gt/actions.log
  leader: always
  host: ctl1
  max_per_cycle: 7
  backoff: 1m
  max_backoff: 1h
`
	got, err := ParseConfig(strings.NewReader(in), "gangtopo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Version: "v1", Topology: "/etc/gangtopo/cluster.yaml", Snapshot: "/var/lib/gangtopo/snapshot.json",
		Policy: jobsubmit.Policy{Jobs: jobsubmit.ScopeGPU, Default: request.Option{Tier: topology.TierLeaf, Mode: request.Preferred},
			DecisionField: "comment", FeaturePrefix: "topo_", Partitions: []string{"gpu", "big"}, BindNodes: 4, SlurmBlock: true,
			Spares: jobsubmit.Spares{Tier: topology.TierSpine, PerDomain: 2}, WholeNodeGangs: true},
		DefaultTopology: "leaf:preferred", SlurmTopology: "block", OnFailure: FailClosed, MaxSnapshotAge: 2 * time.Minute, ReloadInterval: 250 * time.Millisecond,
		Deadline: 20 * time.Millisecond, PendingHold: 0, TrustedUIDs: []int{64030}, GoMaxProcs: 0,
		Rebind: RebindConfig{Enabled: false, MaxPerCycle: 3, JobInterval: 30 * time.Second, Timeout: 2 * time.Second, AfterFailure: false, RestartAtOnce: true},
		Defrag: DefaultDefrag(), Quota: DefaultQuota(),
		Actions: ActionsConfig{Enabled: false, DryRun: true, AuditLog: "/srv/gt/actions.log", Leader: LeaderAlways, Host: "ctl1",
			MaxPerCycle: 7, Backoff: time.Minute, MaxBackoff: time.Hour}}
	want.Defrag.AuditLog = "/srv/gt/actions.log" // one audit log: defrag's follows actions'
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAuditLogOneFile: actions.audit_log and defrag.audit_log (its older
// name) name one file; either alone sets both, both must agree.
func TestAuditLogOneFile(t *testing.T) {
	head := "version: v1\ntopology: /t.yaml\nsnapshot: /s.json\n"
	tests := []struct {
		name, in, want, err string
	}{
		{"default", "", DefaultAuditLog, ""},
		{"actions alone", "actions:\n  audit_log: /a.log\n", "/a.log", ""},
		{"defrag alone", "defrag:\n  audit_log: /d.log\n", "/d.log", ""},
		{"both agree", "actions:\n  audit_log: /a.log\ndefrag:\n  audit_log: /a.log\n", "/a.log", ""},
		{"both differ", "actions:\n  audit_log: /a.log\ndefrag:\n  audit_log: /d.log\n", "", "differs from actions.audit_log /a.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(strings.NewReader(head+tt.in), "g.yaml")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Actions.AuditLog != tt.want || c.Defrag.AuditLog != tt.want {
				t.Errorf("actions.audit_log %s, defrag.audit_log %s, want both %s", c.Actions.AuditLog, c.Defrag.AuditLog, tt.want)
			}
		})
	}
}

func TestParseConfigDefaults(t *testing.T) {
	got, err := ParseConfig(strings.NewReader("version: v1\ntopology: /t.yaml\nsnapshot: /s.json\n"), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Topology, want.Snapshot = "/t.yaml", "/s.json"
	want.Default = request.Option{Tier: topology.TierCluster, Mode: request.Preferred}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseConfigErrors(t *testing.T) {
	const base = "version: v1\ntopology: /t.yaml\nsnapshot: /s.json\n"
	tests := []struct {
		name, in, want string
	}{
		{"unknown key", base + "jobz: gpu\n", "g.yaml:4: jobz: unknown key (want one of "},
		{"bad enum", base + "jobs: every\n", `g.yaml:4: jobs: "every" is not allowed (want gang or gpu or all)`},
		{"bad slurm topology", base + "slurm_topology: blocks\n", `g.yaml:4: slurm_topology: "blocks" is not allowed (want tree or flat or block)`},
		{"bad duration", base + "deadline: soon\n", `g.yaml:4: deadline: "soon" is not a duration`},
		{"duration out of range", base + "deadline: 1h\n", "g.yaml:4: deadline: 1h0m0s out of range (want 1ms..5s)"},
		{"missing version", "topology: /t.yaml\nsnapshot: /s.json\n", "version: missing (want `version: v1`)"},
		{"future version", "version: v2\ntopology: /t\nsnapshot: /s\n", `version: unsupported version "v2"`},
		{"missing paths", "version: v1\n", "topology: missing"},
		{"bad default option", base + "default_topology: leaf:maybe\n", `default_topology: unknown mode "maybe"`},
		{"bad prefix", base + "feature_prefix: gt/\n", `feature_prefix: "gt/" may only hold`},
		{"key twice", base + "jobs: gpu\njobs: gang\n", "jobs: given twice"},
		{"bad uid", base + "trusted_uids: [slurm]\n", `trusted_uids: "slurm" is not a user ID`},
		{"go_max_procs not a number", base + "go_max_procs: all\n", `g.yaml:4: go_max_procs: "all" is not a whole number (want 0..256)`},
		{"go_max_procs too many", base + "go_max_procs: 4096\n", "g.yaml:4: go_max_procs: 4096 out of range (want 0..256)"},
		{"go_max_procs negative", base + "go_max_procs: -1\n", "g.yaml:4: go_max_procs: -1 out of range (want 0..256)"},
		{"partition with blanks", base + "partitions: [\" gpu\"]\n", `g.yaml:4: partitions: " gpu" is not a partition name (no blanks or commas; give each partition as its own list item)`},
		{"partitions in one item", base + "partitions: [\"gpu,big\"]\n", `partitions: "gpu,big" is not a partition name`},
		{"empty partition", base + "partitions: [\"\"]\n", `partitions: "" is not a partition name`},
		{"partitions not a list", base + "partitions: gpu\n", "g.yaml:4: partitions: want a list of partition names"},
		{"rebind not a mapping", base + "rebind: yes\n", "g.yaml:4: rebind: want a mapping (after_failure, enabled, job_interval, max_per_cycle, restart_at_once, timeout)"},
		{"rebind unknown key", base + "rebind:\n  every: 5s\n", "g.yaml:5: rebind.every: unknown key (want one of after_failure, enabled, job_interval, max_per_cycle, restart_at_once, timeout)"},
		{"rebind bad after_failure", base + "rebind:\n  after_failure: sometimes\n", `g.yaml:5: rebind.after_failure: "sometimes" is not true or false`},
		{"rebind bad switch", base + "rebind:\n  enabled: maybe\n", `g.yaml:5: rebind.enabled: "maybe" is not true or false`},
		{"rebind zero updates", base + "rebind:\n  max_per_cycle: 0\n", "g.yaml:5: rebind.max_per_cycle: 0 out of range (want 1..1000)"},
		{"empty file", "", "empty file"},
		{"not a mapping", "- a\n", "want a mapping of settings"},
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

// The documented example must parse, and set every key.
func TestExampleConfigParses(t *testing.T) {
	f, err := os.Open("../../docs/examples/gangtopo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, _ := os.ReadFile("../../docs/examples/gangtopo.yaml")
	if _, err := ParseConfig(f, "gangtopo.yaml"); err != nil {
		t.Fatal(err)
	}
	p := configParser{c: &Config{}}
	for key := range p.keys() {
		if !strings.Contains(string(data), "\n"+key+":") {
			t.Errorf("docs/examples/gangtopo.yaml does not show key %q", key)
		}
	}
}

// gangtopo.yaml names the files the plugin trusts and may add
// trusted_uids, so LoadConfig checks it as the snapshot is checked, on the
// open file, and trusts only root and slurmctld's own user to own it: its
// own trusted_uids cannot vouch for it.
func TestLoadConfigChecksTheFile(t *testing.T) {
	const body = "version: v1\ntopology: /x/cluster.yaml\nsnapshot: /x/snapshot.json\ntrusted_uids: [12345]\n"
	tests := []struct {
		name     string
		rootOnly bool
		make     func(path string) error
		want     string
	}{
		{"fine", false, func(p string) error { return os.WriteFile(p, []byte(body), 0o644) }, ""},
		{"writable by group", false, func(p string) error {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return err
			}
			return os.Chmod(p, 0o664)
		}, "writable by group or others (mode 0664): refused"},
		{"fifo", false, func(p string) error { return syscall.Mkfifo(p, 0o644) }, "is not a regular file"},
		{"owner in its own trusted_uids", true, func(p string) error {
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return err
			}
			return os.Chown(p, 12345, 12345)
		}, "is owned by uid 12345"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rootOnly && os.Geteuid() != 0 {
				needs.Skip(t, "giving a file to another user needs root")
			}
			path := filepath.Join(t.TempDir(), "gangtopo.yaml")
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := LoadConfig(path); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("LoadConfig still blocked after 5s")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("LoadConfig: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("LoadConfig = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSparesConfig(t *testing.T) {
	base := "version: v1\ntopology: /t.yaml\nsnapshot: /s.json\njobs: gpu\n"
	tests := []struct {
		name, yaml string
		want       jobsubmit.Spares
		err        string
	}{
		{name: "off by default", yaml: base},
		{name: "one a leaf", yaml: base + "spares:\n  per_domain: 1\n",
			want: jobsubmit.Spares{Tier: topology.TierLeaf, PerDomain: 1}},
		{name: "lent", yaml: base + "spares:\n  tier: block\n  per_domain: 2\n  lend_partitions: [scav]\n  lend_max_gpus: 4\n",
			want: jobsubmit.Spares{Tier: topology.TierBlock, PerDomain: 2, LendPartitions: []string{"scav"}, LendMaxGPUs: 4}},
		{name: "a node keeps no spares", yaml: base + "spares:\n  tier: node\n  per_domain: 1\n",
			err: `c.yaml:6: spares.tier: "node" is not allowed (want leaf or block or spine)`},
		{name: "lending without a size", yaml: base + "spares:\n  per_domain: 1\n  lend_partitions: [scav]\n",
			err: "c.yaml:6: spares.lend_max_gpus: missing"},
		{name: "jobs: gang leaves plain jobs to Slurm", yaml: strings.Replace(base, "jobs: gpu", "jobs: gang", 1) + "spares:\n  per_domain: 1\n",
			err: "c.yaml:1: spares: per_domain 1 with jobs: gang"},
		{name: "unknown key", yaml: base + "spares:\n  per_leaf: 1\n",
			err: "c.yaml:6: spares.per_leaf: unknown key (want one of lend_max_gpus, lend_partitions, per_domain, tier)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(strings.NewReader(tt.yaml), "c.yaml")
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("error %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Tier == 0 {
				tt.want.Tier = topology.TierLeaf
			}
			if diff := cmp.Diff(tt.want, c.Spares); diff != "" {
				t.Errorf("spares (-want +got):\n%s", diff)
			}
		})
	}
}
