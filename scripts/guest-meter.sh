#!/bin/bash
# Runs inside the VM for `make meter` (started by scripts/meter.sh, with the
# meter's TCG plugin loaded in QEMU): ssdq on 00:04.0 and the kernel's nvme
# on 00:05.0, both with poll_queues=1, loaded once (the symbol table copied
# out must stay true for the whole boot). For every job and side, two
# windows marked for the plugin, one of N I/Os and one of 2N: their
# difference is the cost of N I/Os, without fio's start and exit.
#
# Records, in $SSDQ_OUT: kallsyms (the guest's symbols), windows.jsonl (one
# line per window: job, side, variant, the marks around it, I/Os the disk
# completed in it), meta.json. scripts/meter-report.py judges them.
#
# Settings (env): SSDQ_METER_N (I/Os of the short window per fio job
# process; default 2000), SSDQ_METER_JOBS (job names, default all),
# SSDQ_METER_SIDES (default all), SSDQ_METER_REPEAT (pairs of windows per
# job and side, default 1), SSDQ_METER_VARIANTS and _VARIANT_JOBS (ssdq
# switch variants run beside the defaults, see VARIANTS).
set -euo pipefail
# shellcheck source=scripts/guest-bench-lib.sh
. "$(dirname "$0")/guest-bench-lib.sh"

MARK=${SSDQ_METER_MARK:?SSDQ_METER_MARK (the marker program) not set: run through scripts/meter.sh}
N=${SSDQ_METER_N:-2000}
REPEAT=${SSDQ_METER_REPEAT:-1}
B_SIZE=${SSDQ_BENCH_SIZE:-128m}

# name|sides|fio options (the bench's jobs; numjobs x number_ios I/Os
# each). The sides: ssdq's and nvme's block devices, and for reads their
# generic char devices through io_uring passthrough (ssdq_pt, nvme_pt).
JOBS=(
	"rr4k-qd1|ssdq nvme ssdq_pt nvme_pt|--rw=randread --bs=4k --iodepth=1 --numjobs=1"
	"rr4k-qd32x2|ssdq nvme ssdq_pt nvme_pt|--rw=randread --bs=4k --iodepth=32 --numjobs=2 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16"
	"rw4k-qd32x2|ssdq nvme|--rw=randwrite --bs=4k --iodepth=32 --numjobs=2 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16"
	"seq128k-qd8|ssdq nvme|--rw=read --bs=128k --iodepth=8 --numjobs=1 --iodepth_batch_submit=4 --iodepth_batch_complete_min=4"
	"rr4k-qd1-hipri|ssdq nvme ssdq_pt nvme_pt|--rw=randread --bs=4k --iodepth=1 --numjobs=1 --hipri=1 --fixedbufs=1 --registerfiles=1"
	"rr4k-qd32-hipri|ssdq nvme|--rw=randread --bs=4k --iodepth=32 --numjobs=1 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16 --hipri=1 --fixedbufs=1 --registerfiles=1"
)
WANT=${SSDQ_METER_JOBS:-}
WANT_SIDES=${SSDQ_METER_SIDES:-}
# ssdq's switch variants, "name:rel=value,rel=value" (sysfs under
# /sys/block/<disk>/), run on ssdq's block device beside its defaults, in
# the jobs of SSDQ_METER_VARIANT_JOBS (default rr4k-qd1 rr4k-qd32x2).
VARIANTS=${SSDQ_METER_VARIANTS:-}
VARIANT_JOBS=${SSDQ_METER_VARIANT_JOBS:-rr4k-qd1 rr4k-qd32x2}

# The block size of fio options in bytes (--bs=4k): each job process does
# N I/Os as io_size = N x bs, which (unlike number_ios) wraps around the
# region when it is smaller (the 128 KiB sequential job).
fio_bs() { # fio-args...
	local a v=4k
	for a in "$@"; do
		[[ $a != --bs=* ]] || v=${a#--bs=}
	done
	case $v in
	*k) echo $((${v%k} * 1024)) ;;
	*m) echo $((${v%m} * 1048576)) ;;
	*) echo "$v" ;;
	esac
}

MARKS=0 # marks executed so far; the plugin numbers them the same way
mark() {
	"$MARK" || bdie "the marker $MARK failed"
	MARKS=$((MARKS + 1))
}

