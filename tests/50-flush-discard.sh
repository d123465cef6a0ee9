#!/bin/bash
# flush/FUA/discard/write zeroes:
#  - the queue advertises a volatile write cache and FUA,
#  - fio with fsync=1 (flushes) and sync=1 (O_SYNC -> FUA writes) works and
#    the data verifies,
#  - blkdiscard on a range succeeds (reads zeroes if the device model says
#    deallocated blocks read as zeroes),
#  - blkdiscard -z zeroes exactly its range: it reads back zero, the
#    neighbours keep the pattern (host post-check: same in the image),
#  - a discard longer than DMRSL (the most blocks one Dataset Management
#    range may name; QEMU skips a longer range and still reports success)
#    is split at DMRSL: everything it covered reads back zero.
# timeout: 600
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dut_load
assert_eq "write_cache" "$(sysq write_cache)" "write back"
assert_eq "fua" "$(sysq fua)" 1
assert_gt "discard_max_bytes" "$(sysq discard_max_bytes)" 0
assert_gt "write_zeroes_max_bytes" "$(sysq write_zeroes_max_bytes)" 0
if [[ $DUT == ssdq ]]; then
	# A Write Zeroes covers at most 65536 blocks (NLB is 16 bits), and at
	# most WZSL (2^WZSL pages of 4 KiB on QEMU) when the device sets it.
	wzsl=$(device_id wzsl nvm-id-ctrl) || fail "could not read WZSL from the device model"
	lbs=$(sysq logical_block_size)
	want=$((65536 * lbs))
	((wzsl == 0 || (4096 << wzsl) >= want)) || want=$((4096 << wzsl))
	log "device model WZSL=$wzsl"
	assert_eq "write_zeroes_max_bytes (NLB, WZSL)" "$(sysq write_zeroes_max_bytes)" "$want"
fi

# Device-side counts from QEMU's trace (check.sh enables pci_nvme_flush_ns
# and pci_nvme_dsm). The events don't name the controller; the reference
# controller is idle here (no driver bound between tests).
trace_count() { # event
	grep -c "^$1 " "$SSDQ_QEMU_TRACE" || true
}
have_trace=0
if [[ -n ${SSDQ_QEMU_TRACE:-} && -r $SSDQ_QEMU_TRACE ]] &&
	[[ ,${SSDQ_TRACE_EVENTS:-}, == *,pci_nvme_flush_ns,* && ,${SSDQ_TRACE_EVENTS:-}, == *,pci_nvme_dsm,* ]]; then
	have_trace=1
else
	log "no QEMU trace of pci_nvme_flush_ns,pci_nvme_dsm: device-side counts skipped"
fi

half=$((REG_FLUSH_LEN / 2))
common=(--filename="$DEV" --direct=1 --rw=randwrite --bssplit=4k/50:16k/30:128k/20
	--verify=crc32c --verify_fatal=1 --randrepeat=0 --ioengine=psync --numjobs=1)
((have_trace)) && f0=$(trace_count pci_nvme_flush_ns)
run_fio fsync $((8 * MiB)) $((8 * MiB)) "${common[@]}" --name=fsync --fsync=1 \
	--size=8m --offset="$REG_FLUSH_OFF"
if ((have_trace)); then
	# Every fsync of the block device must reach the device as a Flush.
	nsync=$(jq '[.jobs[].sync.total_ios] | add' "$T_DIR/fio-fsync.json.clean")
	nflush=$(($(trace_count pci_nvme_flush_ns) - f0))
	log "fsync job: $nsync fsyncs, device saw $nflush Flush commands"
	((nsync > 0)) || fail "fio fsync job issued no fsync"
	((nflush >= nsync)) || fail "device saw $nflush Flush commands for $nsync fsyncs"
	ok "device saw $nflush Flush commands for $nsync fsyncs"
fi
run_fio osync-fua $((8 * MiB)) $((8 * MiB)) "${common[@]}" --name=osync --sync=1 \
	--size=8m --offset=$((REG_FLUSH_OFF + half))
# Also async FUA writes at depth. Async O_DIRECT|O_SYNC block-device
# writes rely on REQ_FUA alone (no fsync afterwards); if the queue lacked
# FUA the block layer would emulate it with a Flush after each write.
((have_trace)) && f0=$(trace_count pci_nvme_flush_ns)
run_fio osync-uring $((8 * MiB)) $((8 * MiB)) "${common[@]}" --name=osync-uring --sync=1 \
	--ioengine=io_uring --iodepth=16 --size=8m --offset=$((REG_FLUSH_OFF + half + 16 * MiB))

