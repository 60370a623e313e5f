package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/tools/ctest"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// documents are README.md and docs/*.md, relative to the repository,
// except docs/benchmarks.md: each of its command lines is written there by
// the make bench target that ran it, with the figures it printed.
func documents(t *testing.T) []string {
	t.Helper()
	root := ctest.Root()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		if rel, _ := filepath.Rel(root, f); rel != filepath.Join("docs", "benchmarks.md") {
			out = append(out, rel)
		}
	}
	return out
}

// documented reads every command line of the documents.
func documented(t *testing.T) []Command {
	t.Helper()
	var all []Command
	for _, rel := range documents(t) {
		cs, err := Extract(filepath.Join(ctest.Root(), rel))
		if err != nil {
			t.Fatal(err)
		}
		for i := range cs {
			cs[i].File = rel
		}
		all = append(all, cs...)
	}
	return all
}

// TestEveryCommandIsCovered: a command line added to a document without
// a test that runs it, or one the registry names that no document holds
// any more, fails here.
func TestEveryCommandIsCovered(t *testing.T) {
	var doc, reg []string
	for _, c := range documented(t) {
		doc = append(doc, c.File+": "+c.Text)
	}
	for _, e := range Registry {
		reg = append(reg, e.File+": "+e.Cmd)
		if e.By == Itself && e.Why == "" {
			t.Errorf("%s: %q: run by no test, and the registry does not say why", e.File, e.Cmd)
		}
	}
	if diff := cmp.Diff(reg, doc); diff != "" {
		t.Errorf("the documents' command lines and tests/docs.Registry differ (-registry +documents): "+
			"add each new line to the Registry with the test that runs it:\n%s", diff)
	}
}

// indentedCommand is a command written as an indented code block, which
// Extract does not read (the documents put commands in ```sh blocks).
var indentedCommand = regexp.MustCompile(`^(    |\t)+(\$ )?(gangtopo|build/gangtopo|make|sbatch|srun|salloc|scontrol|sudo|dpkg|install) `)

func TestCommandsAreInShBlocks(t *testing.T) {
	for _, rel := range documents(t) {
		data, err := os.ReadFile(filepath.Join(ctest.Root(), rel))
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if !fenced && indentedCommand.MatchString(line) {
				t.Errorf("%s:%d: a command in an indented block, which no test reads: put it in a ```sh block\n%s", rel, i+1, line)
			}
		}
	}
}

// TestDocumentedCommands runs the documented command lines that need no
// cluster, in the repository, with gangtopo built: each must exit as the
// registry says, and print what its document shows under it.
func TestDocumentedCommands(t *testing.T) {
	root := ctest.Root()
	if _, err := os.Stat(filepath.Join(root, "..", "shared", "data", "traces")); err != nil {
		needs.Skip(t, "no ../shared/data/traces: the replay and simulate examples read them")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "gangtopo"), "./cmd/gangtopo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	shown := map[string][]string{}
	for _, c := range documented(t) {
		shown[c.File+": "+c.Text] = c.Output
	}
	for _, e := range For(Unit) {
		t.Run(e.File+"/"+e.Cmd, func(t *testing.T) {
			t.Parallel()
			out, code := runLine(t, e, root, bin)
			if code != e.Exit {
				t.Fatalf("exit %d, want %d:\n%s", code, e.Exit, out)
			}
			for _, want := range shown[e.File+": "+e.Cmd] {
				if !strings.Contains(out, strings.TrimSpace(want)) {
					t.Errorf("the output lacks what %s shows:\n%s\noutput:\n%s", e.File, want, out)
				}
			}
		})
	}
}

// runLine runs one command line with sh in the repository: build/gangtopo
// and gangtopo are the built binary, the entry's replacements and extra
// arguments put in. It returns stdout and stderr together and the exit
// status.
func runLine(t *testing.T, e Entry, root, bin string) (string, int) {
	t.Helper()
	line := e.Cmd
	for i := 0; i+1 < len(e.Replace); i += 2 {
		line = strings.ReplaceAll(line, e.Replace[i], e.Replace[i+1])
	}
	line = strings.Replace(line, "build/gangtopo ", filepath.Join(bin, "gangtopo")+" ", 1)
	line = strings.ReplaceAll(line+e.Extra, "$TMP", t.TempDir())
	if redirect := strings.Index(line, " > "); redirect >= 0 && e.Extra != "" {
		t.Fatalf("%q: Extra after a redirection", e.Cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "COLUMNS=100", "GANGTOPO_CONFIG=")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return string(out), 0
}
