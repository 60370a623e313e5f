package slurmlab

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StopGrace is how long Stop waits after SIGTERM before SIGKILL. slurmd may
// ignore SIGTERM once slurmctld is gone (SLURM-LAB.md).
const StopGrace = 5 * time.Second

// spawn starts a daemon in its own session with the lab's marker in its
// environment, output to log/<name>.out, and records its PID.
func (l *Lab) spawn(name string, env []string, argv ...string) (int, error) {
	out, err := os.OpenFile(l.Path("log", name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = l.Dir
	cmd.Env = l.daemonEnv(env)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", name, err)
	}
	exited := make(chan struct{})
	go func() { // reap it if it dies while we run
		_ = cmd.Wait()
		l.ended.Store(cmd.Process.Pid, cmd.ProcessState.String())
		close(exited)
	}()
	pid := cmd.Process.Pid
	l.procs = append(l.procs, proc{name, pid})
	// Until exec completes, /proc/PID/environ is still ours, without the
	// marker: wait for it, so belongs() is true from here on.
	for deadline := time.Now().Add(5 * time.Second); !belongs(pid, l.Dir) && time.Now().Before(deadline); {
		select {
		case <-exited:
			return pid, fmt.Errorf("%s exited at start: %s", name, tail(readFile(l.Path("log", name+".out")), 5))
		case <-time.After(5 * time.Millisecond):
		}
	}
	return pid, l.writePIDs()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// writePIDs records the daemons for `slurmlab down` in another process.
func (l *Lab) writePIDs() error {
	var b bytes.Buffer
	for _, p := range l.procs {
		fmt.Fprintf(&b, "%s %d\n", p.Name, p.PID)
	}
	return os.WriteFile(l.Path("run", "pids"), b.Bytes(), 0o644)
}

// readPIDs reads run/pids of a lab directory.
func readPIDs(dir string) ([]proc, error) {
	data, err := os.ReadFile(filepath.Join(dir, "run", "pids"))
	if err != nil {
		return nil, err
	}
	var out []proc
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid <= 1 {
			return nil, fmt.Errorf("%s/run/pids: bad line %q", dir, sc.Text())
		}
		out = append(out, proc{f[0], pid})
	}
	return out, sc.Err()
}

// belongs reports whether pid is alive and carries dir's marker, so a
// recycled PID is never signalled. Job scripts run with the submitter's
// environment; they belong when their command line names a file inside
// dir (slurmd runs them from dir/spool).
func belongs(pid int, dir string) bool {
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.Contains(cmd, []byte(dir+"/")) {
		return !isZombie(pid)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	want := []byte(EnvMarker + "=" + dir)
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.Equal(kv, want) {
			return !isZombie(pid)
		}
	}
	return false
}

// alive says whether process pid exists and has not exited (a child the
// lab has not reaped yet is a zombie: gone).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !isZombie(pid)
}

func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z'
}

// marked lists every live process that belongs to the lab: the daemons,
// and the slurmstepd, job script and task processes of jobs, which have
// neither a stable name nor a parent we know.
func marked(dir string) []int {
	return processes(func(pid int) bool { return belongs(pid, dir) })
}

