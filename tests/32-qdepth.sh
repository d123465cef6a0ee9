#!/bin/bash
# qdepth: queue-depth exhaustion. Loaded with io_queue_depth=2 (one command
# in flight per queue: queue/nr_requests 1) and again with 4, each with a
# polled queue beside the interrupt-driven ones, fio submits at QD64 in
# batches of 16, 512 B to 1 MiB (split at MDTS), buffers 512 bytes into a
# page: blk-mq runs out of tags, plugged batches wait for them, and
# ->commit_rqs rings for what a stopped batch left in the ring. Everything
# completes, verified, with no timeout (ssdq's counter; for either driver,
# a timeout's warning fails the test through run-guest.sh's dmesg check).
# The polled job stays at 256 KiB and below: on 6.1, --hipri writes of
# 1 MiB from buffers 512 bytes into a page (257 pages: a DIO of two bios)
# at io_queue_depth=2 hang fio with nothing left in the block layer, no
# busy request or tag, with the kernel's nvme as with ssdq (kernels.rst).
# timeout: 600
set -euo pipefail
. "$(dirname "$0")/lib.sh"

((SSDQ_LBS == 512)) || fail "qdepth needs 512-byte LBAs (512 B I/Os), have $SSDQ_LBS"

timeouts() { if [[ $DUT == ssdq ]]; then kv_get "$DBG/recovery" timeouts; else echo 0; fi; }

for depth in 2 4; do
	dut_load io_queue_depth=$depth poll_queues=1
	DBG=/sys/kernel/debug/ssdq/$DISK
	assert_eq "queue/nr_requests at io_queue_depth=$depth" "$(sysq nr_requests)" $((depth - 1))
	t0=$(timeouts)
	run_fio "depth$depth" $((12 * MiB)) $((12 * MiB)) --filename="$DEV" --direct=1 \
		--rw=randwrite --mem_align=512 --verify=crc32c --verify_fatal=1 \
		--do_verify=1 --randrepeat=0 --group_reporting=0 --ioengine=io_uring \
		--iodepth=64 --iodepth_batch_submit=16 --size=4m \
		--name="d$depth" --numjobs=2 --offset="$REG_INTEGRITY_OFF" --offset_increment=8m \
		--bssplit=512/10:4k/30:8k/15:64k/15:128k/10:256k/10:1m/10 \
		--name="d$depth-hipri" --hipri=1 --offset=$((REG_INTEGRITY_OFF + 16 * MiB)) \
		--bssplit=512/10:4k/40:8k/20:64k/20:256k/10
	assert_eq "timeouts at io_queue_depth=$depth" "$(($(timeouts) - t0))" 0
done
