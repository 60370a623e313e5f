#!/bin/sh
# make-deb.sh: the Debian package of gangtopo for one Slurm release (make deb).
#
#   make-deb.sh PLUGIN_BUILD GANGTOPO_BIN OUTDIR VERSION
#
# PLUGIN_BUILD holds the plugins as make plugins built them, with the
# release they were built for in PLUGIN_BUILD/slurm-release. The package is
# named after that release, as NVIDIA's pyxis names its packages after the
# Slurm it was built for: gangtopo_VERSION+slurmRELEASE_amd64.deb. It pins
# that exact release twice, because a job_submit plugin loads only into the
# release it was built for (docs/admin.md, "Slurm series"):
#   - Depends on Debian's slurm-wlm-basic-plugins of that release (what apt
#     resolves; the package that owns the plugin directory);
#   - a preinst that refuses, before anything is unpacked, a host whose
#     Slurm daemons or clients report another release (dpkg -i alone does
#     not stop at unmet Depends: it unpacks first).
# It installs the plugins into Debian's PluginDir, the CLI as
# /usr/bin/gangtopo, the systemd units (not enabled) and the example files
# under /usr/share/doc/gangtopo: nothing under /etc, so no site's
# configuration is ever overwritten.
set -eu
if [ $# -ne 4 ]; then
	echo "usage: make-deb.sh PLUGIN_BUILD GANGTOPO_BIN OUTDIR VERSION" >&2
	exit 2
fi
build=$1 bin=$2 out=$3 version=$4
for f in slurm-release job_submit_gangtopo.so spank_gangtopo.so libgangtopo.so; do
	[ -r "$build/$f" ] || { echo "make-deb: $build/$f is missing: run make plugins first" >&2; exit 2; }
done
[ -x "$bin" ] || { echo "make-deb: $bin is missing: run make build first" >&2; exit 2; }
release=$(cat "$build/slurm-release")
case $release in
[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "make-deb: $build/slurm-release says \"$release\", want MAJOR.MINOR.MICRO" >&2; exit 2 ;;
esac
# the first release after this one: the Depends range is [release, next)
next=${release%.*}.$((${release##*.} + 1))
arch=amd64
multiarch=x86_64-linux-gnu
plugindir=/usr/lib/$multiarch/slurm-wlm
name=gangtopo_${version}+slurm${release}_$arch
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name

install -D -m 0755 "$build/job_submit_gangtopo.so" "$root$plugindir/job_submit_gangtopo.so"
install -D -m 0755 "$build/spank_gangtopo.so" "$root$plugindir/spank_gangtopo.so"
install -D -m 0755 "$build/libgangtopo.so" "$root$plugindir/libgangtopo.so"
install -D -m 0755 "$bin" "$root/usr/bin/gangtopo"
for unit in docs/systemd/*.service; do
	# the units as docs/systemd has them, for the package's paths
	install -d "$root/lib/systemd/system"
	sed -e 's#/usr/local/bin/gangtopo#/usr/bin/gangtopo#g' -e 's#/usr/local/share/doc/gangtopo#/usr/share/doc/gangtopo#g' \
		"$unit" >"$root/lib/systemd/system/$(basename "$unit")"
done
doc=$root/usr/share/doc/gangtopo
install -D -m 0644 docs/examples/gangtopo.yaml "$doc/examples/gangtopo.yaml"
install -D -m 0644 slurm.conf.example "$doc/examples/slurm.conf.example"
for md in admin user controller defrag quota; do
	install -D -m 0644 "docs/$md.md" "$doc/$md.md"
done
printf 'gangtopo %s, built for Slurm %s (%s).\nSee admin.md, "Installing the Debian package".\n' \
	"$version" "$release" "$(date -u +%Y-%m-%d)" >"$doc/README.Debian"

install -d "$root/DEBIAN"
size=$(du -sk "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: gangtopo
Version: ${version}+slurm${release}
Architecture: $arch
Maintainer: gangtopo <gangtopo@localhost>
Installed-Size: $size
Depends: slurm-wlm-basic-plugins (>= ${release}), slurm-wlm-basic-plugins (<< ${next})
Section: admin
Priority: optional
Description: topology-aware, defragmenting GPU placement for Slurm ${release}
 The job_submit plugin (job_submit_gangtopo.so with libgangtopo.so), the
 SPANK plugin (spank_gangtopo.so: --gang-topology) and the gangtopo CLI and
 daemons. Built for Slurm ${release} exactly: a job_submit plugin loads only
 into the release it was built for. Enable it in slurm.conf
 (JobSubmitPlugins=gangtopo) and plugstack.conf; see
 /usr/share/doc/gangtopo/admin.md.
EOF
cat >"$root/DEBIAN/preinst" <<EOF
#!/bin/sh
# refuses a host whose Slurm is another release than the one this package
# was built for, before anything is unpacked
set -e
[ "\$1" = install ] || [ "\$1" = upgrade ] || exit 0
for cmd in slurmctld slurmd scontrol; do
	p=\$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v \$cmd) || continue
	set -- \$("\$p" -V 2>/dev/null) || continue
	[ \$# -eq 2 ] || continue
	if [ "\$2" != "${release}" ]; then
		echo "gangtopo: this package is built for Slurm ${release}, but this host runs Slurm \$2 (\$p -V)," >&2
		echo "gangtopo: whose slurmctld would refuse its job_submit plugin: install the gangtopo package built" >&2
		echo "gangtopo: for \$2 (make deb with its headers: SLURM_INCLUDE=<dir holding slurm/slurm.h>)" >&2
		exit 1
	fi
	exit 0
done
exit 0
EOF
chmod 0755 "$root/DEBIAN/preinst"
mkdir -p "$out"
fakeroot dpkg-deb --root-owner-group -Zxz --build "$root" "$out/$name.deb" >/dev/null
echo "$out/$name.deb"
