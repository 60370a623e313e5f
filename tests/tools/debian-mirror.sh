#!/bin/sh
# debian-mirror.sh: prints the Debian mirror this machine's apt sources name
# for its own release (VERSION_CODENAME of /etc/os-release), which
# debootstrap makes the Debian roots from (make roots). A site behind a
# proxy or with a mirror of its own reaches only the mirror its apt sources
# name, so the repository names none; make roots DEBIAN_MIRROR=URL
# overrides. apt-get indextargets reads both the one-line sources.list and
# the deb822 .sources files, as apt-get update would.
set -eu
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || exit 0
command -v apt-get >/dev/null || exit 0
apt-get indextargets --format '$(TARGET_OF) $(RELEASE) $(REPO_URI)' 2>/dev/null |
	awk -v suite="$codename" '$1 == "deb" && $2 == suite { sub(/\/$/, "", $3); print $3; exit }'
