package main

import (
	"path/filepath"
	"strings"
)

// One benchmark, several Slurm series: the host's own packages (Debian
// bookworm: 22.05.8) and the newer series in Debian roots (make roots:
// trixie 24.11.5, sid 26.05.5; -root). A run on a root writes beside the
// host's figures, never over them: the replay section and its step files
// get the series' name (seriesSection, stepsDir), the throughput runs file
// a release column (runs.go).

// seriesName is the lab's series as make names it: host, or the root's
// directory name (trixie, sid).
func (b *bench) seriesName() string {
	if b.root == "" {
		return "host"
	}
	return filepath.Base(filepath.Clean(b.root))
}

// seriesSection is the document section of a per-series benchmark: base
// for the host's Slurm (the section it always had), base-<series> for a
// root's, e.g. slurm-replay-26.05.
func (b *bench) seriesSection(base string) string {
	if b.root == "" {
		return base
	}
	return base + "-" + b.lab.Release.Series()
}

// stepsDir is where a replay's step-by-step CSVs go: docs/bench for the
// host's Slurm, docs/bench/slurm-<release> for a root's.
func (b *bench) stepsDir(doc string) string {
	dir := filepath.Join(filepath.Dir(doc), "bench")
	if b.root == "" {
		return dir
	}
	return filepath.Join(dir, "slurm-"+b.lab.Release.String())
}

// where says which packages the lab ran.
func (b *bench) where() string {
	if b.root == "" {
		return "the host's Debian packages"
	}
	return "the Debian " + b.seriesName() + " root's packages, daemons chrooted"
}

// makeCommand is the make command that runs target on this series.
func (b *bench) makeCommand(target string) string {
	parts := []string{"make", target}
	if b.root != "" {
		parts = append(parts, "SLURM_SERIES="+b.seriesName())
	}
	return strings.Join(parts, " ")
}