// processes lists the PIDs in /proc, but this process's, that keep says
// yes to.
func processes(keep func(pid int) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != os.Getpid() && keep(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// stopPIDs sends SIGTERM to each PID still belonging to dir, waits up to
// grace for them to go, then SIGKILLs the rest. It returns the survivors'
// count after SIGKILL (0 normally).
func stopPIDs(pids []int, dir string, grace time.Duration) int {
	alive := func() []int {
		var out []int
		for _, p := range pids {
			if belongs(p, dir) {
				out = append(out, p)
			}
		}
		return out
	}
	for _, p := range alive() {
		_ = syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range alive() {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline = time.Now().Add(2 * time.Second)
	for len(alive()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return len(alive())
}

// StopDir stops the lab in dir by PID: first the slurmds, then slurmctld,
// then slurmdbd and MariaDB (a lab with accounting), then whatever job
// processes are left, then munged. It needs no Lab value,
// so `slurmlab down` can stop a lab another process started.
func StopDir(dir string) error {
	procs, err := readPIDs(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, p := range procs {
		if p.Name == "slurmctld" && belongs(p.PID, dir) {
			cancelAll(dir) // let slurmd clean its steps up itself first
		}
	}
	// a rooted lab's namespace holder goes last: the others live in its
	// namespace (which outlives it anyway as long as they run)
	order := []string{"slurmd", "slurmctld", "slurmdbd", "mariadbd", "", "munged", holderName}
	// a rooted lab's slurmstepd (26.05) carries neither the lab's marker
	// nor its directory, and outlives its slurmd; it runs in the mount
	// namespace its slurmd made, noted before the slurmds go
	spaces, release := slurmdNamespaces(procs, dir)
	defer release()
	var left int
	for _, stage := range order {
		var pids []int
		if stage == "" {
			pids = marked(dir) // job steps and tasks; never munged's or the holder's turn yet
			pids = without(pids, procs, "munged", holderName)
		} else {
			for _, p := range procs {
				if p.Name == stage || strings.HasPrefix(p.Name, stage+"-") { // slurmd-node01, not slurmdbd
					pids = append(pids, p.PID)
				}
			}
		}
		left += stopPIDs(pids, dir, StopGrace)
		if stage == "slurmd" {
			// their steps go at once, not after the other stages: a
			// 26.05 stepd left without its slurmd spins, and a large
			// lab's thousands of them starve the machine meanwhile
			killNamespaced(spaces, pidsOf(procs))
		}
	}
	left += stopPIDs(marked(dir), dir, time.Second)
	left += killNamespaced(spaces, nil)
	if left > 0 {
		return fmt.Errorf("slurmlab: %d processes of %s survived SIGKILL", left, dir)
	}
	return nil
}

// slurmdNamespaces lists the mount namespaces of the lab's live slurmds
// that are not the host's (a rooted lab's slurmd makes its own), and holds
// each open until release is called. The hold matters: the kernel gives a
// freed namespace's number to the next new one, so once this lab's last
// process in it is gone, a lab starting beside it (another series in
// parallel) may get the same number for its root's namespace or its
// slurmd's, and killing by number would kill that lab's processes. An
// open namespace file keeps the namespace, and its number, alive.
func slurmdNamespaces(procs []proc, dir string) (spaces map[string]bool, release func()) {
	host, _ := os.Readlink("/proc/self/ns/mnt")
	spaces = map[string]bool{}
	var held []*os.File
	for _, p := range procs {
		if !strings.HasPrefix(p.Name, "slurmd-") {
			continue
		}
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", p.PID))
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		// checked after the open: the namespace held is this slurmd's
		if syscall.Fstat(int(f.Fd()), &st) != nil || !belongs(p.PID, dir) {
			f.Close()
			continue
		}
		if ns := fmt.Sprintf("mnt:[%d]", st.Ino); ns != host {
			spaces[ns] = true
			held = append(held, f)
			continue
		}
		f.Close()
	}
	return spaces, func() {
		for _, f := range held {
			f.Close()
		}
	}
}

// killNamespaced kills what is left in the lab's slurmd namespaces but the
// PIDs of keep (the lab's daemons, stopped in their own order), and counts
// the survivors.
func killNamespaced(spaces map[string]bool, keep map[int]bool) int {
	left := func() []int {
		var out []int
		for _, p := range inNamespaces(spaces) {
			if !keep[p] {
				out = append(out, p)
			}
		}
		return out
	}
	pids := left()
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	for i := 0; i < 20 && len(pids) > 0; i++ {
		time.Sleep(50 * time.Millisecond)
		pids = left()
	}
	return len(pids)
}

// pidsOf is the set of the daemons' PIDs.
func pidsOf(procs []proc) map[int]bool {
	out := map[int]bool{}
	for _, p := range procs {
		out[p.PID] = true
	}
	return out
}

// inNamespaces lists the live processes in the mount namespaces spaces.
func inNamespaces(spaces map[string]bool) []int {
	if len(spaces) == 0 {
		return nil
	}
	return processes(func(pid int) bool {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
		return err == nil && spaces[ns] && !isZombie(pid)
	})
}

// cancelAll runs scancel for every job of the lab in dir, bounded.
func cancelAll(dir string) {
	scancel := "scancel"
	if script := filepath.Join(dir, "bin", "slurm", "scancel"); fileExists(script) {
		scancel = script // a rooted lab's own (root.go)
	}
	cmd := exec.Command(scancel, "--quiet", "--full", "-u", "root")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+filepath.Join(dir, "etc", "slurm.conf"))
	done := make(chan struct{})
	if cmd.Start() != nil {
		return
	}
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		time.Sleep(time.Second) // slurmd signals the steps
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
	}
}

func without(pids []int, procs []proc, names ...string) []int {
	skip := map[int]bool{}
	for _, p := range procs {
		for _, n := range names {
			if p.Name == n {
				skip[p.PID] = true
			}
		}
	}
	var out []int
	for _, p := range pids {
		if !skip[p] {
			out = append(out, p)
		}
	}
	return out
}

// CleanupStale stops and removes labs under root whose owning process is
// gone: what a test binary killed by its timeout leaves behind. Labs with
// owner 0 (make demo) are left alone.
func CleanupStale(root string, logf func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(root, "gangtopo-lab-*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "run", "owner"))
		if err != nil {
			continue
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || owner == 0 || syscall.Kill(owner, 0) == nil {
			continue
		}
		logf("slurmlab: stopping stale lab %s (owner %d is gone)", dir, owner)
		if err := StopDir(dir); err == nil {
			_ = os.RemoveAll(dir)
		}
	}
}

// portLockDir holds one lock file per slot of portStep ports. A lab
// holds the locks of the slots its range covers (flock, released when the
// lab stops or its process ends, however it ends), so labs of processes
// running side by side (two Slurm series at once, go test's packages in
// parallel) never pick the same ports, whatever their sizes. It is a
// fixed path, not under TMPDIR, so that processes with different
// temporary directories see each other's locks.
const portLockDir = "/tmp/.slurmlab-ports"

const portFirst, portLast, portStep = 18817, 32000, 97 // below the ephemeral ports (32768 on)

// claimPorts finds a base port with n consecutive TCP ports free on
// 127.0.0.1, away from Slurm's defaults (6817-6818) and make demo's 16817,
// that no other lab has claimed, and claims them; release gives them back.
// The search starts at a place that depends on the process, so that two
// processes starting at once seldom even contend for the same locks.
func claimPorts(n int) (base int, release func(), err error) {
	if n > portLast-portFirst {
		return 0, nil, fmt.Errorf("no range of %d free TCP ports: at most %d between %d and %d", n, portLast-portFirst, portFirst, portLast)
	}
	if err := os.MkdirAll(portLockDir, 0o755); err != nil {
		return 0, nil, fmt.Errorf("the port locks: %w", err)
	}
	slots := (portLast-n-portFirst)/portStep + 1 // every range ends before portLast
	start := os.Getpid() % slots
	for i := range slots {
		base := portFirst + (start+i)%slots*portStep
		release, ok := lockPorts(base, n)
		if !ok {
			continue
		}
		if portsFree(base, n) {
			return base, release, nil
		}
		release()
	}
	return 0, nil, errors.New("no range of free TCP ports found (every range in use or claimed by another lab: " + portLockDir + ")")
}

// lockPorts takes the locks of the slots [base, base+n) covers, without
// waiting; ok false (and nothing held) when another lab holds one.
func lockPorts(base, n int) (release func(), ok bool) {
	var held []*os.File
	release = func() {
		for _, f := range held {
			f.Close() // closing the file drops its flock
		}
	}
	for slot := (base - portFirst) / portStep; portFirst+slot*portStep < base+n; slot++ {
		f, err := os.OpenFile(filepath.Join(portLockDir, strconv.Itoa(portFirst+slot*portStep)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			release()
			return nil, false
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			release()
			return nil, false
		}
		held = append(held, f)
	}
	return release, true
}

// portsFree says whether every port of [base, base+n) can be bound now.
func portsFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// mknodChar makes a character device (replacing whatever is there).
func mknodChar(path string, major, minor int) error {
	_ = os.Remove(path)
	dev := (major << 8) | minor
	if err := syscall.Mknod(path, syscall.S_IFCHR|0o666, dev); err != nil {
		return fmt.Errorf("mknod %s: %w", path, err)
	}
	return nil
}
