#!/bin/sh
# bench-failures.sh: the Philly replay with node failures (issue 26): the
# restart wait and the tier reached by the gangs a failure requeued, stock
# Slurm against gangtopo, written into docs/benchmarks.md between
# <!-- BEGIN failures --> and <!-- END failures --> (make bench-failures).
# Every figure in the section is printed by the gangtopo replay commands
# quoted above it.
#
# The restarts with slurm.conf's EpilogSlurmctld running gangtopo wake
# (--restart-hook) go between <!-- BEGIN failures-hook --> and <!-- END
# failures-hook -->, those made eligible at once by the controller
# (--restart-at-once) between <!-- BEGIN failures-atonce --> and <!-- END
# failures-atonce -->, the same with gangs on whole nodes
# (--whole-node-gangs) between <!-- BEGIN failures-whole --> and <!-- END
# failures-whole -->; PART=hook, PART=atonce or PART=whole runs that part
# alone, PART=main the first section (default: all four).
#
# usage: [PART=main|hook|atonce|whole] tests/tools/bench-failures.sh GANGTOPO_BINARY [DOC]
set -eu
bin=$1
doc=${2:-docs/benchmarks.md}
part=${PART:-all}
case $part in all | main | hook | atonce | whole) ;; *)
	echo "bench-failures.sh: PART=$part: want main, hook, atonce, whole or nothing (all four)" >&2
	exit 2
	;;
esac
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() {
	printf '\n    %s\n\n' "gangtopo $* -o markdown" >>"$out"
	"$bin" "$@" -o markdown >>"$out"
}

# ten times the Llama 3 rate, for more requeued gangs per replay
rate10=$(awk 'BEGIN { printf "%.6g", 10 * 419 / (2048 * 54 * 24) }')

if [ "$part" = all ] || [ "$part" = main ]; then

{
	echo '## Node failures: where a requeued gang restarts'
	echo
	echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs;"
	echo 'the failure model is in [replay.md](replay.md#node-failures). Nodes fail at the rate Meta reported for the'
	echo 'Llama 3 405B pre-training (419 unexpected interruptions in 54 days on 2,048 servers of 8 H100), or ten times'
	echo 'it; a failed node comes back 24 h later (an assumption: no published mean repair time was found). Every'
	echo 'job on a failed node is requeued and may start again 121 s later (Slurm'"'"'s begin time after a requeue).'
	echo '`gangtopo` is the engine placing each job itself; `gangtopo-slurm` the plugin as deployed, with the'
	echo 'controller re-binding a requeued gang during that wait (its old domain first, else the tightest that holds'
	echo 'it now); `gangtopo-slurm+spares` the same keeping one spare node a leaf (gangtopo.yaml `spares:`, tier'
	echo 'leaf, per_domain 1: the last node of each leaf kept off ordinary jobs, for the requeued gangs of its'
	echo 'leaf; [admin.md](admin.md#spare-nodes)); `slurm` stock Slurm. One band (central) of the grounded slowdown'
	echo 'model. "In original tier" counts the gangs restarted in a tier at most as wide as the one they ran in;'
	echo '"within 126 s" those of them restarted within one controller cycle (5 s) of Slurm'"'"'s requeue delay;'
	echo '"same domain" those restarted inside the very domain of that tier. Targets (issue 26): with spares, at'
	echo 'least 95% of the failed gangs in their original tier within 126 s; without, never a wider tier than'
	echo 'stock Slurm gives and never a longer wait. The first table says what the spares cost everyone else.'
	echo
	echo '### The whole trace on 256 DGX H100, its busiest week at 1.2 of capacity, the Llama 3 rate'
} >"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown grounded:central --policies gangtopo,gangtopo-slurm,gangtopo-slurm+spares,slurm \
	--peak-load 1.2 --node-failures llama3 --repair 24h --spares leaf:1

