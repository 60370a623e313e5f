package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDaemonCommand(t *testing.T) {
	topo := slurmTestdata + "lab8.yaml"
	dir := t.TempDir()
	out := filepath.Join(dir, "s.json")
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "sinfo"), []byte("#!/bin/sh\nsleep 5\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "squeue"), []byte("#!/bin/sh\necho '{}'\n"), 0o755)
	saved := []string{"--sinfo-json", slurmTestdata + "sinfo.json", "--squeue-json", slurmTestdata + "squeue.json"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"one cycle from saved outputs", append([]string{"--role", "controller", "--topology", topo, "-o", out, "--once"}, saved...), 0, `"message":"controller ready"`},
		{"no role", []string{"--topology", topo, "-o", out}, 2, `gangtopo: daemon: --role "": want one of controller`},
		{"unknown role", []string{"--role", "janitor"}, 2, `--role "janitor": want one of controller`},
		{"no output", []string{"--role", "controller", "--topology", topo}, 2, "daemon --role controller: --topology and -o are required"},
		{"bad interval", []string{"--role", "controller", "--topology", topo, "-o", out, "--interval", "0s"}, 2, "--interval must be positive"},
		{"share above 100%", append([]string{"--role", "controller", "--topology", topo, "-o", out, "--max-rpc-share", "150"}, saved...), 2,
			"--max-rpc-share: 150 is not a percentage above 0 and below 100 (0: off)"},
		{"negative share", append([]string{"--role", "controller", "--topology", topo, "-o", out, "--max-rpc-share", "-1"}, saved...), 2,
			"--max-rpc-share: -1 is not a percentage"},
		{"bad topology", []string{"--role", "controller", "--topology", slurmTestdata + "sinfo.json", "-o", out}, 2, "sinfo.json"},
		{"Slurm hangs, once", []string{"--role", "controller", "--topology", topo, "-o", filepath.Join(dir, "t.json"), "--once", "--slurm-bin", bin, "--slurm-timeout", "200ms"}, 1,
			"gangtopo: sinfo stage: sinfo --json: no answer within 200ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append([]string{"daemon"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q\nwant exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
	if s := decodeSnapshot(t, out); len(s.Jobs) != 1 {
		t.Errorf("the --once cycle published %d jobs, want 1", len(s.Jobs))
	}
}
