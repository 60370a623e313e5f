package debpkg

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const plugin = "/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_gangtopo.so"

// TestPrermRefusesWhileSlurmLoadsThePlugins runs `prerm remove` over Slurm
// configurations: it refuses (exit 1) while one of their lines loads a
// plugin the package holds, naming each such line as FILE:LINE: TEXT, and
// passes otherwise. Files are relative to a scratch etc directory, which
// holds slurm.conf ($SLURM_CONF points there).
func TestPrermRefusesWhileSlurmLoadsThePlugins(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // the lines named; nil: removal goes ahead
	}{
		{"no slurm.conf (configless), no plugstack.conf", nil, nil},
		{"other plugins only", map[string]string{"slurm.conf": "ClusterName=c\nJobSubmitPlugins=lua\n"}, nil},
		{"gangtopo", map[string]string{"slurm.conf": "ClusterName=c\nJobSubmitPlugins=gangtopo\n"},
			[]string{"slurm.conf:2: JobSubmitPlugins=gangtopo"}},
		{"gangtopo after lua, key in another case, spaces", map[string]string{"slurm.conf": "jobsubmitplugins = lua,gangtopo\n"},
			[]string{"slurm.conf:1: jobsubmitplugins = lua,gangtopo"}},
		{"full plugin type, quoted", map[string]string{"slurm.conf": `JobSubmitPlugins="job_submit/gangtopo"` + "\n"},
			[]string{`slurm.conf:1: JobSubmitPlugins="job_submit/gangtopo"`}},
		{"one key of several on the line", map[string]string{"slurm.conf": "SlurmctldPort=6817 JobSubmitPlugins=gangtopo MaxJobCount=5000\n"},
			[]string{"slurm.conf:1: SlurmctldPort=6817 JobSubmitPlugins=gangtopo MaxJobCount=5000"}},
		{"commented out", map[string]string{"slurm.conf": "#JobSubmitPlugins=gangtopo\nJobSubmitPlugins=lua # was lua,gangtopo\n"}, nil},
		{"a plugin with a longer name", map[string]string{"slurm.conf": "JobSubmitPlugins=gangtopo_site\n"}, nil},
		{"in a file slurm.conf includes", map[string]string{"slurm.conf": "Include site/jobs.conf\n", "site/jobs.conf": "\nJobSubmitPlugins=gangtopo\n"},
			[]string{"site/jobs.conf:2: JobSubmitPlugins=gangtopo"}},
		{"plugstack.conf beside slurm.conf", map[string]string{"slurm.conf": "", "plugstack.conf": "optional " + plugin + " nodefile_dir=/var/lib/gangtopo/nodes\n"},
			[]string{"plugstack.conf:1: optional " + plugin + " nodefile_dir=/var/lib/gangtopo/nodes"}},
		{"plugstack.conf without slurm.conf", map[string]string{"plugstack.conf": "required spank_gangtopo.so\n"},
			[]string{"plugstack.conf:1: required spank_gangtopo.so"}},
		{"plugstack.conf.d, as Debian includes it", map[string]string{"plugstack.conf": "include " + "@ETC@/plugstack.conf.d/*.conf\n",
			"plugstack.conf.d/pyxis.conf": "required spank_pyxis.so\n", "plugstack.conf.d/gangtopo.conf": "# gangtopo\nrequired " + plugin + "\n"},
			[]string{"plugstack.conf.d/gangtopo.conf:2: required " + plugin}},
		{"plugstack.conf line commented out", map[string]string{"plugstack.conf": "#optional " + plugin + "\n"}, nil},
		{"PlugStackConfig names another file", map[string]string{"slurm.conf": "PlugStackConfig=@ETC@/spank/stack.conf\n",
			"spank/stack.conf": "optional " + plugin + "\n", "plugstack.conf": "optional " + plugin + "\n"},
			[]string{"spank/stack.conf:1: optional " + plugin}},
		{"both plugins", map[string]string{"slurm.conf": "JobSubmitPlugins=gangtopo\n", "plugstack.conf": "optional " + plugin + "\n"},
			[]string{"slurm.conf:1: JobSubmitPlugins=gangtopo", "plugstack.conf:1: optional " + plugin}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			etc := writeEtc(t, tc.files)
			out, code := prerm(t, etc, nil, "remove")
			var named []string
			for _, line := range strings.Split(out, "\n") {
				if l, ok := strings.CutPrefix(line, "gangtopo:   "+etc+"/"); ok {
					named = append(named, l)
				}
			}
			if diff := cmp.Diff(tc.want, named); diff != "" {
				t.Errorf("lines named (-want +got):\n%s\noutput:\n%s", diff, out)
			}
			wantCode := 0
			if tc.want != nil {
				wantCode = 1
			}
			if code != wantCode {
				t.Errorf("exit status %d, want %d; output:\n%s", code, wantCode, out)
			}
			if tc.want != nil && (!strings.Contains(out, "Take the lines out first") || !strings.Contains(out, "GANGTOPO_FORCE_REMOVE=1")) {
				t.Errorf("the refusal does not say what to do, and how to go ahead anyway:\n%s", out)
			}
		})
	}
}

// The admin may remove anyway: prerm warns with the same lines and lets
// dpkg go on. Other actions than remove check nothing.
func TestPrermForcedAndOtherActions(t *testing.T) {
	etc := writeEtc(t, map[string]string{"slurm.conf": "JobSubmitPlugins=gangtopo\n"})
	out, code := prerm(t, etc, []string{"GANGTOPO_FORCE_REMOVE=1"}, "remove")
	want := "gangtopo: WARNING: removed while Slurm is still configured to load its plugins (GANGTOPO_FORCE_REMOVE=1):\n" +
		"gangtopo:   " + etc + "/slurm.conf:1: JobSubmitPlugins=gangtopo\n"
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("forced: exit %d, output:\n%s\nwant exit 0, starting with:\n%s", code, out, want)
	}
	for _, action := range []string{"upgrade", "deconfigure", "failed-upgrade"} {
		if out, code := prerm(t, etc, nil, action, "0.2"); code != 0 || out != "" {
			t.Errorf("prerm %s: exit %d, output %q; want 0 and nothing", action, code, out)
		}
	}
}

// writeEtc writes files under a new directory; @ETC@ in their text is
// that directory.
func writeEtc(t *testing.T, files map[string]string) string {
	t.Helper()
	etc := t.TempDir()
	for name, text := range files {
		p := filepath.Join(etc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "@ETC@", etc)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return etc
}

// prerm runs c/deb/prerm with sh as dpkg would, $SLURM_CONF naming
// etc/slurm.conf, from / (dpkg's working directory), and returns its
// output (both streams) and exit status.
func prerm(t *testing.T, etc string, env []string, args ...string) (string, int) {
	t.Helper()
	script, err := filepath.Abs("../../c/deb/prerm")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", append([]string{script}, args...)...)
	cmd.Dir = "/"
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_CONF=" + etc + "/slurm.conf"}, env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("prerm: %v", err)
	return "", 0
}
