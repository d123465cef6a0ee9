#!/bin/bash
# passthru: nvme's passthrough ioctls on ssdq's disk (Documentation/abi.rst,
# "ioctls"), side by side with the reference nvme disk:
#  - nvme-cli: read and write (NVME_IOCTL_SUBMIT_IO), io-passthru
#    (NVME_IOCTL_IO_CMD) and flush, their data checked byte for byte
#    against what dd wrote and reads;
#  - who may send what: as nobody, through a read-only and a read-write
#    open, every case of tests/nvme-ioctl.py gives ssdq the same outcome
#    (EACCES, or the same NVMe status) as nvme; as root too;
#  - bad input: another namespace's nsid, metadata, 4 MiB of admin data, a
#    Get Log Page of 8 KiB into 4 KiB (ssdq only: the controller would write
#    past the buffer) and an admin command ssdq owns get EINVAL and one line
#    each;
#  - a passthrough read whose completion is lost (fault/drop_completions)
#    times out after its own timeout_ms, the reset takes it back and it
#    ends with EINTR, as under nvme (passthrough is not retried), and the
#    disk reads back what was written.
# timeout: 300
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): 92-chardev
# takes the same ioctl code there (through the generic device, as nobody
# and as root, bad input), and passthrough through a reset and a give-up.
# debug-lane: full
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || skip "compares ssdq's passthrough with nvme's; nothing to do for $DUT"
command -v nvme >/dev/null || fail "nvme-cli missing (make deps)"
dut_load
ref_load
DBG=/sys/kernel/debug/ssdq/$DISK
REF=/dev/$REF_DISK
IOCTL="python3 $(dirname "$0")/nvme-ioctl.py"
OFF=$((REG_INTEGRITY_OFF + 80 * MiB)) # 1 MiB of the integrity region's
lbs=$(sysq logical_block_size)
slba=$((OFF / lbs))
nlb0=$((65536 / lbs - 1)) # 64 KiB, 0-based

# ---- nvme-cli: read, write, io-passthru, flush
pat=$(pattern_file passthru $MiB)
dd if="$pat" of="$DEV" bs=64k count=1 seek="$OFF" oflag=direct,seek_bytes conv=notrunc status=none
nvme read "$DEV" --start-block="$slba" --block-count="$nlb0" --data-size=65536 \
	--data="$T_DIR/read.bin" >"$T_DIR/read.out" 2>&1 || fail "nvme read: $(cat "$T_DIR/read.out")"
cmp -n 65536 "$T_DIR/read.bin" "$pat" || fail "nvme read: data differs from what dd wrote"
ok "nvme read: 64 KiB as dd wrote them"
tail -c 65536 "$pat" >"$T_DIR/w.bin"
nvme write "$DEV" --start-block=$((slba + 65536 / lbs)) --block-count="$nlb0" --data-size=65536 \
	--data="$T_DIR/w.bin" >"$T_DIR/write.out" 2>&1 || fail "nvme write: $(cat "$T_DIR/write.out")"
dev_cmp "$DEV" $((OFF + 65536)) 65536 "$T_DIR/w.bin" "nvme write, read back by dd"
nvme io-passthru "$DEV" --opcode=2 --namespace-id="$(cat "/sys/block/$DISK/nsid")" \
	--data-len=4096 --read --cdw10="$slba" --cdw12=$((4096 / lbs - 1)) --raw-binary \
	>"$T_DIR/pt.bin" 2>"$T_DIR/pt.err" || fail "nvme io-passthru: $(cat "$T_DIR/pt.err")"
cmp -n 4096 "$T_DIR/pt.bin" "$pat" || fail "nvme io-passthru: data differs"
ok "nvme io-passthru read: 4 KiB as dd wrote them"
nvme flush "$DEV" >"$T_DIR/flush.out" 2>&1 || fail "nvme flush: $(cat "$T_DIR/flush.out")"
ok "nvme flush"

