#!/bin/bash
# filesystem: ext4 and XFS on the whole of /dev/ssdq0. For each: mkfs, a
# verified file workload (4 jobs x 8 files, mixed block sizes, buffered and
# O_DIRECT, fsync every 8 writes), fstrim (the disk counts the discards),
# the files verified again, unmount, the checker finds the filesystem
# clean, mount again and the files verify once more, read from the device
# (caches dropped). Not in the main boot: mkfs writes all over the disk,
# where the main boot's host post-checks read their regions; in the PCI
# Express one, with 46-fs-faults, which does the same (one boot less).
# boot: pcie
# timeout: 900
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): fs-faults
# puts ext4 on the disk there, through recoveries and give-ups.
# debug-lane: full
set -euo pipefail
. "$(dirname "$0")/lib.sh"

discards() { disk_stat "$DISK" discard_ios; }

mnt=$(mktemp -d /tmp/ssdq-fs.XXXXXX)
cleanup() { mountpoint -q "$mnt" && umount "$mnt"; rmdir "$mnt"; }
trap cleanup EXIT

dut_load
FSZ=$((4 * MiB / IO_DIV)) # per file
# Every job writes its 8 files with a fixed seed, verifying as it goes;
# files() again with --verify_only reads them back in the same order.
files() { # tag want-write want-read fio-args...
	local tag=$1 w=$2 r=$3
	shift 3
	run_fio "$tag" "$w" "$r" --directory="$mnt" --rw=randwrite \
		--bssplit=4k/50:16k/20:64k/20:256k/10 --nrfiles=8 --filesize="$FSZ" \
		--verify=crc32c --verify_fatal=1 --randseed=45 --group_reporting=0 \
		--name=buffered --ioengine=psync --fsync=8 --numjobs=2 \
		--name=direct --ioengine=io_uring --direct=1 --iodepth=16 --fsync=8 --numjobs=2 \
		"$@"
}
total=$((4 * 8 * FSZ))

for fs in ext4 xfs; do
	fs_mkfs "$fs"
	mount -t "$fs" "$DEV" "$mnt"
	files "$fs-write" "$total" "$total"

	d0=$(discards)
	out=$(fstrim -v "$mnt")
	log "fstrim: $out"
	trimmed=$(grep -Eo '\(([0-9]+) bytes\)' <<<"$out" | tr -dc 0-9)
	assert_gt "$fs: bytes fstrim trimmed" "${trimmed:-0}" 0
	assert_gt "$fs: discards the disk completed during fstrim" "$(($(discards) - d0))" 0
	files "$fs-after-trim" - "$total" --verify_only=1

	umount "$mnt"
	fs_check "$fs"

	echo 3 >/proc/sys/vm/drop_caches
	mount -t "$fs" "$DEV" "$mnt"
	files "$fs-remount" - "$total" --verify_only=1
	umount "$mnt"
done
