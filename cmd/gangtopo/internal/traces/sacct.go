package traces

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A site's own job history as Slurm's accounting keeps it: `sacct --json`
// (22.05's openapi/dbv0.0.38 layout and the data_parser layouts of 23.02
// and later: v0.0.42 in 24.11, v0.0.45 in 26.05; sacct_json.go) or
// `sacct -P` with a header row (any series; sacct_pipe.go). Both readers
// give the same SacctJob per job allocation; steps are not jobs and are
// not read.
//
// The readers are strict about what the replay relies on (times, states,
// TRES): a value that is not what Slurm writes is an error naming the
// file, the line and the field. What is well formed but cannot be
// replayed (still running, a heterogeneous job, ...) is not an error:
// the caller counts and lists it (SacctJob.Why).

// SacctJob is one job allocation of a sacct dump.
type SacctJob struct {
	// At says where the job is in the dump ("sacct.json:120").
	At string
	// ID is Slurm's job ID as sacct prints it: "42", "40_3" (array task),
	// "45+1" (heterogeneous job component).
	ID string
	// Raw is the job's own numeric ID (sacct's JobIDRaw).
	Raw int64
	// ArrayJob/ArrayTask and HetJob/HetOffset are -1 when not set.
	ArrayJob, ArrayTask int64
	HetJob, HetOffset   int64
	Name                string
	// User and Account are hashed (SacctOptions.KeepNames keeps them).
	User, Account    string
	Partition, QOS   string
	State            string // COMPLETED, CANCELLED, TIMEOUT, ... (no "by UID")
	Submit, Eligible time.Time
	// Start and End are zero when the job never started / has not ended.
	Start, End time.Time
	// Limit is the time limit; 0 when unlimited or unknown.
	Limit time.Duration
	// GPUs asked (ReqTRES gres/gpu) and allocated (AllocTRES); GPUType
	// the type of the allocated (else asked) GPUs, when the TRES names one.
	ReqGPUs, GPUs int
	GPUType       string
	// Nodes allocated and asked (ReqNodes: Slurm writes the minimum, 1
	// unless -N said more), CPUs, memory (MiB) allocated.
	Nodes, ReqNodes int
	NodeList        string
	CPUs, ReqCPUs   int
	MemMiB          int64
	// NodesGiven says the submit line fixed the node count (-N/--nodes):
	// only then is ReqNodes a request rather than Slurm's default.
	NodesGiven bool
	// GangTopology is --gang-topology as the submit line gave it ("" when
	// it did not, or the dump carries no submit line: 22.05's JSON).
	GangTopology string
	// Scheduler that started it: "main", "backfill", "submit" or "".
	Scheduler string
	// SubmitLine is the command line (hashed names are not in it; it is
	// kept only for --gang-topology and -N and never printed).
	SubmitLine string
}

// SacctOptions say how a dump is read.
type SacctOptions struct {
	// KeepNames keeps user and account names; otherwise each becomes
	// "u-" / "a-" and 8 hex digits of HMAC-SHA-256 keyed with Salt (an
	// empty Salt: plain SHA-256, which anyone can recompute for a guessed
	// name; a secret salt prevents that).
	KeepNames bool
	Salt      string
}

// ReadSacct reads a sacct dump: JSON when it starts with '{', else sacct
// -P output with a header row.
func ReadSacct(path string, o SacctOptions) ([]SacctJob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSacct(path, f, o)
}

func readSacct(name string, r io.Reader, o SacctOptions) ([]SacctJob, error) {
	br := bufio.NewReader(r)
	for {
		b, err := br.Peek(1)
		if err != nil {
			return nil, fmt.Errorf("%s: empty file (want sacct --json or sacct -P output)", name)
		}
		if b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t' {
			_, _ = br.ReadByte()
			continue
		}
		var jobs []SacctJob
		if b[0] == '{' {
			jobs, err = readSacctJSON(name, br)
		} else {
			jobs, err = readSacctPipe(name, br)
		}
		if err != nil {
			return nil, err
		}
		if len(jobs) == 0 {
			return nil, fmt.Errorf("%s: no jobs in the dump", name)
		}
		for i := range jobs {
			jobs[i].hashNames(o)
		}
		return jobs, nil
	}
}

func (j *SacctJob) hashNames(o SacctOptions) {
	if o.KeepNames {
		return
	}
	j.User, j.Account = hashName("u-", j.User, o.Salt), hashName("a-", j.Account, o.Salt)
}

// hashName hides a name behind 8 hex digits of its (keyed) SHA-256; ""
// stays "".
func hashName(prefix, name, salt string) string {
	if name == "" {
		return ""
	}
	var sum []byte
	if salt == "" {
		s := sha256.Sum256([]byte(name))
		sum = s[:]
	} else {
		m := hmac.New(sha256.New, []byte(salt))
		m.Write([]byte(name))
		sum = m.Sum(nil)
	}
	return prefix + hex.EncodeToString(sum[:4])
}

