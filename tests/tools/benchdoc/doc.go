// Command benchdoc turns `go test -bench` output into a Markdown table and
// writes it into one section of docs/benchmarks.md, so `make bench`
// regenerates the figures the docs quote. Each section sits between
//
//	<!-- BEGIN name --> and <!-- END name -->
//
// and is replaced whole; other sections are left alone. With -count N the
// table shows the median of the N runs of each benchmark, and -target
// 'Name=200us' adds a pass/fail column against a limit on the median.
package main
