package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Output formats. Every command that prints a report takes -o/--output
// with the same words: table (the default, for people), json (for
// programs: every report has it), and csv or markdown where a command
// has them. Commands whose -o names a file to write (gen, snapshot,
// topology build, the controller daemon) say so in their help.

// outputHelp is the --output flag's help for the formats a command has.
func outputHelp(formats ...string) string {
	return "output format: " + orList(formats)
}

// checkOutput refuses a format the command does not have.
func checkOutput(got string, formats ...string) error {
	for _, f := range formats {
		if got == f {
			return nil
		}
	}
	return usagef("--output %q: unknown format (want %s)", got, orList(formats))
}

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// writeRowsJSON writes a table (a header row, then rows) as a JSON array
// of objects keyed by the header: a cell that reads as a finite number is
// a number, an empty cell (no figure: a class without jobs) is null.
func writeRowsJSON(w io.Writer, t [][]string) error {
	out := []map[string]any{}
	for _, row := range t[1:] {
		obj := map[string]any{}
		for i, cell := range row {
			var v any = cell
			if cell == "" {
				v = nil
			} else if f, err := strconv.ParseFloat(cell, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				v = json.Number(cell)
			}
			obj[t[0][i]] = v
		}
		out = append(out, obj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeCSVAsJSON writes what a CSV writer writes as JSON (writeRowsJSON).
func writeCSVAsJSON(w io.Writer, writeCSV func(io.Writer) error) error {
	var b bytes.Buffer
	if err := writeCSV(&b); err != nil {
		return err
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		return err
	}
	return writeRowsJSON(w, rows)
}

// checkWritable fails, before any work, for an output file whose
// directory does not exist or cannot be written ("" and "-" pass): a
// command that runs for minutes should not learn it at the end.
func checkWritable(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("%s %s: the directory %s does not exist", flag, path, dir)
	case err != nil:
		return usagef("%s %s: %v", flag, path, err)
	case !fi.IsDir():
		return usagef("%s %s: %s is not a directory", flag, path, dir)
	}
	tmp, err := os.CreateTemp(dir, ".gangtopo-check-*")
	if err != nil {
		return usagef("%s %s: cannot write in %s: %v", flag, path, dir, errors.Unwrap(err))
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// writeFile writes a file through write (nothing for an empty path: the
// flag was not given).
func writeFile(path string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// clusterTiers names the tiers a cluster has, for messages.
func clusterTiers(c *topology.Cluster) string {
	var names []string
	for _, t := range c.PresentTiers() {
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}
