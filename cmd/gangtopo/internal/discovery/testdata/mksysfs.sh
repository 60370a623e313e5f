#!/usr/bin/env bash
# Regenerates the fake sysfs trees under testdata/sysfs (committed; rerun
# only to change them). Each tree mimics the parts of /sys that discovery
# reads: devices/pci*/... device directories, bus/pci/devices links,
# class/infiniband/<hca>/{device,ports/N/*}, class/net/<if>/device, and
# devices/system/{node,cpu}. Links are relative, as in the real sysfs.
#
#   ib-host    DGX H100-like: 8 GPUs, each behind its own PCIe switch with a
#              400G InfiniBand HCA (mlx5_0..7; mlx5_3's port is down), a VF
#              (mlx5_8), and a plain Ethernet management port (eno1).
#   roce-host  2-socket PCIe server: 8 GPUs in pairs behind 4 switches,
#              2 RoCE NICs (mlx5_0 on switch 0, mlx5_1 on switch 2).
#   no-nic     CPU-only host: no class/infiniband, eno1 and lo only.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf sysfs
mkdir -p sysfs

# dev TREE PATH NUMA: a PCI device directory with its bus/pci/devices link.
dev() {
	local t=sysfs/$1 p=$2 numa=$3 id
	id=$(basename "$p")
	mkdir -p "$t/devices/$p" "$t/bus/pci/devices"
	echo "$numa" >"$t/devices/$p/numa_node"
	ln -sfn "../../../devices/$p" "$t/bus/pci/devices/$id"
}

# hca TREE NAME PATH NUMA STATE LAYER RATE
hca() {
	local t=sysfs/$1 name=$2 p=$3 numa=$4 state=$5 layer=$6 rate=$7
	dev "$1" "$p" "$numa"
	local ib=$t/devices/$p/infiniband/$name
	mkdir -p "$ib/ports/1" "$t/class/infiniband"
	ln -sfn "../../../$(basename "$p")" "$ib/device"
	case $state in
	ACTIVE) echo "4: ACTIVE" >"$ib/ports/1/state"; echo "5: LinkUp" >"$ib/ports/1/phys_state" ;;
	DOWN) echo "1: DOWN" >"$ib/ports/1/state"; echo "3: Disabled" >"$ib/ports/1/phys_state" ;;
	esac
	echo "$layer" >"$ib/ports/1/link_layer"
	echo "$rate" >"$ib/ports/1/rate"
	ln -sfn "../../devices/$p/infiniband/$name" "$t/class/infiniband/$name"
}

# netdev TREE IF PATH: a net device on PCI device PATH.
netdev() {
	local t=sysfs/$1 ifname=$2 p=$3
	mkdir -p "$t/devices/$p/net/$ifname" "$t/class/net"
	ln -sfn "../../../$(basename "$p")" "$t/devices/$p/net/$ifname/device"
	ln -sfn "../../devices/$p/net/$ifname" "$t/class/net/$ifname"
}

# system TREE "CPULIST0" "CPULIST1" ONLINE SIBLINGS MEMKB
system() {
	local t=sysfs/$1
	mkdir -p "$t/devices/system/cpu/cpu0/topology"
	echo "$4" >"$t/devices/system/cpu/online"
	echo "$5" >"$t/devices/system/cpu/cpu0/topology/thread_siblings_list"
	local n=0
	for l in "$2" "$3"; do
		[ -n "$l" ] || continue
		mkdir -p "$t/devices/system/node/node$n"
		echo "$l" >"$t/devices/system/node/node$n/cpulist"
		printf 'Node %d MemTotal:       %d kB\nNode %d MemFree:        1024 kB\n' "$n" "$6" "$n" >"$t/devices/system/node/node$n/meminfo"
		n=$((n + 1))
	done
}

lo() {
	mkdir -p "sysfs/$1/devices/virtual/net/lo" "sysfs/$1/class/net"
	ln -sfn "../../devices/virtual/net/lo" "sysfs/$1/class/net/lo"
}

# --- ib-host
system ib-host "0-55,112-167" "56-111,168-223" "0-223" "0,112" 1056964608
for i in 0 1 2 3 4 5 6 7; do
	b=$(printf '%x' $((i + 1)))
	numa=$((i / 4))
	up="pci0000:${b}0/0000:${b}0:01.0/0000:${b}1:00.0"
	dev ib-host "$up/0000:${b}2:00.0/0000:${b}3:00.0" $numa
	state=ACTIVE
	[ $i = 3 ] && state=DOWN
	hca ib-host "mlx5_$i" "$up/0000:${b}2:01.0/0000:${b}4:00.0" $numa $state InfiniBand "400 Gb/sec (4X NDR)"
	netdev ib-host "ibp${b}4s0" "$up/0000:${b}2:01.0/0000:${b}4:00.0"
done
hca ib-host mlx5_8 "pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:14:00.1" 0 ACTIVE InfiniBand "400 Gb/sec (4X NDR)"
ln -sfn ../0000:14:00.0 "sysfs/ib-host/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:14:00.1/physfn"
dev ib-host "pci0000:00/0000:00:1c.0/0000:01:00.0" 0
netdev ib-host eno1 "pci0000:00/0000:00:1c.0/0000:01:00.0"
lo ib-host

# --- roce-host
system roce-host "0-47" "48-95" "0-95" "0" 528482304
sw=0
for b in 2 3 a b; do
	numa=$((sw / 2))
	up="pci0000:${b}0/0000:${b}0:01.0/0000:${b}1:00.0"
	dev roce-host "$up/0000:${b}2:00.0/0000:${b}3:00.0" $numa
	dev roce-host "$up/0000:${b}2:01.0/0000:${b}4:00.0" $numa
	if [ $b = 2 ] || [ $b = a ]; then
		n=$((sw / 2))
		hca roce-host "mlx5_$n" "$up/0000:${b}2:02.0/0000:${b}5:00.0" $numa ACTIVE Ethernet "200 Gb/sec (4X HDR)"
		netdev roce-host "ens${n}f0np0" "$up/0000:${b}2:02.0/0000:${b}5:00.0"
	fi
	sw=$((sw + 1))
done
lo roce-host

# --- no-nic
system no-nic "0-31" "" "0-31" "0" 131072000
dev no-nic "pci0000:00/0000:00:1c.0/0000:01:00.0" 0
netdev no-nic eno1 "pci0000:00/0000:00:1c.0/0000:01:00.0"
lo no-nic
