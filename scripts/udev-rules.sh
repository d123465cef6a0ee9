#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install or remove ssdq's udev rules (60-ssdq.rules, beside this script):
# ssdq disks' persistent names, /dev/disk/by-id, by-path, by-uuid, ...
#   scripts/udev-rules.sh install   (make install; DKMS's POST_INSTALL)
#   scripts/udev-rules.sh remove
# DESTDIR, if set, is a root to install under (udev is then not told).
set -euo pipefail
src=$(dirname "$(readlink -f "$0")")/60-ssdq.rules
dst=${DESTDIR:-}/etc/udev/rules.d/60-ssdq.rules

case ${1:-} in
install) install -D -m 0644 "$src" "$dst" ;;
remove) rm -f "$dst" ;;
*)
	echo "usage: udev-rules.sh install|remove" >&2
	exit 2
	;;
esac
echo "udev-rules: $1 $dst"
# A running udev reads its rules again; the next event of each disk uses them.
if [[ -z ${DESTDIR:-} ]] && udevadm control --ping >/dev/null 2>&1; then
	udevadm control --reload
fi
