#!/bin/sh
# bench-replay.sh: replay the Philly trace through every policy and write
# the results into docs/benchmarks.md between <!-- BEGIN replay --> and
# <!-- END replay --> (make bench-replay). Every figure in the section is
# printed by the gangtopo replay commands quoted above it.
#
# usage: tests/tools/bench-replay.sh GANGTOPO_BINARY [DOC]
set -eu
bin=$1
doc=${2:-docs/benchmarks.md}
out=$(mktemp)
trap 'rm -f "$out" "$out.new"' EXIT

run() {
	printf '\n    %s\n\n' "gangtopo $* -o markdown" >>"$out"
	"$bin" "$@" -o markdown >>"$out"
}

{
	echo '<!-- BEGIN replay -->'
	echo '## Gangs over time: the Philly trace replayed'
	echo
	echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs;"
	echo 'the model (queue, backfill, slowdown, naive-pods, load scaling, metrics) is in [replay.md](replay.md).'
	echo 'Placements are charged by the grounded slowdown model (each job'"'"'s collectives, the cluster file'"'"'s link speeds,'
	echo 'published measurements): every figure is the central band'"'"'s with the low and high bands'"'"' after it,'
	echo '`central [low..high]`, a figure the same at every band once.'
	echo 'Waits are in minutes, completion times (JCT) in hours; "run s" is the wall time of one policy'
	echo '(policies and bands run side by side, at most one per CPU). `gangtopo` is the engine placing each job itself;'
	echo '`gangtopo-slurm` is the plugin as deployed: its decision at submit, carried out by the stock Slurm model'
	echo 'when the queue reaches the job, with the controller re-binding stale bindings every 5 s ("rebinds",'
	echo '"self-wait h": hours jobs waited only because of their binding). Targets (issues 3 and 11): at least 95%'
	echo 'of gangs in their tightest feasible domain, the mean wait of 16+ GPU gangs at most 0.7x of slurm, 1-GPU'
	echo 'jobs waiting no longer than under slurm, and no self-inflicted wait longer than one controller cycle.'
	echo
	echo '### The whole trace on 256 DGX H100, its busiest week at the cluster'"'"'s capacity'
} >"$out"
t0=$(date +%s.%N)
run replay --topology docs/examples/dgx-h100-256.yaml
t1=$(date +%s.%N)
{
	echo
	awk -v a="$t0" -v b="$t1" -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
		printf "The whole trace through the five policies at three bands took %.1f s of wall time here (load average %s when done).\n", b - a, l }'
} >>"$out"

{
	echo
	echo '### Load sweep: the same trace, compressed harder'
	echo
	echo 'Peak load is the rate at which the busiest week of the trace arrives, as a fraction of the cluster'"'"'s'
	echo 'GPU capacity. "16+ vs slurm" is the mean wait of 16+ GPU gangs relative to slurm at the same load.'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --peak-load 1,1.1,1.2

{
	echo
	echo '### Sensitivity: single-server jobs pinned to one node'
	echo
	echo 'Jobs of up to 8 GPUs ask for one node (`-N 1`, what many Slurm users write; for naive-pods, one pod'
	echo 'with all the GPUs), so no scheduler may split them.'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --one-node-up-to 8 --peak-load 1.2

{
	echo
	echo '### Sensitivity: gangs that wait for one leaf'
	echo
	echo 'Jobs above 8 GPUs ask gangtopo for `--gang-topology=leaf:required`: they wait for a leaf with room'
	echo 'instead of spreading (stock Slurm ignores the option, so its rows are those of the sweep above; the'
	echo 'deployed path binds them to the leaves that could hold them).'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --gang-topology leaf:required --peak-load 1.1,1.2 --policies gangtopo,gangtopo-slurm,slurm

{
	echo
	echo '### Sensitivity: no slowdown'
	echo
	echo 'With every slowdown factor at 1, where a gang runs no longer matters to how long it runs.'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown none --peak-load 1.15 --policies gangtopo,gangtopo-slurm,slurm,slurm-flat

{
	echo
	echo '### Sensitivity: the fixed factors of earlier releases'
	echo
	echo 'The assumed factors per tier (nvlink 1, node 1.1, block and leaf 1.2, spine 1.4, any 1.5, 5% per extra server)'
	echo 'that the grounded model replaced, at the same load: what the earlier figures rested on.'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown factors --peak-load 1.15 --policies gangtopo,gangtopo-slurm,slurm,slurm-flat

{
	echo
	echo '### Sensitivity: a fabric built 2:1 at each level'
	echo
	echo 'The same 256 DGX H100 with every leaf and spine oversubscribed 2:1 (`docs/examples/dgx-h100-256-2to1.yaml`):'
	echo 'traffic between leaves gets half its network bandwidth, between spines a quarter.'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256-2to1.yaml --peak-load 1,1.1 --policies gangtopo,gangtopo-slurm,slurm

{
	echo
	echo '### A heterogeneous cluster'
	echo
	echo 'Philly jobs name no GPU model: they ask for G GPUs of any model. gangtopo keeps a gang on one model'
	echo '(its default; a job larger than the largest single-model pool is rejected), stock Slurm may mix'
	echo 'models in one job. The slowdown model paces a job at its slowest GPU but charges no more for mixing, which'
	echo 'favours mixing; PCIe boxes without NICs in the file take the default table'"'"'s assumed network.'
} >>"$out"
run replay --topology docs/examples/hetero.yaml
echo '<!-- END replay -->' >>"$out"

if grep -q '<!-- BEGIN replay -->' "$doc"; then
	awk -v body="$out" '
		/<!-- BEGIN replay -->/ { while ((getline line < body) > 0) print line; skip = 1; next }
		/<!-- END replay -->/ { skip = 0; next }
		!skip' "$doc" >"$out.new"
else
	{ cat "$doc"; echo; cat "$out"; } >"$out.new"
fi
cp "$out.new" "$doc"
echo "bench-replay: wrote the replay section of $doc"
