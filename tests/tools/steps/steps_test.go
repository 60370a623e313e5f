package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReason(t *testing.T) {
	tests := []struct {
		name, out, want string
	}{
		{"innermost failed tests, with the first message", `=== RUN   TestE2E
=== RUN   TestE2E/slurm-26.05.5/HetJobComponentsPlaced
    hetjob_test.go:30: sbatch --parsable as uid 65534: exit status 1: sbatch: error: PluginDir: /root/x/build/plugins: Permission denied
--- FAIL: TestE2E (412.10s)
    --- FAIL: TestE2E/slurm-26.05.5/HetJobComponentsPlaced (0.31s)
        hetjob_test.go:30: sbatch --parsable as uid 65534: exit status 1
    --- PASS: TestE2E/slurm-26.05.5/GangStaysInOneLeaf (2.10s)
FAIL
FAIL	github.com/gangtopo/gangtopo/tests/e2e	415.002s
make: *** [Makefile:88: e2e-sid] Error 1`,
			"--- FAIL: TestE2E/slurm-26.05.5/HetJobComponentsPlaced: hetjob_test.go:30: sbatch --parsable as uid 65534: exit status 1"},
		// go test -v streams a test's output under its === RUN line; the
		// summary's --- FAIL line is followed by a sibling's --- PASS
		{"a streamed message, under the test's === RUN line", `=== RUN   TestE2E/slurm-22.05.8/ScaleSmoke128
    lab.go:309: slurmlab: Slurm 22.05.8: 128 nodes idle after 2.598s
    scale_test.go:31: slurmscale: 128 nodes: fill: squeue --json: exit status 1
=== RUN   TestE2E/slurm-22.05.8/DefaultPartitionInScope
    partition_test.go:20: a log line of a test that passed
--- FAIL: TestE2E (998.08s)
    --- FAIL: TestE2E/slurm-22.05.8 (998.05s)
        --- PASS: TestE2E/slurm-22.05.8/OneControllerActs (7.77s)
        --- FAIL: TestE2E/slurm-22.05.8/ScaleSmoke128 (42.44s)
        --- PASS: TestE2E/slurm-22.05.8/DefaultPartitionInScope (6.31s)
FAIL`,
			"--- FAIL: TestE2E/slurm-22.05.8/ScaleSmoke128: scale_test.go:31: slurmscale: 128 nodes: fill: squeue --json: exit status 1"},
		// a test's t.Logf lines look like its t.Errorf lines: the first
		// and the last are named, the last most often the one that ended it
		{"a streamed test that logged before it failed", `=== RUN   TestE2E/slurm-26.05.5/DebianPackageUpgradeAsDocumented
    package_upgrade_test.go:49: $ dpkg -i gangtopo_0.673_amd64.deb  (exit: <nil>)
    lab.go:309: slurmlab: restarted
    package_upgrade_test.go:80: the controller (PID 12): restarted
=== RUN   TestE2E/slurm-26.05.5/OtherTest
=== CONT  TestE2E/slurm-26.05.5/DebianPackageUpgradeAsDocumented
    package_upgrade_test.go:93: the gang after the reconfigure: PENDING on []
        continued on a second line
--- FAIL: TestE2E (998.08s)
    --- FAIL: TestE2E/slurm-26.05.5 (998.05s)
        --- FAIL: TestE2E/slurm-26.05.5/DebianPackageUpgradeAsDocumented (42.44s)
        --- PASS: TestE2E/slurm-26.05.5/OtherTest (6.31s)
FAIL`,
			"--- FAIL: TestE2E/slurm-26.05.5/DebianPackageUpgradeAsDocumented: package_upgrade_test.go:49: $ dpkg -i gangtopo_0.673_amd64.deb  (exit: <nil>) ... last: package_upgrade_test.go:93: the gang after the reconfigure: PENDING on []"},
		{"a repeated output with several messages", "--- FAIL: TestX (0.10s)\n    x_test.go:3: got 1\n        more of it\n    x_test.go:9: want 2\nFAIL\n",
			"--- FAIL: TestX: x_test.go:3: got 1 ... last: x_test.go:9: want 2"},
		{"several tests, three named", "--- FAIL: TestA (0.00s)\n--- FAIL: TestB (0.00s)\n--- FAIL: TestC (0.00s)\n--- FAIL: TestD (0.00s)\nFAIL\n",
			"--- FAIL: TestA, TestB, TestC, and 1 more"},
		{"a panic", "ok  \tpkg/a\t0.1s\npanic: test timed out after 15m0s\n\trunning tests:\nFAIL\tpkg/b\t900.1s\n",
			"panic: test timed out after 15m0s"},
		{"a Go compile error", "# github.com/gangtopo/gangtopo/cmd/gangtopo\ncmd/gangtopo/place.go:12:2: undefined: foo\nFAIL\tgithub.com/gangtopo/gangtopo/cmd/gangtopo [build failed]\n",
			"cmd/gangtopo/place.go:12:2: undefined: foo"},
		{"a C compile error", "cc -std=gnu11 ...\nc/spank_remote.c:40:13: error: storage size of 'hl' isn't known\nmake: *** [Makefile:160: build/plugins/spank_gangtopo.so] Error 1\n",
			"c/spank_remote.c:40:13: error: storage size of 'hl' isn't known"},
		{"the script's own last words", "roots: making the sid root (debootstrap, about 2 minutes)\nroots: debootstrap sid failed (log: build/roots/sid.log)\nmake[1]: *** [Makefile:120: build/roots/sid/.gangtopo-root] Error 1\nmake: *** [Makefile:117: roots] Error 1\n",
			"roots: debootstrap sid failed (log: build/roots/sid.log)"},
		{"gofmt", "lint: gofmt needed: cmd/gangtopo/x.go selector/y.go\nmake: *** [Makefile:31: lint] Error 1\n", "lint: gofmt needed: cmd/gangtopo/x.go selector/y.go"},
		// the lab did not start: TestMain failed, no test ran; the quota
		// package failed too, with a message wrapped over lines
		{"a package whose TestMain failed", "plugins: building for Slurm 22.05.8 (headers in /usr/include)\ncp build/plugins/slurm-release build/plugins-fault/\n" +
			"e2e: slurmlab: timed out after 30s waiting for all nodes idle (logs in /tmp/x/log)\nFAIL\tgithub.com/gangtopo/gangtopo/tests/e2e\t31.813s\n" +
			"slurmlab: stopping stale lab /tmp/x\ne2e quota: slurmlab: mariadb-install-db: exit status 1: Neither host 'vm' nor 'localhost' could be looked up with\n" +
			"'/usr/bin/resolveip'\nPlease configure the 'hostname' command to return a correct\nhttps://mariadb.com/kb/en/x (logs in /tmp/y/log)\n" +
			"FAIL\tgithub.com/gangtopo/gangtopo/tests/e2e/quota\t0.427s\nFAIL\nmake[1]: *** [Makefile:124: e2e-host] Error 1\n",
			"e2e: slurmlab: timed out after 30s waiting for all nodes idle (logs in /tmp/x/log)"},
		{"nothing printed", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Reason(tt.out)); diff != "" {
				t.Errorf("Reason (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunAll checks the order of steps, where the run stops, and that the
// last line names the failed step and why.
func TestRunAll(t *testing.T) {
	tests := []struct {
		name     string
		steps    []string
		fail     map[string]string // step -> what it prints before failing
		wantRan  []string
		wantLast string
		wantOK   bool
	}{
		{"all pass", []string{"lint", "unit"}, nil, []string{"lint", "unit"}, "make test: PASSED (2 steps in 0 s)", true},
		{"the first failure stops the rest", []string{"lint", "unit", "c-test", "e2e-host"}, map[string]string{"unit": "--- FAIL: TestX (0.00s)\n    x_test.go:3: boom\n"},
			[]string{"lint", "unit"}, "make test: FAILED in unit: --- FAIL: TestX: x_test.go:3: boom (log: LOGS/unit.log)", false},
		{"every series runs though one failed", []string{"e2e-prepare", "e2e-host", "e2e-trixie", "e2e-sid"}, map[string]string{"e2e-host": "panic: test timed out after 15m0s\n"},
			[]string{"e2e-prepare", "e2e-host", "e2e-trixie", "e2e-sid"}, "make test: FAILED in e2e-host: panic: test timed out after 15m0s (log: LOGS/e2e-host.log)", false},
		{"the series do not run after an earlier step failed", []string{"e2e-prepare", "e2e-host", "e2e-sid"}, map[string]string{"e2e-prepare": "roots: debootstrap sid failed\n"},
			[]string{"e2e-prepare"}, "make test: FAILED in e2e-prepare: roots: debootstrap sid failed (log: LOGS/e2e-prepare.log)", false},
		{"two series failed: the first names why, and says there is more", []string{"e2e-host", "e2e-sid"}, map[string]string{"e2e-host": "e2e: a\n", "e2e-sid": "e2e: b\n"},
			[]string{"e2e-host", "e2e-sid"}, "make test: FAILED in e2e-host: e2e: a (log: LOGS/e2e-host.log); also failed: 1 more step(s), above", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := t.TempDir()
			var out bytes.Buffer
			var ran []string
			r := runner{title: "make test", logs: logs, stdout: &out,
				each: map[string]bool{"e2e-host": true, "e2e-trixie": true, "e2e-sid": true},
				run: func(step string, w io.Writer) error {
					ran = append(ran, step)
					if msg, ok := tt.fail[step]; ok {
						fmt.Fprint(w, msg)
						return errors.New("exit status 2")
					}
					fmt.Fprintln(w, step, "passed")
					return nil
				}}
			ok := r.runAll(tt.steps)
			if ok != tt.wantOK {
				t.Errorf("runAll = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.wantRan, ran); diff != "" {
				t.Errorf("steps run (-want +got):\n%s", diff)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			last := strings.ReplaceAll(lines[len(lines)-1], logs, "LOGS")
			if diff := cmp.Diff(tt.wantLast, last); diff != "" {
				t.Errorf("last line (-want +got):\n%s\nwhole output:\n%s", diff, out.String())
			}
		})
	}
}

// TestRunPool: with -jobs 2 the series run two at a time (the first two
// each wait until the other has started), every one runs though one
// failed, each one's output is printed whole, and the last line still
// names the failed step.
func TestRunPool(t *testing.T) {
	logs := t.TempDir()
	var out bytes.Buffer
	started := map[string]chan struct{}{"e2e-host": make(chan struct{}), "e2e-trixie": make(chan struct{})}
	var mu sync.Mutex
	var ran []string
	r := runner{title: "make test", logs: logs, stdout: &out, jobs: 2,
		each: map[string]bool{"e2e-host": true, "e2e-trixie": true, "e2e-sid": true},
		run: func(step string, w io.Writer) error {
			mu.Lock()
			ran = append(ran, step)
			mu.Unlock()
			if c, ok := started[step]; ok {
				close(c)
				other := map[string]string{"e2e-host": "e2e-trixie", "e2e-trixie": "e2e-host"}[step]
				select {
				case <-started[other]:
				case <-time.After(10 * time.Second):
					return fmt.Errorf("%s never ran beside %s", other, step)
				}
			}
			fmt.Fprintf(w, "%s line 1\n", step)
			fmt.Fprintf(w, "%s line 2\n", step)
			if step == "e2e-trixie" {
				fmt.Fprint(w, "--- FAIL: TestE2E/slurm-24.11.5/X (1.00s)\n")
				return errors.New("exit status 2")
			}
			return nil
		}}
	if r.runAll([]string{"lint", "e2e-host", "e2e-trixie", "e2e-sid"}) {
		t.Error("runAll passed with a failed series")
	}
	if len(ran) != 4 {
		t.Errorf("ran %v, want all four steps", ran)
	}
	text := out.String()
	for _, step := range []string{"e2e-host", "e2e-trixie", "e2e-sid"} {
		if !strings.Contains(text, step+" line 1\n"+step+" line 2\n") {
			t.Errorf("%s's output is not printed whole:\n%s", step, text)
		}
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	last := strings.ReplaceAll(lines[len(lines)-1], logs, "LOGS")
	if want := "make test: FAILED in e2e-trixie: --- FAIL: TestE2E/slurm-24.11.5/X (log: LOGS/e2e-trixie.log)"; last != want {
		t.Errorf("last line %q, want %q\n%s", last, want, text)
	}
}