{
	echo
	echo '### Gangs that must stay in one leaf, ten times the Llama 3 rate'
	echo
	echo 'Jobs above 8 GPUs ask for `--gang-topology=leaf:required` (stock Slurm ignores it).'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown grounded:central --policies gangtopo,gangtopo-slurm,gangtopo-slurm+spares,slurm \
	--peak-load 1.2 --gang-topology leaf:required --node-failures "$rate10" --repair 24h --spares leaf:1

{
	echo
	echo '### The same with Slurm'"'"'s expedited requeue'
	echo
	echo 'Slurm 25.11+ with `SlurmctldParameters=enable_expedited_requeue` and `sbatch --requeue=expedite`: a'
	echo 'requeued job is eligible at once, at the top of the queue (`--requeue expedite`; of the series gangtopo'
	echo 'is tested on, 26.05 has it: its sbatch takes `--requeue[=expedite]`).'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown grounded:central --policies gangtopo-slurm,gangtopo-slurm+spares,slurm \
	--peak-load 1.2 --gang-topology leaf:required --node-failures "$rate10" --repair 24h --spares leaf:1 --requeue expedite

go run ./tests/tools/benchdoc -file "$doc" -section failures -raw <"$out"
echo "bench-failures: wrote the failures section of $doc"
fi
if [ "$part" = all ] || [ "$part" = hook ]; then
{
	echo '### Re-bound at the requeue: EpilogSlurmctld runs gangtopo wake'
	echo
	echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs. The expedited"
	echo 'requeue above, with slurm.conf'"'"'s `EpilogSlurmctld` running `gangtopo wake`'
	echo '([controller.md](controller.md#at-the-requeue-itself-epilogslurmctld-and-gangtopo-wake)): the'
	echo 'controller re-binds a requeued gang at the failure, before Slurm may start it, instead of at its'
	echo 'next cycle (`--restart-hook`), with spares: against `gangtopo-slurm+spares` in the table above (the same'
	echo 'failures and seed).'
} >"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown grounded:central --policies gangtopo-slurm+spares \
	--peak-load 1.2 --gang-topology leaf:required --node-failures "$rate10" --repair 24h --spares leaf:1 --requeue expedite --restart-hook
{
	echo
	echo 'The same with two spares a leaf (`--spares leaf:2`, gangtopo.yaml `per_domain: 2`): at ten times the Llama 3'
	echo 'rate with 24 h repairs, a leaf often has lost a node in the last day already, and its one spare is then taken'
	echo 'by the gang that restarted on it.'
} >>"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown grounded:central --policies gangtopo-slurm+spares \
	--peak-load 1.2 --gang-topology leaf:required --node-failures "$rate10" --repair 24h --spares leaf:2 --requeue expedite --restart-hook
go run ./tests/tools/benchdoc -file "$doc" -section failures-hook -raw <"$out"
echo "bench-failures: wrote the failures-hook section of $doc"
fi
if [ "$part" = all ] || [ "$part" = atonce ]; then

{
	echo '### Made eligible at once: rebind.restart_at_once'
	echo
	echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs. Slurm's"
	echo 'requeue with its delay (22.05, 24.11, and later series for jobs not submitted with'
	echo '`--requeue=expedite`), leaf gangs required, ten times the Llama 3 rate, as in the second table above, with'
	echo 'gangtopo.yaml `rebind.restart_at_once: true`: the controller makes a requeued job eligible at its first'
	echo 'cycle two seconds after the failure (`scontrol update StartTime=now`) instead of 121 s after it'
	echo '([controller.md](controller.md#restarting-at-once)), `--restart-at-once` here;'
	echo 'stock Slurm keeps its delay. Against `gangtopo-slurm` and `gangtopo-slurm+spares` in that table (the same'
	echo 'failures and seed).'
} >"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown grounded:central --policies gangtopo-slurm,gangtopo-slurm+spares,slurm \
	--peak-load 1.2 --gang-topology leaf:required --node-failures "$rate10" --repair 24h --spares leaf:1 --restart-at-once
go run ./tests/tools/benchdoc -file "$doc" -section failures-atonce -raw <"$out"
echo "bench-failures: wrote the failures-atonce section of $doc"
fi
[ "$part" = all ] || [ "$part" = whole ] || exit 0

{
	echo '### Gangs on whole nodes: whole_node_gangs'
	echo
	echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs. The replay"
	echo 'made eligible at once above, with gangtopo.yaml `whole_node_gangs: true` (`--whole-node-gangs`): a gang'
	echo 'that asks a GPU total, a multiple of 8 and above 8, takes whole nodes (`-N G/8 --gpus-per-node=8`) and'
	echo 'waits for them rather than start over partly used ones ([admin.md](admin.md#gangs-on-whole-nodes)).'
	echo 'Against `gangtopo-slurm` and `gangtopo-slurm+spares` in that table (the same failures and seed).'
} >"$out"
run replay --topology docs/examples/dgx-h100-256.yaml --slowdown grounded:central --policies gangtopo-slurm,gangtopo-slurm+spares \
	--peak-load 1.2 --gang-topology leaf:required --node-failures "$rate10" --repair 24h --spares leaf:1 --restart-at-once --whole-node-gangs
go run ./tests/tools/benchdoc -file "$doc" -section failures-whole -raw <"$out"
echo "bench-failures: wrote the failures-whole section of $doc"
