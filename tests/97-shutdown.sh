#!/bin/bash
# shutdown: the driver's ->shutdown, when the VM reboots with the disk bound
# and I/O running (Documentation/recovery.rst, "System shutdown"). In two
# halves. This one writes a pattern, reads it back, and names the second
# half in $SSDQ_OUT/at-reboot. run-guest.sh runs that last, after every
# other test: load the driver, write a fresh pattern, start a writer, let
# the console print info lines, mark the log, return. guest-init's
# `reboot -f` then calls ->shutdown with the writer's requests in flight.
# The host judges (97-shutdown.post.sh): the driver's "shut down in N ms",
# the kernel's "Restarting system" after it, no kernel report, no SQ
# doorbell write after the controller's last CC.SHN (QEMU's trace), and the
# fresh pattern in the image.
# timeout: 120
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

writes() { awk '{ print $5 }' "/sys/block/$DISK/stat"; }

at_reboot() {
	dmesg -n 7 # ->shutdown's info line to the serial console
	dut_load
	dev_write "$(pattern_file shutdown.bin "$REG_SHUTDOWN_LEN")" "$DEV" "$REG_SHUTDOWN_OFF"
	local w0
	w0=$(writes)
	fio --name=at-reboot --filename="$DEV" --direct=1 --ioengine=io_uring \
		--rw=randwrite --bs=4k --offset="$REG_SHUTDOWN_IO_OFF" \
		--size="$REG_SHUTDOWN_IO_LEN" --iodepth=16 --time_based --runtime=300 \
		--output=/dev/null >/dev/null 2>&1 &
	wait_until 60 eval '(($(writes) > w0 + 200))' || echo "at-reboot: the writer did not start"
	kmsg_mark at-reboot
	echo "at-reboot: $DISK bound, $(($(writes) - w0)) writes done, rebooting"
}

if [[ ${1:-} == at-reboot ]]; then
	at_reboot
	exit 0
fi

dut_load
first=$(pattern_file shutdown-first.bin "$REG_SHUTDOWN_LEN")
dev_write "$first" "$DEV" "$REG_SHUTDOWN_OFF"
dev_cmp "$DEV" "$REG_SHUTDOWN_OFF" "$REG_SHUTDOWN_LEN" "$first" "pattern before the reboot"
realpath "$0" >"$SSDQ_OUT/at-reboot"
log "second half armed: $(cat "$SSDQ_OUT/at-reboot") at-reboot, after the last test"
