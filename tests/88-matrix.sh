#!/bin/bash
# matrix: every value of every switch against every event, pairwise
# (tests/matrix-cases.sh makes the 68 cases; Documentation/testing.rst
# lists them). Four module loads, one per round of the load-time switches
# (io_queues one per CPU, 1, or uneven on 4 vCPUs; poll_queues 0 or 1),
# then per case: the runtime switches set (irq mode, steering, batching,
# shadow doorbells), verified I/O started (io_uring and libaio writers with
# reads interleaved, flushes, and a --hipri job on the poll queue), one
# event, and its outcome asserted:
#   - a fault struck exactly as armed, and its recovery counters moved;
#   - the controller is alive and the I/O runs on afterwards;
#   - fio's verify found nothing, its jobs no error;
#   - data written before a rebind or a controller given up reads back.
# A case that loses I/O by design (a media error, a controller that will
# not disable, an unbind) runs its own I/O, not the verified writers.
# SSDQ_MATRIX_CASES="46 47" runs only those cases, in that order (to
# replay one, or repeat it). The debug lane, CI's critical path, runs one
# of the four rounds (SSDQ_MATRIX_ROUNDS, default there "2": io_queues
# uneven, poll_queues 1, every event once; 17 cases in about 4 minutes
# instead of 14); the prod lane runs all 68.
# boot: cpu4
# timeout: 900
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/matrix-cases.sh"
. "$(dirname "$0")/events.sh"
cd /tmp

[[ $DUT == ssdq ]] || skip "ssdq-only (its switches and faults); nothing to do for $DUT"

