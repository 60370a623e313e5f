#!/bin/sh
# packages.sh PACKAGE...: installs with apt-get those of the Debian packages
# that are not installed, and does nothing when all are (no root needed then).
#
# Every apt-get of the Makefile goes through here. Two apt-get at once fail
# on apt's lock ("Could not get lock /var/lib/apt/lists/lock"), as the two
# Debian roots of make roots did on a fresh machine when each installed
# debootstrap: `make packages` installs everything make test needs once,
# before anything runs in parallel, and this script holds a lock of its own
# around apt-get, so two makes that still meet (make -j, two shells) wait
# for each other and the second finds the packages installed.
#
# No service the packages bring is started (munge, MariaDB): while apt-get
# runs, a policy-rc.d that refuses every start is in place, unless the
# machine has one already (tests/slurmlab/packages.go does the same).
set -eu

missing() {
	for p in "$@"; do
		dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed || printf '%s ' "$p"
	done
}

need=$(missing "$@")
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "packages: not installed: ${need}(root installs them: run make as root, or apt-get install ${need}yourself)" >&2
	exit 2
fi
command -v apt-get >/dev/null || { echo "packages: not installed: ${need}and there is no apt-get here: install them" >&2; exit 2; }

lock=/run/lock/gangtopo-packages.lock
[ -d /run/lock ] || lock=/tmp/gangtopo-packages.lock
exec 9>"$lock"
flock 9
need=$(missing "$@") # again, in the lock: another make may have installed them meanwhile
[ -z "$need" ] && exit 0

policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# written by gangtopo tests/tools/packages.sh while apt-get runs: start no service\nexit 101\n' > "$policy"
	chmod 0755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
echo "packages: installing ${need}with apt-get"
t0=$(date +%s)
apt-get update -qq
# shellcheck disable=SC2086 # one word per package
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
echo "packages: installed in $(( $(date +%s) - t0 )) s"
