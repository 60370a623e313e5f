#!/bin/bash
# hold-expiry.sh: what Slurm does to the jobs of a reservation when it
# ends, for a set of reservation flags (docs/defrag.md, "When a hold
# ends"): a one-minute reservation on node01 with a running job (-N1 -w
# node01, 4 GPUs, 10-minute limit) and a pending one (-N1 -w node01, 8
# GPUs) in it, watched for 150 s; then each job's state, reason, priority
# and run time, and slurmctld's lines about the reservation. Root; a lab
# of its own (stock Slurm, no gangtopo), under the shared lab lock:
#
#   flock /work/.lablock tests/tools/hold-expiry.sh build/slurmlab "" IGNORE_JOBS
#   flock /work/.lablock tests/tools/hold-expiry.sh build/slurmlab /work/roots/sid IGNORE_JOBS,FLEX,NO_HOLD_JOBS_AFTER_END
#
# usage: tests/tools/hold-expiry.sh SLURMLAB_BINARY ROOT|"" FLAGS
set -u
lab=$1 root=$2 flags=$3
dir=$(mktemp -d /tmp/gangtopo-expiry-XXXXXX)
trap '"$lab" down --dir "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
"$lab" up --dir "$dir" --port 26817 ${root:+--root "$root"} >"$dir/up.log" 2>&1 || { cat "$dir/up.log"; exit 1; }
export SLURM_CONF="$dir/etc/slurm.conf"
[ -n "$root" ] && export PATH="$dir/bin/slurm:$PATH"
echo "$(scontrol version), Flags=$flags"
scontrol create reservation ReservationName=gthold StartTime=now Duration=1 Nodes=node01 Users=root Flags="$flags"
run=$(sbatch --parsable -o /dev/null --reservation=gthold -N1 -w node01 --gpus=4 -t 10 --wrap 'sleep 600')
wait=$(sbatch --parsable -o /dev/null --reservation=gthold -N1 -w node01 --gpus=8 -t 10 --wrap 'sleep 600')
for i in $(seq 1 15); do
	sleep 10
	echo "--- +$((i * 10))s"
	squeue -h -t all -o '%i %T %r priority=%Q runtime=%M reservation=%v' -j "$run,$wait"
done
for j in "$run" "$wait"; do
	scontrol -o show job "$j" | tr ' ' '\n' | grep -E '^(JobId|JobState|Reason|Priority|RunTime)=' | tr '\n' ' '
	echo
done
grep -E 'gthold|Reservation ended' "$dir/log/slurmctld.log"
