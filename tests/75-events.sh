#!/bin/bash
# events: one recording of the ssdq trace events during one fio run shows
# every kind (what `trace-cmd record -e ssdq` sees; Documentation/
# tracing.rst): submit, SQ doorbell (MMIO and shadow), CQE reaped by each
# reaper (irq, irqpoll round, deferral timer, ->poll), steer and its IPI,
# irqpoll mask and rounds (deferred and unmasking), timeout steps and a
# reset. fio runs throughout: two readers pinned to the two vCPUs on the one
# interrupt-driven queue (so completions need steering) and a --hipri reader
# on the poll queue, while the test moves through three phases, each until
# the counters show it happened:
#   direct interrupts, steering ipi;
#   irqpoll with deferral;
#   one dropped completion: a timeout, an Abort (QEMU refuses it), a reset.
# timeout: 300
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): the
# tracepoints are generated code, and the other tests there take every path
# that fires them.
# debug-lane: full
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || {
	skip "ssdq's trace events; nothing to do for $DUT"
}
(($(nproc --all) >= 2)) || fail "needs 2 vCPUs"
IO_TIMEOUT=2
dut_load io_queues=1 poll_queues=1 io_timeout=$IO_TIMEOUT
have_trace_events || fail "events: this kernel has no tracefs"
DBG=/sys/kernel/debug/ssdq/$DISK
SYS=/sys/block/$DISK
allow_dmesg 'resetting the controller|timed out|reset done'

rec() { kv_get "$DBG/recovery" "$1"; }
steered() { kv_get "$DBG/steering" ipi_requests; }
irq_col() { queue_cols "$DBG/irq" -1 "$1"; }

echo direct >"$SYS/irq/mode"
echo ipi >"$SYS/steering/mode"
echo 1 >"$SYS/plugging/shadow_doorbells"

EVENTS=(ssdq_submit ssdq_sq_doorbell ssdq_cqe ssdq_steer ssdq_steer_ipi
	ssdq_irqpoll_mask ssdq_irqpoll_round ssdq_timeout_step ssdq_reset)
trace_start "${EVENTS[@]}"
# Paced (1500 IOPS in all at most): the trace buffer keeps every event of
# the run, and completions still come closer together than the deferral.
fio --time_based --runtime=600 --filename="$DEV" --direct=1 --ioengine=io_uring \
	--rw=randread --bs=4k --size=64m --iodepth=16 --rate_iops=500 \
	--output-format=json --output="$T_DIR/fio.json" \
	--name=cpu0 --cpus_allowed=0 --offset=0 \
	--name=cpu1 --cpus_allowed=1 --offset=64m \
	--name=hipri --hipri=1 --iodepth=4 --offset=128m 2>"$T_DIR/fio.err" &
fpid=$!
trap 'kill "$fpid" 2>/dev/null || true' EXIT
fio_running() { kill -0 "$fpid" 2>/dev/null || fail "fio ended early: $(head -n3 "$T_DIR/fio.err")"; }
grew() { # base cmd...: the counter CMD prints passed BASE (fio still runs)
	local base=$1
	shift
	fio_running
	(($("$@") > base))
}

# 1: direct interrupts, steering, ->poll.
s0=$(steered) i0=$(irq_col interrupts) p0=$(irq_col polled)
wait_for 60 "steered completions" grew "$s0" steered
wait_for 60 "interrupts" grew "$i0" irq_col interrupts
wait_for 60 "polled completions" grew "$p0" irq_col polled

# 2: irqpoll: rounds that unmask, then with a deferral longer than the
# gap between completions, rounds that defer.
echo 0 >"$SYS/irq/defer_us"
echo irqpoll >"$SYS/irq/mode"
r0=$(irq_col rounds)
wait_for 60 "irq_poll rounds" grew "$r0" irq_col rounds
d0=$(irq_col deferred)
echo 2000 >"$SYS/irq/defer_us"
wait_for 60 "deferred rounds" grew "$d0" irq_col deferred

# 3: a completion that never comes.
echo direct >"$SYS/irq/mode"
r0=$(rec resets)
echo 1 >"$DBG/fault/drop_completions"
wait_for $((IO_TIMEOUT * 10)) "the reset after the dropped completion" grew "$r0" rec resets
# The counter moves as the reset starts, its event when it ends.
reset_traced() { grep -q ' ssdq_reset: ' "$TRACEFS/trace"; }
wait_for 30 "the reset's ssdq_reset event" reset_traced

# fio stops before the recording: disabling the events patches their call
# sites, which must not happen under I/O (trace_stop() in lib.sh).
kill -INT "$fpid"
rc=0
wait "$fpid" || rc=$?
trap - EXIT
# Into the guest's tmpfs: the recording is tens of MB, and 9p moves under
# 1 MB/s on the debug kernel. The test keeps its counts and first lines.
EVF=/tmp/ssdq-events.txt
trace_stop "$EVF"
errs=$(sed -n '/^{/,$p' "$T_DIR/fio.json" | jq '[.jobs[].error] | add') ||
	fail "fio: unreadable JSON output"
assert_eq "fio job errors (exit $rc)" "$errs" 0

# Every kind, by its printed form, counted in one pass: a key per event
# kind, per ssdq_cqe reaper (by=), SQ doorbell kind, irqpoll round's next
# step, timeout step, successful reset, and events naming another
# controller than this one.
inst=${DISK#ssdq}
awk -v me="ssdq$inst" '
	match($0, / ssdq_[a-z_]+: /) {
		ev = substr($0, RSTART + 1, RLENGTH - 3); n[ev]++
		split(substr($0, RSTART + RLENGTH), w, " ")
		if (w[1] ~ /^ssdq[0-9]+$/ && w[1] != me) n["other"]++
		if (ev == "ssdq_cqe" && $NF ~ /^by=/) n["cqe_" $NF]++
		if (ev == "ssdq_sq_doorbell") n["doorbell_" $NF]++
		if (ev == "ssdq_irqpoll_round" && $NF ~ /^next=/) n["round_" $NF]++
		if (ev == "ssdq_timeout_step" && $NF ~ /^step=/) n["timeout_" $NF]++
		if (ev == "ssdq_reset" && / ret=0 /) n["reset_ok"]++
	}
	END { for (k in n) print k, n[k] }' "$EVF" | sort >"$T_DIR/event-counts.txt"
head -n 2000 "$EVF" >"$T_DIR/events-head.txt"
rm -f "$EVF"
count() { kv_get "$T_DIR/event-counts.txt" "$1" || echo 0; }
for e in "${EVENTS[@]}"; do
	assert_gt "$e events" "$(count "$e")" 0
done
for by in irq irqpoll timer poll; do
	assert_gt "ssdq_cqe events by=$by" "$(count "cqe_by=$by")" 0
done
for kind in mmio shadow; do
	assert_gt "ssdq_sq_doorbell events, $kind" "$(count "doorbell_$kind")" 0
done
for next in defer unmask; do
	assert_gt "ssdq_irqpoll_round events, next=$next" "$(count "round_next=$next")" 0
done
for step in abort reset; do
	assert_gt "ssdq_timeout_step events, step=$step" "$(count "timeout_step=$step")" 0
done
assert_gt "ssdq_reset events that succeeded" "$(count reset_ok)" 0
assert_eq "events naming another controller" "$(count other)" 0
log "$(tr '\n' ' ' <"$T_DIR/event-counts.txt")"
