#!/bin/bash
# Host side of the shutdown test: what the console and QEMU saw as the VM
# rebooted with the disk bound and a writer running (97-shutdown.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

con=$SSDQ_OUT/console.log
after=$(awk '/ssdqtest: mark at-reboot/ { f = 1; next } f' "$con" | tr -d '\r')
[[ -n $after ]] ||
	fail "post: no 'mark at-reboot' on the console: the second half did not run (logs/at-reboot.log)"

if [[ $DUT == ssdq ]]; then
	grep -Eq "ssdq [0-9a-f:.]+: shut down in [0-9]+ ms" <<<"$after" ||
		fail "post: no 'shut down in N ms' from ssdq after the mark"
	ok "ssdq: $(grep -Eo 'shut down in [0-9]+ ms' <<<"$after" | head -n1)"
fi
if bad=$(grep -E "$BAD_ANY" <<<"$after"); then
	fail "post: kernel report during the shutdown: $(head -n1 <<<"$bad")"
fi
ok "no kernel report during the shutdown"

# The reboot reached the machine: QEMU runs with -no-reboot, so it exits
# with status 0 when the guest resets, and 124 when vm.sh's timeout killed
# a guest that hung in ->shutdown. The console's own 'Restarting system'
# is printed as the other CPU is stopped: with the writer's I/O errors
# still being printed there, the line can be left in the log buffer.
qrc=$(cat "$SSDQ_OUT/qemu.rc" 2>/dev/null) || fail "post: no qemu.rc from vm.sh"
[[ $qrc == 0 ]] ||
	fail "post: QEMU exited with status $qrc, not by the guest's reset (124: the shutdown hung until the timeout)"
ok "QEMU exited when the guest reset"
if grep -q 'reboot: Restarting system' <<<"$after"; then
	ok "the console shows 'reboot: Restarting system' after ->shutdown"
else
	log "the console missed 'reboot: Restarting system' (left in the log buffer as the CPUs stopped); QEMU saw the reset"
fi

# QEMU counts from the device's side. The last CC.SHN is the reboot's (the
# reference controller is unbound by then); no SQ doorbell may follow it.
tr=$SSDQ_OUT/qemu-trace.log
grep -q pci_nvme_mmio_shutdown_set "$tr" ||
	fail "post: QEMU's trace has no pci_nvme_mmio_shutdown_set (traced events: ${SSDQ_TRACE_EVENTS:-default})"
n=$(awk '/pci_nvme_mmio_shutdown_set/ { n = 0; next } /pci_nvme_mmio_doorbell_sq/ { n++ } END { print n + 0 }' "$tr")
assert_eq "SQ doorbell writes after the controller's last CC.SHN" "$n" 0

# The controller stops before anything is failed (nvme's order too): its
# I/O queues are deleted before CC.SHN (since the shutdown before it, a
# teardown's), and its bus mastering goes after it (a write of the PCI
# command register of 00:04.0 with bit 2 clear), as CC.SHN alone leaves
# the controller running.
read -r dels < <(awk '/pci_nvme_mmio_shutdown_set/ { dels = n; n = 0; next }
	/pci_nvme_del_sq/ { n++ } END { print dels + 0 }' "$tr")
assert_gt "I/O SQs deleted before the last CC.SHN" "$dels" 0
# The command register values written to 00:04.0 after it.
mapfile -t local_cmds < <(awk '/pci_nvme_mmio_shutdown_set/ { n = 0; delete v; next }
	/pci_cfg_write / && / 00:04\.0 @0x4 <- / { v[++n] = $NF }
	END { for (i = 1; i <= n; i++) print v[i] }' "$tr")
master_off=0
for c in "${local_cmds[@]}"; do
	((c & 4)) || master_off=1
done
assert_eq "a write clearing bus mastering after the last CC.SHN (${local_cmds[*]:-none})" "$master_off" 1

img=$SSDQ_OUT/ssdq0.img
pat=$(pattern_file shutdown.bin "$REG_SHUTDOWN_LEN")
out=$(cmp -n "$REG_SHUTDOWN_LEN" -i "$REG_SHUTDOWN_OFF:0" "$img" "$pat" 2>&1) ||
	fail "post: image differs from the pattern written before the reboot: $out"
ok "image holds the pattern written just before the reboot"