# ---- who may send what, side by side with nvme
# Their writes (zeroes) and deallocations go 512 KiB further.
CASES="id identify-ctrl smart-log read write dsm flush vendor big-admin"
io_slba=$(((OFF + 512 * KiB) / lbs))
ref_slba=$(((OFF + 512 * KiB) / $(cat "/sys/block/$REF_DISK/queue/logical_block_size")))
perms=$(stat -c %a "$DEV")
ref_perms=$(stat -c %a "$REF")
chmod 0666 "$DEV" "$REF"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
for m in r rw; do
	as_nobody $IOCTL "$DEV" "$m" "$io_slba" $CASES >"$T_DIR/ssdq-$m.txt" 2>&1
	as_nobody $IOCTL "$REF" "$m" "$ref_slba" $CASES >"$T_DIR/nvme-$m.txt" 2>&1
	diff "$T_DIR/nvme-$m.txt" "$T_DIR/ssdq-$m.txt" >"$T_DIR/diff-$m.txt" ||
		fail "unprivileged, open $m: ssdq differs from nvme: $(tr '\n' ' ' <"$T_DIR/diff-$m.txt")"
	ok "unprivileged, open $m, as nvme: $(tr '\n' ',' <"$T_DIR/ssdq-$m.txt")"
done
chmod "$perms" "$DEV"
chmod "$ref_perms" "$REF"
# nvme's rule since 6.2 (Identify and reads for anyone, writes through a
# writable open); before, nothing but NVME_IOCTL_ID without CAP_SYS_ADMIN.
if grep -q '^read ok' "$T_DIR/nvme-r.txt"; then
	grep -q '^smart-log errno EACCES$' "$T_DIR/ssdq-r.txt" || fail "an unprivileged SMART log read was not refused"
	grep -q '^write errno EACCES$' "$T_DIR/ssdq-r.txt" || fail "an unprivileged write through a read-only open was not refused"
	grep -q '^write ok 0x0' "$T_DIR/ssdq-rw.txt" || fail "an unprivileged write through a read-write open failed"
else
	assert_eq "unprivileged passthrough refused (this kernel's nvme refuses it all)" \
		"$(grep -v '^id ' "$T_DIR/ssdq-rw.txt" | grep -vc 'errno EACCES$' || true)" 0
fi
$IOCTL "$DEV" r "$io_slba" $CASES >"$T_DIR/ssdq-root.txt" 2>&1
$IOCTL "$REF" r "$ref_slba" $CASES >"$T_DIR/nvme-root.txt" 2>&1
diff "$T_DIR/nvme-root.txt" "$T_DIR/ssdq-root.txt" >"$T_DIR/diff-root.txt" ||
	fail "root: ssdq differs from nvme: $(tr '\n' ' ' <"$T_DIR/diff-root.txt")"
ok "root, as nvme: $(tr '\n' ',' <"$T_DIR/ssdq-root.txt")"

# ---- bad input: EINVAL and one line each
allow_dmesg 'passthrough: nsid [0-9]+ is not the device|passthrough: namespace [0-9]+ keeps no metadata apart|passthrough: data_len 4194304, at most [0-9]+|admin passthrough: opcode 0x5 is ssdq.s own|admin passthrough: Get Log Page of 8192 bytes, buffer of 4096'
kmsg_mark bad
$IOCTL "$DEV" rw "$io_slba" other-nsid metadata huge-admin big-log owned-admin >"$T_DIR/bad.txt" 2>&1
assert_eq "bad input's errnos" "$(awk '{ print $3 }' "$T_DIR/bad.txt" | tr '\n' ' ')" "EINVAL EINVAL EINVAL EINVAL EINVAL "
assert_eq "bad input's lines" "$(dmesg_since bad | grep -c 'passthrough: ' || true)" 5

# ---- a lost completion: the passthrough read times out, the reset ends it
allow_dmesg 'resetting the controller|timed out|completed without an interrupt|not in flight, ignored|reset done'
resets=$(kv_get "$DBG/recovery" resets)
echo 1 >"$DBG/fault/drop_completions"
rc=0
nvme io-passthru "$DEV" --opcode=2 --namespace-id="$(cat "/sys/block/$DISK/nsid")" \
	--data-len=4096 --read --cdw10="$slba" --cdw12=$((4096 / lbs - 1)) --raw-binary \
	--timeout=2000 >"$T_DIR/lost.bin" 2>"$T_DIR/lost.err" || rc=$?
((rc != 0)) || fail "the passthrough read whose completion was lost succeeded"
grep -q 'Interrupted system call' "$T_DIR/lost.err" ||
	fail "the lost read did not end with EINTR (cancelled by the reset): $(cat "$T_DIR/lost.err")"
ok "the lost passthrough read ended: $(head -n 1 "$T_DIR/lost.err")"
assert_eq "resets for the lost read" "$(kv_get "$DBG/recovery" resets)" $((resets + 1))
assert_eq "completions dropped" "$(kv_get "$DBG/fault/injected" dropped_completions)" 1
dev_cmp "$DEV" "$OFF" 65536 "$pat" "after the reset"
