#!/bin/sh
# shellcheck shell=dash
# The second half of 94-sleep, run by busybox from tmpfs: nothing from
# 9p is used from here on (the first sleep stops it for good). Reports
# through the kernel's log, which goes to the serial console as printed:
# lines "ssdq-sleep: ...", which 94-sleep.post.sh reads with the kernel's
# own; asks the host for wake-ups with "ssdq-qmp: ..." lines
# (scripts/qmp-agent.py). Not through the console's tty: after S3 (QEMU
# resets the UART) a write to it can wait forever. Ends the VM with
# sysrq's reset.
#
#   sleep.sh DIR DUT_DEV REF_DEV OFFSET STATS|none WINDOW_SECS STATUS
# STATUS: the test run's exit status, for vm.sh (its file is on 9p).
SB=$1 DUT_DEV=$2 REF_DEV=$3 OFF=$4 STATS=$5 WINDOW=$6 STATUS=$7
export PATH=$SB/bin

say() { echo "<2>ssdq-sleep: $*" >/dev/kmsg; }
qmp() { echo "<2>ssdq-qmp: $1" >/dev/kmsg; }
now() { cut -d' ' -f1 /proc/uptime; }
rounds() { cat "$SB/$1.n" 2>/dev/null || echo 0; }

# One write, read-back and compare after another, two patterns in turn, so
# a write that did not reach the disk reads back as the other pattern.
io_loop() { # tag dev
	n=0
	while [ ! -e "$SB/stop" ]; do
		p=$SB/pat$((n % 2))
		if ! dd if="$p" of="$2" bs=1M count=1 seek="$OFF" \
			oflag=direct,seek_bytes conv=notrunc 2>/dev/null ||
			! dd if="$2" of="$SB/rb.$1" bs=1M count=1 skip="$OFF" \
				iflag=direct,skip_bytes 2>/dev/null; then
			say "error: $1: I/O failed in round $n"
		elif ! cmp -s "$p" "$SB/rb.$1"; then
			say "error: $1: round $n read back other data"
		fi
		n=$((n + 1))
		echo "$n" >"$SB/$1.n.tmp"
		mv "$SB/$1.n.tmp" "$SB/$1.n"
	done
}

# Wait up to $1 s for both loops to do $2 more rounds.
both_run() { # secs rounds
	d0=$(rounds dut) r0=$(rounds ref) t=0
	while [ $(($(rounds dut) - d0)) -lt "$2" ] || [ $(($(rounds ref) - r0)) -lt "$2" ]; do
		[ "$t" -ge $(($1 * 10)) ] && return 1
		sleep 0.1
		t=$((t + 1))
	done
}

# Sleep one way with the loops running, then count each loop's rounds
# over WINDOW s from the wake.
sleep_once() { # name
	both_run 60 3 || say "error: $1: the loops did not run before the sleep"
	echo "ssdqtest: mark sleep-$1" >/dev/kmsg
	t0=$(now)
	case $1 in
	hibernation)
		echo devices >/sys/power/pm_test
		rc=0
		# The write's own status is the sleep's.
		# shellcheck disable=SC2320
		echo disk >/sys/power/state || rc=$?
		echo none >/sys/power/pm_test
		;;
	s2idle | deep)
		echo "$1" >/sys/power/mem_sleep
		if [ "$1" = deep ]; then
			qmp wakeup
		else
			qmp powerbutton
		fi
		rc=0
		# shellcheck disable=SC2320
		echo mem >/sys/power/state || rc=$?
		qmp awake
		;;
	esac
	t1=$(now)
	d0=$(rounds dut) r0=$(rounds ref)
	sleep "$WINDOW"
	say "$1: rc $rc, $t0 -> $t1 s, rounds in ${WINDOW} s after: dut $(($(rounds dut) - d0)) ref $(($(rounds ref) - r0))"
}

say "start: dut $DUT_DEV ref $REF_DEV, window ${WINDOW} s"
io_loop dut "$DUT_DEV" &
io_loop ref "$REF_DEV" &
# S3 before suspend to idle: the other way round, QEMU 7.2's guest never
# came back from S3 (with nvme alone too; console silent from the suspend
# on), after a suspend to idle woken by the power button.
for how in hibernation deep s2idle; do
	sleep_once "$how"
done
: >"$SB/stop"
wait
say "rounds in all: dut $(rounds dut) ref $(rounds ref)"
if [ "$STATS" != none ]; then
	say "stats: $(tr '\n' ' ' <"$STATS")"
fi
say "done"
echo "<2>ssdq-vm: exit status $STATUS" >/dev/kmsg
# Straight to the reset: no sync (9p), and no device shutdown, which
# 97-shutdown tests (virtio-9p's devices, dead since the first sleep, are
# shut down before the disks).
echo b >/proc/sysrq-trigger
