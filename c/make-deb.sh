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
# Its maintainer scripts (c/deb: preinst, prerm, postinst, postrm; each
# says what it does and why) refuse a removal while slurm.conf or
# plugstack.conf still load the plugins, stop the units on removal once the
# files are gone, restart those that run on an upgrade, and never start or
# enable one on a fresh install.
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
maintainer="gangtopo <gangtopo@localhost>"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name

install -D -m 0755 "$build/job_submit_gangtopo.so" "$root$plugindir/job_submit_gangtopo.so"
install -D -m 0755 "$build/spank_gangtopo.so" "$root$plugindir/spank_gangtopo.so"
install -D -m 0755 "$build/libgangtopo.so" "$root$plugindir/libgangtopo.so"
install -D -m 0755 "$bin" "$root/usr/bin/gangtopo"
# stripped as dh_strip strips (the builds keep their debug information)
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/gangtopo"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root$plugindir"/*.so
# the C library: the newest symbol version the binaries name
glibc=$(objdump -T "$root/usr/bin/gangtopo" "$root$plugindir"/*.so | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
for unit in docs/systemd/*.service; do
	# the units as docs/systemd has them, for the package's paths
	# (in /usr/lib: /lib is /usr/lib on a merged /usr, bookworm's default)
	install -d "$root/usr/lib/systemd/system"
	sed -e 's#/usr/local/bin/gangtopo#/usr/bin/gangtopo#g' -e 's#/usr/local/share/doc/gangtopo#/usr/share/doc/gangtopo#g' \
		"$unit" >"$root/usr/lib/systemd/system/$(basename "$unit")"
done
doc=$root/usr/share/doc/gangtopo
install -D -m 0644 docs/examples/gangtopo.yaml "$doc/examples/gangtopo.yaml"
install -D -m 0644 slurm.conf.example "$doc/examples/slurm.conf.example"
for md in admin user controller defrag quota; do
	install -D -m 0644 "docs/$md.md" "$doc/$md.md"
done
printf 'gangtopo %s, built for Slurm %s (%s).\nSee admin.md, "Installing the Debian package".\n' \
	"$version" "$release" "$(date -u +%Y-%m-%d)" >"$doc/README.Debian"
printf 'gangtopo (%s+slurm%s) unstable; urgency=medium\n\n  * Built by make deb for Slurm %s.\n\n -- %s  %s\n' \
	"$version" "$release" "$release" "$maintainer" "$(date -u -R)" | gzip -9n >"$doc/changelog.gz"

install -d "$root/DEBIAN"
size=$(du -sk "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: gangtopo
Version: ${version}+slurm${release}
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: libc6 (>= ${glibc}), slurm-wlm-basic-plugins (>= ${release}), slurm-wlm-basic-plugins (<< ${next})
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
# the maintainer scripts of c/deb, for this release and these units
units=$(for unit in docs/systemd/*.service; do basename "$unit"; done | tr '\n' ' ' | sed 's/ $//')
for script in preinst prerm postinst postrm; do
	sed -e "s#@RELEASE@#${release}#g" -e "s#@UNITS@#${units}#g" "c/deb/$script" >"$root/DEBIAN/$script"
	chmod 0755 "$root/DEBIAN/$script"
done
mkdir -p "$out"
fakeroot dpkg-deb --root-owner-group -Zxz --build "$root" "$out/$name.deb" >/dev/null
echo "$out/$name.deb"
