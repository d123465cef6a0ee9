#!/bin/bash
# The combination matrix's cases (tests/88-matrix.sh; Documentation/
# testing.rst lists them): every value of every switch meets every event
# at least once, pairwise rather than the full product.
#
# Sourced, it defines the values and matrix_cases; run, it prints the
# cases, one per line:
#   case io_queues poll_queues irq steering batching shadow_doorbells event
#
# How they are made: each event runs four times, in rounds k = 0..3. A
# switch with n values takes value (k + offset) mod n, where the offset
# depends on the event and differs between switches, so over its four
# rounds every event sees every value of every switch (no switch has more
# than four), and the switches do not move in step. The load-time
# switches (io_queues, poll_queues) take the round's value, k mod n: one
# module load per round, 17 events each, 68 cases in all.

# The load-time switches. io_queues: one per CPU (0), 1, and one fewer
# than the CPUs (uneven: two CPUs share a queue; the matrix boots 4 vCPUs).
MATRIX_IO_QUEUES=(percpu 1 uneven)
MATRIX_POLL_QUEUES=(1 0)
# The runtime switches. irq: direct, irqpoll re-arming at once, irqpoll
# with a deferred re-arm (defer_us=200), adaptive moderation.
MATRIX_IRQ=(direct irqpoll irqpoll-defer adaptive)
MATRIX_STEERING=(off ipi blk)
# batching: on, off, or on with ring_idle (a batch that finds the SQ empty
# rings at its first command too).
MATRIX_BATCHING=(1 0 idle)
MATRIX_SHADOW=(1 0)
# The events: a switch flipped mid-I/O, the resets, a CPU going offline, a
# rebind, and each fault of fault.c (fault_bar0_doorbells acts at probe
# only: tests/10-load.sh). refuse_dbbuf is last in its round: shadow
# doorbells stay off until the next load.
MATRIX_EVENTS=(switch_flip reset flr cpu_offline rebind
	drop_completions drop_irqs delay_completions bad_cids abort_completions
	retry_completions drop_admin_completions fatal_status slow_enable_ms
	media_errors fail_disable refuse_dbbuf)

matrix_cases() {
	local k e n=0 ev
	for k in 0 1 2 3; do
		for e in "${!MATRIX_EVENTS[@]}"; do
			ev=${MATRIX_EVENTS[e]}
			n=$((n + 1))
			echo "$n ${MATRIX_IO_QUEUES[k % 3]} ${MATRIX_POLL_QUEUES[k % 2]}" \
				"${MATRIX_IRQ[(k + e) % 4]} ${MATRIX_STEERING[(k + 2 * e) % 3]}" \
				"${MATRIX_BATCHING[(k + e / 3) % 3]} ${MATRIX_SHADOW[(k + e / 2 + 1) % 2]} $ev"
		done
	done
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	matrix_cases
fi
