package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/docs"
)

func init() {
	register("DocumentedCommands", testDocumentedCommands)
	register("MakeDemo", testMakeDemo)
}

// docEnv is how a documented line meets the lab: the paths the documents
// name moved into the lab's and a scratch directory, the example job IDs
// replaced by the lab's jobs, the job scripts they name present.
type docEnv struct {
	t       *testing.T
	scratch string
	paths   *strings.Replacer
	ran     map[string]bool
}

func newDocEnv(t *testing.T) *docEnv {
	scratch := t.TempDir()
	must(t, os.Chmod(scratch, 0o755))
	for name, body := range map[string]string{"train.sh": "#!/bin/sh\nsleep 120\n", "serve.sh": "#!/bin/sh\necho serving on $(hostname)\n"} {
		must(t, os.WriteFile(filepath.Join(scratch, name), []byte(body), 0o755))
	}
	return &docEnv{t: t, scratch: scratch, ran: map[string]bool{}, paths: strings.NewReplacer(
		"build/gangtopo ", "gangtopo ",
		"/etc/gangtopo/cluster.yaml", clusterFile,
		"/etc/slurm/gangtopo.yaml", configFile,
		"/var/lib/gangtopo/snapshot.json", filepath.Join(scratch, "snapshot.json"),
		"/var/lib/gangtopo/nodes", filepath.Join(scratch, "nodes"),
		"/shared/gangtopo/nodemaps", filepath.Join(scratch, "nodemaps"))}
}

// line is the registry's line of file (documents read it with the
// example values), with the lab's values put in.
func (d *docEnv) line(file, cmd string, ids ...string) string {
	d.t.Helper()
	for _, e := range docs.For("DocumentedCommands") {
		if e.File == file && e.Cmd == cmd {
			d.ran[file+": "+cmd] = true
			line := d.paths.Replace(cmd)
			for i := 0; i+1 < len(ids); i += 2 {
				line = strings.ReplaceAll(line, ids[i], ids[i+1])
			}
			return line
		}
	}
	d.t.Fatalf("%s: %q is not the registry's line for DocumentedCommands", file, cmd)
	return ""
}

// run runs a line as an administrator or user would, in the scratch
// directory, and returns its output and exit status.
func (d *docEnv) run(line string, env ...string) (string, int) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.Dir = d.scratch
	cmd.Env = append(append(docPath(), "SHELL=/bin/sh"), env...)
	cmd.Stdin = strings.NewReader("") // salloc's shell reads nothing and exits
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		d.t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out), 0
}

// ok runs a line that must succeed.
func (d *docEnv) ok(line string, env ...string) string {
	d.t.Helper()
	out, code := d.run(line, env...)
	if code != 0 {
		d.t.Fatalf("%s: exit %d\n%s", line, code, out)
	}
	return out
}

// docPath is the lab's environment with gangtopo first on PATH.
func docPath() []string {
	bin := filepath.Dir(os.Getenv("GANGTOPO_BIN"))
	env := lab.Env()
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + bin + ":" + p
		}
	}
	return env
}

var jobIDLine = regexp.MustCompile(`Submitted batch job (\d+)`)

// submitted is the job ID sbatch printed.
func (d *docEnv) submitted(out string) string {
	d.t.Helper()
	m := jobIDLine.FindStringSubmatch(out)
	if m == nil {
		d.t.Fatalf("no job ID in %q", out)
	}
	return m[1]
}

// testDocumentedCommands runs every command line the documents give that
// needs a cluster (tests/docs.Registry, By "DocumentedCommands") against
// the lab, as written: users' sbatch, srun, salloc and scontrol lines,
// gangtopo on a live cluster (why, snapshot, the daemons), and compares
// what the documents show them print. Other e2e tests run
// the lines the registry gives them (DeployingOnACluster, DefragApply);
// each name the registry gives must be a test of this suite.
func testDocumentedCommands(t *testing.T) {
	for _, e := range docs.Registry {
		if e.By != docs.Unit && e.By != docs.Itself && !registered(e.By) {
			t.Errorf("tests/docs.Registry: %s: %q is run by %q, which is no e2e test", e.File, e.Cmd, e.By)
		}
	}
	if slurmRoot() != "" {
		// the lines and what they print are the same on every series; the
		// per-series behaviour is the other tests'
		t.Skip("the documents' commands run on the host's series")
	}
	d := newDocEnv(t)
	d.users(t)
	d.daemons(t)
	// the script loads the host's own Slurm 22.05 (the host's series)
	repo, err := filepath.Abs("../..")
	must(t, err)
	line := d.line("docs/topology-tools.md", "tests/gen/check-slurm.sh docs/examples/lab16.yaml")
	d.ok(strings.NewReplacer("tests/gen/", repo+"/tests/gen/", "docs/examples/", repo+"/docs/examples/").Replace(line))
	for _, e := range docs.For("DocumentedCommands") {
		if !d.ran[e.File+": "+e.Cmd] {
			t.Errorf("%s: %q is the registry's but was not run", e.File, e.Cmd)
		}
	}
}

