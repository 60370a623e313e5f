#!/bin/sh
# slurm-release.sh: which Slurm release the plugins build for, or which one
# a host runs (make plugins, make install, make deb).
#
#   slurm-release.sh header INCLUDE   the release of INCLUDE/slurm/slurm_version.h
#                                     ("24.11.5"); exit 2 with a message when the
#                                     headers are missing or of a series gangtopo
#                                     does not support (22.05 to 26.05)
#   slurm-release.sh installed [ROOT] the release of the Slurm on this host
#                                     (slurmctld -V, slurmd -V or scontrol -V,
#                                     first found on $PATH, /usr/sbin, /usr/bin),
#                                     or in the system image ROOT (run chrooted
#                                     there: a Debian root the lab runs);
#                                     nothing when none is installed
set -u
oldest=0x160500 # 22.05
newest=0x1a05ff # 26.05.x

header() {
	h="$1/slurm/slurm_version.h"
	if [ ! -r "$h" ]; then
		echo "gangtopo: no Slurm headers: $h is missing. Install your Slurm's development headers" \
			"(Debian: apt-get install libslurm-dev) or give their directory: make plugins SLURM_INCLUDE=<dir holding slurm/slurm.h>" >&2
		exit 2
	fi
	v=$(sed -n 's/^#define[ 	]*SLURM_VERSION_NUMBER[ 	]*\(0x[0-9a-fA-F]*\).*/\1/p' "$h")
	if [ -z "$v" ]; then
		echo "gangtopo: $h has no SLURM_VERSION_NUMBER: not a Slurm header?" >&2
		exit 2
	fi
	n=$(printf '%d' "$v")
	rel=$((n >> 16)).$(printf '%02d' $(((n >> 8) & 255))).$((n & 255))
	if [ "$n" -lt $(printf '%d' $oldest) ] || [ "$n" -gt $(printf '%d' $newest) ]; then
		echo "gangtopo: the Slurm headers in $1 are Slurm $rel; gangtopo builds for Slurm 22.05 to 26.05" \
			"(docs/admin.md, \"Slurm series\"): job_desc_msg_t changes in every series, and a plugin built for" \
			"one it was never checked with would read the wrong fields" >&2
		exit 2
	fi
	echo "$rel"
}

installed() {
	root="${1:-/}"
	for cmd in slurmctld slurmd scontrol; do
		if [ "$root" != / ]; then
			p=$(chroot "$root" /bin/sh -c "PATH=/usr/sbin:/usr/bin command -v $cmd") || continue
			out=$(chroot "$root" "$p" -V 2>/dev/null) || continue
		else
			p=$(PATH="$PATH:/usr/sbin:/usr/bin" command -v $cmd) || continue
			# "slurm 24.11.5" or "slurm-wlm 22.05.8"
			out=$("$p" -V 2>/dev/null) || continue
		fi
		set -- $out
		[ $# -eq 2 ] && { echo "$2"; return; }
	done
}

case "${1:-}" in
header) header "${2:-/usr/include}" ;;
installed) installed "${2:-/}" ;;
*)
	echo "usage: slurm-release.sh header INCLUDE_DIR | installed [ROOT]" >&2
	exit 2
	;;
esac
