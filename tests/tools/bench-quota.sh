#!/bin/sh
# bench-quota.sh: dynamic GPU quotas in the replay, against no quotas and
# Slurm's hard limits, on the deployed path (gangtopo-slurm) and the
# engine (gangtopo): the section "quota" of docs/benchmarks.md (make
# bench-quota). Every figure in the section is printed by the gangtopo
# replay commands quoted above it.
#
# The section "quota-lend" (issue 26) follows: what a reclaim costs with
# borrowing jobs placed anywhere (--quota lend=anywhere, as before) and
# packed into the domains already lent (the default), then packed with a
# borrow bound (quota.borrow_max_gpu_hours) of 1024, 512 and 256 GPU-hours,
# at the central band of the slowdown only. PART "lend" writes that section alone (it takes a
# fraction of the whole), "all" (the default) both.
#
# usage: tests/tools/bench-quota.sh GANGTOPO_BINARY [DOC [PART]]
set -eu
bin=$1
doc=${2:-docs/benchmarks.md}
part=${3:-all}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pols=gangtopo-slurm,gangtopo-slurm+hard,gangtopo-slurm+quota,gangtopo,gangtopo+hard,gangtopo+quota

. tests/tools/replay-run.sh

lend_section() {
	: >"$out"
	timed_what="the two policies"
	lpols=gangtopo+hard,gangtopo+quota
	{
		echo '## What a reclaim costs: where borrowed jobs run'
		echo
		echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs (\`make bench-quota\`, or"
		echo '`tests/tools/bench-quota.sh build/gangtopo docs/benchmarks.md lend` for this section alone).'
		echo 'Issue 26: a job that borrows is placed by the engine'"'"'s lending option (`place.Engine.PlaceLent`: after its own'
		echo 'tightness, in the blocks or leaves that hold borrowed GPUs already, the fullest first), so that a reclaim finds'
		echo 'borrowed work together; `--quota lend=anywhere` places it as any other job, as before. The engine alone: the'
		echo 'deployed path (`gangtopo-slurm+quota`) does not use the option yet (Slurm places a borrowing job where the'
		echo 'plugin'"'"'s decision at submit bound it), so its figures would be the same in both runs. A job beyond its share'
		echo 'takes its account'"'"'s remainder first and borrows the rest, in both runs ([quota.md](quota.md)). One team idle'
		echo 'half the time, the busiest week at 1.4 of capacity, the central band of the grounded slowdown only.'
		echo '"requeues / reclaim" and "GPU-h lost / reclaim" are what one reclaim costs (target of issue 26: at most half of'
		echo 'those with borrowing jobs placed anywhere). The last three runs add a borrow bound (`quota.borrow_max_gpu_hours`,'
		echo '`--quota borrow_max_gpu_hours=N`): a job whose GPUs x time limit exceed it never borrows and waits for its own'
		echo 'share, as the controller never moves it to the borrow QOS; what a reclaim can lose per victim is then bounded.'
		echo
		echo '### Borrowing jobs placed anywhere (before issue 26)'
	} >>"$out"
	timed_run replay --topology docs/examples/dgx-h100-256.yaml --policies $lpols --quota idle=168h,lend=anywhere --peak-load 1.4 --slowdown grounded:central
	{
		echo
		echo '### Borrowing jobs packed into the domains already lent'
	} >>"$out"
	timed_run replay --topology docs/examples/dgx-h100-256.yaml --policies $lpols --quota idle=168h --peak-load 1.4 --slowdown grounded:central
	for bound in 1024 512 256; do
		{
			echo
			echo "### Packed, and no job borrows whose GPUs x time limit exceed $bound GPU-hours"
		} >>"$out"
		timed_run replay --topology docs/examples/dgx-h100-256.yaml --policies $lpols --quota idle=168h,borrow_max_gpu_hours=$bound --peak-load 1.4 --slowdown grounded:central
	done
	go run ./tests/tools/benchdoc -file "$doc" -section quota-lend -raw <"$out"
	echo "bench-quota: wrote the quota-lend section of $doc"
}

if [ "$part" = lend ]; then
	lend_section
	exit 0
fi
timed_what="the six policies at three bands"

{
	echo '## Dynamic quotas in the replay'
	echo
	echo "Measured $(date -u +%Y-%m-%d) with $(go version 2>/dev/null | cut -d' ' -f3-) on $(nproc) CPUs (\`make bench-quota\`)."
	echo 'The replay ([replay.md](replay.md)) with GPU shares per account ([quota.md](quota.md)): Philly'"'"'s 15 virtual'
	echo 'clusters dealt to 4 accounts of about equal GPU-time, each guaranteed its part of the cluster (the shares sum to'
	echo 'the 2,048 GPUs). `+hard` is Slurm'"'"'s hard limit (each account'"'"'s QOS at `GrpTRES=gres/gpu=<share>`), `+quota`'
	echo 'gangtopo'"'"'s dynamic quotas (lend idle shares, take them back by requeueing borrowed jobs only, the controller'"'"'s'
	echo 'reclaim every 5 s, 30 s from the reclaim to the owner'"'"'s start), the bare policy no quota at all. `gangtopo-slurm`'
	echo 'is the plugin as deployed, `gangtopo` the engine alone. An owner'"'"'s job is one that asked within its share (what'
	echo 'its account held and waited for, plus the job, fitted the share at submission); a violation is an owner'"'"'s job that'
	echo 'waited longer than one controller cycle plus the requeue time (35 s). "GPU-h lost" is the run time of the requeued'
	echo 'jobs. Targets (issue 15): no violation, owner wait p95 within 35 s, utilisation at least no quotas'"'"' less 2 points,'
	echo 'and, where one team is idle half the time, at least 15 points above hard limits. Placements are charged by the'
	echo 'grounded slowdown model; each figure is the central band'"'"'s with the low and high bands'"'"' after it,'
	echo '`central [low..high]` (two runs of the earlier four are kept: each is now three).'
	echo
	echo '### The whole trace, its busiest week at the cluster'"'"'s capacity, every team active'
} >"$out"
timed_run replay --topology docs/examples/dgx-h100-256.yaml --policies $pols --quota default

for load in 1; do
	{
		echo
		echo "### One team idle half the time, the busiest week at $load of capacity"
		echo
		echo 'The account with the most work (acct1) submits only in every other week of trace time (its other jobs are'
		echo 'left out); its share stays what it was promised.'
	} >>"$out"
	timed_run replay --topology docs/examples/dgx-h100-256.yaml --policies $pols --quota idle=168h --peak-load $load
done

go run ./tests/tools/benchdoc -file "$doc" -section quota -raw <"$out"
echo "bench-quota: wrote the quota section of $doc"
lend_section
