# shellcheck shell=bash
# The events of the combination matrix (tests/88-matrix.sh), sourced by the
# tests that run them under their own load (tests/46-fs-faults.sh: a
# filesystem on top): a switch flipped mid-I/O, the resets, a CPU going
# offline, and each fault of fault.c, each with its outcome asserted (the
# fault struck as armed, its recovery counters moved). The sourcing test
# loads the driver, then calls paths, and sets PCIDEV, HOTCPU and
# IO_TAG (named in io_flows' messages); each event asserts against what
# event_begin read before it.

paths() {
	SYS=/sys/block/$DISK
	DBG=/sys/kernel/debug/ssdq/$DISK
	FAULT=$DBG/fault
}
rec() { kv_get "$DBG/recovery" "$1"; }
# Recovery counters at the start of a case; since() is the change.
declare -A R0
snapshot() {
	local k v
	while read -r k v; do R0[$k]=$v; done <"$DBG/recovery"
}
# Before an event: the recovery counters, and what each fault did so far.
event_begin() {
	local k v
	snapshot
	while read -r k v; do I0[$k]=$v; done <"$FAULT/injected"
}
since() { echo $(($(rec "$1") - R0[$1])); }

# The runtime switches of a case.
set_switches() { # irq steering batching shadow
	case $1 in
	direct) echo 0 >"$SYS/irq/defer_us"; echo direct >"$SYS/irq/mode" ;;
	irqpoll) echo 0 >"$SYS/irq/defer_us"; echo irqpoll >"$SYS/irq/mode" ;;
	irqpoll-defer) echo 200 >"$SYS/irq/defer_us"; echo irqpoll >"$SYS/irq/mode" ;;
	adaptive) echo 0 >"$SYS/irq/defer_us"; echo adaptive >"$SYS/irq/mode" ;;
	esac
	echo "$2" >"$SYS/steering/mode"
	set_batching "$3"
	echo "$4" >"$SYS/plugging/shadow_doorbells"
}
set_batching() { # 1, 0 or idle (batching with ring_idle)
	if [[ $1 == idle ]]; then
		echo 1 >"$SYS/plugging/batching"
		echo 1 >"$SYS/plugging/ring_idle"
	else
		echo 0 >"$SYS/plugging/ring_idle"
		echo "$1" >"$SYS/plugging/batching"
	fi
}

# The I/O runs: 64 more CQEs reaped (fails the case if it stalls).
io_flows() {
	local r0
	r0=$(reaped)
	flowing() { (($(reaped) >= r0 + 64)); }
	wait_for 60 "I/O to flow (${IO_TAG:-})" flowing
}
# A fault armed under the verified writers; waits until it struck.
arm() { # knob count
	echo "$2" >"$FAULT/$1"
	spent() { local n; read -r n <"$FAULT/$1" && ((n == 0)); }
	wait_for 60 "fault $1 to strike" spent "$1"
}
wait_count() { # counter min what
	local c=$1 min=$2
	reached() { (($(since "$c") >= min)); }
	wait_for 60 "$3" reached
}

# A switch flipped to each other value mid-I/O, then back.
flip_switches() { # irq steering batching shadow
	local m
	for m in direct irqpoll irqpoll-defer adaptive "$1"; do
		set_switches "$m" "$2" "$3" "$4"
		io_flows
	done
	for m in off ipi blk "$2"; do
		echo "$m" >"$SYS/steering/mode"
		io_flows
	done
	for m in 1 0 idle "$3"; do
		set_batching "$m"
		io_flows
	done
	echo $((1 - $4)) >"$SYS/plugging/shadow_doorbells"
	io_flows
	set_switches "$@"
	ok "every runtime switch flipped and back under I/O"
}

# What fault/injected calls each knob's work.
declare -A DONE=([drop_completions]=dropped_completions [drop_irqs]=dropped_irqs
	[delay_completions]=delayed_completions [bad_cids]=bad_cids
	[abort_completions]=aborted_completions [retry_completions]=retry_completions
	[drop_admin_completions]=dropped_admin_completions [fatal_status]=fatal_status
	[refuse_dbbuf]=refused_dbbufs [media_errors]=media_errors [fail_disable]=failed_disables)
declare -A I0
injected_since() { # knob
	local k=${DONE[$1]}
	echo $(($(kv_get "$FAULT/injected" "$k") - I0[$k]))
}
assert_struck() { # knob times
	assert_eq "fault $1 struck" "$(injected_since "$1")" "$2"
}

# The events. Each asserts what it injected and its recovery.
event() { # name irq steering batching shadow
	local e=$1
	shift
	case $e in
	switch_flip) flip_switches "$@" ;;
	reset)
		echo 1 >"$SYS/recovery/reset"
		assert_eq "resets" "$(since resets)" 1
		;;
	flr)
		echo 1 >"$PCIDEV/reset"
		assert_eq "PCI resets seen" "$(since pci_resets)" 1
		;;
	cpu_offline)
		echo 0 >"$HOTCPU"
		io_flows
		echo 1 >"$HOTCPU"
		assert_eq "${HOTCPU%/online} back online" "$(cat "$HOTCPU")" 1
		;;
	drop_completions | bad_cids)
		# The request's completion is lost (or names no request in
		# flight): its timeout resets the controller, it runs again.
		arm "$e" 1
		wait_count resets 1 "the reset after the lost completion"
		assert_gt "timeouts" "$(since timeouts)" 0
		;;
	drop_irqs | delay_completions)
		[[ $e == delay_completions ]] && echo 50 >"$FAULT/delay_ms"
		arm "$e" 1
		;;
	abort_completions | retry_completions)
		arm "$e" 1
		wait_count retried 1 "the request to run again"
		;;
	drop_admin_completions)
		# The Abort for a lost completion is never answered: nothing
		# waits for it, the request's next expiry resets.
		echo 1 >"$FAULT/$e"
		arm drop_completions 1
		wait_count resets 1 "the reset after the unanswered Abort"
		assert_eq "admin timeouts" "$(since admin_timeouts)" 0
		;;
	fatal_status)
		echo 1 >"$FAULT/$e"
		arm drop_completions 1
		wait_count fatal_status 1 "the timeout to see CSTS.CFS"
		wait_count resets 1 "the reset for fatal status"
		assert_eq "aborts sent to a controller in fatal status" "$(since aborts)" 0
		;;
	slow_enable_ms)
		echo 500 >"$FAULT/$e"
		echo 1 >"$SYS/recovery/reset"
		echo 0 >"$FAULT/$e"
		assert_gt "last recovery (ms) with a 500 ms enable" "$(rec last_recovery_ms)" 499
		;;
	refuse_dbbuf)
		echo 1 >"$FAULT/$e"
		echo 1 >"$SYS/recovery/reset"
		assert_eq "plugging/shadow_doorbells after the refusal" "$(cat "$SYS/plugging/shadow_doorbells")" 0
		;;
	esac
	if [[ -n ${DONE[$e]:-} ]]; then
		assert_struck "$e" 1
		[[ $e == drop_admin_completions || $e == fatal_status ]] && assert_struck drop_completions 1
	fi
	return 0
}
