package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/golden"
)

// TestReplayHTML writes the replay's page on the 48-job fixture and
// compares it with testdata/golden/replay-page*.html (rewrite with
// -update; open them in a browser to look): a load sweep (curves and
// bands), one load (the waits as a table) and a sacct history. The page is the same
// bytes from run to run.
func TestReplayHTML(t *testing.T) {
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	small := filepath.Join("testdata", "replay", "philly-small.csv")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"replay-page", []string{"replay", "--topology", lab, "--trace", small, "--peak-load", "0.8,1,1.2"}},
		{"replay-page-one-load", []string{"replay", "--topology", lab, "--trace", small, "--compress", "1", "--policies", "gangtopo-slurm,slurm", "--slowdown", "factors"}},
		// a site's history: at its own pace, over minutes
		{"replay-page-sacct", []string{"replay", "--topology", lab, "--sacct", sacctCapture("26.05.5", "sacct.json"),
			"--scontrol-config", sacctCapture("26.05.5", "config.txt"), "--policies", "slurm,gangtopo-slurm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pages [2][]byte
			for i := range pages {
				page := filepath.Join(dir, tc.name+".html")
				if _, stderr, code := runCLI(t, append(tc.args, "--html", page)...); code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				var err error
				if pages[i], err = os.ReadFile(page); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(pages[0], pages[1]) {
				t.Errorf("two runs wrote different pages")
			}
			golden.Check(t, filepath.Join("testdata", "golden", tc.name+".html"), pages[0])
		})
	}
}

// Text that comes from the user (the trace's file name here) is escaped
// on the page, in the HTML and in the SVG.
func TestReplayHTMLEscapes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "replay", "philly-small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, `<b>&"x".csv`)
	if err := os.WriteFile(trace, data, 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "page.html")
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	if _, stderr, code := runCLI(t, "replay", "--topology", lab, "--trace", trace, "--peak-load", "0.8,1", "--policies", "slurm", "--html", page); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "<b>") || !strings.Contains(string(got), "&lt;b&gt;&amp;") {
		t.Errorf("the trace's name <b>&\"x\".csv is not escaped:\n%s", got)
	}
}
