package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnbind runs `gangtopo unbind` against fake squeue/scontrol: job 5 is
// bound to leaves on top of the user's own constraint, job 6 had whole free
// nodes excluded besides the user's node16, job 7 is not gangtopo's, job 8's
// features were edited since. --clear puts back exactly the user's part.
func TestUnbind(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "updates")
	jobs := map[string]string{
		"5": "JobId=5 JobName=train JobState=PENDING Reason=BadConstraints Features=(bigmem)&[gt_leaf3|gt_leaf4] ExcNodeList=(null) AdminComment=gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf3,leaf4 snapshot=9: no leaf has room",
		"6": "JobId=6 JobName=small JobState=PENDING Reason=Resources Features=(null) ExcNodeList=node[05-16] AdminComment=gangtopo v1 placed request=any:preferred gpus=1 domain=node02/nvl0 tier=nvlink excluded=node[05-15] snapshot=9: placed",
		"7": "JobId=7 JobName=plain JobState=PENDING Reason=Priority Features=(null) ExcNodeList=(null)",
		"8": "JobId=8 JobName=edited JobState=PENDING Reason=Priority Features=[gt_leaf1|gt_leaf2]&ib ExcNodeList=(null) AdminComment=gangtopo v1 waiting request=leaf:required gpus=32 bound=leaf1,leaf2 snapshot=9: no leaf has room",
	}
	var show strings.Builder
	show.WriteString("case \"$4\" in\n")
	for id, line := range jobs {
		show.WriteString(id + ") cat <<'EOF'\n" + line + "\nEOF\n;;\n")
	}
	show.WriteString("esac\n")
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("squeue", "echo 5; echo 6; echo 7; echo 8\n")
	write("scontrol", "if [ \"$1\" = update ]; then echo \"$@\" >> "+log+"; exit 0; fi\n"+show.String())
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
	if err := runUnbind(nil, &out, []string{"5", "6"}, unbindOptions{clear: true, prefix: "gt_", slurmBin: bin, config: cfg}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("update JobId=5 Features=bigmem\nupdate JobId=6 ExcNodeList=node16\n", string(got)); diff != "" {
		t.Errorf("scontrol updates (-want +got):\n%s", diff)
	}
	// each change recorded before and after: 2 changes, 4 lines
	if data, err := os.ReadFile(audit); err != nil || strings.Count(string(data), `"action":"unbind"`) != 4 {
		t.Errorf("audit log %v:\n%s", err, data)
	}
}
