#!/bin/bash
# Prints the directory holding qemu-plugin.h for the installed QEMU, fetching
# it once: Debian ships no plugin header, so it comes from Debian's qemu
# source package of exactly the installed version, downloaded through
# deb-src entries made from the machine's own apt sources, in a private apt
# state (the host's apt configuration is not touched). Cached under
# ${SSDQ_METER_CACHE:-/var/cache/ssdq/qemu-plugin}/<version>/.
set -euo pipefail
. "$(dirname "$0")/common.sh"

root=${SSDQ_METER_CACHE:-/var/cache/ssdq/qemu-plugin}
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (make deps)"
ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null) ||
	die "qemu-system-x86 is not a Debian package here: cannot tell which qemu source to take the plugin header from"
dir=$root/${ver//[:~]/_}
if [[ -f $dir/qemu-plugin.h ]]; then
	echo "$dir"
	exit 0
fi

apt=$root/apt
mkdir -p "$apt/sources" "$apt/lists/partial" "$apt/cache/archives/partial"
# deb-src twins of the machine's own entries: deb822 stanzas and one-line.
{
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		sed -E 's/^Types:.*/Types: deb-src/' "$f"
		echo
	done
} >"$apt/sources/src.sources"
{
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true
} | sed -nE 's/^deb[[:space:]]+/deb-src /p' >"$apt/sources/src.list"
[[ -s $apt/sources/src.sources ]] || rm -f "$apt/sources/src.sources"
[[ -s $apt/sources/src.list ]] || rm -f "$apt/sources/src.list"
ls "$apt/sources"/* >/dev/null 2>&1 || die "no apt sources on this machine to take Debian's qemu source from"
papt() {
	"$@" -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/sources" \
		-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root
}
note "meter: fetching Debian's qemu $ver source for qemu-plugin.h (once)"
papt apt-get update >&2 || die "apt-get update of the deb-src entries failed"
tmp=$(mktemp -d "$root/dl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && papt apt-get source --download-only "qemu=$ver" >&2) ||
	die "apt-get source qemu=$ver failed (is that version still in the archive?)"
orig=$(ls "$tmp"/qemu_*.orig.tar.* 2>/dev/null | head -n1)
[[ -n $orig ]] || die "no qemu orig tarball among $(ls "$tmp")"
tar -xf "$orig" -C "$tmp" --wildcards --strip-components=3 '*/include/qemu/qemu-plugin.h' ||
	die "no include/qemu/qemu-plugin.h in $orig"
# The API version QEMU checks at load: ours is written for version 1 (7.2).
grep -q '^#define QEMU_PLUGIN_VERSION 1$' "$tmp/qemu-plugin.h" ||
	die "qemu-plugin.h of $ver is not plugin API version 1: scripts/meter-plugin.c needs a look"
mkdir -p "$dir"
mv "$tmp/qemu-plugin.h" "$dir/qemu-plugin.h"
echo "$dir"
