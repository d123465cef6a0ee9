#!/bin/bash
# make soak, the guest half (scripts/soak.sh boots the VM): verified mixed
# I/O on /dev/ssdq0 for SECS while an event driver flips every runtime
# switch, injects the faults that lose no data, resets the controller
# (sysfs and FLR) and takes a CPU offline, all at random from SEED; the
# I/O loop rebinds the device between its fio runs. Ends with a read-back
# verify of everything the last runs wrote, and writes
# $SSDQ_OUT/soak-report.txt. Exit 0 only with no verify error, no I/O
# error and no kernel report.
set -euo pipefail
secs=$1 seed=$2
export T_DIR=$SSDQ_OUT/soak
rm -rf "$T_DIR"
mkdir -p "$T_DIR"
cd "$T_DIR"
# shellcheck source=tests/lib.sh
. "$SSDQ_REPO/tests/lib.sh"
[[ -n ${SSDQ_FIO_DIR:-} ]] && export PATH=$SSDQ_FIO_DIR:$PATH

report=$SSDQ_OUT/soak-report.txt
# Everything the kernel logs goes to the console, which is all that is left
# of a guest that hangs: the hung-task detector's stacks are info lines.
dmesg -n 7
events=$T_DIR/events.log
IO_TIMEOUT=4
# The events a run may see: every switch, and every fault of fault.c that
# loses no data (media_errors and fail_disable fail I/O by design;
# refuse_dbbuf and slow_enable_ms act at the next reset, fatal_status at
# the next timeout, which a dropped completion armed with it brings).
SWITCH_EVENTS=(batching shadow_doorbells steering irq_mode defer_us budget)
FAULT_EVENTS=(drop_completions drop_irqs delay_completions abort_completions
	retry_completions bad_cids drop_admin_completions fatal_status refuse_dbbuf
	slow_enable_ms)
OTHER_EVENTS=(reset flr cpu_offline)

# The switches, counters and fault knobs of the disk DISK names.
disk_paths() {
	SW=/sys/block/$DISK
	DBG=/sys/kernel/debug/ssdq/$DISK
	FAULT=$DBG/fault
}

load() {
	dut_load poll_queues=1 io_timeout=$IO_TIMEOUT admin_timeout=$IO_TIMEOUT
	disk_paths
}

# One of the words in $P, from the seeded RANDOM: never in a $(...)
# subshell, which bash seeds afresh.
pick() { # words...
	local a=("$@")
	P=${a[RANDOM % ${#a[@]}]}
}

# One event, chosen and logged as "name value". A switch that will not
# flip fails the soak (every switch must flip under I/O and during a
# reset); a reset or a CPU offline the kernel refuses is logged as such.
event() {
	local v=1
	pick "${SWITCH_EVENTS[@]}" "${FAULT_EVENTS[@]}" "${OTHER_EVENTS[@]}"
	local e=$P
	case $e in
	batching) pick 0 1; v=$P; echo "$v" >"$SW/plugging/batching" ;;
	shadow_doorbells)
		pick 0 1
		v=$P
		# Only 0 is accepted if the controller refused the buffers.
		echo "$v" >"$SW/plugging/shadow_doorbells" 2>/dev/null || v="$v-refused"
		;;
	steering) pick off ipi blk; v=$P; echo "$v" >"$SW/steering/mode" ;;
	irq_mode) pick direct irqpoll adaptive; v=$P; echo "$v" >"$SW/irq/mode" ;;
	defer_us) pick 0 0 200 2000; v=$P; echo "$v" >"$SW/irq/defer_us" ;;
	budget) pick 4 64 256; v=$P; echo "$v" >"$SW/irq/budget" ;;
	delay_completions)
		echo 50 >"$FAULT/delay_ms"
		pick 1 8 32
		v=$P
		strike "$e" "$v" || v="$v-unspent"
		;;
	drop_admin_completions)
		# The admin command it must find is the Abort that a dropped I/O
		# completion brings, not a reset's (a reset whose admin command
		# times out fails for good, as nvme's does). So only with no
		# other fault pending.
		if faults_pending; then
			v=skipped
		else
			echo 1 >"$FAULT/$e"
			strike drop_completions || { echo 0 >"$FAULT/$e"; v=unspent; }
			settle timeout
		fi
		;;
	slow_enable_ms) pick 0 500 1500; v=$P; echo "$v" >"$FAULT/$e" ;;
	fatal_status)
		# It acts at the next timeout: bring one, a dropped completion
		# (armed alone, it waited for a timeout that seldom came). Not
		# beside another fault, for the same reason as above.
		if faults_pending; then
			v=skipped
		else
			echo 1 >"$FAULT/$e"
			strike drop_completions || v=unspent
			wait_until $((2 * IO_TIMEOUT + 5)) fault_spent "$e" || { echo 0 >"$FAULT/$e"; v=unspent; }
			settle timeout
		fi
		;;
	# It acts at the next reset, on no request of its own.
	refuse_dbbuf) echo 1 >"$FAULT/$e" ;;
	drop_completions | drop_irqs | abort_completions | retry_completions | bad_cids)
		strike "$e" || v=unspent
		settle timeout
		;;
	reset)
		echo 1 >"$SW/recovery/reset" 2>>"$T_DIR/refused" || v=refused
		settle
		;;
	flr)
		echo 1 >"/sys/bus/pci/devices/$PCI_DUT/reset" 2>>"$T_DIR/refused" || v=refused
		settle
		;;
	cpu_offline)
		if echo 0 >/sys/devices/system/cpu/cpu1/online 2>>"$T_DIR/refused"; then
			nap "0.$((RANDOM % 9 + 1))"
			echo 1 >/sys/devices/system/cpu/cpu1/online
		else
			v=refused
		fi
		;;
	esac
	echo "$e $v ${SECONDS}s" >>"$events"
}

