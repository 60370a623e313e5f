package slurmstate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFindRecordSeries reads job 1 (3 GPUs on node03, running) from each
// series' capture: 22.05's openapi/v0.0.38 layout and the later
// data_parser ones (job_state a list, numbers wrapped).
func TestFindRecordSeries(t *testing.T) {
	for _, series := range []string{"slurm-22.05.8", "slurm-24.11.5", "slurm-26.05.5"} {
		t.Run(series, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", series, "squeue.json"))
			if err != nil {
				t.Fatal(err)
			}
			r, ok, err := FindRecord(data, series, "1")
			if err != nil || !ok {
				t.Fatalf("FindRecord: %v, found %v", err, ok)
			}
			got := [...]string{r.ID, r.State, r.Reason, r.Nodes, r.Name, r.User, r.Partition, r.ReqNodes}
			want := [...]string{"1", "RUNNING", "None", "node03", "wrap", "root", "gpu", "node03"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if _, ok, _ := FindRecord(data, series, "999"); ok {
				t.Error("found job 999")
			}
		})
	}
}

// TestRecordIDs: a job's record is found by the ID an administrator or an
// update names: a job, an array's task split off into its own record
// (118 is 114_4), an array's record of pending tasks, a heterogeneous
// job's component; Target is what scontrol update names for the record
// alone.
func TestRecordIDs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "lab16_pending_squeue.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id, wantJob, wantTarget, wantState string
	}{
		{"117", "117", "117", "PENDING"},
		{"98", "98", "98", "RUNNING"},
		{"114_4", "118", "114_4", "PENDING"},
		{"118", "118", "114_4", "PENDING"},
		{"114", "114", "114_[0-3,5-9]", "PENDING"},
		{"115+1", "116", "115+1", "PENDING"},
		{"115+0", "115", "115+0", "PENDING"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			r, ok, err := FindRecord(data, "capture", tt.id)
			if err != nil || !ok {
				t.Fatalf("FindRecord(%s): %v, found %v", tt.id, err, ok)
			}
			if got := [...]string{r.ID, r.Target(), r.State}; got != [...]string{tt.wantJob, tt.wantTarget, tt.wantState} {
				t.Errorf("got job %s target %s state %s; want %s %s %s", r.ID, r.Target(), r.State, tt.wantJob, tt.wantTarget, tt.wantState)
			}
		})
	}
}

// A record needs its ID and state; everything else is lenient.
func TestParseSqueueRecordsErrors(t *testing.T) {
	meta := `{"meta": {"plugin": {"type": "openapi/v0.0.38"}, "Slurm": {"release": "22.05.8"}}, "jobs": [`
	tests := []struct{ name, in, want string }{
		{"no state", meta + `{"job_id": 5}]}`, `x: jobs[0] (job 5): field job_state: missing`},
		{"no ID", meta + `{"job_state": "PENDING"}]}`, `x: jobs[0]: field job_id: missing`},
		{"Slurm's errors", `{"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [{"error": "Invalid job id specified"}], "jobs": []}`,
			`x: Slurm reported errors: Invalid job id specified`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSqueueRecords([]byte(tt.in), "x")
			if err == nil || err.Error() != tt.want {
				t.Errorf("err %v, want %s", err, tt.want)
			}
		})
	}
	// a name of another type reads as none
	recs, err := ParseSqueueRecords([]byte(meta+`{"job_id": 5, "job_state": "PENDING", "name": 7}]}`), "x")
	if err != nil || len(recs) != 1 || recs[0].Name != "" {
		t.Errorf("lenient fields: %v %+v", err, recs)
	}
}

func FuzzParseSqueueRecords(f *testing.F) {
	for _, name := range []string{"slurm-22.05.8/squeue.json", "slurm-26.05.5/squeue.json", "lab16_pending_squeue.json", "slurm-24.11.5/squeue_forged_name.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseSqueueRecords(data, "fuzz")
		if err != nil {
			return
		}
		for i := range recs {
			// every record read has its ID, by which it is found
			if recs[i].ID == "" || !recs[i].Is(recs[i].ID) || recs[i].Target() == "" {
				t.Fatalf("record %d: ID %q, target %q", i, recs[i].ID, recs[i].Target())
			}
		}
	})
}

// TestForgedJobName: a job named `x JobState=RUNNING` (captured on each
// series: scontrol's text prints the name before the real state) reads as
// the pending job it is from squeue --json.
func TestForgedJobName(t *testing.T) {
	for _, series := range []string{"slurm-22.05.8", "slurm-24.11.5", "slurm-26.05.5"} {
		t.Run(series, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", series, "scontrol_forged_name.txt"))
			if err != nil {
				t.Fatal(err)
			}
			// the text's first JobState= is the name's
			if i, j := bytes.Index(text, []byte("JobState=RUNNING")), bytes.Index(text, []byte("JobState=PENDING")); i < 0 || j < i {
				t.Fatalf("capture %s does not show the forgery: %s", series, text)
			}
			data, err := os.ReadFile(filepath.Join("testdata", series, "squeue_forged_name.json"))
			if err != nil {
				t.Fatal(err)
			}
			r, ok, err := FindRecord(data, series, "2")
			if err != nil || !ok {
				t.Fatalf("FindRecord: %v, found %v", err, ok)
			}
			got := [...]string{r.Name, r.State, r.Reason}
			if diff := cmp.Diff([...]string{"x JobState=RUNNING", "PENDING", "JobHeldUser"}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
