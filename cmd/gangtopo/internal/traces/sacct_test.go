package traces

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A job as 22.05 writes it (openapi/dbv0.0.38: plain numbers, a state
// string, no submit line), trimmed to the fields the reader uses.
const json2205 = `{"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "errors": [], "jobs": [
 {"job_id": 7, "name": "train", "user": "alice", "account": "vision", "partition": "gpu", "qos": "normal",
  "nodes": "node[01-02]", "allocation_nodes": 2,
  "array": {"job_id": 0, "task_id": null}, "het": {"job_id": 0, "job_offset": null},
  "state": {"current": "CANCELLED", "reason": "None"},
  "time": {"submission": 1000, "eligible": 1000, "start": 1030, "end": 1090, "limit": 2},
  "flags": ["CLEAR_SCHEDULING", "STARTED_ON_BACKFILL"],
  "required": {"CPUs": 1, "memory": 0},
  "tres": {"requested": [{"type": "cpu", "name": null, "id": 1, "count": 1}, {"type": "gres", "name": "gpu", "id": 1001, "count": 16}],
           "allocated": [{"type": "cpu", "name": null, "id": 1, "count": 16}, {"type": "node", "name": null, "id": 4, "count": 2},
                         {"type": "gres", "name": "gpu", "id": 1001, "count": 16}, {"type": "gres", "name": "gpu:h100", "id": 1002, "count": 16}]}}
]}`

// The same kind of job in a data_parser layout (v0.0.42, 24.11): numbers
// that may be unset as {"set", "infinite", "number"}, states as lists,
// the submit line.
const json2411 = `{"jobs": [
 {"job_id": 41, "name": "sweep", "user": "bob", "account": "speech", "partition": "gpu", "qos": "normal",
  "nodes": "node03", "allocation_nodes": 1,
  "array": {"job_id": 40, "task_id": {"set": true, "infinite": false, "number": 1}, "task": ""},
  "het": {"job_id": 0, "job_offset": {"set": false, "infinite": false, "number": 0}},
  "state": {"current": ["COMPLETED"], "reason": "None"},
  "time": {"submission": 2000, "eligible": 2001, "start": 2003, "end": 2063,
           "limit": {"set": true, "infinite": false, "number": 3}},
  "flags": ["STARTED_ON_SCHEDULE"],
  "submit_line": "sbatch -N 1 --gpus=2 --gang-topology=nvlink:required --array=0-3 --wrap 'sleep 60'",
  "tres": {"requested": [{"type": "gres", "name": "gpu", "id": 1001, "count": 2}, {"type": "node", "name": "", "id": 4, "count": 1}],
           "allocated": [{"type": "gres", "name": "gpu", "id": 1001, "count": 2}, {"type": "mem", "name": "", "id": 2, "count": 2048}]}},
 {"job_id": 45, "name": "het", "user": "bob", "account": "speech", "partition": "gpu", "qos": "normal",
  "nodes": "None assigned", "allocation_nodes": 0,
  "array": {"job_id": 0, "task_id": {"set": false, "infinite": false, "number": 0}},
  "het": {"job_id": 44, "job_offset": {"set": true, "infinite": false, "number": 1}},
  "state": {"current": ["PENDING"], "reason": "Priority"},
  "time": {"submission": 2100, "eligible": 2100, "start": 0, "end": 0,
           "limit": {"set": false, "infinite": true, "number": 0}},
  "flags": [], "submit_line": "",
  "tres": {"requested": [{"type": "gres", "name": "gpu", "id": 1001, "count": 1}], "allocated": []}}
]}`

const pipeDump = `JobID|JobIDRaw|JobName|User|Account|Partition|QOS|State|Submit|Eligible|Start|End|Elapsed|Timelimit|ReqTRES|AllocTRES|ReqNodes|AllocNodes|NodeList|ReqCPUS|AllocCPUS|Flags|SubmitLine
7|7|train|alice|vision|gpu|normal|CANCELLED by 0|1970-01-01T00:16:40|1970-01-01T00:16:40|1970-01-01T00:17:10|1970-01-01T00:18:10|00:01:00|00:02:00|cpu=1,gres/gpu=16,mem=1000000M,node=1|cpu=16,gres/gpu:h100=16,gres/gpu=16,node=2|1|2|node[01-02]|1|16|SchedBackfill,StartRecieved|sbatch --gpus=16 --wrap sleep 90
7.batch|7.batch|batch||vision|||CANCELLED|1970-01-01T00:17:10|1970-01-01T00:17:10|1970-01-01T00:17:10|1970-01-01T00:18:10|00:01:00||||1|1|node01|1|16||
`

func TestReadSacct(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	// job 7 from 22.05's JSON and from -P: the same job either way
	job7 := SacctJob{ID: "7", Raw: 7, ArrayJob: -1, ArrayTask: -1, HetJob: -1, HetOffset: -1, Name: "train",
		User: "alice", Account: "vision", Partition: "gpu", QOS: "normal", State: "CANCELLED",
		Submit: at(1000), Eligible: at(1000), Start: at(1030), End: at(1090), Limit: 2 * time.Minute,
		ReqGPUs: 16, GPUs: 16, GPUType: "h100", Nodes: 2, ReqNodes: 0, NodeList: "node[01-02]", CPUs: 16, ReqCPUs: 1,
		Scheduler: "backfill"}
	job7pipe := job7
	job7pipe.ReqNodes, job7pipe.SubmitLine = 1, "sbatch --gpus=16 --wrap sleep 90"
	tests := []struct {
		name, file, data string
		want             []SacctJob
	}{
		{"22.05 JSON", "a.json", json2205, []SacctJob{withAt(job7, "a.json:2")}},
		{"data_parser JSON: array task, het component", "b.json", json2411, []SacctJob{
			{At: "b.json:2", ID: "40_1", Raw: 41, ArrayJob: 40, ArrayTask: 1, HetJob: -1, HetOffset: -1, Name: "sweep",
				User: "bob", Account: "speech", Partition: "gpu", QOS: "normal", State: "COMPLETED",
				Submit: at(2000), Eligible: at(2001), Start: at(2003), End: at(2063), Limit: 3 * time.Minute,
				ReqGPUs: 2, GPUs: 2, Nodes: 1, ReqNodes: 1, NodesGiven: true, NodeList: "node03", MemMiB: 2048,
				GangTopology: "nvlink:required", Scheduler: "main",
				SubmitLine: "sbatch -N 1 --gpus=2 --gang-topology=nvlink:required --array=0-3 --wrap 'sleep 60'"},
			// unset start/end and an infinite limit read as zero
			{At: "b.json:13", ID: "44+1", Raw: 45, ArrayJob: -1, ArrayTask: -1, HetJob: 44, HetOffset: 1, Name: "het",
				User: "bob", Account: "speech", Partition: "gpu", QOS: "normal", State: "PENDING",
				Submit: at(2100), Eligible: at(2100), ReqGPUs: 1, NodeList: "None assigned"}}},
		{"sacct -P: steps skipped", "c.txt", pipeDump, []SacctJob{withAt(job7pipe, "c.txt:2")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readSacct(tc.file, strings.NewReader(tc.data), SacctOptions{KeepNames: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func withAt(j SacctJob, at string) SacctJob { j.At = at; return j }

func TestSacctNamesHashed(t *testing.T) {
	plain, err := readSacct("a.json", strings.NewReader(json2205), SacctOptions{})
	if err != nil {
		t.Fatal(err)
	}
	salted, err := readSacct("a.json", strings.NewReader(json2205), SacctOptions{Salt: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	// sha256("alice")[:4] = 2bd806c9, sha256("vision")[:4] = 5944ae84
	if diff := cmp.Diff([]string{"u-2bd806c9", "a-5944ae84"}, []string{plain[0].User, plain[0].Account}); diff != "" {
		t.Errorf("hashed names (-want +got)\n%s", diff)
	}
	if salted[0].User == plain[0].User || !strings.HasPrefix(salted[0].User, "u-") {
		t.Errorf("a salt must change the hash: %s vs %s", salted[0].User, plain[0].User)
	}
}

// TestReadSacctBadInput: every refusal names the file, the line and what
// is wrong.
func TestReadSacctBadInput(t *testing.T) {
	header := strings.SplitN(pipeDump, "\n", 2)[0] + "\n"
	row := strings.SplitN(pipeDump, "\n", 3)[1]
	tests := []struct{ name, data, want string }{
		{"empty", "  \n", "x: empty file"},
		{"not JSON", "{\"jobs\": [\n{\"job_id\": 1,,}]}", "x:2: not valid JSON"},
		{"partial JSON", json2205[:300], "the JSON ends early (a partial dump?)"},
		{"no jobs list", `{"meta": {}}`, `no "jobs" list`},
		{"sacct errors", `{"errors": [{"error": "Unable to connect", "description": "slurmdbd"}], "jobs": []}`, "x:1: sacct reported errors, the dump may be partial: Unable to connect slurmdbd"},
		{"wrong type", "{\"jobs\": [\n{\"job_id\": 1,\n \"name\": 5}]}", "x:3: job field name: number is not what sacct writes there"},
		{"unknown state", strings.Replace(json2205, `"CANCELLED"`, `"DONE"`, 1), `x:2: job 7: unknown job state "DONE"`},
		{"start before submit", strings.Replace(json2205, `"start": 1030`, `"start": 900`, 1), "x:2: job 7 started (1970-01-01 00:15:00) before it was submitted"},
		{"negative TRES", strings.Replace(json2205, `"count": 16}, {"type": "node"`, `"count": -1}, {"type": "node"`, 1), "job 7: negative TRES count -1 for cpu"},
		{"no jobs", `{"jobs": []}`, "x: no jobs in the dump"},
		{"header lacks fields", "JobID|State\n1|COMPLETED\n", "x:1: the header lacks Submit, Start, End, AllocTRES"},
		{"field count", header + "7|7|x\n", "x:2: 3 fields, want 23"},
		{"bad time", header + strings.Replace(row, "1970-01-01T00:17:10", "yesterday", 1) + "\n", `x:2: field Start: "yesterday" is not a time`},
		{"bad limit", header + strings.Replace(row, "|00:02:00|", "|2 min|", 1) + "\n", `x:2: field Timelimit: "2 min" is not a duration`},
		{"bad TRES", header + strings.Replace(row, "cpu=16,", "cpu16,", 1) + "\n", `x:2: field AllocTRES: TRES "cpu16" is not TYPE=COUNT`},
		{"bad job ID", header + strings.Replace(row, "7|7|", "seven|7|", 1) + "\n", `x:2: field JobID: "seven" is not a job ID`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readSacct("x", strings.NewReader(tc.data), SacctOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseSlurmDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"00:01:00": time.Minute, "1-02:03:04": 26*time.Hour + 3*time.Minute + 4*time.Second,
		"05:30": 5*time.Minute + 30*time.Second, "UNLIMITED": 0, "Partition_Limit": 0} {
		got, err := parseSlurmDuration(in)
		if err != nil || got != want {
			t.Errorf("parseSlurmDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1:60:00", "x", "1-", "-1:00:00"} {
		if _, err := parseSlurmDuration(in); err == nil {
			t.Errorf("parseSlurmDuration(%q) accepted", in)
		}
	}
}
