#!/bin/sh
# bench-history.sh: the queue model against what really happened (issue
# 23): a 500-job history of sleep jobs (slurmlab.NewHistory: mixed sizes,
# a backlog, cancellations, four accounts) through the lab's real
# slurmctld with slurmdbd over MariaDB, dumped with sacct, replayed under
# the slurm model with slurmctld's own scheduling times, each job's
# predicted start against the recorded one: the section "history" of
# docs/benchmarks.md (make bench-history). Needs root (the lab).
#
# usage: tests/tools/bench-history.sh BUILD_DIR [DOC] [N]
# (HISTORY_DUMP=DIR reports on a dump slurmbench history already made
# there, with its MADE.txt, instead of running the lab again.)
set -eu
build=$1
doc=${2:-docs/benchmarks.md}
n=${3:-500}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if [ -n "${HISTORY_DUMP:-}" ]; then
	dump=$HISTORY_DUMP
else
	dump=$build/history-$n
	rm -rf "$dump"
	"$build/slurmbench" history -n "$n" -seed 500 -out "$dump"
fi
cmd="gangtopo replay --sacct $dump/sacct.json --scontrol-config $dump/config.txt --topology docs/examples/lab16.yaml --check-starts"
{
	echo '## The queue model against a real slurmctld'
	echo
	echo "Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs (\`make bench-history\`): $(cat "$dump/MADE.txt")"
	echo 'Each job ran `sleep` under `--time` of 1-3 minutes with `--gpus=G --cpus-per-gpu=1`; slurm.conf as the lab writes'
	echo 'it (`SchedulerType=sched/backfill` with no SchedulerParameters: batch_sched_delay 3 s, sched_interval 60 s,'
	echo 'bf_interval 30 s), which the replay reads from the dump'"'"'s `scontrol show config` with slurmctld'"'"'s boot time.'
	echo 'The replay runs each job as long as it ran, under its own limit; a job cancelled while it waited leaves the queue'
	echo 'when it was cancelled. On time: within max(60 s, 5% of the recorded wait); target 90% ([replay.md](replay.md)).'
	echo
	printf '    %s\n\n' "$cmd"
	"$build/gangtopo" replay --sacct "$dump/sacct.json" --scontrol-config "$dump/config.txt" --topology docs/examples/lab16.yaml \
		--check-starts | sed 's/^/    /'
	echo
	echo 'Mean error is predicted minus recorded start. The model frees a job'"'"'s GPUs at its recorded end; slurmctld frees'
	echo 'them when the node'"'"'s epilog-complete message arrives, and in the record the main pass'"'"'s start follows the end'
	echo 'that made room by 0 to a few seconds. Along the chains of jobs through the backlog those seconds add up: a'
	echo 'negative mean error of some seconds is that, not scheduling. The same dump with the passes at every event'
	echo '(`--timing events`) and with EASY backfill in slurmctld'"'"'s cycles (`--timing easy`):'
	echo
	for tm in events easy; do
		"$build/gangtopo" replay --sacct "$dump/sacct.json" --scontrol-config "$dump/config.txt" --topology docs/examples/lab16.yaml \
			--check-starts --timing $tm | grep -E '^(all|target)' | sed "s/^/    --timing $tm: /"
	done
	echo
	echo '### What the policies make of the same history'
	echo
	echo 'The same dump replayed under the default policies of `--sacct` (stock Slurm, the plugin as deployed, with'
	echo 'dynamic quotas over the history'"'"'s four accounts, with defragmentation), beside what really happened'
	echo '(`recorded`); every policy with slurmctld'"'"'s scheduling times and the recorded run times (no slowdown):'
	echo
	cmd2="gangtopo replay --sacct $dump/sacct.json --scontrol-config $dump/config.txt --topology docs/examples/lab16.yaml"
	printf '    %s\n\n' "$cmd2"
	"$build/gangtopo" replay --sacct "$dump/sacct.json" --scontrol-config "$dump/config.txt" --topology docs/examples/lab16.yaml |
		sed 's/^/    /'
	echo
	echo 'The deployed path against stock Slurm on the same dump with a pass at every event (`--timing events`), to'
	echo 'tell what slurmctld'"'"'s scheduling times do to it:'
	echo
	printf '    %s\n\n' "$cmd2 --policies slurm,gangtopo-slurm --timing events"
	"$build/gangtopo" replay --sacct "$dump/sacct.json" --scontrol-config "$dump/config.txt" --topology docs/examples/lab16.yaml \
		--policies slurm,gangtopo-slurm --timing events | sed -n '/stranded GPU-h/,/^$/p' | sed 's/^/    /'
} >"$out"
cat "$out"
go run ./tests/tools/benchdoc -file "$doc" -section history -raw <"$out"
