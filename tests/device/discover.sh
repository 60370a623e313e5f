#!/usr/bin/env bash
# Real-NVML check, for a machine with NVIDIA GPUs and their driver: builds
# gangtopo (cgo, so NVML can be loaded), runs node discovery against the
# real driver once through the daemon's node role, and saves the node map
# next to the driver's own view so the two can be compared:
#
#   $OUT/node-map.json          what gangtopo daemon --role node published
#   $OUT/node-file              the SPANK plugin's node file it wrote
#   $OUT/gangtopo-topo.txt      gangtopo discover -o topo (nvidia-smi layout)
#   $OUT/nvidia-smi-topo.txt    nvidia-smi topo -m
#   $OUT/side-by-side.txt       the two matrices next to each other
#   $OUT/nvidia-smi-gpus.csv    index, bus id, name, memory, MIG mode per GPU
#   $OUT/nvidia-smi-nvlink.txt  nvidia-smi nvlink -s (link states and speeds)
#   $OUT/nvidia-smi-fabric.txt  nvidia-smi -q fabric section (clique, cluster UUID)
#   $OUT/checks.txt             GPU count and bus ids: map vs nvidia-smi
#
#   OUT=/tmp/out tests/device/discover.sh      (default OUT: tests/device/out)
#
# Uses `go` when present, else a gangtopo binary at build/gangtopo (build
# one with `make build` on a machine with the same libc). Needs no root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$repo/tests/device/out}
mkdir -p "$out"
cd "$repo"

gt=$out/gangtopo
if command -v go >/dev/null; then
	CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -o "$gt" ./cmd/gangtopo
elif [ -x build/gangtopo ]; then
	cp build/gangtopo "$gt"
else
	echo "discover.sh: no go and no build/gangtopo" >&2
	exit 1
fi
node=$(hostname -s)

"$gt" daemon --role node --once --node-name "$node" \
	--node-map-dir "$out/maps" --node-file-dir "$out/nodes" 2>"$out/daemon.log" || {
	cat "$out/daemon.log" >&2
	exit 1
}
cp "$out/maps/$node.json" "$out/node-map.json"
cp "$out/nodes/$node" "$out/node-file"
"$gt" discover --node-name "$node" -o topo >"$out/gangtopo-topo.txt"

if ! command -v nvidia-smi >/dev/null; then
	echo "discover.sh: no nvidia-smi here: not a GPU machine; the node map says:" >&2
	grep -E '"gpu_source"|"no_gpu_reason"' "$out/node-map.json" >&2
	exit 1
fi
nvidia-smi topo -m >"$out/nvidia-smi-topo.txt" 2>&1 || true
nvidia-smi --query-gpu=index,pci.bus_id,name,memory.total,mig.mode.current --format=csv,noheader \
	>"$out/nvidia-smi-gpus.csv" 2>&1 || true
nvidia-smi nvlink -s >"$out/nvidia-smi-nvlink.txt" 2>&1 || true
nvidia-smi -q 2>/dev/null | sed -n '/^    Fabric/,/^    [A-Z][a-z]* *:*$/p' >"$out/nvidia-smi-fabric.txt" || true

{
	echo "# left: gangtopo discover -o topo | right: nvidia-smi topo -m"
	pr -m -t -w 240 "$out/gangtopo-topo.txt" "$out/nvidia-smi-topo.txt"
} >"$out/side-by-side.txt"

# Cross-checks that need no JSON tool: GPU count and each GPU's bus id.
{
	want=$(grep -c . "$out/nvidia-smi-gpus.csv" || true)
	got=$(grep -c '"uuid":' "$out/node-map.json" || true)
	echo "gpus: nvidia-smi $want, node map $got"
	[ "$want" = "$got" ] || echo "MISMATCH: GPU count"
	while IFS=, read -r idx bus _; do
		b=$(echo "$bus" | tr 'A-Z' 'a-z' | sed 's/^ *0000//')
		if grep -q "\"pci_bus_id\": \"$b\"" "$out/node-map.json"; then
			echo "gpu $idx: bus $b found"
		else
			echo "MISMATCH: gpu $idx bus $b not in the node map"
		fi
	done <"$out/nvidia-smi-gpus.csv"
} >"$out/checks.txt"
cat "$out/checks.txt"
cat "$out/side-by-side.txt"
rm -f "$gt"
