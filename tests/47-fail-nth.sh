#!/bin/bash
# fail-nth: allocation failures on every setup and teardown path. The
# kernel's fault injection (failslab, fail_page_alloc) fails the Nth
# allocation a task makes when N is written to its /proc/<pid>/fail-nth.
# For a bind (probe), a sysfs reset (its work runs with the writer's
# countdown, fault.c), an FLR (its restart's work too) and an unbind, and
# a bind and unbind of a controller of two namespaces (vm.sh --namespaces:
# a failure at the second disk unwinds the first; the walk begins 20
# allocations before the DUT's bind walk ended, the ones before being the
# same), the
# 1st, 2nd, 3rd ... allocation of the write(2) that starts it fails in
# turn, until one attempt makes fewer allocations than N: that path has
# been walked. By default only the allocations with ssdq.ko's code among
# their 8 innermost stack frames count (the stack filter): what ssdq
# allocates itself and what the kernel functions it calls allocate for
# it, not the depths of sysfs, debugfs and kobjects, which make a bind's
# full walk over a thousand attempts (SSDQ_FAIL_NTH_DEPTH=0 walks every
# allocation; =D looks D frames deep). Every attempt either succeeds or
# fails cleanly:
#   bind    bound with a disk, or unbound and nothing left (no disk, no
#           debugfs directory, no vector; the next bind gets ssdq0 again)
#   reset, FLR   the controller is alive afterwards (or the write failed
#           before reaching it)
#   unbind  unbound, the disk gone
#   the controller of two namespaces: bound with both disks (ssdq1 and
#           ssdq1n2, the DUT being ssdq0), or unbound with neither
# then the device binds again and does verified I/O. The debug lane's
# checkers judge the rest: no KASAN or lockdep report, no hang, and the
# kmemleak scan after the last test finds nothing this test allocated.
# SSDQ_FAIL_NTH_MAX caps each walk (default: none). Allocations under the
# IRQ core's register_irq_proc() never count (below).
# lanes: debug
# timeout: 3600
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || skip "walks ssdq's own setup and teardown; nothing to do for $DUT"
FI=/sys/kernel/debug
[[ -d $FI/failslab && -d $FI/fail_page_alloc && -e /proc/self/fail-nth ]] ||
	skip "no failslab, fail_page_alloc or fail-nth in this kernel (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC)"

# Sleeping allocations too (GFP_KERNEL), order-0 pages too; one line per
# injected failure, no stack dump (a "Call Trace" fails any test).
declare -A FI0
for a in failslab fail_page_alloc; do
	for k in ignore-gfp-wait verbose; do FI0[$a/$k]=$(cat "$FI/$a/$k"); done
	echo N >"$FI/$a/ignore-gfp-wait"
	echo 1 >"$FI/$a/verbose"
done
FI0[fail_page_alloc/min-order]=$(cat "$FI/fail_page_alloc/min-order")
echo 0 >"$FI/fail_page_alloc/min-order"
# Not counted: allocations under register_irq_proc(). The IRQ core ignores
# a proc entry it failed to create, and its removal then WARNs
# (remove_proc_entry(), "name 'smp_affinity'"): the core's, not ssdq's,
# and it would fail this test for any driver. (The stack filter's reject
# range: the function's text, from kallsyms.)
reject() { # function
	local a start end
	# The core kernel's symbols come in address order: the next one ends
	# it. (Reading no further: all of kallsyms takes minutes here.)
	read -r start end < <(grep -m1 -A1 " $1\$" /proc/kallsyms | awk '{ printf "0x%s ", $1 } END { print "" }')
	[[ -n $start && -n $end ]] || fail "no $1 in /proc/kallsyms"
	for a in failslab fail_page_alloc; do
		for k in reject-start reject-end; do FI0[$a/$k]=$(cat "$FI/$a/$k"); done
		echo "$start" >"$FI/$a/reject-start"
		echo "$end" >"$FI/$a/reject-end"
	done
}
t0=$SECONDS
reject register_irq_proc
log "register_irq_proc's allocations are not counted (kallsyms read in $((SECONDS - t0)) s)"
# Count only the allocations with ssdq's code in the D innermost frames of
# their stack (the stack filter, with ssdq.ko's .text as the range).
focus() {
	local a text size
	text=$(cat /sys/module/ssdq/sections/.text)
	size=$(readelf -SW "$DUT_KO" | awk '{ for (i = 1; i < NF; i++)
		if ($i == ".text" && !n++) print "0x" $(i + 4) }')
	[[ -n $text && -n $size ]] || fail "no .text address or size for ssdq.ko"
	for a in failslab fail_page_alloc; do
		for k in require-start require-end stacktrace-depth; do
			FI0[$a/$k]=$(cat "$FI/$a/$k")
		done
		echo "$text" >"$FI/$a/require-start"
		printf '0x%x\n' $((text + size)) >"$FI/$a/require-end"
		echo "$1" >"$FI/$a/stacktrace-depth"
	done
	log "counting only allocations with ssdq.ko's .text ($text, $size bytes) in their $1 innermost frames"
}
restore() {
	local k
	for k in "${!FI0[@]}"; do echo "${FI0[$k]}" >"$FI/$k"; done
}
trap restore EXIT
allow_dmesg 'FAULT_INJECTION: forcing a failure|name fail(slab|_page_alloc), interval'
# What a failed step says, naming the device or the errno.
allow_dmesg 'ENOMEM|-12|[Cc]annot allocate memory|failed|resetting the controller|reset done|stopping the controller'
# ... or not: a vector allocation that failed ends with the PCI core's
# MSI fallback (-EINVAL), a debugfs directory that could not be made says so.
allow_dmesg 'needs at least 2 MSI-X/MSI vectors|out of free dentries'