# One window: the disk's completed I/Os around it, the marks around it
# (mark_from, mark_to: the plugin's numbers; its dump at mark_to is what ran
# since mark_from).
window() { # job side variant n fio-args...
	local job=$1 side=$2 variant=$3 n=$4 rc=0 m0 ios0 jobs bs
	shift 4
	local disk=${DISK_OF[$side]} err=$B_OUT/fio/$job-$side-$variant-$n.err
	local -a engine=(--ioengine=io_uring --direct=1)
	# A passthrough side: fio's io_uring_cmd engine on the generic char
	# device (its options before the job's: fio resets an engine's options
	# when --ioengine changes after them).
	[[ ${COUNT_OF[$side]} != ring ]] || engine=(--ioengine=io_uring_cmd --cmd_type=nvme --direct=0)
	jobs=$(fio_numjobs "$@")
	bs=$(fio_bs "$@")
	disk_ios "$disk"
	ios0=$IOS
	mark
	# The plugin numbers marks from 0: this one is MARKS - 1.
	m0=$((MARKS - 1))
	fio --name="$job" --filename="${FILE_OF[$side]}" "${engine[@]}" \
		--size="$B_SIZE" --norandommap --io_size=$((n * bs)) "$@" \
		--output-format=terse >/dev/null 2>"$err" || rc=$?
	mark
	disk_ios "$disk"
	printf '{"job":"%s","side":"%s","variant":"%s","n":%d,"jobs":%d,"mark_from":%d,"mark_to":%d,"ios":%d,"rc":%d}\n' \
		"$job" "$side" "$variant" "$n" "$jobs" "$m0" $((MARKS - 1)) $((IOS - ios0)) "$rc" >>"$B_OUT/windows.jsonl"
	# (A passthrough side's I/Os pass no disk statistics: QEMU counts them.)
	progress "$(printf '%-15s %-7s %-12s n=%-5d %6s I/Os%s' "$job" "$side" "$variant" "$n" \
		"$([[ ${COUNT_OF[$side]} == ring ]] && echo - || echo $((IOS - ios0)))" \
		"$( ((rc == 0)) || echo " FAILED ($rc): $(head -c 200 "$err")")")"
}

# A pair of windows (N, 2N) per repeat, for one job on one side.
measure() { # job side variant fio-args...
	local job=$1 side=$2 variant=$3 r
	shift 3
	for ((r = 1; r <= REPEAT; r++)); do
		window "$job" "$side" "$variant" "$N" "$@"
		window "$job" "$side" "$variant" $((2 * N)) "$@"
	done
}

[[ -x $MARK ]] || bdie "$MARK missing"
mkdir -p "$B_OUT/fio"
rm -f "$B_OUT/windows.jsonl"
load_ssdq poll_queues=1
load_nvme poll_queues=1
register_generic ssdq_pt ssdq
register_generic nvme_pt nvme
for s in ssdq nvme; do
	d=${DISK_OF[$s]}
	progress "preconditioning /dev/$d ($B_SIZE)"
	fio --name=precondition --filename="/dev/$d" --rw=write --bs=1M --iodepth=8 --ioengine=io_uring \
		--direct=1 --size="$B_SIZE" --output-format=terse >/dev/null 2>"$B_OUT/precondition-$s.err" ||
		bdie "preconditioning /dev/$d failed"
done
# Symbols by address, as loaded now (modules stay loaded to the end).
echo 0 >/proc/sys/kernel/kptr_restrict
cp /proc/kallsyms "$B_OUT/kallsyms"
printf '{"kernel":"%s","vcpus":%d,"n":%d,"repeat":%d,"ssdq_disk":"%s","nvme_disk":"%s","ssdq_pci":"%s","nvme_pci":"%s"}\n' \
	"$(uname -r)" "$(nproc)" "$N" "$REPEAT" "${DISK_OF[ssdq]}" "${DISK_OF[nvme]}" "$PCI_SSDQ" "$PCI_NVME" \
	>"$B_OUT/meta.json"
# The first mark opens the record: everything before it (boot, loading) is
# dumped under mark 0 and never used.
mark
for j in "${JOBS[@]}"; do
	IFS='|' read -r name sides args <<<"$j"
	[[ -z $WANT || " $WANT " == *" $name "* ]] || continue
	for s in $sides; do
		[[ -z $WANT_SIDES || " $WANT_SIDES " == *" $s "* ]] || continue
		# shellcheck disable=SC2086 # args are fio options
		measure "$name" "$s" default $args
	done
	[[ " $VARIANT_JOBS " == *" $name "* ]] || continue
	for v in $VARIANTS; do
		vname=${v%%:*}
		settings=${v#*:}
		settings=${settings//,/ }
		saved=
		for kv in $settings; do
			knob_present "${kv%%=*}" || { progress "variant $vname: no ${kv%%=*} here, skipped"; continue 2; }
			saved+="${kv%%=*}=$(knob_value "${kv%%=*}") "
		done
		knobs_apply "$settings"
		# shellcheck disable=SC2086
		measure "$name" ssdq "$vname" $args
		knobs_apply "$saved"
	done
done
progress "meter: guest part done in ${SECONDS}s ($MARKS marks)"
