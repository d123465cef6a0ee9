#!/bin/bash
# integrity: fio writes random data (crc32c headers) in mixed sizes from
# one logical block (512 B, or 4 KiB as integrity-4k) to 1 MiB, then reads
# every block back and verifies it. Sizes above
# 8 KiB need PRP lists (or SGLs); 1 MiB exceeds MDTS and gets split; buffers
# start 512 bytes into a page (mem_align) so PRP entry 0 has an offset.
# Engines io_uring and libaio, depths 1/16/32, 1-4 jobs, O_DIRECT, plus a
# buffered write verified afterwards with O_DIRECT reads.
# timeout: 900
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dut_load

# The smallest I/O is one logical block.
case $SSDQ_LBS in
512) bssplit=512/8:4k/20:8k/10:12k/12:20k/10:64k/15:128k/10:256k/5:1m/10 ;;
4096) bssplit=4k/28:8k/10:12k/12:20k/10:64k/15:128k/10:256k/5:1m/10 ;;
*) fail "integrity knows 512-byte and 4 KiB LBAs, not $SSDQ_LBS" ;;
esac
assert_eq "logical_block_size" "$(sysq logical_block_size)" "$SSDQ_LBS"
common=(--filename="$DEV" --direct=1 --rw=randwrite --bssplit="$bssplit"
	--verify=crc32c --verify_fatal=1 --do_verify=1 --mem_align=512
	--randrepeat=0 --group_reporting=0)
region() { # index len: offset inside the integrity region
	echo $((REG_INTEGRITY_OFF + $1))
}

# 2 jobs x 24 MiB, io_uring, QD32.
run_fio uring-qd32 $((48 * MiB)) $((48 * MiB)) "${common[@]}" --name=uring32 \
	--ioengine=io_uring --iodepth=32 --numjobs=2 --size=24m \
	--offset="$(region 0)" --offset_increment=32m

# 4 jobs x 8 MiB, libaio, QD16 (batched submit/complete).
run_fio libaio-qd16 $((32 * MiB)) $((32 * MiB)) "${common[@]}" --name=aio16 \
	--ioengine=libaio --iodepth=16 --iodepth_batch_submit=8 \
	--iodepth_batch_complete_min=1 --numjobs=4 --size=8m \
	--offset="$(region $((64 * MiB)))" --offset_increment=8m

# 3 jobs x 4 MiB, QD1, one engine each.
run_fio qd1 $((12 * MiB)) $((12 * MiB)) "${common[@]}" --iodepth=1 --size=4m \
	--name=uring1 --ioengine=io_uring --offset="$(region $((96 * MiB)))" \
	--name=aio1 --ioengine=libaio --offset="$(region $((100 * MiB)))" \
	--name=psync1 --ioengine=psync --offset="$(region $((104 * MiB)))"

# Buffered: write through the page cache (fsync at the end), then verify
# with O_DIRECT so the data is read from the device, not the cache.
buf=(--filename="$DEV" --rw=randwrite --bssplit="$bssplit" --verify=crc32c
	--verify_fatal=1 --randrepeat=0 --randseed=4242 --size=16m
	--offset="$(region $((112 * MiB)))" --name=buffered --ioengine=psync)
run_fio buffered-write $((16 * MiB)) - "${buf[@]}" --direct=0 --do_verify=0 --fsync_on_close=1
echo 1 >/proc/sys/vm/drop_caches
run_fio buffered-verify - $((16 * MiB)) "${buf[@]}" --direct=1 --verify_only=1