DRV=/sys/bus/pci/drivers/ssdq
PCIDEV=/sys/bus/pci/devices/$PCI_DUT
MAX=${SSDQ_FAIL_NTH_MAX:-1000000}
bound() { [[ -e $DRV/$PCI_DUT ]]; }

# One attempt: the Nth allocation of writing VALUE to FILE fails. Prints
# the write's status (0 or 1) and what is left of the countdown (above 0:
# the write made fewer than N allocations). The files are opened first,
# so their opening is not counted.
nth_write() { # file value n
	(
		exec 2>/dev/null 3>"$1" 4>/proc/self/fail-nth 5</proc/self/fail-nth
		echo "$3" >&4
		rc=0
		echo "$2" >&3 || rc=1
		read -r left <&5
		echo "$rc $left"
	)
}

# No trace of a device that is not bound.
assert_unbound_clean() { # what
	! bound || fail "$1: still bound"
	[[ -z $(disk_of_pci "$PCI_DUT" 2>/dev/null) ]] || fail "$1: a disk is left"
	[[ ! -e /sys/kernel/debug/ssdq/ssdq0 ]] || fail "$1: its debugfs directory is left"
	! grep -q 'ssdq[0-9]*q[0-9]' /proc/interrupts || fail "$1: an interrupt vector is left"
}

bind_clean() {
	echo "$PCI_DUT" >"$DRV/bind"
	dut_wait_disk
	[[ $DISK == ssdq0 ]] || fail "bound as $DISK, not ssdq0: an instance number leaked"
}
unbind_clean() {
	echo "$PCI_DUT" >"$DRV/unbind"
	assert_unbound_clean "an unbind"
}
alive() { [[ $(kv_get "/sys/kernel/debug/ssdq/$DISK/recovery" dead) == 0 ]]; }

# Walk one path: attempt n = 1, 2, ... until the countdown outlives it.
# PREPARE puts the device in the state the path starts from, CHECK judges
# an attempt (the write's status in $RC).
walk() { # name file value prepare check [first-n]
	local name=$1 n rc left t failed=0 t0=$SECONDS
	for ((n = ${6:-1}; n <= MAX; n++)); do
		$4
		t=$SECONDS
		read -r rc left < <(nth_write "$2" "$3" "$n")
		RC=$rc
		echo "$name $n: status $rc, countdown left $left, $((SECONDS - t)) s" >>"$T_DIR/attempts"
		$5 "$name, allocation $n"
		((rc == 0)) || failed=$((failed + 1))
		((left == 0)) || break
	done
	((n <= MAX)) || log "$name: stopped at SSDQ_FAIL_NTH_MAX=$MAX"
	((RC == 0)) || fail "$name: the attempt without an injected failure failed"
	ok "$name: walked $((n - 1)) allocations (from ${6:-1}), $failed of them failed the write, in $((SECONDS - t0)) s"
	echo "$name $((n - 1)) $failed $((SECONDS - t0))" >>"$T_DIR/walks"
	WALKED=$((n - 1))
}

