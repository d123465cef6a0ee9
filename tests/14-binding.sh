#!/bin/bash
# binding: ssdq drives only the controllers it is given. With ssdq loaded
# first, a PCI remove and rescan of the controller nvme drives gives it back
# to nvme; with no nvme loaded, the rescanned controller stays unbound (the
# ssdq before binding by consent matched the NVMe class and took it both
# times). ids= is consent by PCI ID: a load with ids=1b36:0010 takes the
# unbound controller too. A driver_override naming ssdq on a device that is
# not NVM Express fails the bind with one line and binds nothing.
# timeout: 240
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): load and
# unbind run its probe and remove paths there; what it adds is the PCI
# core's matching.
# debug-lane: full
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[[ $DUT == ssdq ]] || skip "ssdq's binding rules; nothing to do for $DUT"

REF_DEV=/sys/bus/pci/devices/$PCI_REF

# Remove the reference controller and rescan the bus. The rescan returns
# once every synchronous probe is done (ssdq's is); nvme probes
# asynchronously, so its binding is waited for.
remove_rescan() {
	echo 1 >"$REF_DEV/remove"
	wait_for 30 "$PCI_REF to go" test ! -e "$REF_DEV"
	echo 1 >/sys/bus/pci/rescan
	wait_for 30 "$PCI_REF to come back" test -e "$REF_DEV"
}

restore() {
	set +e
	module_loaded ssdq && rmmod ssdq
	[[ -e $REF_DEV ]] || echo 1 >/sys/bus/pci/rescan
	set_overrides
	if [[ -z $(bound_driver "$PCI_REF") ]]; then
		modprobe nvme
		echo "$PCI_REF" >/sys/bus/pci/drivers_probe
	fi
}
trap restore EXIT

# ssdq registers before nvme: the old class match was tried first.
module_loaded nvme && { modprobe -r nvme || fail "modprobe -r nvme failed"; }
dut_load
ref_load
assert_eq "$PCI_REF's driver before" "$(bound_driver "$PCI_REF")" nvme

# 1. nvme keeps its controller across a remove and rescan.
remove_rescan
nvme_bound() { [[ $(bound_driver "$PCI_REF") == nvme ]]; }
wait_for 30 "nvme to bind $PCI_REF again" nvme_bound
ref_load
ok "remove/rescan with ssdq loaded: nvme has $PCI_REF again ($REF_DISK)"

# 2. Nothing loaded that may take it: it stays unbound.
modprobe -r nvme || fail "modprobe -r nvme failed"
remove_rescan
assert_eq "$PCI_REF's driver after a rescan with only ssdq loaded" "$(bound_driver "$PCI_REF")" ""
ok "remove/rescan with only ssdq loaded: $PCI_REF unbound"

# 3. ids= is consent: ssdq takes the unbound controller of that ID, and
# its own one through driver_override still.
dut_unload
insmod "$DUT_KO" ids=1b36:0010 || fail "insmod ssdq.ko ids=1b36:0010 failed"
ssdq_bound() { [[ $(bound_driver "$PCI_REF") == ssdq ]]; }
wait_for 60 "ssdq to bind $PCI_REF (ids=)" ssdq_bound
wait_for 60 "a disk under $PCI_REF" disk_of_pci "$PCI_REF" >/dev/null
wait_for 60 "a disk under $PCI_DUT" disk_of_pci "$PCI_DUT" >/dev/null
d=$(disk_of_pci "$PCI_REF")
wait_for 10 "/dev/$d" test -b "/dev/$d"
dd if="/dev/$d" of=/dev/null bs=4k count=16 iflag=direct status=none || fail "reading /dev/$d failed"
ok "ids=1b36:0010: ssdq took unbound $PCI_REF ($d) and $PCI_DUT"
rmmod ssdq || fail "rmmod ssdq failed"
wait_for 30 "ssdq to go" test ! -e /sys/module/ssdq

# 4. A device that is not NVM Express, named by driver_override: one line,
# no bind.
other=
for p in /sys/bus/pci/devices/*; do
	[[ -e $p/driver || $(cat "$p/class") == 0x010802 ]] && continue
	other=${p##*/}
	break
done
[[ -n $other ]] || fail "no unbound non-NVMe PCI device to try"
insmod "$DUT_KO" || fail "insmod ssdq.ko failed"
kmsg_mark wrong-class
set_override "$other" ssdq
if echo "$other" >/sys/bus/pci/drivers/ssdq/bind 2>/dev/null; then
	fail "ssdq bound $other (class $(cat "/sys/bus/pci/devices/$other/class"))"
fi
set_override "$other" ""
assert_eq "$other's driver" "$(bound_driver "$other")" ""
line=$(dmesg_since wrong-class | grep -E "ssdq $other: class [0-9a-f]{6} is not NVM Express" || true)
[[ -n $line ]] || fail "no 'not NVM Express' line for $other: $(dmesg_since wrong-class | tr '\n' '|')"
allow_dmesg "$(re_escape "$line")"
ok "driver_override on $other (not NVMe): bind refused: $line"

# Back to the usual: ssdq on the DUT, nvme on the reference controller.
rmmod ssdq || fail "rmmod ssdq failed"
trap - EXIT
set_overrides
dut_load
ref_load
ok "ssdq on $PCI_DUT, nvme on $PCI_REF ($REF_DISK) again"
