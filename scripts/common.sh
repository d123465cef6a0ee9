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

# Build the configured kernel tree DIR/src (bzImage and modules) and install
# it as the VM boots it: the image at IMAGE, the modules under
# MODROOT/lib/modules/<release>. Prints the release; log in DIR/build.log.
# (scripts/debug-kernel.sh, scripts/kernel.sh newest)
ssdq_build_kernel() { # dir image modroot what jobs
	local dir=$1 image=$2 modroot=$3 what=$4 jobs=$5
	if ! make -C "$dir/src" -j"$jobs" bzImage modules >"$dir/build.log" 2>&1; then
		grep -m3 -E 'error|Error' "$dir/build.log" >&2 || tail -n 5 "$dir/build.log" >&2
		die "$what build failed (see $dir/build.log)"
	fi
	rm -rf "${modroot:?}/lib"
	make -C "$dir/src" -s INSTALL_MOD_PATH="$modroot" INSTALL_MOD_STRIP=1 \
		DEPMOD=/sbin/depmod modules_install >>"$dir/build.log" 2>&1 ||
		die "$what modules_install failed (see $dir/build.log)"
	cp "$dir/src/arch/x86/boot/bzImage" "$image"
	make -C "$dir/src" -s kernelrelease
}

# ssdq.ko for another kernel (the debug one, another release), built from
# a copy of the sources so the repo's own ssdq.ko (Debian's 6.12) stays as
# it is. W=1 on that kernel's own config: a warning fails the build.
ssdq_ko_copy() { # kernel-build-dir dest-dir log -> status; dest-dir/ssdq.ko
	local src=$2 log=$3
	rm -rf "$src"
	mkdir -p "$src"
	cp -r "$SSDQ_REPO"/{Kbuild,dkms.conf,drivers,include} "$src"/
	find "$src" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod*' \) -delete
	git -C "$SSDQ_REPO" describe --always --dirty --exclude '*' >"$src/VERSION" 2>/dev/null || true
	make -C "$1" M="$src" W=1 modules >"$log" 2>&1 &&
		[[ -f $src/ssdq.ko ]] || return 1
	! grep -E 'warning:' "$log" >&2
}
