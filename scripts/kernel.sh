#!/bin/bash
# Find or fetch a guest kernel other than the default 6.12 and print the
# directory the VM boots it from (vm.sh --kernel-dir):
#   DIR/kver                    its release, e.g. 6.1.0-57-amd64
#   DIR/vmlinuz                 the image
#   DIR/lib/modules/<kver>/     its modules, depmod'ed (bind-mounted over
#                               the guest's /lib/modules)
# and make sure its headers are installed (/lib/modules/<kver>/build), so
# ssdq can be built against it.
#
#   scripts/kernel.sh 6.1       Debian 12's own kernel (bookworm): the newest
#                               linux-image-6.1.0-N-amd64 apt knows, and its
#                               headers. Cached by release.
#
# Debian packages only, through the machine's own apt sources. The cache
# lives outside the repo: ${SSDQ_KERNEL_CACHE:-/var/cache/ssdq/kernels}.
set -euo pipefail
. "$(dirname "$0")/common.sh"

name=${1:?usage: kernel.sh 6.1}
root=${SSDQ_KERNEL_CACHE:-/var/cache/ssdq/kernels}

case $name in
6.1)
	# The newest ABI of Debian 12's 6.1 that has both image and headers.
	kver=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
		awk '{ print $1 }' | sed 's/^linux-image-//' | sort -V | tail -n1)
	[[ -n $kver ]] || die "apt knows no linux-image-6.1.0-*-amd64 (apt-get update? bookworm in the apt sources?)"
	;;
*) die "kernel.sh: unknown kernel '$name' (known: 6.1)" ;;
esac

dir=$root/$kver
if [[ -f $dir/ready && -d /lib/modules/$kver/build ]]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$root"
exec {lock}>"$root/.lock"
flock "$lock"
if [[ ! -d /lib/modules/$kver/build ]]; then
	note "installing linux-headers-$kver"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"linux-headers-$kver" >&2 || die "apt-get install linux-headers-$kver failed"
fi
if [[ ! -f $dir/ready ]]; then
	note "fetching linux-image-$kver (unpacked into $dir, not installed)"
	tmp=$(mktemp -d "$root/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "linux-image-$kver" >&2) ||
		die "apt-get download linux-image-$kver failed"
	dpkg-deb -x "$tmp"/linux-image-"$kver"_*.deb "$tmp/root"
	rm -rf "$dir"
	mkdir -p "$dir/lib/modules"
	mv "$tmp/root/boot/vmlinuz-$kver" "$dir/vmlinuz"
	mv "$tmp/root/lib/modules/$kver" "$dir/lib/modules/"
	depmod -b "$dir" "$kver"
	echo "$kver" >"$dir/kver"
	touch "$dir/ready"
fi
echo "$dir"