faults_pending() {
	local f n
	for f in drop_completions drop_irqs delay_completions abort_completions \
		retry_completions bad_cids fatal_status; do
		read -r n <"$FAULT/$f"
		((n == 0)) || return 0
	done
	return 1
}
fault_spent() { local n; read -r n <"$FAULT/$1" && ((n == 0)); }

# Faults are paced against the retry budget: a request may run again
# SSDQ_MAX_RETRIES (5) times, and each reset that takes it back or each
# retryable status counts one. A fault strikes the next completion, and
# after a reset that is one of the requests it sent round again: armed
# back to back, faults meet the same request until it fails (seen). So
# each fault must strike (or is disarmed after 60 s: with no I/O between
# fio runs it cannot, and a later reset would meet it) and settle before
# the next event.
strike() { # knob [count]
	echo "${2:-1}" >"$FAULT/$1"
	wait_until 60 fault_spent "$1" && return 0
	echo 0 >"$FAULT/$1"
	return 1
}

# Let what a fault or a reset set off end: with "timeout", first the
# timeout a fault may cause (up to io_timeout + 1 s away), the Abort and
# its admin timeout; then the recovery counters still for a second, and
# 256 more CQEs reaped (the jobs keep 28 requests in flight): every request
# sent round has run.
recovery_moves() {
	local k v s=0
	while read -r k v; do
		case $k in timeouts | resets | requeued | retried | admin_timeouts) s=$((s + v)) ;; esac
	done <"$DBG/recovery"
	echo "$s"
}
recovery_still() {
	local a
	a=$(recovery_moves)
	nap 1
	[[ $(recovery_moves) == "$a" ]]
}
settle() { # [timeout]
	local r0
	[[ ${1:-} != timeout ]] || nap $((2 * IO_TIMEOUT + 1))
	wait_until 60 recovery_still || return 0
	r0=$(reaped)
	reaped_more() { (($(reaped) >= r0 + 256)); }
	wait_until 30 reaped_more || true
}

# The event driver: an event every 0.5 to 3 s until the stop file; none
# while the pause file is there (it says so in paused).
driver() {
	RANDOM=$((seed + 1))
	while [[ ! -e $T_DIR/stop ]]; do
		nap "$((RANDOM % 3)).$((RANDOM % 10))"
		if [[ -e $T_DIR/pause ]]; then
			touch "$T_DIR/paused"
			continue
		fi
		[[ -e $T_DIR/stop ]] && continue
		if ! event; then
			echo "event failed: $(tail -n1 "$events" 2>/dev/null)" >"$T_DIR/driver.err"
			return 1
		fi
	done
}

