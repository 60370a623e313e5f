package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("DebianPackageInstallsAndPlaces", testDebianPackageInstallsAndPlaces)
}

// testDebianPackageInstallsAndPlaces installs the package `make deb` built
// for the series under test into its Debian root with dpkg, as a site
// would, and runs a cluster from what the package installed:
//   - the package built for another release (the host's 22.05) is refused
//     before anything is unpacked, saying which release to install;
//   - the package for the root's own release installs its plugins into
//     Debian's PluginDir and the CLI as /usr/bin/gangtopo;
//   - a lab whose slurmctld loads those plugins places a 16-GPU leaf gang
//     inside one leaf;
//   - dpkg --purge removes every file again.
//
// make e2e builds the packages (GANGTOPO_DEB_DIR). It leaves the test out
// on the host's own Slurm (E2E_SKIP_host): installing there would change
// the host's plugin directory, which the other tests' labs load Slurm's own
// plugins from.
func testDebianPackageInstallsAndPlaces(t *testing.T) {
	reset(t) // the gangs it places need the room an earlier test may have left taken
	root := slurmRoot()
	if root == "" {
		t.Fatal("this test installs the package into the series' Debian root (make e2e E2E_SLURM=sid); on the host's own Slurm it would change the host's plugin directory, so make e2e leaves it out there (E2E_SKIP_host)")
	}
	release, err := labRelease()
	must(t, err)
	own, other := packagesFor(t, release)
	cache := filepath.Join(root, "var/cache/gangtopo-e2e")
	must(t, os.MkdirAll(cache, 0o755))
	defer os.RemoveAll(cache)
	for _, p := range []string{own, other} {
		data, err := os.ReadFile(p)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(cache, filepath.Base(p)), data, 0o644))
	}
	dpkg := func(args ...string) (string, error) {
		out, err := exec.Command("/usr/sbin/chroot", append([]string{root, "dpkg"}, args...)...).CombinedOutput()
		return string(out), err
	}
	inRoot := func(p string) string { return filepath.Join(cache, filepath.Base(p)) }
	installed := filepath.Join(root, slurmlab.StockPluginDir, "job_submit_gangtopo.so")
	defer func() {
		if out, err := dpkg("--purge", "gangtopo"); err != nil {
			t.Errorf("dpkg --purge gangtopo: %v\n%s", err, out)
		}
		if _, err := os.Stat(installed); !os.IsNotExist(err) {
			t.Errorf("after dpkg --purge %s is still there (%v)", installed, err)
		}
	}()

	otherRelease := releaseOf(other)
	out, err := dpkg("-i", strings.TrimPrefix(inRoot(other), root))
	if err == nil || !strings.Contains(out, "built for Slurm "+otherRelease+", but this host runs Slurm "+release) {
		t.Fatalf("dpkg -i of the package for %s on Slurm %s: %v, want a refusal naming both releases:\n%s", otherRelease, release, err, out)
	}
	if _, err := os.Stat(installed); !os.IsNotExist(err) {
		t.Fatalf("the refused package left %s behind (%v)", installed, err)
	}
	t.Logf("the package for %s refused on %s:\n%s", otherRelease, release, out)

	out, err = dpkg("-i", strings.TrimPrefix(inRoot(own), root))
	if err != nil {
		t.Fatalf("dpkg -i of the package for %s: %v\n%s", release, err, out)
	}
	for _, f := range []string{installed, filepath.Join(root, slurmlab.StockPluginDir, "spank_gangtopo.so"),
		filepath.Join(root, slurmlab.StockPluginDir, "libgangtopo.so"), filepath.Join(root, "usr/bin/gangtopo"),
		filepath.Join(root, "usr/lib/systemd/system/gangtopo-controller.service")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("installed file: %v", err)
		}
	}
	ver, err := exec.Command("/usr/sbin/chroot", root, "dpkg-query", "-W", "-f", "${Version}", "gangtopo").Output()
	if err != nil || !strings.HasSuffix(string(ver), "+slurm"+release) {
		t.Errorf("installed version %q (%v), want one ending in +slurm%s", ver, err, release)
	}
	placesWithInstalledPlugins(t)
}

