#!/usr/bin/env bash
# make demo: a local 16-node Slurm 22.05 GPU cluster (8 fake GPUs per node,
# 4 leaves, 2 spines) with the gangtopo plugins loaded, a short mixed
# workload (small jobs, then gangs), and the fragmentation report before
# and after. The cluster keeps running until `make demo-stop`.
#
# Needs root (device files, daemons). Uses build/gangtopo, build/plugins and
# build/slurmlab (make demo builds them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# The demo cluster lives in the checkout (.lab/demo) when every user may
# reach it: munged refuses a socket under a directory others cannot enter
# (a checkout in root's home), and Slurm runs jobs as other users. Else it
# lives under $TMPDIR. .lab/demo-dir names where, for make demo-stop.
reachable() {
	d=$1
	while [ "$d" != / ]; do
		case $(stat -c %A "$d") in ?????????[xt]) ;; *) return 1 ;; esac
		d=$(dirname "$d")
	done
}
if [ -z "${LAB:-}" ]; then
	LAB=$ROOT/.lab/demo
	if ! reachable "$ROOT"; then
		LAB=${TMPDIR:-/tmp}/gangtopo-demo
		echo "make demo: $ROOT is out of other users' reach (munged and the jobs' users need it): the demo cluster lives in $LAB"
	fi
fi
mkdir -p "$ROOT/.lab"
echo "$LAB" >"$ROOT/.lab/demo-dir"
CONF=$LAB.conf
PORT=${PORT:-16817}
GT=$BUILD/gangtopo
SLURMLAB=$BUILD/slurmlab

if [ "$(id -u)" != 0 ]; then
	echo "make demo: needs root (it makes fake GPU device files and starts Slurm daemons)" >&2
	exit 1
fi
if [ -f "$LAB/run/pids" ]; then
	echo "== stopping the previous demo cluster"
	"$SLURMLAB" down --dir "$LAB"
fi
rm -rf "$LAB" "$CONF"
mkdir -p "$CONF"
cp "$ROOT/docs/examples/lab16.yaml" "$CONF/cluster.yaml"
cat >"$CONF/gangtopo.yaml" <<YAML
version: v1
topology: $CONF/cluster.yaml
snapshot: $CONF/snapshot.json
jobs: gpu                 # every GPU job; without --gang-topology: any:preferred
default_topology: any:preferred
on_failure: open
max_snapshot_age: 30s
reload_interval: 200ms
decision_field: admin_comment
YAML
chmod 0644 "$CONF"/*

echo "== starting slurmctld + 16 slurmd (node01..node16) with the gangtopo plugins"
"$SLURMLAB" up --dir "$LAB" --port "$PORT" --topology "$CONF/cluster.yaml" \
	--plugins "$BUILD/plugins" --config "$CONF/gangtopo.yaml"
export SLURM_CONF=$LAB/etc/slurm.conf GANGTOPO_LAB=$LAB
# The sidecar daemon's controller role publishes the occupancy snapshot the
# job_submit plugin reads, every second. It carries GANGTOPO_LAB, so
# demo-stop stops it with the cluster.
"$GT" daemon --role controller --topology "$CONF/cluster.yaml" -o "$CONF/snapshot.json" --interval 1s \
	>"$LAB/log/gangtopo-daemon.log" 2>&1 &
sleep 2
cd "$LAB/state"

frag() { "$GT" frag --topology "$CONF/cluster.yaml" --state "$CONF/snapshot.json" --width 100; }
# gpus prints a job's GPUs per node as node:indices, from scontrol -d.
gpus() {
	scontrol -d -o show job "$1" | grep -o 'Nodes=[^ ]* CPU_IDs=[^ ]* Mem=[^ ]* GRES=[^ ]*' |
		sed 's/Nodes=\([^ ]*\).*IDX:\([^)]*\)).*/\1:\2/' | tr '\n' ' '
}
submit() { sbatch --parsable -o /dev/null "$@" --wrap 'sleep 3600'; }
settle() { sleep "${1:-2.5}"; }

echo; echo "== before: an empty cluster"; frag

echo; echo "== small jobs: 1, 2 and 4 GPUs (no --gang-topology: placed by gangtopo to keep whole nodes whole)"
for g in 1 2 1 4 1 1 2 1 4 1 2 1; do submit --gpus=$g --cpus-per-gpu=1 >/dev/null; settle 1.2; done
settle

echo "== gangs"
ids=()
for args in "--gpus=32 --gang-topology=leaf" "--gpus=16 --gang-topology=leaf,slice=8" \
	"--gpus=8 --gang-topology=nvlink" "--gpus=24 --gang-topology=leaf:preferred"; do
	id=$(submit $args --cpus-per-gpu=1)
	ids+=("$id")
	printf '  job %-4s sbatch %s\n' "$id" "$args"
	settle 1.5
done
settle

echo; echo "== where Slurm ran them (node:GPU indices)"
for id in $(squeue -h -o %i --sort=i); do
	printf '  job %-3s %-8s %s\n' "$id" "$(squeue -h -j "$id" -o %T)" "$(gpus "$id")"
done
echo; echo "== what gangtopo decided for the gangs (their AdminComment)"
for id in "${ids[@]}"; do
	printf '  job %-3s %s\n' "$id" "$(scontrol show job "$id" | sed -n 's/^ *AdminComment=gangtopo v1 //p')"
done

echo; echo "== after"; frag

echo; echo "== gangtopo why ${ids[0]}"
"$GT" why "${ids[0]}" --topology "$CONF/cluster.yaml"

# The replay's page (docs/replay.md, "The page"). The demo cluster keeps
# no accounting (no slurmdbd), so there is no sacct history of its own to
# replay: the page replays the 48-job Philly sample on the demo's cluster
# file, at three loads.
echo; echo "== the replay's page: the 48-job Philly sample on this cluster's file, at three loads"
"$GT" replay --topology "$CONF/cluster.yaml" --trace "$ROOT/cmd/gangtopo/testdata/replay/philly-small.csv" \
	--peak-load 0.8,1,1.2 --html "$LAB/replay.html" >/dev/null
echo "  written to $LAB/replay.html (open it in a browser)"

cat <<EOF2

The demo cluster keeps running. To submit your own jobs:

  export SLURM_CONF=$LAB/etc/slurm.conf
  sbatch --gpus=32 --gang-topology=leaf --wrap 'sleep 60'
  squeue; $GT why JOBID --topology $CONF/cluster.yaml
  $GT frag --topology $CONF/cluster.yaml --state $CONF/snapshot.json

Stop it with:  make demo-stop
EOF2
