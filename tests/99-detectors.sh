#!/bin/bash
# detectors (debug lane only, runs last): the debug kernel's checkers are
# on, and a report from each one really fails a test. Kernel test modules
# break a rule on purpose: an out-of-bounds access (KASAN), undefined
# behaviour (UBSAN), a task stuck in D state (hung-task detector), leaked
# memory (kmemleak). The framework's own filters (lib.sh: dmesg_filter_bad,
# kmemleak_scan), the ones run-guest.sh applies after every test, must flag
# each. The flagged lines are then declared expected, so only this test may
# cause them. Last, because a KASAN report turns lockdep off for the rest
# of the boot (it taints the kernel LOCKDEP_NOW_UNRELIABLE); that lockdep is
# still on when this test starts proves no earlier test tripped it.
# lanes: debug
# timeout: 300
set -euo pipefail
. "$(dirname "$0")/lib.sh"

have_kmemleak || fail "not the debug kernel: $KMEMLEAK missing"
ok "kmemleak is on"
assert_eq "lockdep still validating after the suite (/proc/lockdep_stats debug_locks)" "$(lockdep_on)" 1
assert_present /sys/kernel/debug/fail_io_timeout
kasan=$(dmesg | grep -m1 -E 'KernelAddressSanitizer initialized' || true)
[[ -n $kasan ]] || fail "no 'KernelAddressSanitizer initialized' in the boot log"
ok "KASAN: $kasan"

# The lines since mark TAG that the framework would fail a test for must
# include one matching PATTERN. Then they are allowed for this test.
expect_flagged() { # tag what pattern
	local bad line
	bad=$(dmesg_raw_since "$1" | dmesg_filter_bad /dev/null)
	grep -Eq "$3" <<<"$bad" ||
		fail "$2: not flagged; dmesg since: $(dmesg_since "$1" | head -n 5 | tr '\n' '|')"
	ok "$2 flagged: $(grep -Em1 "$3" <<<"$bad")"
	while IFS= read -r line; do
		[[ -n $line ]] && allow_dmesg "^$(re_escape "$line")\$"
	done <<<"$bad"
}

# KASAN: copy_to/from_user out of bounds of a kmalloc'ed buffer. The
# module's init fails on purpose (-EAGAIN), so it never stays loaded.
kmsg_mark kasan
expect_lockdep_off
modprobe kasan_test_module 2>/dev/null && fail "kasan_test_module stayed loaded"
expect_flagged kasan "KASAN out-of-bounds" '^BUG: KASAN: '

# UBSAN: shifts out of range, array index out of bounds, bad bool/enum loads.
kmsg_mark ubsan
modprobe test_ubsan || fail "modprobe test_ubsan failed"
rmmod test_ubsan
expect_flagged ubsan "UBSAN report" '^UBSAN: '

# Hung task: modprobe sleeps 8 s uninterruptibly in test_lockup's init; with
# a 2 s threshold the detector must report it (its scans are 2 s apart).
hung=/proc/sys/kernel/hung_task_timeout_secs
old_hung=$(cat "$hung")
kmsg_mark hung
echo 2 >"$hung"
modprobe test_lockup time_secs=8 state=D 2>/dev/null && fail "test_lockup stayed loaded"
echo "$old_hung" >"$hung"
expect_flagged hung "hung task" 'blocked for more than 2 seconds'

# kmemleak: kmemleak-test's init leaks on purpose; scans must report
# objects allocated by it (while it is still loaded, so the backtraces
# name it). The suite's final scan may find more of them: they are this
# test's, and expected.
kmsg_mark kmemleak
expect_leaks
modprobe kmemleak-test || fail "modprobe kmemleak-test failed"
leaks=$T_DIR/kmemleak-test.txt
: >"$leaks"
test_leaks() { grep -c 'kmemleak_test_init' "$leaks" || true; }
found_leaks() {
	kmemleak_scan >>"$leaks"
	(($(test_leaks) > 0))
}
# kmemleak ignores objects younger than KMEMLEAK_MIN_AGE: a fixed age in the
# kernel, not a condition to poll (each scan walks all memory).
sleep $((KMEMLEAK_MIN_AGE + 1))
wait_for 120 "kmemleak to report kmemleak-test's leaks" found_leaks
assert_gt "leaked objects allocated in kmemleak_test_init" "$(test_leaks)" 0
rmmod kmemleak_test
expect_flagged kmemleak "kmemleak's dmesg line" 'new suspected memory leaks'