if ((have_trace)); then
	nw=$(jq '[.jobs[].write.total_ios] | add' "$T_DIR/fio-osync-uring.json.clean")
	nflush=$(($(trace_count pci_nvme_flush_ns) - f0))
	log "O_SYNC io_uring job: $nw writes, device saw $nflush Flush commands"
	((nflush * 4 < nw)) || fail "$nflush Flush commands for $nw O_SYNC writes: FUA emulated by flushes?"
	ok "O_SYNC writes went as FUA ($nflush Flush commands for $nw writes)"
fi

# Pattern over the whole discard region, then discard its first 8 MiB.
pat=$(pattern_file discard-pattern.bin "$REG_DISCARD_LEN")
dev_write "$pat" "$DEV" "$REG_DISCARD_OFF" || fail "writing the pattern failed"
dev_cmp "$DEV" "$REG_DISCARD_OFF" "$REG_DISCARD_LEN" "$pat" "pattern before discard"

((have_trace)) && d0=$(trace_count pci_nvme_dsm)
blkdiscard -o "$REG_DISCARD_OFF" -l $((8 * MiB)) "$DEV" || fail "blkdiscard failed"
ok "blkdiscard of 8 MiB succeeded"
if ((have_trace)); then
	nd=$(($(trace_count pci_nvme_dsm) - d0))
	assert_gt "Dataset Management commands seen by the device" "$nd" 0
fi
dlfeat=$(device_dlfeat) || fail "could not read DLFEAT from the device model"
log "device model DLFEAT=$dlfeat"
if (((dlfeat & 7) == 1)); then
	dev_cmp "$DEV" "$REG_DISCARD_OFF" $((8 * MiB)) /dev/zero "discarded range (DLFEAT says zeroes)"
else
	log "DLFEAT does not promise zeroes: not checking discarded contents"
fi
# Data after the discarded range is untouched.
dev_cmp "$DEV" $((REG_DISCARD_OFF + 8 * MiB)) $((12 * MiB)) <(tail -c +$((8 * MiB + 1)) "$pat") \
	"data after the discarded range"

# Write zeroes on a range that holds the pattern; check both neighbours.
zoff=$((REG_ZERO_OFF - REG_DISCARD_OFF))
blkdiscard -z -o "$REG_ZERO_OFF" -l "$REG_ZERO_LEN" "$DEV" || fail "blkdiscard -z failed"
ok "blkdiscard -z of $REG_ZERO_LEN bytes succeeded"
dev_cmp "$DEV" "$REG_ZERO_OFF" "$REG_ZERO_LEN" /dev/zero "write-zeroed range"
dev_cmp "$DEV" $((REG_ZERO_OFF - MiB)) "$MiB" <(tail -c +$((zoff - MiB + 1)) "$pat") \
	"1 MiB before the zeroed range"
after=$((zoff + REG_ZERO_LEN))
dev_cmp "$DEV" $((REG_DISCARD_OFF + after)) $((REG_DISCARD_LEN - after)) \
	<(tail -c +$((after + 1)) "$pat") "rest of the region after the zeroed range"

# A discard longer than DMRSL, over the rest of the disk past the layout.
dmrsl=$(device_dmrsl) || fail "could not read DMRSL from the device model"
lbs=$(sysq logical_block_size)
size=$(blockdev --getsize64 "$DEV")
big_len=$((size - REG_BIGDISCARD_OFF))
max_bytes=$((dmrsl * lbs))
log "device model DMRSL=$dmrsl blocks ($max_bytes bytes); discard of $big_len bytes"
((dmrsl > 0)) || fail "the device model reports no DMRSL: nothing to test"
((big_len > max_bytes)) || fail "disk too small: $big_len bytes past the layout, DMRSL is $max_bytes"
dmax=$(sysq discard_max_hw_bytes)
((dmax > 0 && dmax <= max_bytes)) || fail "discard_max_hw_bytes $dmax, DMRSL allows $max_bytes"
ok "discard_max_hw_bytes $dmax <= DMRSL ($max_bytes)"
mark=$(pattern_file bigdiscard.bin "$MiB")
spots=("$REG_BIGDISCARD_OFF" $((REG_BIGDISCARD_OFF + max_bytes - 512 * KiB))
	$((REG_BIGDISCARD_OFF + max_bytes + 4 * KiB)) $((size - MiB)))
for o in "${spots[@]}"; do
	dev_write "$mark" "$DEV" "$o" || fail "writing 1 MiB at $o failed"
	dev_cmp "$DEV" "$o" "$MiB" "$mark" "pattern at $o before the long discard"
done
blkdiscard -o "$REG_BIGDISCARD_OFF" -l "$big_len" "$DEV" || fail "blkdiscard of $big_len bytes failed"
ok "blkdiscard of $big_len bytes succeeded"
if (((dlfeat & 7) == 1)); then
	for o in "${spots[@]}"; do
		dev_cmp "$DEV" "$o" "$MiB" /dev/zero "1 MiB at $o after the long discard"
	done
else
	fail "DLFEAT=$dlfeat does not promise zeroes: the long discard cannot be checked"
fi