func registered(name string) bool {
	for _, r := range registry {
		if r.name == name {
			return true
		}
	}
	return false
}

// users runs docs/user.md's and README's user commands.
func (d *docEnv) users(t *testing.T) {
	reset(t)
	for _, file := range []string{"README.md", "docs/user.md"} {
		for _, cmd := range []string{"sbatch --gpus=32 --gang-topology=leaf train.sh", "sbatch --gpus=h100:16 --gang-topology=nvlink:preferred train.sh",
			"sbatch --gpus=32 --gang-topology=leaf,slice=8 train.sh"} {
			id := d.submitted(d.ok(d.line(file, cmd)))
			if j := settle(t, id); !strings.HasPrefix(j.AdminComment, "gangtopo v1 ") {
				t.Errorf("%s: job %s has no gangtopo decision: %q", cmd, id, j.AdminComment)
			}
			_, _ = lab.Run(ctxT(t), 0, "scancel", id)
		}
		reset(t)
	}
	if out := d.ok(d.line("docs/user.md", "srun --gpus=8 --gang-topology=nvlink ./serve.sh")); !strings.Contains(out, "serving on") {
		t.Errorf("srun: %q", out)
	}
	d.ok(d.line("docs/user.md", "salloc --gpus=16 --gang-topology=spine"))
	id := d.submitted(d.ok(d.line("docs/user.md", `sbatch --comment="GANGTOPO_CHECKPOINT=sigterm" train.sh`)))
	d.ok(d.line("docs/user.md", `scontrol update JobId=$SLURM_JOB_ID Comment="GANGTOPO_CHECKPOINT=$(date -u +%Y-%m-%dT%H:%M:%SZ)"`), "SLURM_JOB_ID="+id)
	if j, err := lab.ShowJob(ctxT(t), id); err != nil || !strings.HasPrefix(j.Fields["Comment"], "GANGTOPO_CHECKPOINT=20") {
		t.Errorf("job %s's comment after the update: %v %q", id, err, j.Fields["Comment"])
	}
	reset(t)
	d.transcripts(t)
}

// digits masks numbers, which differ from run to run (job IDs).
var digits = regexp.MustCompile(`[0-9]+`)

// transcripts runs docs/user.md's "$ " examples and compares the output
// the document shows, numbers masked.
func (d *docEnv) transcripts(t *testing.T) {
	shown := map[string][]string{}
	cs, err := docs.Extract("../../docs/user.md")
	must(t, err)
	for _, c := range cs {
		shown[c.Text] = c.Output
	}
	for _, tc := range []struct {
		cmd  string
		fail bool
	}{
		{"sbatch --gang-topology=nvlnk --gpus=8 train.sh", true},
		{"sbatch --gang-topology=leaf --gpus=64 train.sh", true},
		{"sbatch --gang-topology=block --gpus=8 train.sh", true},
		{"sbatch -p debug --gpus=8 --gang-topology=leaf train.sh", false},
	} {
		out, code := d.run(d.line("docs/user.md", tc.cmd))
		if (code != 0) != tc.fail {
			t.Errorf("%s: exit %d\n%s", tc.cmd, code, out)
		}
		for _, want := range shown[tc.cmd] {
			if !strings.Contains(digits.ReplaceAllString(out, "N"), digits.ReplaceAllString(strings.TrimSpace(want), "N")) {
				t.Errorf("%s printed\n%s\nwhere docs/user.md shows\n%s", tc.cmd, out, want)
			}
		}
	}
	reset(t) // the sbatch lines above left their jobs (8 GPUs of the debug partition) running
	// a gang waiting for a leaf: why says what the document shows, line by
	// line (the values are the lab's)
	fillOnes(t, 1, "node01", "node05", "node09", "node13")
	gang := submit(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
	settle(t, gang)
	cmd := "gangtopo why 5 --topology /etc/gangtopo/cluster.yaml"
	out := d.ok(d.line("docs/user.md", cmd, "why 5", "why "+gang))
	for _, want := range shown[cmd] {
		key, _, _ := strings.Cut(strings.TrimSpace(want), ":")
		if !strings.Contains(digits.ReplaceAllString(out, "N"), digits.ReplaceAllString(key, "N")+":") {
			t.Errorf("why printed\n%s\nwithout the line docs/user.md shows as\n%s", out, want)
		}
	}
	reset(t)
}

// daemons runs controller.md's, quota.md's and topology-tools.md's
// daemon lines as written (they run until stopped): each until it has
// published, then stopped.
func (d *docEnv) daemons(t *testing.T) {
	snap := filepath.Join(d.scratch, "snapshot.json")
	d.ok(d.line("docs/controller.md", "gangtopo snapshot --from-slurm --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json"))
	must(t, os.Remove(snap))
	d.daemon(d.line("docs/controller.md", "gangtopo daemon --role controller --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json --interval 5s --metrics-addr :9464"),
		func() bool {
			resp, err := http.Get("http://127.0.0.1:9464/metrics")
			if err == nil {
				resp.Body.Close()
			}
			_, serr := os.Stat(snap)
			return err == nil && resp.StatusCode == http.StatusOK && serr == nil
		})
	must(t, os.Remove(snap))
	d.daemon(d.line("docs/quota.md", "gangtopo daemon --role controller --config /etc/slurm/gangtopo.yaml --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json"),
		func() bool { _, err := os.Stat(snap); return err == nil })
	for _, dir := range []string{"nodes", "nodemaps"} {
		must(t, os.MkdirAll(filepath.Join(d.scratch, dir), 0o755))
	}
	host, err := os.Hostname()
	must(t, err)
	host, _, _ = strings.Cut(host, ".")
	d.daemon(d.line("docs/topology-tools.md", "gangtopo daemon --role node --node-file-dir /var/lib/gangtopo/nodes --topology /etc/gangtopo/cluster.yaml --node-map-dir /shared/gangtopo/nodemaps --interval 1m"),
		func() bool {
			_, e1 := os.Stat(filepath.Join(d.scratch, "nodes", host))
			_, e2 := os.Stat(filepath.Join(d.scratch, "nodemaps", host+".json"))
			return e1 == nil && e2 == nil
		})
}

// daemon starts a documented daemon line, waits until done says it has
// done its work, and stops it by its PID.
func (d *docEnv) daemon(line string, done func() bool) {
	d.t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "exec "+line)
	cmd.Dir = d.scratch
	cmd.Env = docPath()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(d.t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		w := make(chan error, 1)
		go func() { w <- cmd.Wait() }()
		select {
		case <-w:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-w
		}
	}()
	for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			d.t.Fatalf("%s: nothing published within a minute:\n%s", line, out.String())
		}
	}
}

