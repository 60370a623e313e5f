package docsection

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Splice returns doc with section name's body replaced, or the section
// appended at the end when doc has none. A BEGIN marker without its END (or
// the other way round) is an error: the document was edited by hand and
// guessing where the section ends could delete prose.
func Splice(doc, name, body string) (string, error) {
	begin, end := "<!-- BEGIN "+name+" -->", "<!-- END "+name+" -->"
	block := begin + "\n" + body + end
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case i >= 0 && j > i:
		return doc[:i] + block + doc[j+len(end):], nil
	case i >= 0 || j >= 0:
		return "", fmt.Errorf("unbalanced markers for section %s: want %q before %q", name, begin, end)
	}
	if doc != "" && !strings.HasSuffix(doc, "\n\n") {
		doc += "\n"
	}
	return doc + block + "\n", nil
}

// Replace rewrites section name of the file at path (creating the file if
// it does not exist). The new text goes to a temporary file in the same
// directory that is renamed over the old one, so an interrupted run leaves
// the previous document whole.
func Replace(path, name, body string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc, err := Splice(string(data), name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(doc); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
