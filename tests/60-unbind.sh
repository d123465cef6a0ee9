#!/bin/bash
# unbind while in use: with fio doing randrw on the disk, unbind the PCI
# device from the driver. No WARNING/BUG/Oops (framework check), the unbind
# returns and fio exits (errors are fine) within timeouts, the disk goes
# away; after rebinding, data written and fsync'd before the load is intact.
# timeout: 420
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dut_load
keep=$(pattern_file keep.bin "$REG_KEEP_LEN")
dev_write "$keep" "$DEV" "$REG_KEEP_OFF" || fail "writing keep data failed"
sync
dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$keep" "keep data before the load"

disk=$DISK
# Expected fallout of yanking a busy disk.
allow_dmesg "I/O error, dev $disk"
allow_dmesg "Buffer I/O error on dev $disk"
allow_dmesg "$disk: detected capacity change"

reads() { local r w; read -r r w < <(disk_stat "$disk" read_ios write_ios); echo $((r + w)); }
r0=$(reads)
fio --output-format=json --output="$T_DIR/fio-unbind.json" --name=unbind \
	--filename="$DEV" --direct=1 --ioengine=io_uring --iodepth=16 --numjobs=2 \
	--rw=randrw --bs=4k --offset="$REG_UNBIND_OFF" --size="$REG_UNBIND_LEN" \
	--time_based --runtime=240 >"$T_DIR/fio-unbind.out" 2>&1 &
fio_pid=$!
busy() { (($(reads) > r0 + 500)); }
wait_for 60 "fio I/O to flow on $disk" busy
ok "fio is doing I/O ($(($(reads) - r0)) I/Os so far)"

t0=$SECONDS
timeout 90 sh -c "echo $PCI_DUT >/sys/bus/pci/drivers/$DUT_DRV/unbind" ||
	fail "unbind failed or hung (status $?)"
ok "unbind returned in $((SECONDS - t0))s"
assert_absent "/sys/bus/pci/drivers/$DUT_DRV/$PCI_DUT"

fio_done() { ! kill -0 "$fio_pid" 2>/dev/null; }
wait_for 90 "fio to exit after unbind" fio_done
frc=0
wait "$fio_pid" || frc=$?
ok "fio exited after unbind (status $frc)"
wait_for 30 "/sys/block/$disk to go" test ! -e "/sys/block/$disk"
assert_absent "/dev/$disk"

echo "$PCI_DUT" >"/sys/bus/pci/drivers/$DUT_DRV/bind" || fail "rebind failed"
dut_wait_disk
ok "rebound: $DEV"
dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$keep" "keep data after unbind+rebind"
# And the device still takes writes.
dd if=/dev/urandom of="$T_DIR/w.bin" bs=64k count=16 status=none
dev_write "$T_DIR/w.bin" "$DEV" "$REG_UNBIND_OFF" || fail "write after rebind failed"
dev_cmp "$DEV" "$REG_UNBIND_OFF" $((1 * MiB)) "$T_DIR/w.bin" "write after rebind"

# 20 cycles, each a module reload or (every other one) an unbind and bind,
# with a write in between; every write reads back at the end. On the debug
# lane, kmemleak's scan after the last test blames a leak per cycle here.
cyc=$(pattern_file cycle.bin $((64 * KiB)))
cycle_off() { echo $((REG_UNBIND_OFF + 2 * MiB + $1 * 64 * KiB)); }
for ((i = 0; i < 20; i++)); do
	if ((i % 2)); then
		echo "$PCI_DUT" >"/sys/bus/pci/drivers/$DUT_DRV/unbind"
		wait_for 30 "/dev/$DISK to go" test ! -e "$DEV"
		echo "$PCI_DUT" >"/sys/bus/pci/drivers/$DUT_DRV/bind"
		dut_wait_disk
	else
		dut_load
	fi
	dev_write "$cyc" "$DEV" "$(cycle_off "$i")" || fail "write in cycle $i failed"
done
ok "20 reload and rebind cycles"
for ((i = 0; i < 20; i++)); do
	dev_cmp "$DEV" "$(cycle_off "$i")" $((64 * KiB)) "$cyc" "cycle $i's write"
done
