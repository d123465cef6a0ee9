#!/bin/bash
# fake-timeout (debug lane only: needs CONFIG_FAIL_IO_TIMEOUT): the block
# layer's own timeout injection. With /sys/block/DISK/io-timeout-fail set,
# blk_should_fake_timeout() makes the driver drop the next N completions as
# if they never came. Each must be recovered like a lost completion (time
# out, abort, reset, run again): fio verify sees no error, exactly N
# completions were swallowed, and the controller is alive afterwards.
# lanes: debug
# timeout: 600
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

FI=/sys/kernel/debug/fail_io_timeout
[[ -d $FI ]] || fail "$FI missing: the kernel lacks CONFIG_FAIL_IO_TIMEOUT"
N=3
IO_TIMEOUT=1
if [[ $DUT == ssdq ]]; then
	dut_load io_timeout=$IO_TIMEOUT
	allow_dmesg 'resetting the controller|timed out|reset done'
else
	dut_load
	echo $((IO_TIMEOUT * 1000)) >"/sys/block/$DISK/queue/io_timeout"
	allow_dmesg 'timeout, aborting|timeout, reset controller|Abort status|resetting controller'
fi
DBG=/sys/kernel/debug/ssdq/$DISK
rec() { kv_get "$DBG/recovery" "$1"; }

# Every completion on the disk is a candidate until N have been swallowed;
# verbose=1: one notice per injection, no stack dump.
echo 100 >"$FI/probability"
echo 1 >"$FI/interval"
echo 1 >"$FI/verbose"
echo "$N" >"$FI/times"
[[ $DUT == ssdq ]] && r0=$(rec resets) q0=$(rec requeued)
kmsg_mark inject
echo 1 >"/sys/block/$DISK/io-timeout-fail"
run_fio faked $((16 * MiB)) $((16 * MiB)) --name=faked --filename="$DEV" --direct=1 \
	--ioengine=io_uring --rw=randwrite --bssplit=4k/50:16k/25:128k/25 \
	--offset="$REG_INTEGRITY_OFF" --size=$((16 * MiB)) --iodepth=8 \
	--verify=crc32c
echo 0 >"/sys/block/$DISK/io-timeout-fail"

assert_eq "fail_io_timeout injections left" "$(cat "$FI/times")" 0
assert_eq "FAULT_INJECTION notices for fail_io_timeout" \
	"$(dmesg_since inject | grep -c 'name fail_io_timeout')" "$N"
if [[ $DUT == ssdq ]]; then
	assert_gt "resets for swallowed completions" "$(($(rec resets) - r0))" 0
	# Each swallowed request was taken back by a reset and run again.
	r=$(($(rec requeued) - q0))
	((r >= N)) || fail "requests run again: $r, want >= $N"
	ok "requests run again: $r (>= $N)"
	assert_eq "controller alive" "$(rec dead)" 0
fi

# And the disk still works without injection.
run_fio after $((4 * MiB)) $((4 * MiB)) --name=after --filename="$DEV" --direct=1 \
	--ioengine=io_uring --rw=randwrite --bs=4k --offset="$REG_INTEGRITY_OFF" \
	--size=$((4 * MiB)) --iodepth=8 --verify=crc32c
