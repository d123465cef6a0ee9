#!/bin/bash
# Runs inside the VM for `make bench` (started by scripts/bench.sh): ssdq on
# 00:04.0 side by side with the kernel's nvme on the identical 00:05.0, in
# this one boot. Records raw figures only (runs.jsonl, mem.jsonl,
# notes.jsonl, meta.json in $SSDQ_OUT); scripts/bench-report.py judges them.
#
# Sections, in order (SSDQ_BENCH_SECTIONS picks a subset):
#   mem     kernel memory per driver: module alone, then per controller
#           (bind/unbind cycles, both drivers alternately)
#   calib   A/A controls: nvme on BOTH controllers, then ssdq on both,
#           every main job, to show how much the two slots differ by
#           themselves (the noise floor of every ratio)
#   main    the comparison jobs, ssdq and nvme alternately, R crossover
#           rounds (halfway through each, the drivers swap controllers)
#   profile perf profiles of the 4k QD1 and QD32 jobs, both drivers, inside
#           fio's steady state
#   polled  4k QD1 --hipri with both drivers reloaded with poll_queues=1
#   pt      io_uring passthrough: 4k QD1, QD32x2 and polled QD1 on both
#           drivers' generic char devices beside their block devices
#   abl     ssdq ablations (doorbell batching, shadow doorbells, interrupt
#           mode) at several queue depths, with nvme as the reference
#   steer   completion steering off/ipi/blk with ssdq on one I/O queue
#   scale   4k random read curves over queue depth x numjobs, ssdq and
#           nvme alternately, short runs, one crossover (both layouts)
# A switch the driver does not have yet is recorded as unavailable and its
# runs are skipped; nothing here fails because of it.
#
# Settings (env, forwarded by vm.sh): SSDQ_BENCH_QUICK=1 (short variant),
# SSDQ_BENCH_RUNTIME/_RAMP_MS/_ROUNDS (main jobs), SSDQ_BENCH_CALIB_ROUNDS
# (A/A controls), SSDQ_BENCH_ABL_RUNTIME/
# _ABL_RAMP_MS/_ABL_ROUNDS/_ABL_QDS/_STEER_QDS, SSDQ_BENCH_MEM_CYCLES,
# SSDQ_BENCH_SIZE (region every job uses, preconditioned),
# SSDQ_BENCH_DEFER_US, SSDQ_BENCH_PROFILE_FREQ (perf samples/s per vCPU),
# SSDQ_BENCH_SCALE_QDS/_SCALE_NUMJOBS (the scale grid),
# SSDQ_BENCH_SCALE_RUNTIME/_SCALE_RAMP_MS/_SCALE_ROUNDS/_SCALE_CROSSOVER,
# SSDQ_BENCH_PT_ROUNDS and _PT_PROFILE (passthrough section; its profiles
# default to on in the full variant only).
# Defaults: Documentation/bench.rst.
set -euo pipefail
# shellcheck source=scripts/guest-bench-lib.sh
. "$(dirname "$0")/guest-bench-lib.sh"

QUICK=${SSDQ_BENCH_QUICK:-0}
if [[ $QUICK == 1 ]]; then
	d_rt=2 d_ramp=250 d_rounds=3 d_abl_rt=1 d_abl_ramp=250 d_abl_rounds=1 d_qds="1 32" d_steer_qds=32
	d_mem=1 d_sections="mem main polled pt abl steer scale"
	d_scale_qds="1 8 32 128" d_scale_nj="1 2" d_scale_rt=1 d_scale_ramp=250 d_scale_x=0
else
	d_rt=8 d_ramp=1000 d_rounds=5 d_abl_rt=3 d_abl_ramp=500 d_abl_rounds=2 d_qds="1 4 16 32" d_steer_qds=$d_qds
	d_mem=3 d_sections="mem calib main profile polled pt abl steer scale"
	d_scale_qds="1 2 4 8 16 32 64 128" d_scale_nj="1 2 3 4" d_scale_rt=2 d_scale_ramp=500 d_scale_x=1
fi
RT=${SSDQ_BENCH_RUNTIME:-$d_rt}
RAMP=${SSDQ_BENCH_RAMP_MS:-$d_ramp}
ROUNDS=${SSDQ_BENCH_ROUNDS:-$d_rounds}
CALIB_ROUNDS=${SSDQ_BENCH_CALIB_ROUNDS:-3}
ABL_RT=${SSDQ_BENCH_ABL_RUNTIME:-$d_abl_rt}
ABL_RAMP=${SSDQ_BENCH_ABL_RAMP_MS:-$d_abl_ramp}
ABL_ROUNDS=${SSDQ_BENCH_ABL_ROUNDS:-$d_abl_rounds}
ABL_QDS=${SSDQ_BENCH_ABL_QDS:-$d_qds}
STEER_QDS=${SSDQ_BENCH_STEER_QDS:-$d_steer_qds}
MEM_CYCLES=${SSDQ_BENCH_MEM_CYCLES:-$d_mem}
SECTIONS=${SSDQ_BENCH_SECTIONS:-$d_sections}
DEFER_US=${SSDQ_BENCH_DEFER_US:-300}
SCALE_QDS=${SSDQ_BENCH_SCALE_QDS:-$d_scale_qds}
SCALE_NJ=${SSDQ_BENCH_SCALE_NUMJOBS:-$d_scale_nj}
SCALE_RT=${SSDQ_BENCH_SCALE_RUNTIME:-$d_scale_rt}
SCALE_RAMP=${SSDQ_BENCH_SCALE_RAMP_MS:-$d_scale_ramp}
SCALE_ROUNDS=${SSDQ_BENCH_SCALE_ROUNDS:-1}
SCALE_X=${SSDQ_BENCH_SCALE_CROSSOVER:-$d_scale_x}
B_SIZE=${SSDQ_BENCH_SIZE:-128m}
NCPU=$(nproc)
PRECONDITIONED=