// SacctStates are the job states Slurm writes (JOB_STATE_BASE names).
var SacctStates = []string{"PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
	"NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REQUEUED", "RESIZING", "REVOKED"}

// normState reads a state as sacct writes it ("CANCELLED by 0",
// ["COMPLETED"]) and checks it.
func normState(s string) (string, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i] // "CANCELLED by 1000"
	}
	s = strings.TrimSuffix(s, "+") // "CANCELLED+" in narrow columns
	for _, k := range SacctStates {
		if s == k {
			return s, nil
		}
	}
	return "", fmt.Errorf("unknown job state %q (want one of %s)", s, strings.Join(SacctStates, ", "))
}

// tres is one TRES list ("cpu=8,gres/gpu:h100=8,mem=64G,node=1", or the
// JSON's objects) reduced to what the replay uses.
type tres struct {
	gpus, cpus, nodes int
	gpuType           string
	memMiB            int64
}

// add takes one TRES: type (cpu, mem, node, gres; others are not read),
// name (gpu, gpu:h100, ...) and count; memory in MiB.
func (t *tres) add(typ, name string, count int64) error {
	switch typ {
	case "cpu", "node", "mem", "gres":
		if count < 0 {
			return fmt.Errorf("negative TRES count %d for %s", count, strings.Trim(typ+"/"+name, "/"))
		}
	default:
		return nil // energy (24.11 writes -2 when unknown), billing, licenses, ...
	}
	switch typ {
	case "cpu":
		t.cpus = int(count)
	case "node":
		t.nodes = int(count)
	case "mem":
		t.memMiB = count
	case "gres":
		model, typed := strings.CutPrefix(name, "gpu:")
		if name != "gpu" && !typed {
			return nil
		}
		if typed {
			t.gpuType = model
			t.gpus = max(t.gpus, int(count)) // gres/gpu is also listed, with the same total
		} else {
			t.gpus = int(count)
		}
	}
	return nil
}

// parseTRES reads sacct -P's TRES text.
func parseTRES(s string) (tres, error) {
	var t tres
	if s == "" {
		return t, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return t, fmt.Errorf("TRES %q is not TYPE=COUNT", kv)
		}
		typ, name, _ := strings.Cut(k, "/")
		n, err := parseCount(v, typ == "mem")
		if err != nil {
			return t, fmt.Errorf("TRES %s: %v", k, err)
		}
		if err := t.add(typ, name, n); err != nil {
			return t, err
		}
	}
	return t, nil
}

// parseCount reads a TRES count; memory has a unit suffix (K, M, G, T; M
// when none) and is returned in MiB.
func parseCount(v string, mem bool) (int64, error) {
	mult := 1.0
	if mem && v != "" {
		switch v[len(v)-1] {
		case 'K':
			mult = 1.0 / 1024
		case 'M':
		case 'G':
			mult = 1024
		case 'T':
			mult = 1024 * 1024
		default:
			mult = 0
		}
		if mult != 0 {
			v = v[:len(v)-1]
		} else {
			mult = 1
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1e15 {
		return 0, fmt.Errorf("%q is not a count", v)
	}
	return int64(f * mult), nil
}

// submit-line options the replay honours. The line is the user's text:
// only these two are taken from it, and only in the forms sbatch accepts.
var (
	gangOptRe  = regexp.MustCompile(`(?:^|\s)--gang-topology(?:=|\s+)(\S+)`)
	nodesOptRe = regexp.MustCompile(`(?:^|\s)(?:-N\s*|--nodes(?:=|\s+))(\d+)(?:\s|$|-)`)
)

// fromSubmitLine takes --gang-topology and -N from the submit line.
func (j *SacctJob) fromSubmitLine() {
	line := j.SubmitLine
	if i := strings.Index(line, " --wrap"); i >= 0 {
		line = line[:i] // the wrapped command is not sbatch's
	}
	if m := gangOptRe.FindStringSubmatch(line); m != nil {
		j.GangTopology = strings.Trim(m[1], `"'`)
	}
	if nodesOptRe.MatchString(line) {
		j.NodesGiven = true
	}
}

// checkTimes fails on times no real job has.
func (j *SacctJob) checkTimes() error {
	switch {
	case j.Submit.IsZero():
		return fmt.Errorf("job %s has no submit time", j.ID)
	case !j.Start.IsZero() && j.Start.Before(j.Submit):
		return fmt.Errorf("job %s started (%s) before it was submitted (%s)", j.ID, j.Start.Format(time.DateTime), j.Submit.Format(time.DateTime))
	case !j.End.IsZero() && !j.Start.IsZero() && j.End.Before(j.Start):
		return fmt.Errorf("job %s ended (%s) before it started (%s)", j.ID, j.End.Format(time.DateTime), j.Start.Format(time.DateTime))
	}
	return nil
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}