read -r online </sys/devices/system/cpu/online
NCPU=$((${online##*-} + 1))
((NCPU >= 3)) || fail "the matrix needs 3 CPUs or more for an uneven queue map, not $NCPU (# boot: cpu4)"
# The CPU the cpu_offline event takes down (cpu0 never goes).
HOTCPU=/sys/devices/system/cpu/cpu$((NCPU - 1))/online
PCIDEV=/sys/bus/pci/devices/$PCI_DUT
# Short, for the cases that wait for a timeout; longer on the debug
# kernel, where a request may really take seconds under load.
IO_TIMEOUT=$((2 * ${SSDQ_TIMEOUT_SCALE:-1}))
allow_dmesg 'resetting the controller|timed out|completed without an interrupt|not in flight, ignored|reset done|stopping the controller|Doorbell Buffer Config refused|plugging/shadow_doorbells: the controller has none'
allow_dmesg 'I/O error|Buffer I/O error|failed: NVMe status|critical medium error|disabling the controller|does not disable|controller not disabled'

load() { # io_queues poll_queues
	local ioq=$1
	case $1 in
	percpu) ioq=0 ;;
	uneven) ioq=$((NCPU - 1)) ;;
	esac
	dut_load io_queues="$ioq" poll_queues="$2" io_timeout=$IO_TIMEOUT admin_timeout=$IO_TIMEOUT
	paths
	POLL=$2
	local want=$((${ioq/#0/$NCPU} + $2)) got shared=0 d l
	got=$(find "$SYS/mq" -mindepth 1 -maxdepth 1 -type d | wc -l)
	assert_eq "hardware queues with io_queues=$1 poll_queues=$2" "$got" "$want"
	if [[ $1 == uneven ]]; then
		# Some interrupt-driven queue serves two CPUs or more.
		for d in "$SYS"/mq/*/; do
			read -r l <"$d/cpu_list"
			[[ $l == *,* || $l == *-* ]] && shared=$((shared + 1))
		done
		assert_gt "hardware queues shared by CPUs (uneven map)" "$shared" 0
	fi
}

# Verified writers until stop_io: io_uring QD16 and libaio QD8 (a flush
# every 16 writes), mixed sizes, each write read back within 16 writes
# (verify_backlog); a --hipri job when there is a poll queue.
A=$((32 * MiB))
start_io() { # tag
	local -a hipri=()
	((POLL)) && hipri=(--name=hipri --ioengine=io_uring --hipri=1 --iodepth=4 --bs=4k
		--offset=$((REG_INTEGRITY_OFF + 2 * A)))
	IO_TAG=$1
	fio --output-format=json --output="$T_DIR/fio-$1.json" --verify_state_save=0 \
		--filename="$DEV" --direct=1 --rw=randwrite --verify=crc32c --verify_fatal=1 \
		--verify_backlog=16 --size="$A" --time_based --runtime=600 --randseed="$RANDOM" \
		--name=uring --ioengine=io_uring --iodepth=16 --offset="$REG_INTEGRITY_OFF" \
		--bssplit=4k/50:16k/25:128k/25 \
		--name=aio-flush --ioengine=libaio --iodepth=8 --offset=$((REG_INTEGRITY_OFF + A)) \
		--bssplit=512/20:4k/60:64k/20 --fsync=16 \
		"${hipri[@]}" 2>"$T_DIR/fio-$1.err" &
	fpid=$!
	io_flows
}
# Stop the writers (SIGINT: fio exits 128) and check what they did.
stop_io() {
	local rc=0
	kill -INT "$fpid" 2>/dev/null || true
	wait "$fpid" || rc=$?
	((rc != 128)) || rc=0
	fio_check "$IO_TAG" 1 1 "$rc"
}

alive() { assert_eq "controller alive" "$(rec dead)" 0; }

# Data that must survive a rebind and a controller given up.
KEEP=$(pattern_file keep.bin "$REG_KEEP_LEN")
keep_write() { dev_write "$KEEP" "$DEV" "$REG_KEEP_OFF"; }
keep_check() { dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$KEEP" "$1"; }
unbind() { echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/unbind; }
rebind() {
	echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/bind
	dut_wait_disk
	paths
}

# The events that lose I/O by design, each with its own I/O.
media_errors() {
	local out lba=$(((REG_INTEGRITY_OFF + 20 * KiB) / 512))
	echo 1 >"$FAULT/media_errors"
	if out=$(dd if="$DEV" of=/dev/null bs=4k count=1 skip=$((lba / 8)) iflag=direct 2>&1); then
		fail "a read with a media error succeeded"
	fi
	grep -q 'No data available' <<<"$out" || fail "a read with a media error: $out (want ENODATA)"
	assert_struck media_errors 1
	assert_eq "media errors run again" "$(since retried)" 0
}
given_up() { # event
	busy_writer "$1" "$REG_UNBIND_OFF"
	if [[ $1 == rebind ]]; then
		unbind
		wait_for 30 "fio to exit after the unbind" fio_gone
		wait "$fpid" || true
	else
		echo 1 >"$FAULT/fail_disable"
		if echo 1 >"$SYS/recovery/reset" 2>/dev/null; then
			fail "a reset of a controller that does not disable succeeded"
		fi
		assert_struck fail_disable 1
		assert_eq "controller dead" "$(rec dead)" 1
		assert_given_up
		unbind
	fi
	rebind
	keep_check "data after $1"
}

run_case() { # n io_queues poll_queues irq steering batching shadow event
	local n=$1 ev=$8 t0=$SECONDS
	shift
	if [[ $1/$2 != "${LOADED:-}" ]]; then
		load "$1" "$2"
		LOADED=$1/$2
		keep_write
	fi
	shift 2
	local sw=("${@:1:4}")
	set_switches "${sw[@]}"
	event_begin
	log "case $n: $LOADED ${sw[*]} $ev"
	case $ev in
	media_errors)
		media_errors
		start_io "case$n"
		stop_io
		;;
	rebind | fail_disable) given_up "$ev" ;;
	*)
		start_io "case$n"
		event "$ev" "${sw[@]}"
		io_flows
		stop_io
		;;
	esac
	alive
	echo "$n $LOADED ${sw[*]} $ev $((SECONDS - t0))s" >>"$T_DIR/cases"
	# Shadow doorbells stay refused until a load: a case replayed after
	# this one (SSDQ_MATRIX_CASES) gets a fresh one.
	[[ $ev != refuse_dbbuf ]] || LOADED=
}

# The cases asked for: all, or those SSDQ_MATRIX_CASES names, in its order
# (a number given twice runs twice).
chosen_cases() {
	local -a all
	local n
	mapfile -t all < <(matrix_cases)
	if [[ -z ${SSDQ_MATRIX_CASES:-} ]]; then
		for n in "${!all[@]}"; do
			[[ " $ROUNDS " == *" $((n / ${#MATRIX_EVENTS[@]})) "* ]] && echo "${all[n]}"
		done
		return 0
	fi
	for n in $SSDQ_MATRIX_CASES; do
		[[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= ${#all[@]})) ||
			fail "SSDQ_MATRIX_CASES: no case '$n' (1-${#all[@]})"
		echo "${all[n - 1]}"
	done
}

ROUNDS=${SSDQ_MATRIX_ROUNDS:-0 1 2 3}
((IO_DIV > 1)) && ROUNDS=${SSDQ_MATRIX_ROUNDS:-2}
chosen_cases >/dev/null # a bad SSDQ_MATRIX_CASES fails here, not in a subshell
: >"$T_DIR/cases"
while read -r -a c; do
	run_case "${c[@]}"
done < <(chosen_cases)
keep_check "data at the end"
assert_eq "cases run" "$(wc -l <"$T_DIR/cases")" "$(chosen_cases | wc -l)"
assert_gt "cases run" "$(wc -l <"$T_DIR/cases")" 0
dut_unload
