package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnbind runs `gangtopo unbind` against fake squeue/scontrol: job 5 is
// bound to leaves on top of the user's own constraint, job 6 had whole free
// nodes excluded besides the user's node16, job 7 is not gangtopo's, job 8's
// features were edited since, job 9 is pinned by the controller's
// preemption pins (a mark in its AdminComment), job 10 runs. --clear puts
// back exactly the user's part, and takes the pin out.
func TestUnbind(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "updates")
	pin := "gangtopo-pin: by=defrag nodes=node[05-08] until=2026-12-05T18:04:05Z | gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf1,leaf2 snapshot=9: no leaf has room"
	jobs := []struct{ id, name, state, reason, features, exc, req, admin string }{
		{"5", "train", "PENDING", "BadConstraints", "(bigmem)&[gt_leaf3|gt_leaf4]", "", "", "gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf3,leaf4 snapshot=9: no leaf has room"},
		{"6", "small", "PENDING", "Resources", "", "node[05-16]", "", "gangtopo v1 placed request=any:preferred gpus=1 domain=node02/nvl0 tier=nvlink excluded=node[05-15] snapshot=9: placed"},
		{"7", "plain", "PENDING", "Priority", "", "", "", ""},
		{"8", "edited", "PENDING", "Priority", "[gt_leaf1|gt_leaf2]&ib", "", "", "gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf1,leaf2 snapshot=9: no leaf has room"},
		{"9", "pinned", "PENDING", "Resources", "", "", "node[05-08]", pin},
		{"10", "x JobState=PENDING Features=[gt_leaf1|gt_leaf2]", "RUNNING", "None", "", "", "", "gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf1,leaf2 snapshot=9: no leaf has room"},
	}
	var recs []string
	for _, j := range jobs {
		recs = append(recs, fmt.Sprintf(`{"job_id": %s, "name": %q, "job_state": %q, "state_reason": %q, "features": %q, "excluded_nodes": %q, "required_nodes": %q, "admin_comment": %q, "gres_detail": [], "partition": "gpu", "job_resources": {"nodes": "node01"}}`,
			j.id, j.name, j.state, j.reason, j.features, j.exc, j.req, j.admin))
	}
	squeue := `{"meta": {"plugin": {"type": "openapi/v0.0.38"}, "Slurm": {"release": "22.05.8"}}, "errors": [], "jobs": [` + strings.Join(recs, ",") + "]}"
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("squeue", "cat <<'EOF'\n"+squeue+"\nEOF\n")
	write("scontrol", "if [ \"$1\" = update ]; then echo \"$@\" >> "+log+"; exit 0; fi\nexit 1\n")
	var out bytes.Buffer
	if err := runUnbind(nil, &out, nil, unbindOptions{prefix: "gt_", slurmBin: bin}); err != nil {
		t.Fatal(err)
	}
	want := `job 5: PENDING (BadConstraints: no node matches the job's constraints)
  Features:    (bigmem)&[gt_leaf3|gt_leaf4] -> bigmem
job 6: PENDING (Resources: waiting for resources: no allowed domain has room yet)
  ExcNodeList: node[05-16] -> node16
job 8: PENDING (Priority: other jobs are ahead of it in the queue)
  note:        its features were changed since gangtopo bound it; left as they are
job 9: PENDING (Resources: waiting for resources: no allowed domain has room yet)
  pin:         ReqNodeList=node[05-08] by gangtopo's defrag, until 2026-12-05T18:04:05Z
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("listing changed jobs")
	}
	// --clear without a gangtopo.yaml whose audit log records the
	// changes changes nothing
	out.Reset()
	noConfig := unbindOptions{clear: true, prefix: "gt_", slurmBin: bin, config: filepath.Join(bin, "none.yaml")}
	if err := runUnbind(nil, &out, []string{"5"}, noConfig); err == nil || !strings.Contains(err.Error(), "actions.audit_log") {
		t.Fatalf("--clear without gangtopo.yaml: %v, want an error naming the audit log", err)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("--clear changed a job without its audit line")
	}
	cfg, audit := filepath.Join(bin, "gangtopo.yaml"), filepath.Join(bin, "actions.log")
	if err := os.WriteFile(cfg, []byte("version: v1\ntopology: /t.yaml\nsnapshot: /s.json\nactions:\n  audit_log: "+audit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runUnbind(nil, &out, []string{"5", "6", "9"}, unbindOptions{clear: true, prefix: "gt_", slurmBin: bin, config: cfg}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// the pin: its mark taken out of the AdminComment, the node list
	// cleared (still what gangtopo set)
	want = "update JobId=5 Features=bigmem\nupdate JobId=6 ExcNodeList=node16\n" +
		"update JobId=9 AdminComment=gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf1,leaf2 snapshot=9: no leaf has room ReqNodeList=\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("scontrol updates (-want +got):\n%s", diff)
	}
	// each change recorded before and after: 2 changes, 4 lines; the pin's
	// 2 more
	if data, err := os.ReadFile(audit); err != nil || strings.Count(string(data), `"action":"unbind"`) != 4 || strings.Count(string(data), `"action":"unpin"`) != 2 {
		t.Errorf("audit log %v:\n%s", err, data)
	}
}