# The comparison jobs: name|depth|fio options (identical on both sides).
# At depth > 1 the job reaps and submits in batches of half the depth
# (iodepth_batch_complete_min = iodepth_batch_submit = depth/2), the way an
# io_uring application at depth works, and the case doorbell batching is
# for. fio's default (1/1) makes every submission a single command.
MAIN_JOBS=(
	"rr4k-qd1|1|--rw=randread --bs=4k --iodepth=1 --numjobs=1"
	"rr4k-qd32x2|32|--rw=randread --bs=4k --iodepth=32 --numjobs=2 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16"
	"rw4k-qd32x2|32|--rw=randwrite --bs=4k --iodepth=32 --numjobs=2 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16"
	"seq128k-qd8|8|--rw=read --bs=128k --iodepth=8 --numjobs=1 --iodepth_batch_submit=4 --iodepth_batch_complete_min=4"
)
POLLED_JOB="rr4k-qd1-hipri|1|--rw=randread --bs=4k --iodepth=1 --numjobs=1 --hipri=1"

has_section() { [[ " $SECTIONS " == *" $1 "* ]]; }

note_json() { # kind what why [extra-json]
	jq -nc --arg kind "$1" --arg what "$2" --arg why "$3" --argjson x "${4:-null}" \
		'{kind: $kind, what: $what, why: $why, extra: $x}' >>"$B_OUT/notes.jsonl"
}

unavailable() { # what why
	note_json unavailable "$1" "$2"
	progress "not available: $1 ($2)"
}

# Pair order flips every round (ssdq nvme, nvme ssdq, ...): a steady drift or
# a "second run is warmer" effect then hits both sides alike.
pair_order() { # round a b
	if (($1 % 2)); then echo "$2 $3"; else echo "$3 $2"; fi
}

# Sequential 1 MiB writes over the job region of both disks: reads must
# never hit holes in one image and data in the other.
precondition() { # side...
	local s d
	for s in "$@"; do
		d=${DISK_OF[$s]:?no disk for $s}
		progress "preconditioning /dev/$d ($B_SIZE)"
		timeout -k 10 600 fio --name=precondition --filename="/dev/$d" --rw=write --bs=1M \
			--iodepth=8 --ioengine=io_uring --direct=1 --size="$B_SIZE" \
			--output-format=terse >/dev/null 2>"$B_OUT/precondition-$s.err" ||
			bdie "preconditioning /dev/$d failed: $(head -n2 "$B_OUT/precondition-$s.err")"
	done
}

# ----------------------------------------------------------------- mem

# One driver's memory cycle: unloaded, module alone, bound to its
# controller, module alone again, unloaded again. Every step is a separate
# /proc/meminfo sample (mem_record), so both costs get a before and an after.
mem_cycle() { # driver cycle
	local d=$1 c=$2 pci=$PCI_SSDQ
	[[ $d == nvme ]] && pci=$PCI_NVME
	set_override "$pci" "$NOBODY"
	mem_record "$d" unloaded_before "$c"
	if [[ $d == ssdq ]]; then
		insmod "$B_KO" || bdie "insmod ssdq.ko failed"
	else
		modprobe nvme || bdie "modprobe nvme failed"
	fi
	mem_record "$d" module_before "$c"
	((c == 1)) && slab_bytes >"$B_OUT/slab.before"
	bind_pci "$pci" "$d"
	mem_record "$d" bound "$c"
	if ((c == 1)); then
		# Biggest slab growth of the first bind, for the report.
		slab_bytes >"$B_OUT/slab.after"
		join "$B_OUT/slab.before" "$B_OUT/slab.after" |
			awk '$3 - $2 > 0 { print $1, $3 - $2 }' | sort -k2,2nr | head -n 8 |
			jq -Rnc --arg d "$d" '{driver: $d, slab_growth: [inputs | split(" ") | {cache: .[0], bytes: (.[1] | tonumber)}]}' \
				>>"$B_OUT/mem-slab.jsonl"
	fi
	unbind_pci "$pci"
	mem_record "$d" module_after "$c"
	if [[ $d == ssdq ]]; then unload_ssdq; else unload_nvme; fi
	mem_record "$d" unloaded_after "$c"
}

section_mem() {
	progress "memory: $MEM_CYCLES cycle(s) per driver of unloaded/module/bound/module/unloaded"
	unload_ssdq
	unload_nvme
	set_override "$PCI_SSDQ" "$NOBODY"
	set_override "$PCI_NVME" "$NOBODY"
	# Warm-up, not measured: the first load of each module and the first
	# run of the tools allocate things once per boot (slab caches, tool
	# page cache) that would otherwise be charged to whichever went first.
	insmod "$B_KO" && rmmod ssdq
	modprobe nvme && modprobe -r nvme
	mem_sample >/dev/null
	local c d
	for ((c = 1; c <= MEM_CYCLES; c++)); do
		# Alternate which driver goes first, like the runs.
		for d in $(pair_order "$c" ssdq nvme); do
			mem_cycle "$d" "$c"
		done
		progress "memory: cycle $c/$MEM_CYCLES done"
	done
}

