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

trace_stop "$T_DIR/events.txt"
kill -INT "$fpid"
rc=0
wait "$fpid" || rc=$?
trap - EXIT
errs=$(sed -n '/^{/,$p' "$T_DIR/fio.json" | jq '[.jobs[].error] | add') ||
	fail "fio: unreadable JSON output"
assert_eq "fio job errors (exit $rc)" "$errs" 0

# Every kind, by its printed form.
count() { grep -Ec "$1" "$T_DIR/events.txt" || true; }
for e in "${EVENTS[@]}"; do
	assert_gt "$e events" "$(count " $e: ")" 0
done
for by in irq irqpoll timer poll; do
	assert_gt "ssdq_cqe events by=$by" "$(count " ssdq_cqe: .* by=$by\$")" 0
done
for kind in mmio shadow; do
	assert_gt "ssdq_sq_doorbell events, $kind" "$(count " ssdq_sq_doorbell: .* $kind\$")" 0
done
for next in defer unmask; do
	assert_gt "ssdq_irqpoll_round events, next=$next" "$(count " ssdq_irqpoll_round: .* next=$next\$")" 0
done
for step in abort reset; do
	assert_gt "ssdq_timeout_step events, step=$step" "$(count " ssdq_timeout_step: .* step=$step\$")" 0
done
assert_gt "ssdq_reset events that succeeded" "$(count ' ssdq_reset: .* ret=0 ')" 0
# Each event names this controller.
inst=${DISK#ssdq}
assert_eq "events naming another controller" \
	"$(grep -E ' ssdq_[a-z_]+: ssdq[0-9]+ ' "$T_DIR/events.txt" | grep -vc " ssdq$inst " || true)" 0
log "$(grep -oE ' ssdq_[a-z_]+: ' "$T_DIR/events.txt" | sort | uniq -c | tr -s ' \n' ' ')"
