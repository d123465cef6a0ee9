#!/bin/bash
# make deps: install the Debian packages the build, lint and test VM need.
# As root: one apt-get update, then apt-get install of what is missing.
# Otherwise: print the exact command and fail.
set -euo pipefail

pkgs=(
	make gcc perl xz-utils gzip cpio kmod util-linux jq
	linux-image-6.12-amd64   # the guest kernel (/boot/vmlinuz-6.12*)
	linux-headers-6.12-amd64 # KDIR for building ssdq.ko
	linux-source-6.12        # checkpatch.pl for make lint
	sparse shellcheck
	qemu-system-x86 busybox-static
	fio nvme-cli
	liburing-dev # 92-chardev's io_uring passthrough tool (tests/uring-pt.c)
	dmsetup # 82-lifecycle: dm-multipath over the disk (REQ_FAILFAST_*)
	xfsprogs e2fsprogs # 45-filesystem: mkfs, fsck, xfs_repair
	fdisk udev # 12-identity: sfdisk; systemd-udevd with scripts/60-ssdq.rules
	libaio-dev # the tests' static fio (scripts/test-fio.sh)
	openssl    # the tests' data patterns (tests/lib.sh)
	python3          # make bench's report (scripts/bench-report.py)
	linux-perf       # make bench's profiles (perf record in the guest)
	python3-docutils # make lint: the documentation parses (docrefs.sh)
	dkms             # dkms.conf, checked in make check's reach lane
	# building the debug kernel (make check-debug)
	bc bison flex libelf-dev libssl-dev
)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ $st == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	exit 0
fi

cmd=(apt-get install -y --no-install-recommends "${missing[@]}")
if ((EUID != 0)); then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: as root, run:" >&2
	echo "  apt-get update && ${cmd[*]}" >&2
	exit 1
fi
# Never prompt (CI has no stdin); don't race another apt (dpkg lock).
export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${missing[*]}" >&2
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -qq -y --no-install-recommends "${missing[@]}" >&2
