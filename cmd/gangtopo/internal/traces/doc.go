// Package traces reads the public GPU-cluster traces that gangtopo simulate
// replays: the Alibaba openb node and pod lists (the FGD paper's input), the
// FGD authors' published per-seed results, and the Philly job table; and
// a site's own job history from Slurm's accounting (sacct --json of every
// series, sacct -P; sacct.go).
//
// Readers are strict. A malformed row (wrong number of columns, a value that
// is not a number, a negative GPU count, a GPU model no node has) is an
// error naming the file, the line and the column; nothing is skipped
// silently, because a silently dropped row changes every number the
// simulator reports.
//
// The traces are not copied into the repository. Dir finds them: a flag,
// else $GANGTOPO_TRACES, else ../shared/data/traces next to the checkout.
package traces
