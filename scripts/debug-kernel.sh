#!/bin/bash
# Build (or reuse) the debug kernel of `make check-debug` and print its
# cache directory. The kernel is Debian's linux-source-6.12 configured as
#   x86_64_defconfig + kvm_guest.config + scripts/debug-kernel.config
# (KASAN, lockdep, kmemleak, UBSAN, fault injection; unused subsystems off).
#
# The cache lives outside the repo, keyed by the source package version,
# the config fragment, the compiler and RECIPE (bump it when the way the
# kernel is configured or built below changes):
#   ${SSDQ_DEBUG_CACHE:-/var/cache/ssdq/debug-kernel}/<key>/
#     src/        configured and built tree (KDIR for ssdq.ko)
#     modroot/    modules_install root: modroot/lib/modules/<kver>/
#     bzImage     kver      config      ready (written last)
# A second run with the same key reuses it at once; an interrupted build
# resumes where make stopped. Other keys are removed once a build is ready,
# so the cache holds one kernel. Takes a lock: concurrent callers wait.
#
#   scripts/debug-kernel.sh          build if needed, print the directory
#   scripts/debug-kernel.sh --key    print the key only
#   scripts/debug-kernel.sh --ready  print the directory if it is built,
#                                    else fail (never builds, never waits)
#
# Build log: <dir>/build.log. Env: SSDQ_DEBUG_JOBS (default nproc).
set -euo pipefail
. "$(dirname "$0")/common.sh"

tarball=/usr/src/linux-source-6.12.tar.xz
frag=$SSDQ_REPO/scripts/debug-kernel.config
root=${SSDQ_DEBUG_CACHE:-/var/cache/ssdq/debug-kernel}

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) || srcver=
[[ -n $srcver && -r $tarball ]] || die "linux-source-6.12 missing (run: make deps)"
RECIPE=1
key=$( {
	echo "$srcver recipe $RECIPE"
	sha256sum <"$frag"
	gcc --version | head -n1
} | sha256sum | cut -c1-16)
if [[ ${1:-} == --key ]]; then
	echo "$key"
	exit 0
fi

dir=$root/$key
if [[ ${1:-} == --ready ]]; then
	[[ -f $dir/ready ]] || exit 1
	echo "$dir"
	exit 0
fi
mkdir -p "$root"
exec 8>"$root/.lock"
if ! flock -n 8; then
	note "waiting for another debug-kernel build ($root/.lock)"
	flock 8
fi

if [[ -f $dir/ready ]]; then
	echo "$dir"
	exit 0
fi

# Options that must survive olddefconfig: a dependency we missed would
# silently drop one and the lane would check less than it claims.
required=(KASAN KASAN_INLINE PROVE_LOCKING DEBUG_ATOMIC_SLEEP DEBUG_KMEMLEAK
	UBSAN UBSAN_BOUNDS DEBUG_OBJECTS_TIMERS DETECT_HUNG_TASK DEBUG_FS
	BLK_DEBUG_FS IRQ_POLL CONFIGFS_FS FAULT_INJECTION_DEBUG_FS FAIL_IO_TIMEOUT
	FAILSLAB FAIL_PAGE_ALLOC FAULT_INJECTION_STACKTRACE_FILTER
	NET_9P_VIRTIO 9P_FS EXT4_FS XFS_FS VIRTIO_PCI PCI_MSI PCIEAER DEVTMPFS BLK_DEV_INITRD MODULE_UNLOAD)
modules=(BLK_DEV_NVME BLK_DEV_NULL_BLK PCIEAER_INJECT SAMPLE_KMEMLEAK KASAN_MODULE_TEST TEST_UBSAN TEST_LOCKUP)

configure() {
	local s=$dir/src o
	make -C "$s" -s x86_64_defconfig
	(cd "$s" && KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh -m -Q \
		.config kernel/configs/kvm_guest.config "$frag" >/dev/null)
	make -C "$s" -s olddefconfig
	for o in "${required[@]}"; do
		grep -qx "CONFIG_$o=y" "$s/.config" || die "debug kernel: CONFIG_$o=y did not survive olddefconfig"
	done
	for o in "${modules[@]}"; do
		grep -qx "CONFIG_$o=m" "$s/.config" || die "debug kernel: CONFIG_$o=m did not survive olddefconfig"
	done
}

if [[ ! -f $dir/src/.config ]]; then
	note "debug kernel: unpacking linux-source $srcver into $dir"
	rm -rf "$dir"
	mkdir -p "$dir/src"
	tar -xf "$tarball" -C "$dir/src" --strip-components=1
	configure
fi

jobs=${SSDQ_DEBUG_JOBS:-$(nproc)}
note "debug kernel: building with -j$jobs (about 20 min on 2 cores; log: $dir/build.log)"
start=$SECONDS
kver=$(ssdq_build_kernel "$dir" "$dir/bzImage" "$dir/modroot" "debug kernel" "$jobs")
cp "$dir/src/.config" "$dir/config"
echo "$kver" >"$dir/kver"
touch "$dir/ready"
note "debug kernel $kver ready in $((SECONDS - start)) s"

# One kernel in the cache: drop other keys (older sources or configs).
for d in "$root"/*/; do
	d=${d%/}
	[[ $d == "$dir" ]] && continue
	[[ -d $d ]] && rm -rf "$d"
done
echo "$dir"
