#!/bin/bash
# Build (or reuse) the busybox initramfs of the test VM and print its path.
# Rebuilt only when an input changes: the init script, this script, the
# busybox binary, or the guest kernel's 9p modules.
#
#   mkinitramfs.sh              for the Debian kernel (9p as modules)
#   mkinitramfs.sh --builtin    for a kernel with 9p built in (debug lane)
#   mkinitramfs.sh --kernel-dir DIR   for a kernel scripts/kernel.sh
#                               unpacked in DIR (its modules there)
set -euo pipefail
. "$(dirname "$0")/common.sh"

# busybox-static's binary: the initramfs has no libc.
busybox=/bin/busybox
[[ -x $busybox ]] || die "busybox-static missing (run: make deps)"
init=$SSDQ_REPO/scripts/guest-init.sh

moddir=()
case ${1:-} in
--builtin)
	kver=builtin-9p
	;;
--kernel-dir)
	kver=$(cat "$2/kver")
	moddir=(-d "$2")
	;;
*)
	kver=$(ssdq_kver) || die "no 6.12*-amd64 kernel installed (run: make deps)"
	;;
esac
mods=
if [[ $kver != builtin-9p ]]; then
	# 9p over virtio-pci, plus dependencies, in load order. Debian's 6.12
	# has virtio and virtio_pci built in (--show-depends says "builtin"),
	# its 6.1 as modules. One module per call: modprobe takes further
	# words as module parameters.
	mods=$(for m in virtio_pci 9pnet_virtio 9p; do
		modprobe "${moddir[@]}" -S "$kver" --show-depends "$m"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }')
	# A kernel with 9p built in needs none (scripts/kernel.sh newest).
	[[ -n $mods ]] || grep -qs '/9p\.ko$' "${moddir[1]:-}/lib/modules/$kver/modules.builtin" ||
		die "modprobe --show-depends found no 9p modules for $kver"
fi
out=$SSDQ_BUILD/initramfs-$kver.cpio.gz

# Contents only: the same script may be called by relative or absolute path.
stamp=$( {
	for f in "$init" "$0" "$busybox" $mods; do sha256sum <"$f"; done
	echo "$kver $mods"
} | sha256sum | cut -d' ' -f1)

if [[ -f $out && -f $out.stamp && $(cat "$out.stamp") == "$stamp" ]]; then
	echo "$out"
	exit 0
fi

note "building initramfs for $kver"
mkdir -p "$SSDQ_BUILD"
tmp=$(mktemp -d "$SSDQ_BUILD/.initramfs.XXXXXX")
trap 'rm -rf "$tmp" "$tmp.cpio.gz"' EXIT
mkdir -p "$tmp"/{bin,dev,proc,sys,host,lib/modules,tmp}
cp "$busybox" "$tmp/bin/busybox"
cp "$init" "$tmp/init"
chmod 755 "$tmp/init"
: >"$tmp/lib/modules/order"
for m in $mods; do
	base=$(basename "$m")
	base=${base%.xz}
	base=${base%.zst}
	base=${base%.gz}
	# Decompress here: busybox insmod may lack xz/zstd support.
	case $m in
	*.xz) xz -dc "$m" >"$tmp/lib/modules/$base" ;;
	*.zst) zstd -qdc "$m" >"$tmp/lib/modules/$base" ;;
	*.gz) gzip -dc "$m" >"$tmp/lib/modules/$base" ;;
	*) cp "$m" "$tmp/lib/modules/$base" ;;
	esac
	echo "$base" >>"$tmp/lib/modules/order"
done
(cd "$tmp" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$tmp.cpio.gz"
mv "$tmp.cpio.gz" "$out"
echo "$stamp" >"$out.stamp"
echo "$out"