// placesWithInstalledPlugins starts a lab16 whose slurmctld and slurmd load
// gangtopo's plugins from Debian's PluginDir inside the root (where the
// package put them) and checks that a 16-GPU leaf gang lands in one leaf.
func placesWithInstalledPlugins(t *testing.T) {
	t.Helper()
	_, data, err := readCluster(clusterSource)
	must(t, err)
	dir := t.TempDir() // under the temporary directory, which every lab sees
	src := filepath.Join(dir, "cluster.yaml")
	must(t, os.WriteFile(src, data, 0o644))
	c, _, err := readCluster(src)
	must(t, err)
	cfg := filepath.Join(dir, "gangtopo.yaml")
	snap := filepath.Join(dir, "snapshot.json")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(labConfig, src, snap)), 0o644))
	l, err := slurmlab.Start(context.Background(), slurmlab.Options{Cluster: c, ClusterFile: src, Owner: os.Getpid(),
		Root: slurmRoot(), Partitions: labPartitions,
		Plugins: slurmlab.Plugins{Dir: slurmlab.StockPluginDir, JobSubmit: true, Spank: true, CtldEnv: []string{"GANGTOPO_CONFIG=" + cfg}}})
	must(t, err)
	defer l.Stop()
	out, _, err := l.RunSplit(context.Background(), 0, nil, os.Getenv("GANGTOPO_BIN"), "snapshot", "--from-slurm", "--topology", src, "-o", snap)
	if err != nil {
		t.Fatalf("snapshot: %v %s", err, out)
	}
	time.Sleep(reloadWait)
	id, err := l.Submit(context.Background(), nil, "-o", "/dev/null", "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf", "--wrap", "sleep 1000")
	must(t, err)
	j := waitRunningIn(t, l, id)
	if !strings.HasPrefix(j.AdminComment, "gangtopo v1 placed request=leaf:required") {
		t.Errorf("gang %s: decision %q, want the installed plugin's placement", id, j.AdminComment)
	}
	leaves := map[string]bool{}
	for _, n := range j.Nodes {
		nid, _ := l.Cluster.NodeByName(n)
		leaves[l.Cluster.Domains[l.Cluster.Nodes[nid].Up[topology.TierLeaf]].Name] = true
	}
	if len(j.Nodes) != 2 || len(leaves) != 1 {
		t.Errorf("gang %s runs on %v, want 2 nodes of one leaf", id, j.Nodes)
	}
	t.Logf("with the installed plugins: gang %s on %v (%s)", id, j.Nodes, j.AdminComment)
}

// packagesFor finds, in GANGTOPO_DEB_DIR (make e2e), the package built for
// release and one built for another release.
func packagesFor(t *testing.T, release string) (own, other string) {
	t.Helper()
	dir := os.Getenv("GANGTOPO_DEB_DIR")
	if dir == "" {
		t.Fatal("GANGTOPO_DEB_DIR is not set: run make e2e (it builds the packages)")
	}
	all, err := filepath.Glob(filepath.Join(dir, "gangtopo_*+slurm*_amd64.deb"))
	must(t, err)
	for _, p := range all {
		if releaseOf(p) == release {
			own = p
		} else {
			other = p
		}
	}
	if own == "" || other == "" {
		t.Fatalf("%s holds %v: want a package for Slurm %s and one for another release", dir, all, release)
	}
	return own, other
}

// releaseOf reads the release from a package's name:
// gangtopo_0.1.gabc+slurm26.05.5_amd64.deb is 26.05.5.
func releaseOf(path string) string {
	_, after, _ := strings.Cut(filepath.Base(path), "+slurm")
	return strings.TrimSuffix(after, "_amd64.deb")
}
