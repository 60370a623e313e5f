package docsection

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplice(t *testing.T) {
	tests := []struct {
		name, doc, want, err string
	}{
		{"empty document", "", "<!-- BEGIN s -->\nnew\n<!-- END s -->\n", ""},
		{"appended after prose", "# B\n", "# B\n\n<!-- BEGIN s -->\nnew\n<!-- END s -->\n", ""},
		{"appended after a blank line", "# B\n\n", "# B\n\n<!-- BEGIN s -->\nnew\n<!-- END s -->\n", ""},
		{"replaced in place", "a\n<!-- BEGIN s -->\nold\n<!-- END s -->\nb\n", "a\n<!-- BEGIN s -->\nnew\n<!-- END s -->\nb\n", ""},
		{"other sections kept", "<!-- BEGIN t -->\nx\n<!-- END t -->\n<!-- BEGIN s -->\nold\n<!-- END s -->\n",
			"<!-- BEGIN t -->\nx\n<!-- END t -->\n<!-- BEGIN s -->\nnew\n<!-- END s -->\n", ""},
		{"begin without end", "<!-- BEGIN s -->\nold\n", "", "unbalanced markers for section s"},
		{"end without begin", "old\n<!-- END s -->\n", "", "unbalanced markers for section s"},
		{"end before begin", "<!-- END s -->\n<!-- BEGIN s -->\n", "", "unbalanced markers for section s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Splice(tt.doc, "s", "new\n")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bench.md")
	doc := "# Benchmarks\n\n<!-- BEGIN other -->\nkeep\n<!-- END other -->\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"first\n", "second\n"} {
		if err := Replace(path, "simulate", body); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := doc + "\n<!-- BEGIN simulate -->\nsecond\n<!-- END simulate -->\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}

	// A broken document is left exactly as it was, and no temporary file stays.
	broken := "<!-- BEGIN simulate -->\nprose an editor wrote\n"
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(path, "simulate", "x"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("unbalanced markers: err = %v, want one naming %s", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != broken {
		t.Errorf("document changed to %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only bench.md", len(entries))
	}

	// A new file is created.
	fresh := filepath.Join(dir, "new.md")
	if err := Replace(fresh, "s", "x\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(fresh); string(got) != "<!-- BEGIN s -->\nx\n<!-- END s -->\n" {
		t.Errorf("new document = %q", got)
	}
}

func TestCommands(t *testing.T) {
	doc := "# Doc\n\n## Other\n\n```sh\nnot this\n```\n\n## Switching off\n\nSet x.\n\n```sh\ngangtopo quota off            # prints\ngangtopo quota off --yes\n```\n\n" +
		"```yaml\nquota: {}\n```\n\n### A subsection\n\n```sh\n# a comment line\nscancel 1\n```\n\n## Next\n\n```sh\nnot this either\n```\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Commands(path, "## Switching off")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gangtopo quota off", "gangtopo quota off --yes", "scancel 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
