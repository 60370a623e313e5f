package docs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtract(t *testing.T) {
	doc := "# Title\n\n" +
		"```sh\n" +
		"make build                         # build/gangtopo\n" +
		"# a comment line\n" +
		"gangtopo place --topology a.yaml \\\n" +
		"    --gpus 8\n" +
		"```\n\n" +
		"```\n" +
		"request: 8 GPUs\n" +
		"\n" +
		"placed\n" +
		"```\n\n" +
		"```yaml\n" +
		"version: v1\n" +
		"```\n\n" +
		"- a list item:\n\n" +
		"  ```sh\n" +
		"  scontrol reconfigure\n" +
		"  ```\n\n" +
		"```\n" +
		"$ sbatch --gpus=8 train.sh\n" +
		"sbatch: error: gangtopo: no\n" +
		"\n" +
		"$ gangtopo why 5\n" +
		"job 5: RUNNING\n" +
		"```\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Extract(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{File: path, Line: 4, Text: "make build"},
		// continuation joined; the block under it is its output, blank
		// lines left out
		{File: path, Line: 6, Text: "gangtopo place --topology a.yaml --gpus 8", Output: []string{"request: 8 GPUs", "placed"}},
		{File: path, Line: 23, Text: "scontrol reconfigure"},
		// a transcript's output ends at a blank line
		{File: path, Line: 27, Text: "sbatch --gpus=8 train.sh", Output: []string{"sbatch: error: gangtopo: no"}},
		{File: path, Line: 30, Text: "gangtopo why 5", Output: []string{"job 5: RUNNING"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Extract (-want +got):\n%s", diff)
	}
}
