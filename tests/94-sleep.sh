#!/bin/bash
# sleep: system sleep with direct I/O running on the DUT and on the
# reference nvme disk side by side (Documentation/recovery.rst, "System
# sleep"): hibernation's freeze and thaw (pm_test=devices: no image is
# written), suspend to RAM (S3: QEMU resets every device on wake) and
# suspend to idle, each real, woken through QMP (scripts/qmp-agent.py).
#
# In two halves, as virtio-9p does not survive a sleep (its driver has no
# PM callbacks: the guest's / and the repo are gone after the first). This
# half loads the drivers and names the second in $SSDQ_OUT/at-reboot;
# run-guest.sh runs that last, so the test ends its boot: one of its own,
# under single-threaded TCG (check.sh's boot "sleep"). Under QEMU 7.2's
# multi-threaded TCG a wake from S3 came back with EFLAGS garbled (TF set
# in the kernel: "WARNING ... exc_debug_kernel", then a hang), in 5 of 7
# boots, with nvme alone too; single-threaded, in none of 4. It copies busybox
# and the patterns to tmpfs and hands over to a busybox script that runs
# one write/read-back/compare loop per disk, sleeps three ways, reports on
# the serial console and reboots. The host judges (94-sleep.post.sh): every
# sleep returned, I/O ran again after each wake and the DUT did at least
# 70% of the reference's rounds, data intact, no timeout or kernel report,
# and ssdq's counters: three suspends, no reset, no timeout. (The ssdq
# without PM callbacks: after S3 its controller is reset and nothing
# notices until the I/O times out, 30 s.)
# Both lanes (the debug kernel has CONFIG_SUSPEND, CONFIG_HIBERNATION and
# CONFIG_PM_DEBUG since 2026-12-06: scripts/debug-kernel.config).
# boot: sleep
# timeout: 120
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Each round: 1 MiB written, read back and compared, at these offsets.
SLEEP_OFF=$REG_INTEGRITY_OFF
SB=/dev/shm/ssdq-sleep

at_reboot() {
	dut_load
	ref_load
	# Wake events: the power button wakes suspend to idle (acpi's button
	# driver enables its event); no sync on suspend, which would go to 9p.
	modprobe button
	echo 0 >/sys/power/sync_on_suspend
	rm -rf "$SB"
	mkdir -p "$SB/bin"
	cp "$(command -v busybox)" "$SB/busybox"
	"$SB/busybox" --install -s "$SB/bin"
	cp "$(pattern_file sleep-a.bin "$MiB")" "$SB/pat0"
	cp "$(pattern_file sleep-b.bin "$MiB")" "$SB/pat1"
	cp "$(dirname "$0")/sleep-guest.sh" "$SB/sleep.sh"
	local stats=
	[[ $DUT == ssdq ]] && stats=/sys/kernel/debug/ssdq/$DISK/recovery
	# Rounds are counted over this long after each wake.
	local window=10
	# Every kernel message to the console, where the host judges them,
	# and no rate limit on the second half's own.
	dmesg -n 8
	echo on >/proc/sys/kernel/printk_devkmsg
	# ... as they are printed, during the sleeps too (no_console_suspend):
	# a resume that hangs shows where.
	echo N >/sys/module/printk/parameters/console_suspend
	kmsg_mark sleep
	echo "at-reboot: $DISK and $REF_DISK, handing over to $SB/sleep.sh"
	# stdout goes to 9p (logs/at-reboot.log) until here.
	# run-guest.sh's status, which it cannot write to 9p after the sleeps:
	# the tests that failed (every other one ran before this).
	local nfail
	nfail=$(grep -c '^FAIL' "$SSDQ_OUT/results.txt" || true)
	exec "$SB/busybox" sh "$SB/sleep.sh" "$SB" "$DEV" "/dev/$REF_DISK" \
		"$SLEEP_OFF" "${stats:-none}" "$window" "$((nfail > 100 ? 100 : nfail))" \
		</dev/null >"$SB/out.log" 2>&1
}

if [[ ${1:-} == at-reboot ]]; then
	at_reboot
	exit 1
fi

for f in /sys/power/state /sys/power/mem_sleep /sys/power/pm_test; do
	assert_present "$f"
done
for s in freeze mem disk; do
	grep -qw "$s" /sys/power/state || fail "/sys/power/state has no '$s': $(cat /sys/power/state)"
done
grep -qw deep /sys/power/mem_sleep || fail "no S3 (deep) in /sys/power/mem_sleep: $(cat /sys/power/mem_sleep)"
ok "the VM offers freeze, S3 and hibernation"
command -v busybox >/dev/null || fail "no busybox on the host (busybox-static)"
dut_load
if [[ $DUT == ssdq ]]; then
	assert_eq "suspends before any sleep" \
		"$(kv_get "/sys/kernel/debug/ssdq/$DISK/recovery" suspends)" 0
fi
realpath "$0" >"$SSDQ_OUT/at-reboot"
log "second half armed: $(cat "$SSDQ_OUT/at-reboot") at-reboot, after the last test"
