#!/usr/bin/env bash
# Loads what `gangtopo gen topology|gres|features` writes for a cluster file
# into the real Slurm on this machine (Debian's 22.05: slurmctld, slurmd,
# munge, as SLURM-LAB.md describes) and prints what Slurm made of it:
#   - slurmd -G: the GRES each GPU gets (Type, File, Cores, Links);
#   - a private slurmctld on loopback: scontrol show topology, and the
#     features of every node.
# It fails if any Slurm step fails. Needs root (mknod of fake GPU devices).
#
#   tests/gen/check-slurm.sh [cluster.yaml]     (default docs/examples/lab16.yaml)
#
# Everything lives in a temp dir; the daemons it starts are stopped by PID.
# The cluster must have uniform nodes: CPUs/sockets are taken from the first
# node (sockets = NUMA nodes of its GPUs).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cluster=${1:-$repo/docs/examples/lab16.yaml}
work=$(mktemp -d /tmp/gangtopo-slurmcheck.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	sleep 1
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

gt=$work/gangtopo
(cd "$repo" && go build -o "$gt" ./cmd/gangtopo)
mkdir -p "$work/dev" "$work/state" "$work/spool" "$work/munge"
for i in $(seq 0 63); do mknod "$work/dev/nvidia$i" c 195 "$i"; done

"$gt" gen topology --topology "$cluster" -o "$work/topology.conf"
"$gt" gen gres --topology "$cluster" --dev-dir "$work/dev" -o "$work/gres.conf"
"$gt" gen features --topology "$cluster" -o "$work/features"

# Node shape from the cluster file: CPUs, GPUs and model of the first node.
read -r cpus gpus model <<<"$(awk '/^    cpus:/{c=$2} /^      count:/{g=$2} /^      model:/{m=tolower($2)} END{print c, g, m}' "$cluster")"
sockets=$(awk '/^      numa:/{gsub(/[^0-9,]/,"",$0); n=split($0,a,","); m=0; for(i=1;i<=n;i++) if(a[i]+1>m) m=a[i]+1; print m; exit}' "$cluster")
sockets=${sockets:-1}

mungekey --create --keyfile="$work/munge/key" >/dev/null 2>&1 || mungekey -c -k "$work/munge/key"
chmod 0600 "$work/munge/key"
munged --socket="$work/munge/sock" --key-file="$work/munge/key" --pid-file="$work/munge/pid" \
	--log-file="$work/munge/log" --seed-file="$work/munge/seed" --force
sleep 0.5
pids+=("$(cat "$work/munge/pid")")

cat >"$work/slurm.conf" <<CONF
ClusterName=gtcheck
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=36817
SlurmdPort=37000
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/ctld.pid
SlurmctldLogFile=$work/ctld.log
PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/tree
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName=DEFAULT CPUs=$cpus Boards=1 SocketsPerBoard=$sockets CoresPerSocket=$((cpus / sockets)) ThreadsPerCore=1 RealMemory=1000 Gres=gpu:$model:$gpus State=UNKNOWN
CONF
grep '^NodeName=' "$work/features" | sed 's/$/ NodeAddr=127.0.0.1 NodeHostname=localhost/' >>"$work/slurm.conf"
echo "PartitionName=all Nodes=ALL Default=YES State=UP" >>"$work/slurm.conf"

export SLURM_CONF=$work/slurm.conf
node=$(grep -m1 '^NodeName=' "$work/features" | sed 's/NodeName=\([^ ]*\).*/\1/')
node=$(scontrol show hostnames "$node" | head -1)
echo "== slurmd -G -N $node"
slurmd -f "$work/slurm.conf" -N "$node" -G 2>&1 | sed 's/^/  /'

slurmctld -c -f "$work/slurm.conf" -i
for _ in $(seq 50); do [ -s "$work/ctld.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/ctld.pid")")
for _ in $(seq 50); do timeout 5 scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done
echo "== scontrol show topology"
timeout 10 scontrol show topology | sed 's/^/  /'
echo "== node features"
timeout 10 scontrol show node -o | sed -n 's/^NodeName=\([^ ]*\).* AvailableFeatures=\([^ ]*\).*/  \1 \2/p'
# A fresh StateSaveLocation (-c) makes slurmctld log missing state files;
# those are expected. Anything else that is an error fails the check.
if grep -iE 'error|fatal' "$work/ctld.log" | grep -v -e 'MailProg' -e 'pmix' -e 'state file' -e 'backup state save'; then
	echo "slurmctld logged errors (above)" >&2
	exit 1
fi
echo "ok: Slurm accepted topology.conf, gres.conf and the node features for $cluster"