# Three areas, each written once per run with a fresh seed and verified:
# io_uring QD16 with reads interleaved (verify_backlog), libaio QD8 with a
# flush every 16 writes, and a polled (--hipri) QD4 job; 512 B to 1 MiB
# blocks. A fourth area gets random trims.
AREA=$((48 * MiB / IO_DIV))
fio_run() { # tag run-seed [global fio options]
	local tag=$1 s=$2 trim=()
	shift 2
	# The trim job: in every run but the final read-back.
	[[ $tag == final ]] || trim=(--name=trim --rw=randtrim --verify=0
		--ioengine=libaio --iodepth=4 --offset=$((3 * AREA)) --bs=64k)
	run_fio "$tag" - - --filename="$DEV" --direct=1 --rw=randwrite --verify=crc32c \
		--verify_fatal=1 --randseed="$s" --size="$AREA" --group_reporting=0 "$@" \
		--name=uring --ioengine=io_uring --iodepth=16 --offset=0 \
		--bssplit=4k/40:16k/20:64k/20:256k/10:1m/10 --verify_backlog=64 \
		--name=aio-flush --ioengine=libaio --iodepth=8 --offset="$AREA" \
		--bssplit=512/10:4k/50:32k/30:128k/10 --fsync=16 \
		--name=hipri --ioengine=io_uring --hipri=1 --iodepth=4 --offset=$((2 * AREA)) \
		--bs=4k "${trim[@]}"
	jq '[.jobs[] | .read.total_ios + .write.total_ios + .trim.total_ios] | add' \
		"$T_DIR/fio-$tag.json.clean" >>"$T_DIR/ios"
}

counters() { # -> key value lines: recovery counters and faults injected
	cat "$DBG/recovery" "$FAULT/injected" 2>/dev/null | awk 'NF == 2' >>"$T_DIR/counters" || true
}

rebind() {
	counters
	echo "$PCI_DUT" >"/sys/bus/pci/drivers/ssdq/unbind"
	echo "$PCI_DUT" >"/sys/bus/pci/drivers/ssdq/bind"
	dut_wait_disk 60
	disk_paths
	echo "rebind 1 ${SECONDS}s" >>"$events"
}

main() {
	RANDOM=$seed
	trap 'counters; touch "$T_DIR/stop"' EXIT
	load
	kmsg_mark soak
	driver &
	local dpid=$! end=$((SECONDS + secs)) run=0 rs
	while ((SECONDS < end)); do
		run=$((run + 1))
		rs=$((seed * 1000 + run))
		echo "$run" >"$T_DIR/runs"
		fio_run "run$run" "$rs"
		[[ ! -e $T_DIR/driver.err ]] || break
		# Between runs, now and then: a rebind (I/O stopped; an unbind
		# fails what is in flight, by design).
		if ((RANDOM % 4 == 0 && SECONDS < end)); then
			touch "$T_DIR/pause"
			wait_for 120 "the event driver to pause" test -e "$T_DIR/paused"
			rebind
			rm -f "$T_DIR/pause" "$T_DIR/paused"
		fi
	done
	touch "$T_DIR/stop"
	wait "$dpid" || true
	[[ ! -e $T_DIR/driver.err ]] || fail "$(cat "$T_DIR/driver.err")"
	# Every switch back to its default, then the last run's data read back.
	echo 1 >"$SW/plugging/batching"
	echo ipi >"$SW/steering/mode"
	echo direct >"$SW/irq/mode"
	fio_run final "$rs" --verify_only=1
}

rc=0
(main) >"$T_DIR/soak.log" 2>&1 || rc=$?
bad=$(dmesg_since soak | grep -E "$BAD_ANY" | head -n 5 || true)
{
	echo "soak: seed $seed, $secs s, $(uname -r), $(cat "$T_DIR/runs" 2>/dev/null || echo '?') fio runs"
	echo "I/Os: $(awk '{ n += $1 } END { print n + 0 }' "$T_DIR/ios" 2>/dev/null)"
	echo "events:"
	awk '{ n[$1]++ } END { for (e in n) printf "  %-24s %d\n", e, n[e] }' "$events" 2>/dev/null | sort
	echo "faults disarmed unspent (no I/O for them to strike): $(grep -c unspent "$events" 2>/dev/null || true)"
	echo "recovery and faults (sums over every probe):"
	awk '$1 != "last_recovery_ms" { n[$1] += $2 } END { for (k in n) if (n[k]) printf "  %-26s %d\n", k, n[k] }' \
		"$T_DIR/counters" 2>/dev/null | sort
	echo "verify errors: $(grep -Eci 'verify|bad magic|crc|mismatch' "$T_DIR"/fio-*.err 2>/dev/null | awk -F: '{ n += $NF } END { print n + 0 }')"
	echo "kernel reports: $(grep -c . <<<"$bad" || true)${bad:+ (first: $(head -n1 <<<"$bad"))}"
	if ((rc)); then
		echo "result: FAIL: $(cat "$T_DIR/reason" 2>/dev/null || echo "status $rc") (replay: make soak SEED=$seed)"
	elif [[ -n $bad ]]; then
		echo "result: FAIL: kernel report (replay: make soak SEED=$seed)"
	else
		echo "result: PASS"
	fi
} >"$report"
cat "$report"
grep -q '^result: PASS' "$report"
