#!/bin/bash
# ssdq through DKMS (dkms.conf), for kernels other than the one the repo's
# `make` builds against.
#
#   scripts/dkms.sh install [KVER...]  copy the sources to /usr/src/ssdq-<v>
#                                      and dkms add, build and install them
#                                      for each KVER (default: every kernel
#                                      whose headers are installed)
#   scripts/dkms.sh check KVER...      dkms add and build in a throwaway
#                                      tree (nothing installed), then check
#                                      each ssdq.ko's modinfo: built for
#                                      KVER, the version, every parameter
#                                      with its default
#
# <v> is dkms.conf's PACKAGE_VERSION; modinfo's version adds the tree's git
# description (written to VERSION in the copy, which has no .git).
set -euo pipefail
. "$(dirname "$0")/common.sh"

command -v dkms >/dev/null || die "dkms missing (run: make deps)"
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$SSDQ_REPO/dkms.conf")
[[ -n $version ]] || die "no PACKAGE_VERSION in dkms.conf"

# The module's sources, as DKMS wants them: DIR/ssdq-<version>/.
copy_sources() { # dir
	local d=$1/ssdq-$version
	rm -rf "$d"
	mkdir -p "$d"
	cp -r "$SSDQ_REPO"/{Kbuild,dkms.conf,drivers,include} "$d"/
	# dkms.conf's POST_INSTALL: the udev rules and their installer.
	mkdir -p "$d/scripts"
	cp "$SSDQ_REPO"/scripts/{60-ssdq.rules,udev-rules.sh} "$d/scripts/"
	find "$d" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod*' \) -delete
	git -C "$SSDQ_REPO" describe --always --dirty --exclude '*' >"$d/VERSION" 2>/dev/null ||
		rm -f "$d/VERSION"
}

all_kvers() {
	local b
	for b in /lib/modules/*/build; do
		[[ -d $b ]] && basename "$(dirname "$b")"
	done
}

# Built for KVER, named version, every parameter with its default.
check_modinfo() { # ko kver
	local ko=$1 kver=$2 want got n
	got=$(modinfo -F vermagic "$ko" | awk '{ print $1 }')
	[[ $got == "$kver" ]] || die "$ko: vermagic $got, want $kver"
	want="$version+$(cat "$tree/src/ssdq-$version/VERSION" 2>/dev/null)"
	got=$(modinfo -F version "$ko")
	[[ $got == "${want%+}" ]] || die "$ko: version '$got', want '${want%+}'"
	n=$(modinfo -F parm "$ko" | grep -vcE 'default ([0-9]|none)' || true)
	((n == 0)) || die "$ko: $n parameters without a default in modinfo"
	echo "dkms: ssdq $got for $kver: $(modinfo -F parm "$ko" | wc -l) parameters, each with its default"
}

case ${1:-} in
install)
	shift
	(($#)) || mapfile -t args < <(all_kvers)
	(($#)) && args=("$@")
	copy_sources /usr/src
	dkms remove -m ssdq -v "$version" --all >/dev/null 2>&1 || true
	dkms add -m ssdq -v "$version"
	for k in "${args[@]}"; do
		dkms build -m ssdq -v "$version" -k "$k"
		dkms install -m ssdq -v "$version" -k "$k"
	done
	;;
check)
	shift
	(($#)) || die "dkms.sh check: name the kernels (KVER...)"
	tree=$(mktemp -d "${TMPDIR:-/tmp}/ssdq-dkms.XXXXXX")
	trap 'rm -rf "$tree"' EXIT
	mkdir -p "$tree/dkms"
	copy_sources "$tree/src"
	dk=(--dkmstree "$tree/dkms" --sourcetree "$tree/src")
	dkms add "${dk[@]}" -m ssdq -v "$version" >/dev/null
	for k; do
		[[ -d /lib/modules/$k/build ]] || die "no headers for $k (/lib/modules/$k/build)"
		dkms build "${dk[@]}" -m ssdq -v "$version" -k "$k" >"$tree/build-$k.log" 2>&1 || {
			sed -n '1,40p' "$tree/dkms/ssdq/$version/build/make.log" >&2 2>/dev/null || cat "$tree/build-$k.log" >&2
			die "dkms build for $k failed"
		}
		ko=$(find "$tree/dkms/ssdq/$version/$k" -name 'ssdq.ko*' | head -n1)
		[[ -n $ko ]] || die "dkms build for $k left no ssdq.ko"
		check_modinfo "$ko" "$k"
	done
	# dkms.conf's POST_INSTALL as dkms runs it (from the source copy), into
	# a scratch root: it must install the repo's udev rules.
	post=$(sed -n 's/^POST_INSTALL="\(.*\)"/\1/p' "$tree/src/ssdq-$version/dkms.conf")
	[[ -x $tree/src/ssdq-$version/${post%% *} ]] || die "POST_INSTALL '$post' is not an executable in the copy"
	(cd "$tree/src/ssdq-$version" && DESTDIR=$tree/root $post) >/dev/null
	cmp -s "$tree/root/etc/udev/rules.d/60-ssdq.rules" "$SSDQ_REPO/scripts/60-ssdq.rules" ||
		die "POST_INSTALL did not install scripts/60-ssdq.rules"
	echo "dkms: POST_INSTALL installs the udev rules (/etc/udev/rules.d/60-ssdq.rules)"
	;;
*) die "usage: dkms.sh install [KVER...] | check KVER..." ;;
esac