# --------------------------------------------------------------- calib

# Both controllers on one driver, every main job alternating between the
# two slots: the A/A controls. Their ratio is the slots and the noise, the
# yardstick each ssdq/nvme ratio is read against (the report puts the
# control's interval beside it).
aa_bind() { # driver
	unload_ssdq
	unload_nvme
	set_override "$PCI_SSDQ" "$1"
	set_override "$PCI_NVME" "$1"
	if [[ $1 == ssdq ]]; then
		insmod "$B_KO" || bdie "insmod ssdq.ko failed"
	else
		modprobe nvme || bdie "modprobe nvme failed"
	fi
	wait_until 60 disk_of_pci "$PCI_SSDQ" >/dev/null || bdie "$1 made no disk under $PCI_SSDQ"
	wait_until 60 disk_of_pci "$PCI_NVME" >/dev/null || bdie "$1 made no disk under $PCI_NVME"
	udev_settle_disk "$(disk_of_pci "$PCI_SSDQ")"
	udev_settle_disk "$(disk_of_pci "$PCI_NVME")"
	register_side slot04 "$PCI_SSDQ"
	register_side slot05 "$PCI_NVME"
}

section_calib() {
	local d r j s name qd args
	RUN_TOTAL=$((RUN_TOTAL + 4 * CALIB_ROUNDS * ${#MAIN_JOBS[@]}))
	for d in nvme ssdq; do
		progress "A/A control: $d on both controllers"
		aa_bind "$d"
		if [[ -z $PRECONDITIONED ]]; then
			precondition slot04 slot05
			PRECONDITIONED=1
		fi
		for ((r = 1; r <= CALIB_ROUNDS; r++)); do
			for j in "${MAIN_JOBS[@]}"; do
				IFS='|' read -r name qd args <<<"$j"
				for s in $(pair_order "$r" slot04 slot05); do
					# shellcheck disable=SC2086 # args are fio options
					measure_run calib "$name" "$s" "$d" "$qd" "$r" "$RT" "$RAMP" $args
				done
			done
		done
	done
	unload_ssdq
	unload_nvme
	set_override "$PCI_SSDQ" "$NOBODY"
	set_override "$PCI_NVME" "$NOBODY"
}

# ---------------------------------------------------------------- main

# Both drivers loaded with the given params (and the region written once).
# A driver already loaded with those params is left alone: reloads cost
# seconds here.
SSDQ_LOADED_AS=-
NVME_LOADED_AS=-
setup_pair() { # "ssdq params" "nvme params"
	if [[ $SSDQ_LOADED_AS != "$1" ]] || ! module_loaded ssdq; then
		# shellcheck disable=SC2086 # word lists of module parameters
		load_ssdq $1
		SSDQ_LOADED_AS=$1
	fi
	if [[ $NVME_LOADED_AS != "$2" ]] || ! module_loaded nvme || [[ $(bound_driver "$PCI_NVME") != nvme ]]; then
		# shellcheck disable=SC2086
		load_nvme $2
		NVME_LOADED_AS=$2
	fi
	progress "ssdq ($1) -> /dev/$SSDQ_DISK, nvme ($2) -> /dev/$NVME_DISK"
	if [[ -z $PRECONDITIONED ]]; then
		precondition ssdq nvme
		PRECONDITIONED=1
	fi
}

# The crossover: each driver moves to the other's controller, both staying
# loaded as they are. The two slots are not equal by themselves (the A/A
# controls once showed random writes 22-27% slower on 00:04.0 with either
# driver), so every round runs each pair once per layout, and the round's
# ratio (bench-report.py) is the geometric mean of the two: the slots'
# difference multiplies one and divides the other, and cancels.
swap_slots() {
	local a=$PCI_SSDQ b=$PCI_NVME
	unbind_pci "$a"
	unbind_pci "$b"
	PCI_SSDQ=$b PCI_NVME=$a
	bind_pci "$PCI_SSDQ" ssdq
	bind_pci "$PCI_NVME" nvme
	SSDQ_DISK=$(disk_of_pci "$PCI_SSDQ")
	NVME_DISK=$(disk_of_pci "$PCI_NVME")
	register_side ssdq "$PCI_SSDQ"
	register_side nvme "$PCI_NVME"
	progress "crossover: ssdq -> $PCI_SSDQ (/dev/$SSDQ_DISK), nvme -> $PCI_NVME (/dev/$NVME_DISK)"
}

# Back to ssdq on 00:04.0, where every other section measures it.
home_slots() {
	[[ $PCI_SSDQ == "$PCI_DUT" ]] || swap_slots
}

# R crossover rounds of ssdq against nvme over the given jobs: each round
# runs every job on both sides in one layout, then swaps the drivers'
# slots and runs them all again (A B, B A, A B, ...: one swap per round).
# The pair order flips with each half too, so within a round neither the
# slots nor going second favour a side; and which layout goes with ssdq
# first alternates between rounds, so the slot effect the report derives
# from the two layouts is not the order's effect in disguise.
crossover_rounds() { # section variant job-spec...
	local section=$1 variant=$2 r half layout j name qd args s
	shift 2
	RUN_TOTAL=$((RUN_TOTAL + 4 * ROUNDS * $#))
	for ((r = 1; r <= ROUNDS; r++)); do
		for half in 0 1; do
			((half == 0)) || swap_slots
			layout=$(((r - 1 + half) % 2))
			for j in "$@"; do
				IFS='|' read -r name qd args <<<"$j"
				for s in $(pair_order $((layout + r)) ssdq nvme); do
					# shellcheck disable=SC2086 # args are fio options
					measure_run "$section" "$name" "$s" "$variant" "$qd" "$r" "$RT" "$RAMP" $args
				done
			done
		done
	done
	home_slots
}

# Round-major: every round runs every job, so a slow phase of the host
# touches all jobs a little rather than one job a lot.
section_main() {
	setup_pair "" ""
	crossover_rounds main default "${MAIN_JOBS[@]}"
}

section_polled() {
	local sides="ssdq nvme"
	if ! ssdq_has_param poll_queues; then
		unavailable "polled job on ssdq" "ssdq.ko has no poll_queues parameter; nvme measured alone"
		sides=nvme
		setup_pair "" "poll_queues=1"
	else
		setup_pair "poll_queues=1" "poll_queues=1"
		if [[ $(cat "/sys/block/$SSDQ_DISK/queue/io_poll") != 1 ]]; then
			unavailable "polled job on ssdq" "poll_queues=1 loaded but queue/io_poll is not 1; nvme measured alone"
			sides=nvme
		fi
	fi
	[[ $(cat "/sys/block/$NVME_DISK/queue/io_poll") == 1 ]] ||
		bdie "nvme poll_queues=1: queue/io_poll is not 1"
	if [[ $sides == nvme ]]; then
		RUN_TOTAL=$((RUN_TOTAL + ROUNDS))
		local r name qd args
		IFS='|' read -r name qd args <<<"$POLLED_JOB"
		for ((r = 1; r <= ROUNDS; r++)); do
			# shellcheck disable=SC2086 # args are fio options
			measure_run polled "$name" nvme poll_queues=1 "$qd" "$r" "$RT" "$RAMP" $args
		done
	else
		crossover_rounds polled poll_queues=1 "$POLLED_JOB"
	fi
}

# ------------------------------------------------------------- profile

# Where the CPU time goes in the headline jobs (4k random read at QD1 and
# QD32), ssdq's and nvme's side by side: perf record of every vCPU with
# call graphs (the cpu-clock event: TCG has no PMU), then perf report's flat
# profile by symbol (profile/<job>-<side>.txt, .children with callees).
#
# perf takes seconds to start under TCG (it reads /proc/kallsyms and every
# task's maps over 9p before the first sample): started beside fio, as it
# once was, it began sampling after fio had ended, and 99% of the samples
# were the idle loop. So perf starts first with its events disabled
# (-D -1), is switched on through its control FIFO once fio is past its
# ramp and off before fio's runtime ends, and the window is checked: fio
# still running at its end, and /proc/stat's busy share over the same
# window beside the share of samples outside the idle loop
# (profile/<job>-<side>.json).
PROFILE_FREQ=${SSDQ_BENCH_PROFILE_FREQ:-1000}
PROFILE_DIR=profile # under $B_OUT: profile/ (this section), profile-pt/ (pt)
perf_ready() {
	command -v perf >/dev/null || return 1
	# Kernel symbols by name: addresses in /proc/kallsyms, any sampler.
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
}

section_profile() {
	if ! perf_ready; then
		unavailable "profiles" "no perf (Debian's linux-perf, make deps)"
		return 0
	fi
	setup_pair "" ""
	PROFILE_DIR=profile
	mkdir -p "$B_OUT/$PROFILE_DIR"
	local i s name qd args
	for i in 0 1; do
		IFS='|' read -r name qd args <<<"${MAIN_JOBS[i]}"
		for s in $(pair_order "$i" ssdq nvme); do
			# shellcheck disable=SC2086 # args are fio options
			profile_run "$name" "$s" $args
		done
	done
}

# Send CMD to perf's control FIFO and wait (up to SECS) for its ack.
perf_ctl() { # cmd secs
	local a
	echo "$1" >&"$PERF_CTL" || return 1
	read -r -t "$2" -u "$PERF_ACK" a || return 1
	[[ $a == ack ]]
}

PERF_CTL=
PERF_ACK=
profile_run() { # job side fio-args...
	local job=$1 side=$2 ppid pid base late=0 ok=1 rc=0 win_ms ti
	shift 2
	local disk=${DISK_OF[$side]:?no disk registered for $side} out=$B_OUT/$PROFILE_DIR/$job-$side
	# perf.data in the guest's tmpfs: written over 9p, perf's own writes
	# were most of the busy samples.
	local data=/tmp/ssdq-perf.data ctl=/tmp/ssdq-perf.ctl ack=/tmp/ssdq-perf.ack
	rm -f "$data" "$data.old" "$ctl" "$ack"
	mkfifo "$ctl" "$ack"
	exec {PERF_CTL}<>"$ctl" {PERF_ACK}<>"$ack"
	perf record -e cpu-clock -F "$PROFILE_FREQ" -a -g -D -1 --control "fifo:$ctl,$ack" \
		-o "$data" >/dev/null 2>"$out.perf.err" &
	ppid=$!
	# Answered once perf has synthesized its events and polls the FIFO.
	if ! perf_ctl disable 120; then
		kill -INT "$ppid" 2>/dev/null || true
		wait "$ppid" || true
		exec {PERF_CTL}>&- {PERF_ACK}>&-
		note_json failed "profile $job $side" "perf did not start: $(head -c 200 "$out.perf.err")"
		return 0
	fi
	fio_common "$RT" "$RAMP"
	side_base "$side"
	base=$IOS
	nice -n "$FIO_NICE" fio --name="$job" --filename="${FILE_OF[$side]}" "${FIO_COMMON[@]}" "$@" \
		--output="$out.fio.json" >/dev/null 2>"$out.fio.err" &
	pid=$!
	RING_LOST=0
	if wait_io_start "$side" "$base" "$pid" "$(fio_numjobs "$@")"; then
		ti=${EPOCHREALTIME/./}
		nap_until $((ti + RAMP * 1000))
		# The window: the runtime less a tenth (at least 300 ms) at the end.
		win_ms=$((RT * 1000 - (RT * 100 > 300 ? RT * 100 : 300)))
		snapshot "$side" SNAP_A a
		perf_ctl enable 30 || ok=0
		nap_until $((ti + (RAMP + win_ms) * 1000))
		perf_ctl disable 30 || ok=0
		snapshot "$side" SNAP_B b
		kill -0 "$pid" 2>/dev/null || late=1
		((RING_LOST == 0)) || late=1
	else
		ok=0
	fi
	kill -INT "$ppid" 2>/dev/null || true
	wait "$ppid" || true
	wait "$pid" || rc=$?
	exec {PERF_CTL}>&- {PERF_ACK}>&-
	rm -f "$ctl" "$ack"
	if ((!ok)); then
		note_json failed "profile $job $side" "no sampling window (fio status $rc, perf: $(head -c 200 "$out.perf.err"))"
		rm -f "$data"
		return 0
	fi
	printf '{"job":"%s","side":"%s","disk":"%s","slot":"%s","fio_rc":%d,"late":%d,"freq":%d,"counters":%s}\n' \
		"$job" "$side" "$disk" "${SLOT_OF[$side]}" "$rc" "$late" "$PROFILE_FREQ" \
		"$(snapshot_delta SNAP_A SNAP_B)" >"$out.json"
	# Self time, and time with callees (callchains: -g).
	perf report -i "$data" --kallsyms=/proc/kallsyms --stdio --no-children \
		--sort symbol -g none --percent-limit 0.05 >"$out.txt" 2>>"$out.perf.err" || true
	perf report -i "$data" --kallsyms=/proc/kallsyms --stdio --children \
		--sort symbol -g none --percent-limit 0.05 >"$out.children" 2>>"$out.perf.err" || true
	# Samples per vCPU, exact (the header rounds them): against freq x
	# window, they show whether the sampling kept up.
	perf report -i "$data" --stdio --no-children --sort cpu -F overhead,sample -g none \
		>"$out.cpu" 2>>"$out.perf.err" || true
	rm -f "$data" "$data.old"
	progress "profile $job $side: $(grep -c '%' "$out.txt" 2>/dev/null || echo 0) symbols over 0.05%$( ((late)) && echo ', fio ended inside the window')"
}

# ------------------------------------------------------------------ pt

# io_uring passthrough (Documentation/passthrough.rst): the same jobs on
# four sides in one boot, ssdq's generic char device (ssdq_pt), nvme's
# (nvme_pt) and the two block devices, both drivers loaded with
# poll_queues=1 for the polled job. fio's io_uring_cmd engine sends NVMe
# reads straight to the driver (no bio, no block-layer merging or
# statistics); the block sides use io_uring's read on /dev/<disk> as
# everywhere else. The crossover and the rotating order are the main
# section's. The report compares ssdq_pt with nvme_pt (the drivers'
# passthrough) and with ssdq (what the block path costs on ssdq), nvme_pt
# with nvme beside them. In the full variant, perf profiles of the QD32
# job on ssdq, ssdq_pt and nvme_pt then show where the difference is, by
# layer (profile-pt/).
PT_ROUNDS=${SSDQ_BENCH_PT_ROUNDS:-$((QUICK ? 2 : 3))}
PT_SIDES=(ssdq_pt nvme_pt ssdq nvme)
PT_ENGINE=(--ioengine=io_uring_cmd --cmd_type=nvme --direct=0)
PT_JOBS=(
	"${MAIN_JOBS[0]}"
	"${MAIN_JOBS[1]}"
	"$POLLED_JOB"
)

register_pt_sides() {
	register_generic ssdq_pt ssdq
	register_generic nvme_pt nvme
}

# The sides in turn, starting from the K-th: every side goes first once
# every four runs of a job.
pt_order() { # k
	local i n=${#PT_SIDES[@]}
	for ((i = 0; i < n; i++)); do
		echo "${PT_SIDES[($1 + i) % n]}"
	done
}

pt_run() { # side job qd round fio-args...
	local side=$1 job=$2 qd=$3 r=$4
	shift 4
	# The engine before the job's options: fio resets an engine's options
	# (hipri) when --ioengine changes after them.
	if [[ ${COUNT_OF[$side]} == ring ]]; then
		measure_run pt "$job" "$side" poll_queues=1 "$qd" "$r" "$RT" "$RAMP" "${PT_ENGINE[@]}" "$@"
	else
		measure_run pt "$job" "$side" poll_queues=1 "$qd" "$r" "$RT" "$RAMP" "$@"
	fi
}

section_pt() {
	local r half layout k j name qd args s
	setup_pair "poll_queues=1" "poll_queues=1"
	[[ $(cat "/sys/block/$SSDQ_DISK/queue/io_poll") == 1 ]] ||
		bdie "ssdq poll_queues=1: queue/io_poll is not 1"
	register_pt_sides
	RUN_TOTAL=$((RUN_TOTAL + 2 * PT_ROUNDS * ${#PT_JOBS[@]} * ${#PT_SIDES[@]}))
	progress "passthrough: ${#PT_JOBS[@]} jobs x ${#PT_SIDES[@]} sides (${FILE_OF[ssdq_pt]}, ${FILE_OF[nvme_pt]}, /dev/$SSDQ_DISK, /dev/$NVME_DISK) x $PT_ROUNDS round(s), 2 layouts"
	for ((r = 1; r <= PT_ROUNDS; r++)); do
		for half in 0 1; do
			if ((half)); then
				swap_slots
				register_pt_sides
			fi
			layout=$(((r - 1 + half) % 2))
			k=0
			for j in "${PT_JOBS[@]}"; do
				IFS='|' read -r name qd args <<<"$j"
				for s in $(pt_order $((2 * layout + r + k))); do
					# shellcheck disable=SC2086 # args are fio options
					pt_run "$s" "$name" "$qd" "$r" $args
				done
				k=$((k + 1))
			done
		done
	done
	home_slots
	register_pt_sides
	[[ ${SSDQ_BENCH_PT_PROFILE:-$((1 - QUICK))} == 1 ]] || return 0
	if ! perf_ready; then
		unavailable "passthrough profiles" "no perf (Debian's linux-perf, make deps)"
		return 0
	fi
	PROFILE_DIR=profile-pt
	mkdir -p "$B_OUT/$PROFILE_DIR"
	IFS='|' read -r name qd args <<<"${MAIN_JOBS[1]}"
	for s in ssdq ssdq_pt nvme_pt; do
		if [[ ${COUNT_OF[$s]} == ring ]]; then
			# shellcheck disable=SC2086
			profile_run "$name" "$s" "${PT_ENGINE[@]}" $args
		else
			# shellcheck disable=SC2086
			profile_run "$name" "$s" $args
		fi
	done
	PROFILE_DIR=profile
}

# ----------------------------------------------------------------- abl

# Settings that restore every switch a variant may touch.
DEFAULTS=
record_defaults() { # rel...
	local k
	DEFAULTS=
	for k in "$@"; do
		knob_present "$k" || continue
		DEFAULTS+="$k=$(knob_value "$k") "
		note_json knob_default "$k" "$(knob_value "$k")"
	done
}

# Do SETTINGS equal the defaults? Then the variant is the default run.
same_as_defaults() { # settings
	local kv
	for kv in $1; do
		[[ " $DEFAULTS " == *" $kv "* ]] || return 1
	done
}

# Ablation variants as "name|side|settings", after checking each switch.
ABL_VARIANTS=()
plan_ablations() {
	ABL_VARIANTS=("nvme|nvme|" "default|ssdq|")
	record_defaults plugging/batching plugging/ring_idle plugging/shadow_doorbells irq/mode irq/budget irq/defer_us
	if knob_present plugging/batching; then
		ABL_VARIANTS+=("batching-off|ssdq|plugging/batching=0")
	else
		unavailable "doorbell batching ablation" "no /sys/block/$SSDQ_DISK/plugging/batching"
	fi
	if ! knob_present plugging/ring_idle; then
		unavailable "adaptive doorbell batching (ring_idle)" "no /sys/block/$SSDQ_DISK/plugging/ring_idle"
	elif same_as_defaults "plugging/batching=1 plugging/ring_idle=1"; then
		note_json alias ring-idle default
	else
		ABL_VARIANTS+=("ring-idle|ssdq|plugging/batching=1 plugging/ring_idle=1")
	fi
	if ! knob_present plugging/shadow_doorbells; then
		unavailable "shadow doorbell ablation" "no /sys/block/$SSDQ_DISK/plugging/shadow_doorbells"
	elif [[ $(knob_value plugging/shadow_doorbells) != 1 ]]; then
		unavailable "shadow doorbell ablation" "shadow_doorbells is off by default (controller has none?)"
	else
		ABL_VARIANTS+=("shadow-off|ssdq|plugging/shadow_doorbells=0")
	fi
	if ! knob_present irq/mode; then
		unavailable "interrupt mode ablation (direct/irqpoll/deferred re-arm)" "no /sys/block/$SSDQ_DISK/irq/mode"
		return 0
	fi
	local d0="" dd=""
	if knob_present irq/defer_us; then
		d0=" irq/defer_us=0" dd=" irq/defer_us=$DEFER_US"
	else
		unavailable "interrupt mode irqpoll with deferred re-arm" "no /sys/block/$SSDQ_DISK/irq/defer_us"
	fi
	local v name settings
	for v in "irq-direct|irq/mode=direct$d0" "irq-irqpoll|irq/mode=irqpoll$d0"; do
		IFS='|' read -r name settings <<<"$v"
		if same_as_defaults "$settings"; then
			note_json alias "$name" default
		else
			ABL_VARIANTS+=("$name|ssdq|$settings")
		fi
	done
	[[ -z $dd ]] || ABL_VARIANTS+=("irq-irqpoll-defer|ssdq|irq/mode=irqpoll$dd")
	if [[ $(knob_get irq/mode) != *adaptive* ]]; then
		unavailable "adaptive interrupt moderation" "irq/mode has no adaptive"
	elif same_as_defaults "irq/mode=adaptive"; then
		note_json alias irq-adaptive default
	else
		ABL_VARIANTS+=("irq-adaptive|ssdq|irq/mode=adaptive$d0")
	fi
}

# One depth sweep over VARIANTS (array name), rotating their order by round.
# fio is pinned to CPU so every variant runs on the same CPU.
sweep() { # section job cpu variants-array-name "qds"
	local section=$1 job=$2 cpu=$3 qds=$5
	local -n vars=$4
	local qd r i n=${#vars[@]} name side settings nq
	read -r -a nq <<<"$qds"
	RUN_TOTAL=$((RUN_TOTAL + n * ABL_ROUNDS * ${#nq[@]}))
	for qd in $qds; do
		for ((r = 1; r <= ABL_ROUNDS; r++)); do
			for ((i = 0; i < n; i++)); do
				IFS='|' read -r name side settings <<<"${vars[(i + r - 1) % n]}"
				[[ -z $settings ]] || knobs_apply "$settings"
				measure_run "$section" "$job" "$side" "$name" "$qd" "$r" "$ABL_RT" "$ABL_RAMP" \
					--rw=randread --bs=4k --numjobs=1 --iodepth="$qd" \
					--iodepth_batch_submit=$(((qd + 1) / 2)) --iodepth_batch_complete_min=$(((qd + 1) / 2)) \
					--cpus_allowed="$cpu"
				[[ -z $settings ]] || knobs_apply "$DEFAULTS"
			done
		done
	done
}

section_abl() {
	setup_pair "" ""
	plan_ablations
	note_json plan abl "$(printf '%s ' "${ABL_VARIANTS[@]}")"
	progress "ablations: ${#ABL_VARIANTS[@]} variants x QD {$ABL_QDS} x $ABL_ROUNDS round(s), fio on CPU $((NCPU - 1))"
	sweep abl rr4k "$((NCPU - 1))" ABL_VARIANTS "$ABL_QDS"
}

# --------------------------------------------------------------- steer

# The CPU(s) the single I/O queue's interrupt is delivered to.
io_vector_cpus() { # pci
	local f i
	for f in "/sys/bus/pci/devices/$1/msi_irqs"/*; do
		i=${f##*/}
		if grep -Eq "^ *$i:.*q1\$" /proc/interrupts; then
			cat "/proc/irq/$i/effective_affinity_list"
			return 0
		fi
	done
	return 1
}

section_steer() {
	if ((NCPU < 2)); then
		unavailable "steering ablation" "needs 2 CPUs, guest has $NCPU"
		return 0
	fi
	if ! ssdq_has_param io_queues; then
		unavailable "steering ablation" "ssdq.ko has no io_queues parameter"
		return 0
	fi
	load_ssdq io_queues=1
	SSDQ_LOADED_AS=io_queues=1
	progress "ssdq (io_queues=1) -> /dev/$SSDQ_DISK"
	if ! knob_present steering/mode; then
		unavailable "steering ablation (off/ipi/blk)" "no /sys/block/$SSDQ_DISK/steering/mode"
		return 0
	fi
	record_defaults steering/mode
	local vcpu cpu c
	vcpu=$(io_vector_cpus "$PCI_SSDQ") || bdie "cannot find ssdq's I/O vector"
	# Submit from a CPU the interrupt does not arrive on: every completion
	# is then a cross-CPU one, the case steering is about.
	cpu=
	for ((c = 0; c < NCPU; c++)); do
		[[ ",$vcpu," == *",$c,"* ]] || { cpu=$c; break; }
	done
	[[ -n $cpu ]] || { unavailable "steering ablation" "I/O vector on every CPU ($vcpu)"; return 0; }
	note_json steering_cpus "fio on CPU $cpu, I/O vector on CPU $vcpu" "" \
		"$(jq -nc --argjson f "$cpu" --arg v "$vcpu" '{fio_cpu: $f, vector_cpus: $v}')"
	# shellcheck disable=SC2034 # used through sweep's nameref
	local -a steer_variants=("steer-off|ssdq|steering/mode=off" "steer-ipi|ssdq|steering/mode=ipi"
		"steer-blk|ssdq|steering/mode=blk")
	progress "steering: 3 modes x QD {$STEER_QDS}, fio on CPU $cpu, interrupt on CPU $vcpu"
	sweep steer rr4k "$cpu" steer_variants "$STEER_QDS"
}

# --------------------------------------------------------------- scale

# Curves, not verdicts: 4k random read at every queue depth x numjobs of
# the grid, ssdq and nvme alternately, short runs. fio is not pinned (the
# jobs spread over the vCPUs); at depth > 1 it reaps and submits in batches
# of half the depth, like the main jobs. Each round runs every point once
# per layout (with SCALE_X=1: the grid again after the drivers swap
# controllers, so the slots' difference cancels from the point's ratio; one
# swap per round, as in crossover_rounds), and
# the pair order flips from point to point and again in the other layout:
# each point has ssdq first in one layout and nvme first in the other.
# Point-major within a layout (numjobs, then depth), so a slow phase of
# the host bends a stretch of the curve for both drivers alike.
section_scale() {
	local r half layout nj qd k s b nq nn
	local -a halves=(0)
	[[ $SCALE_X == 0 ]] || halves=(0 1)
	read -r -a nq <<<"$SCALE_QDS"
	read -r -a nn <<<"$SCALE_NJ"
	setup_pair "" ""
	RUN_TOTAL=$((RUN_TOTAL + 2 * ${#halves[@]} * SCALE_ROUNDS * ${#nq[@]} * ${#nn[@]}))
	progress "scale: QD {$SCALE_QDS} x numjobs {$SCALE_NJ}, ${SCALE_RT}s + ${SCALE_RAMP}ms x $SCALE_ROUNDS round(s), ${#halves[@]} layout(s), $NCPU vCPUs"
	for ((r = 1; r <= SCALE_ROUNDS; r++)); do
		for half in "${halves[@]}"; do
			((half == 0)) || swap_slots
			layout=$(((r - 1 + half) % 2))
			k=0
			for nj in $SCALE_NJ; do
				for qd in $SCALE_QDS; do
					b=$(((qd + 1) / 2))
					for s in $(pair_order $((layout + r + k)) ssdq nvme); do
						measure_run scale "rr4k-qd${qd}x$nj" "$s" default "$qd" "$r" "$SCALE_RT" "$SCALE_RAMP" \
							--rw=randread --bs=4k --iodepth="$qd" --numjobs="$nj" \
							--iodepth_batch_submit="$b" --iodepth_batch_complete_min="$b"
					done
					k=$((k + 1))
				done
			done
		done
	done
	home_slots
}

# ---------------------------------------------------------------- main

write_meta() { # running|finished
	# Tool versions only at the end: every program started costs time here.
	local fio_version=''
	[[ $1 != finished ]] || fio_version=$(fio --version)
	ssdq_has_param io_queues || true
	jq -n --arg status "$1" --arg kernel "$(uname -r)" --argjson ncpu "$NCPU" \
		--arg fio "$fio_version" --arg ko "$B_KO" \
		--arg ko_params "$KO_PARAMS" \
		--argjson quick "$QUICK" --argjson rt "$RT" --argjson ramp "$RAMP" \
		--argjson rounds "$ROUNDS" --argjson calib_rounds "$CALIB_ROUNDS" --argjson abl_rt "$ABL_RT" --argjson abl_ramp "$ABL_RAMP" \
		--argjson abl_rounds "$ABL_ROUNDS" --arg abl_qds "$ABL_QDS" --arg steer_qds "$STEER_QDS" \
		--argjson mem_cycles "$MEM_CYCLES" --arg sections "$SECTIONS" --arg size "$B_SIZE" \
		--argjson defer_us "$DEFER_US" --argjson secs "$SECONDS" \
		--arg scale_qds "$SCALE_QDS" --arg scale_nj "$SCALE_NJ" --argjson scale_rt "$SCALE_RT" \
		--argjson scale_ramp "$SCALE_RAMP" --argjson scale_rounds "$SCALE_ROUNDS" --argjson scale_x "$SCALE_X" \
		--argjson pt_rounds "$PT_ROUNDS" --arg pt_engine "${PT_ENGINE[*]}" \
		--arg main_jobs "$(printf '%s\n' "${MAIN_JOBS[@]}" "$POLLED_JOB")" \
		'{status: $status, guest_kernel: $kernel, vcpus: $ncpu, fio: $fio,
		  ssdq_ko: $ko, ssdq_params: ($ko_params | split(" ") | map(select(. != ""))),
		  quick: ($quick == 1), runtime_s: $rt, ramp_ms: $ramp, rounds: $rounds, calib_rounds: $calib_rounds,
		  abl_runtime_s: $abl_rt, abl_ramp_ms: $abl_ramp, abl_rounds: $abl_rounds,
		  abl_qds: ($abl_qds | split(" ") | map(select(. != "") | tonumber)),
		  steer_qds: ($steer_qds | split(" ") | map(select(. != "") | tonumber)),
		  mem_cycles: $mem_cycles, sections: $sections, region: $size, defer_us: $defer_us,
		  scale_qds: ($scale_qds | split(" ") | map(select(. != "") | tonumber)),
		  scale_numjobs: ($scale_nj | split(" ") | map(select(. != "") | tonumber)),
		  scale_runtime_s: $scale_rt, scale_ramp_ms: $scale_ramp, scale_rounds: $scale_rounds,
		  scale_crossover: ($scale_x == 1), pt_rounds: $pt_rounds, pt_engine: $pt_engine,
		  guest_seconds: $secs,
		  jobs: ($main_jobs | split("\n") | map(select(. != "") | split("|") | {name: .[0], qd: (.[1] | tonumber), fio: .[2]}))}' \
		>"$B_OUT/meta.json"
}

[[ -f $B_KO ]] || bdie "$B_KO missing"
command -v fio >/dev/null && command -v jq >/dev/null || bdie "fio and jq are needed"
mkdir -p "$B_OUT/fio"
sampler_priority
rm -f "$B_OUT"/{runs,mem,mem-slab,notes}.jsonl
write_meta running
progress "bench: $NCPU vCPUs, sections: $SECTIONS; main ${RT}s x $ROUNDS rounds, ablations ${ABL_RT}s x $ABL_ROUNDS"
for sec in mem calib main profile polled pt abl steer scale; do
	has_section "$sec" || continue
	progress "== section $sec"
	"section_$sec"
done
unload_ssdq
unload_nvme
write_meta finished
progress "bench: guest part done in ${SECONDS}s ($RUN_DONE runs)"