# bind: from unbound; a failed bind leaves nothing behind.
bind_prepare() { bound && unbind_clean; return 0; }
bind_check() {
	if ((RC == 0)); then
		dut_wait_disk
		[[ $DISK == ssdq0 ]] || fail "$1: bound as $DISK, not ssdq0"
	else
		assert_unbound_clean "$1"
	fi
}
# unbind: from bound; unbound after, unless the write failed before it
# reached the driver core (still bound, and alive).
unbind_prepare() { bound || bind_clean; }
unbind_check() {
	if ((RC == 0)); then
		assert_unbound_clean "$1"
	else
		bound && alive || fail "$1: a failed unbind left the device unbound or dead"
	fi
}
# reset and FLR: from bound; the controller alive after.
reset_prepare() {
	bound || bind_clean
	DISK=$(disk_of_pci "$PCI_DUT")
}
reset_check() { alive || fail "$1: the controller is dead"; }

# The controller of two namespaces, bound beside the DUT: ssdq1, ssdq1n2.
multi_bound() { [[ -e $DRV/$PCI_MULTI ]]; }
multi_disks() { disks_of_pci "$PCI_MULTI" | tr '\n' ' '; }
multi_both() { [[ $(multi_disks) == "ssdq1 ssdq1n2 " ]]; }
multi_unbound_clean() { # what
	! multi_bound || fail "$1: still bound"
	[[ -z $(multi_disks) ]] || fail "$1: disks are left: $(multi_disks)"
	[[ ! -e /sys/kernel/debug/ssdq/ssdq1 ]] || fail "$1: its debugfs directory is left"
}
multi_unbind() {
	echo "$PCI_MULTI" >"$DRV/unbind"
	multi_unbound_clean "an unbind of the namespaces' controller"
}
multi_bind_prepare() { multi_bound && multi_unbind; return 0; }
multi_bind_check() {
	if ((RC == 0)); then
		wait_for 60 "$1: both disks" multi_both
	else
		multi_unbound_clean "$1"
	fi
}
multi_unbind_prepare() {
	multi_bound || echo "$PCI_MULTI" >"$DRV/bind"
	wait_for 60 "both disks of the namespaces' controller" multi_both
}
multi_unbind_check() {
	if ((RC == 0)); then
		multi_unbound_clean "$1"
	else
		multi_bound && multi_both || fail "$1: a failed unbind left it unbound or without its disks"
	fi
}

dut_load
DEPTH=${SSDQ_FAIL_NTH_DEPTH:-8}
((DEPTH == 0)) || focus "$DEPTH"
: >"$T_DIR/walks"
walk bind "$DRV/bind" "$PCI_DUT" bind_prepare bind_check
bind_walked=$WALKED
walk reset "/sys/block/ssdq0/recovery/reset" 1 reset_prepare reset_check
walk flr "$PCIDEV/reset" 1 reset_prepare reset_check
walk unbind "$DRV/unbind" "$PCI_DUT" unbind_prepare unbind_check
# The namespaces' controller: its bind makes the DUT's allocations (walked
# above), then those of a second namespace's disk and generic device; the
# walk starts 20 before where the DUT's ended (after which its controller
# char device and rescan file came), in the first namespace's.
if [[ -e /sys/bus/pci/devices/$PCI_MULTI ]]; then
	bind_clean
	set_override "$PCI_MULTI" ssdq
	first=$((bind_walked > 20 ? bind_walked - 20 : 1))
	walk bind-namespaces "$DRV/bind" "$PCI_MULTI" multi_bind_prepare multi_bind_check "$first"
	walk unbind-namespaces "$DRV/unbind" "$PCI_MULTI" multi_unbind_prepare multi_unbind_check
	multi_bound && multi_unbind
	set_override "$PCI_MULTI" none
	unbind_clean
fi
restore
trap - EXIT
bind_clean
SZ=$((16 * MiB / IO_DIV))
run_fio after-walks "$SZ" "$SZ" --name=after --filename="$DEV" --direct=1 \
	--ioengine=io_uring --rw=randwrite --bssplit=4k/50:64k/50 --size="$SZ" \
	--offset="$REG_INTEGRITY_OFF" --iodepth=16 --verify=crc32c
cat "$T_DIR/walks"
dut_unload
