#!/bin/bash
# Host side of the sleep test: what the guest's busybox half printed on the
# console after its three sleeps (94-sleep.sh, sleep-guest.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

con=$SSDQ_OUT/console.log
# The kernel's log from the second half's mark on, timestamps dropped.
dm=$(tr -d '\r' <"$con" | sed -n '/ssdqtest: mark sleep$/,$p' | sed -E 's/^\[ *[0-9.]+\] //')
[[ -n $dm ]] || fail "post: no 'mark sleep' on the console: the second half did not start (logs/at-reboot.log)"
lines=$(grep -a '^ssdq-sleep: ' <<<"$dm" | sed 's/^ssdq-sleep: //') || true
# The kernel's own lines.
kern=$(grep -av '^ssdq-\(sleep\|qmp\): ' <<<"$dm") || true
grep -qx 'done' <<<"$lines" ||
	fail "post: no 'ssdq-sleep: done' on the console: the second half did not finish (console.log, qmp-agent.log)"
ok "the second half ran to its end"
if err=$(grep '^error: ' <<<"$lines"); then
	fail "post: $(head -n1 <<<"$err")"
fi
ok "every round's data read back as written, on both disks"

for how in hibernation deep s2idle; do
	l=$(grep "^$how: " <<<"$lines") || fail "post: no line for the $how sleep"
	[[ $l =~ rc\ ([0-9]+),.*dut\ ([0-9]+)\ ref\ ([0-9]+) ]] || fail "post: unreadable: $l"
	rc=${BASH_REMATCH[1]} dut=${BASH_REMATCH[2]} ref=${BASH_REMATCH[3]}
	assert_eq "$how: the sleep's status" "$rc" 0
	assert_gt "$how: reference rounds after the wake" "$ref" 2
	# Within 30% of nvme's on an identical controller, in the same window.
	assert_gt "$how: DUT rounds after the wake (reference $ref, 70% of it)" \
		"$dut" "$((ref * 7 / 10 - 1))"
done

for how in hibernation deep s2idle; do
	grep -q "ssdqtest: mark sleep-$how" <<<"$dm" || fail "post: the kernel log has no mark for $how"
done
grep -q 'ACPI: PM: Waking up from system sleep state S3' <<<"$kern" ||
	fail "post: the kernel log does not show a wake from S3"
ok "the kernel went through S3"
if bad=$(grep -E "$BAD_ANY" <<<"$kern"); then
	fail "post: kernel report during the sleeps: $(head -n1 <<<"$bad")"
fi
ok "no kernel report"
# ssdq's "timed out"/"resetting", nvme's "I/O tag N (...) QID N timeout".
if bad=$(grep -E 'timed out|timeout|resetting the controller|I/O error' <<<"$kern"); then
	fail "post: $(head -n1 <<<"$bad")"
fi
ok "no timeout, reset or I/O error on either disk"

if [[ $DUT == ssdq ]]; then
	st=$(grep '^stats: ' <<<"$lines") || fail "post: no ssdq counters"
	st_get() { sed -nE "s/.* $1 ([0-9]+).*/\1/p" <<<" ${st#stats: }"; }
	assert_eq "ssdq suspends" "$(st_get suspends)" 3
	assert_eq "ssdq resets" "$(st_get resets)" 0
	assert_eq "ssdq timeouts" "$(st_get timeouts)" 0
fi
qrc=$(cat "$SSDQ_OUT/qemu.rc" 2>/dev/null) || fail "post: no qemu.rc from vm.sh"
assert_eq "QEMU's exit status (0: the guest rebooted)" "$qrc" 0
