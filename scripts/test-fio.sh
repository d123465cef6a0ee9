#!/bin/bash
# Build (or reuse) the fio the test suite runs in the VM, and print the
# directory that holds it (check.sh puts it first on the guest's PATH).
#
# Why not Debian's /usr/bin/fio: it links 64 shared libraries (Ceph, Gluster,
# RDMA, PMEM, NBD engines), and starting it maps them all. On the debug
# kernel under TCG that costs seconds per run (`fio --version`: 4.5-7.8 s,
# against 2.9 s for this build), and the suite runs fio about 60 times.
# This is the same upstream release, from Debian's own source package, built
# static with only the engines the tests use (psync, libaio, io_uring).
# `make bench` keeps Debian's fio (both drivers run the same binary there).
#
# The source comes through apt from the machine's own Debian mirror (a
# private deb-src list in the cache; the system's apt config is not
# touched). Cache, keyed by fio's version, the flags below and the compiler:
#   ${SSDQ_FIO_CACHE:-/var/cache/ssdq/fio}/<key>/bin/fio   ready (last)
#
#   scripts/test-fio.sh          build if needed, print <key>/bin
#   scripts/test-fio.sh --ready  print <key>/bin if built, else fail
set -euo pipefail
. "$(dirname "$0")/common.sh"

root=${SSDQ_FIO_CACHE:-/var/cache/ssdq/fio}
ver=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) || ver=
[[ -n $ver ]] || die "fio is not installed (run: make deps)"
upver=${ver%-*}
upver=${upver#*:}
flags=(--build-static --disable-native --disable-numa --disable-rdma
	--disable-rados --disable-rbd --disable-http --disable-gfapi
	--disable-libnfs --disable-pmem --disable-xnvme --disable-libzbc
	--disable-tcmalloc --disable-dfs)
key=$( {
	echo "$ver ${flags[*]}"
	gcc --version | head -n1
} | sha256sum | cut -c1-16)
dir=$root/$key
if [[ ${1:-} == --ready ]]; then
	[[ -f $dir/ready ]] || exit 1
	echo "$dir/bin"
	exit 0
fi
mkdir -p "$root"
exec 8>"$root/.lock"
flock 8
if [[ -f $dir/ready ]]; then
	echo "$dir/bin"
	exit 0
fi

# A deb-src twin of every deb source the machine has.
apt_dir=$root/apt
rm -rf "$apt_dir"
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial"
for f in /etc/apt/sources.list.d/*.sources; do
	[[ -r $f ]] && sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$apt_dir/sources.list.d/${f##*/}"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[[ -r $f ]] && sed -nE 's/^deb[[:space:]]+/deb-src /p' "$f" >>"$apt_dir/sources.list.d/src.list"
done
apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
	-o "Dir::State::Lists=$apt_dir/lists" -o DPkg::Lock::Timeout=600 -qq)

rm -rf "$dir"
mkdir -p "$dir/src" "$dir/bin"
note "test fio: fetching Debian's fio $ver source"
apt-get "${apt_opts[@]}" update >"$dir/build.log" 2>&1 ||
	die "test fio: apt-get update of the deb-src lists failed (see $dir/build.log)"
(cd "$dir/src" && apt-get "${apt_opts[@]}" source --download-only "fio=$ver") >>"$dir/build.log" 2>&1 ||
	die "test fio: apt-get source fio=$ver failed (see $dir/build.log)"
orig=$dir/src/fio_$upver.orig.tar.gz
[[ -f $orig ]] || die "test fio: $orig not downloaded (see $dir/build.log)"
tar -xzf "$orig" -C "$dir/src"
s=$dir/src/fio-$upver
[[ -x $s/configure ]] || die "test fio: no fio-$upver/configure in $orig"

note "test fio: building a static fio $upver"
{
	(cd "$s" && ./configure "${flags[@]}") &&
		make -C "$s" -j"$(nproc)" fio
} >>"$dir/build.log" 2>&1 || die "test fio: build failed (see $dir/build.log)"
# The engines the tests name must be in, and it must be the same release.
engines=$("$s/fio" --enghelp)
for e in psync libaio io_uring; do
	grep -qw "$e" <<<"$engines" || die "test fio: the build has no $e engine (libaio-dev missing? run: make deps)"
done
[[ $("$s/fio" --version) == "fio-$upver" ]] || die "test fio: built $("$s/fio" --version), want fio-$upver"
strip -o "$dir/bin/fio" "$s/fio"
rm -rf "$dir/src" "$apt_dir"
touch "$dir/ready"

# One build in the cache.
for d in "$root"/*/; do
	d=${d%/}
	[[ $d == "$dir" ]] || rm -rf "$d"
done
echo "$dir/bin"
