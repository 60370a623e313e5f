#!/bin/sh
# bench-headline.sh: the seed's headline, static allocation against
# orchestration: the load the cluster sustains and the GPU-hours it
# strands under static per-team partitions, one shared cluster under stock
# Slurm (with hard limits, and without), and gangtopo as deployed with
# dynamic quotas and defragmentation, each at the grounded slowdown's
# low, central and high band: the section "headline" of
# docs/benchmarks.md (make bench-headline). Every figure in the section is
# printed by the gangtopo replay commands quoted above it.
#
# usage: tests/tools/bench-headline.sh GANGTOPO_BINARY [DOC]
#
# HEADLINE_WINDOW (e.g. "--from 2017-09-25 --to 2017-10-09") replays a
# window of the trace instead of all of it, HEADLINE_ACCOUNTS its number
# of virtual clusters (a window holds fewer than the trace's 15): the
# whole trace takes hours on a few CPUs (each sustainable load is about
# ten whole replays per policy and band).
set -eu
bin=$1
doc=${2:-docs/benchmarks.md}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pols=static,slurm+hard,slurm,gangtopo-slurm+quota+defrag
window=${HEADLINE_WINDOW:-}
accounts=${HEADLINE_ACCOUNTS:-15}
quota=accounts=$accounts,shares=nodes
what='The whole Philly trace'
[ -n "$window" ] && what="The Philly trace's window \`$window\`"

. tests/tools/replay-run.sh
timed_what="the four policies at three bands"

{
	echo '## Static allocation against orchestration: the load a cluster sustains'
	echo
	echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs (\`make bench-headline\`)."
	echo "$what on 256 DGX H100 ([replay.md](replay.md#static-partitions-and-the-sustainable-load)). Teams are"
	echo "Philly's $accounts virtual clusters, each an account whose share is whole nodes: one each, the other $((256 - accounts)) in proportion to"
	echo "its GPU-time (\`--quota $quota\`). \`static\` is the baseline enterprises run: each team its own"
	echo 'nodes as a Slurm partition of its own, stock Slurm in each. `slurm+hard` is one shared cluster under stock Slurm'
	echo 'with each team'"'"'s QOS at `GrpTRES=gres/gpu=<share>`; `slurm` the same without limits. `gangtopo-slurm+quota+defrag`'
	echo 'is gangtopo as deployed (the plugin'"'"'s decision, carried out by stock Slurm, the controller re-binding stale'
	echo 'bindings) with dynamic quotas (idle shares lent, taken back by requeueing borrowed jobs) and defragmentation.'
	echo 'Every placement is charged by the grounded slowdown model; each figure is the central band'"'"'s with the low and high'
	echo 'bands'"'"' after it, `central [low..high]`. The sustainable load is the highest peak load (the busiest week'"'"'s work'
	echo 'over the cluster'"'"'s capacity) at which the mean wait stays within 60 min and 16+ GPU gangs'"'"' within 4 h, found per'
	echo 'policy and band by stepping the load by x1.25 from 1 until the verdict changes, then bisecting to within 0.05.'
	echo 'Targets (issue 23): gangtopo sustains at least 2x the load of static partitions and 1.25x that of stock shared'
	echo 'Slurm with hard limits at the central band, and never less than stock at the low end.'
	echo
	echo '### The sustainable load'
} >"$out"
timed_run replay --topology docs/examples/dgx-h100-256.yaml $window --sustain --sustain-tolerance 0.05 --policies $pols --quota $quota

{
	echo
	echo '### At the load static partitions sustain'
	echo
	echo 'The same policies at a peak load of 0.25, where every one keeps its waits within the criteria: what each strands'
	echo '(GPUs idle while jobs that fit them by count wait: a team'"'"'s idle nodes while another team queues) and uses.'
} >>"$out"
timed_run replay --topology docs/examples/dgx-h100-256.yaml $window --peak-load 0.25 --policies $pols --quota $quota

go run ./tests/tools/benchdoc -file "$doc" -section headline -raw <"$out"
echo "bench-headline: wrote the headline section of $doc"
