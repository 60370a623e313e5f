// Package docsection rewrites one generated section of a Markdown document
// such as docs/benchmarks.md. A section is the text between the lines
//
//	<!-- BEGIN name -->
//	<!-- END name -->
//
// and belongs to the one command that generates it (make bench, make
// bench-slurm, gangtopo simulate --markdown), so each benchmark can refresh
// its figures without touching the prose or the other sections.
//
// Commands reads the other way: the commands of a documented procedure,
// for the test that runs them as written.
package docsection
