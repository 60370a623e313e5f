package ctld

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// A gangtopo.yaml owned by Slurm's own user is trusted also when the CLI
// or the controller daemon runs as root (docs/admin.md allows it; the CLI
// refused it); another user's is refused, naming SlurmUser.
func TestConfigOwnedBySlurmUser(t *testing.T) {
	if os.Geteuid() != 0 {
		needs.Skip(t, "giving a file to another user needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		needs.Skip(t, "no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gangtopo.yaml")
	topo := filepath.Join(dir, "cluster.yaml")
	for _, f := range []string{cfg, topo} {
		if err := os.WriteFile(f, []byte("version: v1\ntopology: "+topo+"\nsnapshot: "+dir+"/s.json\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(cfg, uid, uid); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, slurmConf, want string // want: "" for accepted, else part of the error
	}{
		{"SlurmUser owns it", "ClusterName=c\nSlurmUser=nobody # the daemons' user\n", ""},
		{"another SlurmUser", "SlurmUser=root\n", "which is not root, SlurmUser (root) or in trusted_uids: refused"},
		{"SlurmUser left out: root, Slurm's default", "ClusterName=c\n", "SlurmUser (root)"},
		{"no slurm.conf", "", "which is not root, slurmctld's user or in trusted_uids: refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "slurm.conf")
			if tc.slurmConf != "" {
				if err := os.WriteFile(conf, []byte(tc.slurmConf), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("SLURM_CONF", conf)
			_, err := LoadConfig(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("LoadConfig = %v, want it accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("LoadConfig = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
