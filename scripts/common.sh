# shellcheck shell=bash
# Shared host-side helpers for the ssdq scripts. Source it; it defines
# functions and variables only.

# Real path of the checkout: the guest mounts it at the same path, so it
# must not go through symlinks (CI clones elsewhere than /work/main).
SSDQ_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
SSDQ_BUILD=${SSDQ_BUILD:-$SSDQ_REPO/build}

die() { echo "error: $*" >&2; exit 1; }
note() { echo "[ssdq] $*" >&2; }

# The guest kernel is the Debian 6.12 one. Never use uname -r: the host runs
# another kernel. Pick the newest 6.12*-amd64 that has both an image and a
# build tree. SSDQ_KVER overrides.
ssdq_kver() {
	if [[ -n ${SSDQ_KVER:-} ]]; then
		echo "$SSDQ_KVER"
		return
	fi
	local d v best=
	for d in /lib/modules/6.12*-amd64; do
		[[ -d $d ]] || continue
		v=${d##*/}
		[[ -e /boot/vmlinuz-$v && -d $d/build ]] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
	[[ -n $best ]] || return 1
	echo "$best"
}

# KDIR: headers build tree; the Makefile may pass one in.
ssdq_kdir() {
	if [[ -n ${KDIR:-} ]]; then
		echo "$KDIR"
		return
	fi
	local v
	v=$(ssdq_kver) || return 1
	echo "/lib/modules/$v/build"
}
