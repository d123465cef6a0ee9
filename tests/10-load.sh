#!/bin/bash
# load/unload: the disk appears with the namespace's size and block size,
# one hardware queue per vCPU, rotational/add_random default 0 and writable,
# load-time rotational=1 add_random=1, fewer queues when BAR0 has no room
# for their doorbells, and a clean rmmod.
# timeout: 180
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dut_load
[[ $DUT == ssdq ]] && assert_eq "disk name" "$DISK" ssdq0

# The disk sits on the DUT's PCI function: ssdq's gendisk parent is the PCI
# device itself; nvme has its controller device in between.
dev=$(readlink -f "/sys/block/$DISK/device")
if [[ $DUT == ssdq ]]; then
	assert_eq "/sys/block/$DISK/device" "$dev" "$(readlink -f /sys/bus/pci/devices/$PCI_DUT)"
else
	[[ $dev == */$PCI_DUT/* ]] || fail "$DISK's device $dev not under $PCI_DUT"
	ok "$DISK's device is under $PCI_DUT"
fi

# Capacity = image size (the host passes it in), in 512-byte sectors too.
assert_eq "blockdev --getsize64" "$(blockdev --getsize64 "$DEV")" "$SSDQ_IMG_BYTES"
assert_eq "/sys/block/$DISK/size" "$(cat "/sys/block/$DISK/size")" "$((SSDQ_IMG_BYTES / 512))"
assert_eq "logical_block_size" "$(sysq logical_block_size)" "$SSDQ_LBS"
assert_eq "blockdev --getss" "$(blockdev --getss "$DEV")" "$SSDQ_LBS"
assert_eq "physical_block_size" "$(sysq physical_block_size)" "$SSDQ_LBS"
# QEMU's default MDTS=7 with 4 KiB pages -> 512 KiB.
assert_eq "max_hw_sectors_kb" "$(sysq max_hw_sectors_kb)" 512

# One hw queue per vCPU, and every CPU in exactly one cpu_list.
ncpu=$(nproc --all)
((ncpu >= 2)) || fail "guest has $ncpu CPUs, the VM should have 2"
nq=0
declare -A seen=()
for q in /sys/block/"$DISK"/mq/*/; do
	[[ -r $q/cpu_list ]] || continue
	nq=$((nq + 1))
	for c in $(tr ',' ' ' <"$q/cpu_list"); do
		[[ -z ${seen[$c]:-} ]] || fail "CPU $c is in two cpu_lists (${seen[$c]} and $q)"
		seen[$c]=$q
	done
done
assert_eq "hw queues" "$nq" "$ncpu"
for ((c = 0; c < ncpu; c++)); do
	[[ -n ${seen[$c]:-} ]] || fail "CPU $c is in no hw queue's cpu_list"
done
ok "every CPU in exactly one cpu_list"

# A real read through the queue.
dd if="$DEV" of=/dev/null bs=64k count=16 iflag=direct status=none || fail "read from $DEV failed"
ok "64k x16 O_DIRECT read"

# rotational/add_random: default 0, writable at runtime.
for attr in rotational add_random; do
	assert_eq "$attr default" "$(sysq "$attr")" 0
	echo 1 >"/sys/block/$DISK/queue/$attr"
	assert_eq "$attr after writing 1" "$(sysq "$attr")" 1
	echo 0 >"/sys/block/$DISK/queue/$attr"
	assert_eq "$attr restored" "$(sysq "$attr")" 0
done

if [[ $DUT == ssdq ]]; then
	dut_load rotational=1 add_random=1
	assert_eq "rotational (loaded with rotational=1)" "$(sysq rotational)" 1
	assert_eq "add_random (loaded with add_random=1)" "$(sysq add_random)" 1
else
	log "load-time rotational/add_random: nvme has no such parameters, skipped"
fi

# BAR0 with doorbell room for the admin queue and one I/O queue only (what
# a CAP.DSTRD that spreads the doorbells past its end would leave; QEMU's
# stride is always 4, so a load-time fault): one hardware queue for both
# vCPUs, said once in dmesg, and it works. With room for the admin queue
# alone the probe refuses, in one line.
if [[ $DUT == ssdq ]]; then
	kmsg_mark bar
	dut_load fault_bar0_doorbells=4
	assert_eq "hw queues with doorbell room for one I/O queue" "$(find "/sys/block/$DISK/mq" -mindepth 1 -maxdepth 1 | wc -l)" 1
	dd if="$DEV" of=/dev/null bs=64k count=16 iflag=direct status=none || fail "read with one I/O queue failed"
	ok "64k x16 O_DIRECT read on the one queue"
	assert_eq "dmesg lines naming the cap" "$(dmesg_since bar | grep -c 'BAR0 holds doorbells for 1 I/O queues only$' || true)" 1
	dut_unload
	kmsg_mark bar-none
	allow_dmesg 'no room for I/O queue doorbells'
	dut_try_load fault_bar0_doorbells=2 || fail "insmod fault_bar0_doorbells=2 failed: $(cat "$T_DIR/load.err")"
	assert_absent "/sys/bus/pci/devices/$PCI_DUT/driver"
	[[ -z $(disk_of_pci "$PCI_DUT") ]] || fail "a disk appeared without room for I/O queue doorbells"
	# Warnings or worse (a debug kernel's driver core adds its own
	# debug line about the refusal).
	lines=$(dmesg_raw_since bar-none | grep -E '^<[0-4]>' | grep -F "$PCI_DUT" |
		sed -E 's/^<[0-9]+>(\[ *[0-9.]+\] )?//' || true)
	assert_eq "dmesg lines from the refused probe" "$(grep -c . <<<"$lines" || true)" 1
	grep -q 'BAR0 is 4104 bytes, no room for I/O queue doorbells 4 bytes apart$' <<<"$lines" ||
		fail "the refused probe's line: $lines"
	ok "probe refused: ${lines#*: }"
	rmmod ssdq || fail "rmmod ssdq after the refused probe failed"

	# Every admin command a probe sends failing in turn (Internal Error,
	# DNR: fault_admin_status=N fails the Nth): each probe either unwinds
	# cleanly (unbound, no disk, one line naming the command) or carries on
	# without what failed (shadow doorbells) and works, until N is past
	# the last command the probe sends.
	# The driver core's line: "probe with driver ssdq failed" on 6.12,
	# "ssdq: probe of <bdf> failed" on 6.1.
	allow_dmesg 'failed: NVMe status 0x4006 \(Internal Error, DNR\)|MMIO doorbells only|probe with driver ssdq failed|ssdq: probe of [0-9a-f:.]+ failed'
	for ((n = 1; n <= 64; n++)); do
		kmsg_mark "admin-$n"
		dut_try_load fault_admin_status=$n || fail "insmod fault_admin_status=$n failed: $(cat "$T_DIR/load.err")"
		if [[ -e /sys/bus/pci/devices/$PCI_DUT/driver ]]; then
			dut_wait_disk
			dd if="$DEV" of=/dev/null bs=64k count=4 iflag=direct status=none ||
				fail "a read after the probe's admin command $n failed"
			struck=$(kv_get "/sys/kernel/debug/ssdq/$DISK/fault/injected" failed_probe_admin_commands)
			dut_unload
			((struck)) || break
			ok "probe's admin command $n failed: carried on, and reads work"
		else
			[[ -z $(disk_of_pci "$PCI_DUT") ]] || fail "a disk is left after the probe failed at admin command $n"
			line=$(dmesg_since "admin-$n" | grep -m1 'Internal Error, DNR' || true)
			[[ -n $line ]] || fail "no line names the admin command $n that failed the probe"
			ok "probe's admin command $n failed, the probe unwound: ${line#*: }"
			rmmod ssdq || fail "rmmod ssdq after the probe failed at admin command $n"
		fi
	done
	assert_gt "admin commands in a probe (walked, each failed once)" "$((n - 1))" 4
	dut_load
fi

disk=$DISK
kmsg_mark unload
dut_unload
assert_absent "/dev/$disk"
assert_absent "/sys/block/$disk"
assert_absent "/sys/module/$DUT_MOD"
# run-guest.sh checks the whole test's dmesg; also say it here.
bad=$(dmesg_since unload | grep -E 'WARNING|\<BUG\>|Oops|Call Trace|hung_task' || true)
[[ -z $bad ]] || fail "unload logged: $(head -n1 <<<"$bad")"
ok "unload logged no warning"
