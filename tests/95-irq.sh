#!/bin/bash
# irq: interrupt mitigation. At a moderate load where direct reaping takes
# >= 0.3 interrupts per completion, irqpoll with deferred re-arm takes at
# most half as many, data verified in both; the mode flipped under load
# loses nothing; polled queues complete fio --hipri I/O with no interrupt.
# timeout: 600
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || {
	skip "ssdq-only switches; nothing to do for $DUT"
}
dut_load poll_queues=1
# No merging: each fio I/O is one request, so the driver's counts compare
# exactly with fio's (reads of neighbouring blocks may otherwise merge).
echo 2 >"/sys/block/$DISK/queue/nomerges"
STATS=/sys/kernel/debug/ssdq/$DISK/irq
IRQ=/sys/block/$DISK/irq
# Deferred re-arm: look again every defer_us (set below from the measured
# gap between completions), unmask after 4 empty looks.
echo 4 >"$IRQ/defer_rounds"
assert_eq "queue/io_poll with a poll queue" "$(sysq io_poll)" 1
# Interrupt-driven queues: every qid but the last (the polled one).
NQ=$(($(wc -l <"$STATS") - 2))
poll_qid=$((NQ))

# Sums over the interrupt-driven I/O queues: interrupts completions rounds.
irq_counts() {
	queue_cols "$STATS" "$poll_qid" interrupts completions rounds
}

# ssdq's trace events as a second witness (kernels with tracefs): each
# CQE's reaper, each irq_poll round.
EVENTS=0
if [[ $DUT == ssdq ]] && have_trace_events; then
	EVENTS=1
else
	log "no tracefs in this kernel: reapers counted by ssdq's counters only"
fi
# "cqes by_irq by_irqpoll by_timer rounds" of the interrupt-driven queues.
reaper_events() { # file
	awk -v q="q$poll_qid" '$0 ~ / ssdq_cqe: / && $0 !~ (" " q " ") { n++
			for (i = 1; i <= NF; i++) if ($i ~ /^by=/) by[substr($i, 4)]++ }
		/ ssdq_irqpoll_round: / { r++ }
		END { print n + 0, by["irq"] + 0, by["irqpoll"] + 0, by["timer"] + 0, r + 0 }' "$1"
}

load() { # tag qd [more fio args]
	local tag=$1 qd=$2
	shift 2
	run_fio "$tag" - $((3000 * 4096)) --name="$tag" --filename="$DEV" --direct=1 \
		--ioengine=io_uring --rw=randread --bs=4k --size=128m --iodepth="$qd" \
		--numjobs=2 --number_ios=1500 "$@"
}

# Sets PER (interrupts per completion, x1000) for a mode at a depth.
measure() { # mode defer_us qd
	local a b
	echo "$1" >"$IRQ/mode"
	echo "$2" >"$IRQ/defer_us"
	read -ra a <<<"$(irq_counts)"
	if ((EVENTS)); then trace_start ssdq_cqe ssdq_irqpoll_round ssdq_irqpoll_mask; fi
	load "$1-$2-qd$3" "$3"
	if ((EVENTS)); then trace_stop "$T_DIR/events-$1-$2-qd$3.txt"; fi
	read -ra b <<<"$(irq_counts)"
	local ints=$((b[0] - a[0])) comps=$((b[1] - a[1])) rounds=$((b[2] - a[2])) ev masks unmasks
	((comps >= 3000)) || fail "$1: only $comps completions counted for 3000 I/Os"
	PER=$((ints * 1000 / comps))
	log "$1 defer_us=$2 QD$3 x2: $ints interrupts for $comps completions (0.$(printf %03d $PER) each)"
	((EVENTS)) || return 0
	read -ra ev <<<"$(reaper_events "$T_DIR/events-$1-$2-qd$3.txt")"
	log "$1: ssdq_cqe events by irq ${ev[1]}, irqpoll ${ev[2]}, timer ${ev[3]}; ${ev[4]} irq_poll rounds"
	assert_eq "$1: ssdq_cqe events = completions counted" "${ev[0]}" "$comps"
	assert_eq "$1: irq_poll round events = rounds counted" "${ev[4]}" "$rounds"
	if [[ $1 == direct ]]; then
		assert_eq "direct: CQEs reaped by the handler" "${ev[1]}" "$comps"
	else
		assert_eq "$1: CQEs reaped by the handler" "${ev[1]}" 0
		# Every masking of a vector (by the handler, or again by the
		# unmask path that finds a new CQE) is ended by a round that
		# unmasks; at most one per queue may still be open at the end.
		masks=$(grep -c ' ssdq_irqpoll_mask: ' "$T_DIR/events-$1-$2-qd$3.txt" || true)
		unmasks=$(grep -c ' ssdq_irqpoll_round: .* next=unmask' "$T_DIR/events-$1-$2-qd$3.txt" || true)
		((masks > 0 && masks >= unmasks && masks - unmasks <= NQ - 1)) ||
			fail "$1: $masks vector masks, $unmasks unmasking rounds"
		ok "$1: $masks vector masks (ssdq_irqpoll_mask), $unmasks unmasking rounds, $ints interrupts"
		((${ev[3]} > 0 || $2 == 0)) || fail "$1 with defer_us=$2: no CQE reaped by a deferred round"
	fi
}

