package slurmstate

import (
	"strings"
	"testing"
)

// edit returns a testdata file with one replacement made (which must match).
func edit(t *testing.T, file, old, new string) []byte {
	t.Helper()
	data := string(readTestdata(t, file))
	if !strings.Contains(data, old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	return []byte(strings.Replace(data, old, new, 1))
}

// editLast replaces the last occurrence (job 3 is the last in squeue.json).
func editLast(t *testing.T, file, old, new string) []byte {
	t.Helper()
	data := string(readTestdata(t, file))
	i := strings.LastIndex(data, old)
	if i < 0 {
		t.Fatalf("%s does not contain %q", file, old)
	}
	return []byte(data[:i] + new + data[i+len(old):])
}

// Unexpected output is an error that names the command and the field.
func TestParseSinfoJSONErrors(t *testing.T) {
	sample := string(readTestdata(t, "sinfo.json"))
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"another Slurm's format", edit(t, "sinfo.json", `openapi\/v0.0.38`, `openapi\/v0.0.39`),
			`sinfo --json: meta: Slurm 22.05.8 prints plugin.type "openapi/v0.0.39", data_parser ""; this gangtopo reads openapi/v0.0.38 (Slurm 22.05) and data_parser/v0.0.39 to v0.0.45 (23.02 to 26.05)`},
		{"truncated", []byte(sample[:len(sample)/2]), "sinfo --json: nodes[3] (node04): field "},
		{"empty", nil, `sinfo --json: line 1: want '{', found end of output (truncated?)`},
		{"an error message instead of JSON", []byte("sinfo: error: Unable to contact slurm controller (connect failure)\n"),
			`sinfo --json: line 1: want '{', found 's'`},
		{"Slurm lists errors", edit(t, "sinfo.json", `"errors": [`, `"errors": [{"error": "Unable to contact slurm controller", "errno": 1001}`),
			"sinfo --json: Slurm reported errors: Unable to contact slurm controller"},
		{"missing field", edit(t, "sinfo.json", `"gres_used": "gpu:8",`, ""),
			"sinfo --json: nodes[0] (node01): field gres_used: missing"},
		{"mistyped field", edit(t, "sinfo.json", `"cpus": 8,`, `"cpus": "eight",`),
			`sinfo --json: nodes[0]: field cpus: line 30: want an integer, found '"'`},
		{"unknown state", edit(t, "sinfo.json", `"state": "mixed"`, `"state": "sleepy"`),
			`sinfo --json: nodes[0] (node01): field state: unknown node state "sleepy"`},
		{"unknown flag", edit(t, "sinfo.json", "\"state_flags\": [\n      ],", `"state_flags": ["WOBBLY"],`),
			`sinfo --json: nodes[0] (node01): field state: unknown node state flag "WOBBLY"`},
		{"more GPUs used than configured", edit(t, "sinfo.json", `"gres_used": "gpu:8"`, `"gres_used": "gpu:9"`),
			"sinfo --json: nodes[0] (node01): field gres_used: 9 GPUs used of 8 configured"},
		{"bad GRES", edit(t, "sinfo.json", `"gres": "gpu:8"`, `"gres": "gpu:8(IDX:0-3"`),
			`sinfo --json: nodes[0] (node01): field gres: GRES "gpu:8(IDX:0-3": unbalanced '('`},
		{"trailing data", []byte(sample + "{}"), "sinfo --json: line 428: trailing data after the JSON document"},
		{"no nodes", []byte(`{"meta":{"plugin":{"type":"openapi/v0.0.38"}},"errors":[]}`), `sinfo --json: no "nodes" list`},
		{"duplicate node", edit(t, "sinfo.json", `"name": "node02"`, `"name": "node01"`), "sinfo --json: node node01 listed twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseSinfoJSON(tc.data, "sinfo --json")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

func TestParseSqueueJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown job state", editLast(t, "squeue.json", `"job_state": "RUNNING"`, `"job_state": "DANCING"`),
			`squeue --json: jobs[2] (job 3): field job_state: unknown job state "DANCING"`},
		{"running without resources", editLast(t, "squeue.json", `"job_resources"`, `"job_resourcez"`),
			"squeue --json: jobs[2] (job 3): field job_resources: missing for a RUNNING job"},
		{"more GRES entries than nodes", editLast(t, "squeue.json", `"gpu:4(IDX:0-3)"`, `"gpu:4(IDX:0-3)", "gpu:1(IDX:0)"`),
			"squeue --json: jobs[2] (job 3): field gres_detail: 3 entries for 2 nodes"},
		{"indices disagree with the count", editLast(t, "squeue.json", `"gpu:4(IDX:0-3)"`, `"gpu:4(IDX:0-2)"`),
			"squeue --json: jobs[2] (job 3): field gres_detail[1] (node02): gpu entry lists 3 indices for a count of 4"},
		{"missing gres_detail", editLast(t, "squeue.json", `"gres_detail": [
        "gpu:8(IDX:0-7)",
        "gpu:4(IDX:0-3)"
      ],`, ""), "squeue --json: jobs[2] (job 3): field gres_detail: missing"},
		{"unknown core state", editLast(t, "squeue.json", `"0": "allocated"`, `"0": "borrowed"`), `field job_resources: allocated_nodes[1]: core state "borrowed"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseSqueueJSON(tc.data, "squeue --json")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}

func TestParseScontrolErrors(t *testing.T) {
	// A record that does not parse leaves its job out (Unreadable): users'
	// free text can break a record, and one user must not stop the poll.
	records := []struct {
		name string
		data []byte
		want string
	}{
		{"running job without -d lines", edit(t, "scontrol_show_job_d.txt", "     Nodes=node01 CPU_IDs=0 Mem=0 GRES=gpu:8(IDX:0-7)\n     Nodes=node02 CPU_IDs=0 Mem=0 GRES=gpu:4(IDX:0-3)\n", ""),
			"job 3 (record at line 1): no per-node Nodes= lines for a RUNNING job (run `scontrol -d show job`: -d prints them)"},
		{"bad CPU_IDs", edit(t, "scontrol_show_job_d.txt", "CPU_IDs=0 Mem=0 GRES=gpu:8", "CPU_IDs=x Mem=0 GRES=gpu:8"),
			`job 3 (record at line 1): "Nodes=node01 CPU_IDs=x Mem=0 GRES=gpu:8(IDX:0-7)": field CPU_IDs: bad ID "x" in "x"`},
		{"field twice", edit(t, "scontrol_show_job_d.txt", "BatchHost=node01", "BatchHost=node01 JobState=PENDING"),
			"field JobState appears twice"},
		{"a comment's line after a blank line", append(readTestdata(t, "scontrol_show_job_d.txt"), "hello\n"...),
			`a job (record at line 35): text "hello" before the first Key=Value`},
	}
	for _, tc := range records {
		t.Run(tc.name, func(t *testing.T) {
			jobs, bad, err := ParseScontrolJobs(tc.data, "scontrol -d show job")
			if err != nil || len(bad) != 1 || !strings.Contains(bad[0].String(), tc.want) {
				t.Errorf("error %v, unreadable %v\nwant one unreadable record saying %s", err, bad, tc.want)
			}
			for _, j := range jobs {
				if !j.FromText {
					t.Errorf("job %s not marked FromText", j.ID)
				}
			}
		})
	}
	// Output that is not a job listing at all is an error.
	if _, _, err := ParseScontrolJobs([]byte("slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"), "scontrol -d show job"); err == nil ||
		err.Error() != "scontrol -d show job: no JobId= records" {
		t.Errorf("garbage: error %v, want no JobId= records", err)
	}
	nodes := []struct {
		name string
		data []byte
		want string
	}{
		{"bad state", edit(t, "scontrol_show_node_d_o.txt", "State=IDLE", "State=IDLE+WOBBLY"),
			`scontrol -d show node -o: line 1 (node05): field State: state "IDLE+WOBBLY": unknown node state flag "WOBBLY"`},
		{"missing CPUTot", edit(t, "scontrol_show_node_d_o.txt", "CPUTot=8 ", ""),
			"scontrol -d show node -o: line 1 (node05): field CPUTot: missing"},
		{"no records", []byte("\n\n"), ""},
	}
	for _, tc := range nodes {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScontrolNodes(tc.data, "scontrol -d show node -o")
			if tc.want == "" {
				if err != nil {
					t.Errorf("error = %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}
