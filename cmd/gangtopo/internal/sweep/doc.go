// Package sweep runs the trace simulator over many workloads, policies and
// seeds on a pool of workers, aggregates the runs (mean and spread over
// seeds, next to the FGD authors' published numbers) and renders the
// result: an aligned table, CSV, an SVG plot and the simulator section of
// docs/benchmarks.md.
package sweep