# Pick the moderate load: the deepest of 4, 2, 1 where direct still takes
# at least 0.3 interrupts per completion.
qd=
for d in 4 2 1; do
	measure direct 0 "$d"
	if ((PER >= 300)); then
		qd=$d
		break
	fi
done
[[ -n $qd ]] || fail "no depth where direct takes >= 0.3 interrupts per completion"
direct_per=$PER
ok "moderate load: QD$qd x 2 jobs, direct takes 0.$(printf %03d "$direct_per") interrupts per completion"

# The deferral must outlast the gap between completions to catch the next
# one: 300 us, or three gaps of the direct run if those are longer (the
# debug kernel completes I/O several times slower).
iops=$(jq '[.jobs[].read.iops] | add | floor' "$T_DIR/fio-direct-0-qd$qd.json.clean")
((iops > 0)) || fail "no IOPS in the direct run's fio output"
defer=$((3 * 1000000 / iops))
((defer < 300)) && defer=300
((defer > 10000)) && defer=10000 # irq/defer_us's limit
measure irqpoll "$defer" "$qd"
((PER * 2 <= direct_per)) ||
	fail "irqpoll+defer: 0.$(printf %03d $PER) interrupts per completion, direct 0.$(printf %03d "$direct_per") (want at most half)"
ok "irqpoll with $defer us x 4 deferral: 0.$(printf %03d $PER) interrupts per completion (direct 0.$(printf %03d "$direct_per"), $iops IOPS)"

verify() { # tag [fio args]
	local tag=$1
	shift
	run_fio "$tag" $((8 * MiB)) $((8 * MiB)) --name="$tag" --filename="$DEV" \
		--direct=1 --ioengine=io_uring --rw=randwrite --bssplit=4k/60:64k/40 \
		--size=8m --offset="$REG_INTEGRITY_OFF" --iodepth="$qd" \
		--verify=crc32c --verify_state_save=0 "$@"
}
echo direct >"$IRQ/mode"
verify verify-direct
echo irqpoll >"$IRQ/mode"
echo 300 >"$IRQ/defer_us"
verify verify-irqpoll
echo 8 >"$IRQ/budget"
verify verify-irqpoll-budget8 --iodepth=32
echo 64 >"$IRQ/budget"

# Flip the mode (and deferral) under load.
rm -f "$T_DIR/stop"
(
	i=0
	while [[ ! -e $T_DIR/stop ]]; do
		echo irqpoll >"$IRQ/mode"
		echo $(((i % 3) * 500)) >"$IRQ/defer_us"
		nap 0.05
		echo direct >"$IRQ/mode"
		nap 0.05
		i=$((i + 1))
	done
	echo "$i" >"$T_DIR/flips"
) &
fpid=$!
fsz=$((16 * MiB / IO_DIV)) # per job
run_fio flip $((2 * fsz)) $((2 * fsz)) --name=flip --filename="$DEV" --direct=1 \
	--ioengine=io_uring --rw=randwrite --bssplit=4k/60:16k/20:128k/20 --size="$fsz" \
	--offset="$REG_INTEGRITY_OFF" --offset_increment="$fsz" --iodepth=16 --numjobs=2 \
	--verify=crc32c --verify_state_save=0
touch "$T_DIR/stop"
wait "$fpid"
assert_gt "mode flips during the verify run" "$(cat "$T_DIR/flips")" 5
echo direct >"$IRQ/mode"
echo 0 >"$IRQ/defer_us"

# Polled queue: fio --hipri, verified; every completion polled, no interrupt.
poll_row() { queue_row "$STATS" "$poll_qid" interrupts completions polled; }
read -ra p0 <<<"$(poll_row)"
run_fio hipri $((8 * MiB)) $((8 * MiB)) --name=hipri --filename="$DEV" --direct=1 \
	--ioengine=io_uring --hipri --rw=randwrite --bssplit=4k/70:64k/30 --size=8m \
	--offset="$REG_INTEGRITY_OFF" --iodepth=8 --verify=crc32c --verify_state_save=0
read -ra p1 <<<"$(poll_row)"
assert_eq "interrupts on the poll queue" "$((p1[0] - p0[0]))" 0
assert_eq "irq-path completions on the poll queue" "$((p1[1] - p0[1]))" 0
hipri_ios=$(jq '[.jobs[] | .write.total_ios + .read.total_ios] | add' "$T_DIR/fio-hipri.json.clean")
polled=$((p1[2] - p0[2]))
((polled >= hipri_ios)) || fail "polled completions $polled < fio's $hipri_ios I/Os"
ok "every one of fio's $hipri_ios --hipri I/Os was completed by polling ($polled polled)"
if grep -q "${DISK}q$((poll_qid))\$" /proc/interrupts; then
	fail "the poll queue has an interrupt vector"
fi
ok "no interrupt vector for queue $poll_qid"

kmsg_mark bad
allow_dmesg 'irq/(mode|budget|defer_us) takes'
for w in "mode:sometimes" "budget:0" "defer_us:99999"; do
	if echo "${w#*:}" >"$IRQ/${w%%:*}" 2>/dev/null; then fail "irq/${w%%:*} accepted ${w#*:}"; fi
done
assert_eq "dmesg lines for 3 bad writes" "$(dmesg_since bad | grep -Ec 'irq/(mode|budget|defer_us) takes')" 3
dut_unload