// testMakeDemo runs README's first command, make demo, in the repository
// (a 16-node cluster of the host's Slurm with the plugins, a workload, the
// fragmentation report), then make demo-stop. The host's series only: the
// demo runs the host's Slurm.
func testMakeDemo(t *testing.T) {
	if slurmRoot() != "" {
		t.Skip("make demo runs the host's Slurm: it is run on the host's series")
	}
	var line string
	for _, e := range docs.For("MakeDemo") {
		line = e.Cmd
	}
	if line != "make demo" {
		t.Fatalf("tests/docs.Registry gives MakeDemo %q, want make demo", line)
	}
	defer func() {
		stop := exec.Command("make", "--no-print-directory", "demo-stop")
		stop.Dir = "../.."
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("make demo-stop: %v\n%s", err, out)
		}
	}()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, out)
	}
	for _, want := range []string{"cluster picture", "gang fragmentation", "replay.html"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make demo printed no %q:\n%s", want, out)
		}
	}
	// it ends with the replay's page (tests/browser renders one)
	dir := filepath.Join("..", "..", ".lab", "demo")
	if named, err := os.ReadFile(filepath.Join("..", "..", ".lab", "demo-dir")); err == nil {
		dir = strings.TrimSpace(string(named)) // a checkout out of other users' reach: under $TMPDIR
	}
	page, err := os.ReadFile(filepath.Join(dir, "replay.html"))
	if err != nil || !bytes.Contains(page, []byte(`<section id="free">`)) || !bytes.Contains(page, []byte("<svg")) {
		t.Errorf("make demo wrote no replay page with charts in %s/replay.html (%v)", dir, err)
	}
}

// docLines gives an e2e test the documented lines the registry says it
// runs, as gangtopo's arguments, the example values replaced; check fails
// the test for a line of its in the registry it did not run. A line the
// README gives with build/gangtopo and a document with gangtopo is one
// line.
type docLines struct {
	t       *testing.T
	by      string
	replace []string
	ran     map[string]bool
}

func newDocLines(t *testing.T, by string, replace ...string) *docLines {
	return &docLines{t: t, by: by, replace: replace, ran: map[string]bool{}}
}

// set adds an example value and the lab's for it.
func (d *docLines) set(example, value string) { d.replace = append(d.replace, example, value) }

// args are the arguments of the documented gangtopo line cmd.
func (d *docLines) args(cmd string) []string {
	d.t.Helper()
	found := false
	for _, e := range docs.For(d.by) {
		if strings.TrimPrefix(e.Cmd, "build/") == cmd {
			d.ran[e.File+": "+e.Cmd], found = true, true
		}
	}
	if !found {
		d.t.Fatalf("%q is no line tests/docs.Registry gives %s", cmd, d.by)
	}
	line := cmd
	for i := 0; i+1 < len(d.replace); i += 2 {
		line = strings.ReplaceAll(line, d.replace[i], d.replace[i+1])
	}
	return strings.Fields(strings.TrimPrefix(line, "gangtopo "))
}

// check fails for a registry line of the test that was not run.
func (d *docLines) check() {
	for _, e := range docs.For(d.by) {
		if !d.ran[e.File+": "+e.Cmd] {
			d.t.Errorf("%s: %q is %s's in tests/docs.Registry but was not run", e.File, e.Cmd, d.by)
		}
	}
}
