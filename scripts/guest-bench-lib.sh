# shellcheck shell=bash
# Guest-side helpers for `make bench` (sourced by guest-bench-suite.sh):
# binding the two controllers, counter snapshots, one measured fio run.
#
# Everything a run measures is written as one JSON line to $B_OUT/runs.jsonl;
# the host (scripts/bench-report.py) turns those into tables and charts.
# These helpers never judge a number: they only record it.

# The guest basics this shares with the tests (nap, wait_until,
# disk_of_pci, set_override, bound_driver, module_loaded, the PCI slots).
# shellcheck source=scripts/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/guest-lib.sh"

PCI_SSDQ=$PCI_DUT # ssdq (or nvme, for the A/A check)
PCI_NVME=$PCI_REF # always the kernel's nvme
NOBODY=ssdq-bench-none # a driver_override no driver matches: keep unbound

B_OUT=${SSDQ_OUT:?SSDQ_OUT not set: run through scripts/bench.sh}
B_KO=${SSDQ_BENCH_KO:-$SSDQ_REPO/ssdq.ko}
B_TRACE=${SSDQ_QEMU_TRACE:-}
SSDQ_DISK=
NVME_DISK=
RUN_SEQ=0  # runs started
RUN_DONE=0 # runs finished (progress lines)
RUN_TOTAL=0 # runs planned so far (grows as sections plan theirs)

bdie() {
	echo "bench: FATAL: $*" | tee -a "$B_OUT/progress.log" >&2
	exit 1
}

# One line on the console and in progress.log (the host tails that file).
progress() {
	local line ts
	printf -v ts '%(%H:%M:%S)T' -1
	line="[$ts +${SECONDS}s] $*"
	echo "$line" >>"$B_OUT/progress.log"
	echo "$line"
}

# ------------------------------------------------------------- binding

# Bind PCI to DRIVER (module already loaded) and wait for its disk.
bind_pci() { # pci driver
	set_override "$1" "$2"
	echo "$1" >/sys/bus/pci/drivers_probe
	wait_until 60 disk_of_pci "$1" >/dev/null || bdie "no disk under $1 after binding $2"
	udev_settle_disk "$(disk_of_pci "$1")"
}

unbind_pci() { # pci
	local drv d
	drv=$(bound_driver "$1")
	[[ -n $drv ]] || return 0
	d=$(disk_of_pci "$1" || true)
	echo "$1" >"/sys/bus/pci/drivers/$drv/unbind"
	set_override "$1" "$NOBODY"
	[[ -z $d ]] || wait_until 30 test ! -e "/sys/block/$d" || bdie "/sys/block/$d stayed after unbinding $1"
}

# No udev here: the node appears through devtmpfs; wait for it.
udev_settle_disk() { # disk
	wait_until 10 test -b "/dev/$1" || bdie "/dev/$1 did not appear"
}

# The module's parameter names, read once (modinfo reads the whole .ko).
KO_PARAMS=
ssdq_has_param() { # name
	[[ -n $KO_PARAMS ]] || KO_PARAMS=" $(modinfo -F parm "$B_KO" 2>/dev/null | cut -d: -f1 | tr '\n' ' ') "
	[[ $KO_PARAMS == *" $1 "* ]]
}

# (Re)load ssdq with PARAMS, bound to its controller only (in a boot that
# skipped the mem section, the other controller has no override yet, and
# ssdq would take it too); sets SSDQ_DISK.
load_ssdq() { # params...
	unload_ssdq
	set_override "$PCI_SSDQ" ssdq
	# Not the reference controller too: with no override there (a boot
	# whose first section loads ssdq, e.g. --sections profile) ssdq would
	# bind both, and "nvme" would be ssdq on the other slot.
	[[ $(bound_driver "$PCI_NVME") == nvme ]] || set_override "$PCI_NVME" "$NOBODY"
	insmod "$B_KO" "$@" || bdie "insmod ssdq.ko $* failed"
	wait_until 60 disk_of_pci "$PCI_SSDQ" >/dev/null || bdie "ssdq made no disk ($*)"
	SSDQ_DISK=$(disk_of_pci "$PCI_SSDQ")
	udev_settle_disk "$SSDQ_DISK"
	register_side ssdq "$PCI_SSDQ"
}

unload_ssdq() {
	module_loaded ssdq || return 0
	rmmod ssdq || bdie "rmmod ssdq failed"
	wait_until 30 test ! -e /sys/module/ssdq || bdie "ssdq module stayed"
	SSDQ_DISK=
}

# (Re)load nvme with PARAMS, bound to the reference controller only.
load_nvme() { # params...
	unload_nvme
	set_override "$PCI_NVME" nvme
	[[ $(bound_driver "$PCI_SSDQ") == ssdq ]] || set_override "$PCI_SSDQ" "$NOBODY"
	modprobe nvme "$@" || bdie "modprobe nvme $* failed"
	wait_until 60 disk_of_pci "$PCI_NVME" >/dev/null || bdie "nvme made no disk ($*)"
	NVME_DISK=$(disk_of_pci "$PCI_NVME")
	udev_settle_disk "$NVME_DISK"
	register_side nvme "$PCI_NVME"
}

unload_nvme() {
	module_loaded nvme || return 0
	modprobe -r nvme || bdie "modprobe -r nvme failed"
	wait_until 30 test ! -e /sys/module/nvme || bdie "nvme module stayed"
	NVME_DISK=
}

# ------------------------------------------------------------ switches

# ssdq's runtime switches, by path under /sys/block/<disk>/.
knob_path() { echo "/sys/block/$SSDQ_DISK/$1"; }
knob_present() { [[ -e $(knob_path "$1") ]]; }
knob_get() { # rel -> first line of the file
	local v
	read -r v <"$(knob_path "$1")"
	echo "$v"
}
knob_set() { # rel value
	echo "$2" >"$(knob_path "$1")" || bdie "writing '$2' to $(knob_path "$1") failed"
}

# Apply "rel=value rel=value" settings.
knobs_apply() { # "settings"
	local kv
	for kv in $1; do
		knob_set "${kv%%=*}" "${kv#*=}"
	done
}

# Current value of a switch; mode files may list choices with the current
# one in brackets ("[direct] irqpoll").
knob_value() { # rel
	local v
	v=$(knob_get "$1")
	if [[ $v == *\[*\]* ]]; then
		v=${v#*[}
		v=${v%%]*}
	fi
	echo "$v"
}

# ------------------------------------------------------------ counters

# Every program started in this guest costs ~0.15-0.3 s under TCG (its
# libraries come over 9p; fio alone takes over a second to start), so
# everything around a run is bash builtins: read, mapfile, [[ =~ ]]. Only the
# trace size needs a program (stat). fio's JSON is parsed on the host.

# shellcheck disable=SC2034 # SNAP_* are filled through namerefs
declare -A DISK_OF=() SLOT_OF=() IRQS_OF=() SNAP_A=() SNAP_B=() FILE_OF=() COUNT_OF=()

# Remember a side's controller, its disk and its MSI-X interrupt numbers
# (after a bind).
# The I/O vectors are the MSI-X interrupts whose action name does not end
# in q0 (the admin queue): ssdq0q1.., nvme0q1..; polled queues have none.
register_side() { # side pci
	local f i name irqs=''
	DISK_OF[$1]=$(disk_of_pci "$2") || bdie "no disk under $2 for $1"
	SLOT_OF[$1]=$2
	FILE_OF[$1]=/dev/${DISK_OF[$1]}
	COUNT_OF[$1]=disk
	for f in "/sys/bus/pci/devices/$2/msi_irqs"/*; do
		[[ -e $f ]] || continue
		i=${f##*/}
		name=
		[[ -r /sys/kernel/irq/$i/actions ]] && read -r name <"/sys/kernel/irq/$i/actions"
		[[ $name == *q0 ]] || irqs+="$i "
	done
	IRQS_OF[$1]=$irqs
}

# A passthrough side (SIDE) beside the block side BLOCK of the same
# namespace: fio drives its generic char device (ssdq's /dev/ssdqgNnM,
# nvme's /dev/ngNnM); the interrupts and the slot are the block side's. Its
# I/Os are counted on fio's io_uring rings: passthrough requests pass no
# disk statistics (6.12 counts none; later kernels only behind the
# queue/iostats_passthrough switch, off by default).
register_generic() { # side block-side
	local disk=${DISK_OF[$2]:?no disk registered for $2} nsid gen
	case $disk in
	nvme*) gen=/dev/ng${disk#nvme} ;;
	ssdq*)
		read -r nsid <"/sys/block/$disk/nsid" || bdie "/sys/block/$disk/nsid unreadable"
		gen=/dev/ssdqg${disk#ssdq}n$nsid
		;;
	*) bdie "no generic char device known for /dev/$disk" ;;
	esac
	wait_until 10 test -c "$gen" || bdie "$gen (the generic device of /dev/$disk) did not appear"
	DISK_OF[$1]=$disk SLOT_OF[$1]=${SLOT_OF[$2]} IRQS_OF[$1]=${IRQS_OF[$2]}
	FILE_OF[$1]=$gen
	COUNT_OF[$1]=ring
}

# Interrupts handled so far on the given IRQs (all CPUs), into IRQ_SUM:
# /sys/kernel/irq/N/per_cpu_count is one short line per vector, much cheaper
# than walking /proc/interrupts in bash.
IRQ_SUM=0
irq_sum() { # irqs...
	local i c
	local -a v
	IRQ_SUM=0
	for i in "$@"; do
		IFS=, read -r -a v <"/sys/kernel/irq/$i/per_cpu_count" || continue
		for c in "${v[@]}"; do IRQ_SUM=$((IRQ_SUM + c)); done
	done
}

# Function-call IPIs (the CAL row of /proc/interrupts), all CPUs, into CAL_SUM.
CAL_SUM=0
cal_sum() {
	local l x
	local -a f lines
	CAL_SUM=0
	mapfile -t lines </proc/interrupts
	for l in "${lines[@]}"; do
		[[ $l =~ ^[[:space:]]*CAL: ]] || continue
		read -r -a f <<<"$l"
		for x in "${f[@]:1}"; do
			[[ $x =~ ^[0-9]+$ ]] || break
			CAL_SUM=$((CAL_SUM + x))
		done
		return 0
	done
}

# Snapshot every counter a run is judged by into the associative array
# named by $2. SIDE picks the device. PHASE a (window start) reads ssdq's
# debugfs counters before the CPU ticks, phase b after them: that reading
# (slow bash under TCG) then stays out of the CPU window, and ssdq is not
# charged for its own counters. Ratios of those counters use divisors from
# the same files, so the slightly longer debugfs window does not matter.
snapshot() { # side array-name a|b
	local -n _s=$2
	local side=$1 disk=${DISK_OF[$1]:?no disk registered for $1} phase=${3:-a}
	local drv=0
	# ssdq's block side and its passthrough side (ssdq_pt).
	[[ $side == ssdq* ]] && module_loaded ssdq && drv=1
	_s=()
	((drv == 0)) || [[ $phase != a ]] || ssdq_counters "$2" "$disk"
	local u n sy id io hi si st r w
	# The moment of the sample; the window is measured between two of these.
	_s["t_us"]=${EPOCHREALTIME/./}
	# Whole-guest CPU ticks (USER_HZ) from the first line of /proc/stat.
	read -r _ u n sy id io hi si st _ </proc/stat
	_s["cpu_user"]=$u _s["cpu_nice"]=$n _s["cpu_system"]=$sy _s["cpu_idle"]=$id
	_s["cpu_iowait"]=$io _s["cpu_irq"]=$hi _s["cpu_softirq"]=$si _s["cpu_steal"]=$st
	# Completed I/Os (diskstats fields 1 and 5, or fio's rings): the
	# per-I/O divisor, over exactly this window (fio's own count leaves out
	# its ramp time).
	if [[ ${COUNT_OF[$side]} == ring ]]; then
		ring_ios
		r=$IOS w=0
	else
		read -r r _ _ _ w _ <"/sys/block/$disk/stat"
	fi
	_s["ios_read"]=$r _s["ios_write"]=$w
	# Interrupts on the device's I/O vectors, all CPUs; function-call IPIs.
	# shellcheck disable=SC2086 # a list of IRQ numbers
	irq_sum ${IRQS_OF[$side]}
	cal_sum
	_s["irqs"]=$IRQ_SUM _s["ipi_cal"]=$CAL_SUM
	((drv == 0)) || [[ $phase != b ]] || ssdq_counters "$2" "$disk"
	return 0
}

# A changing seq_file (debugfs counters, /proc/*/fdinfo) is read whole, by
# mapfile, into LINES: bash's read line by line reads ahead and seeks back,
# and a seek makes the kernel generate the file again, with new numbers of
# other lengths, so the next line may start anywhere (a bench run died on
# an empty "line" of ssdq's counters).
LINES=()
lines_of() { # file [max-lines]
	LINES=()
	mapfile -t ${2:+-n "$2"} LINES <"$1"
}

# ssdq's own debugfs counters, summed over the I/O queues (qid > 0); the
# header line names the columns.
ssdq_counters() { # array-name disk
	local -n _c=$1
	local d=/sys/kernel/debug/ssdq/$2 file c l key val
	local -a h v
	for file in plugging irq; do
		[[ -r $d/$file ]] || continue
		lines_of "$d/$file"
		read -r -a h <<<"${LINES[0]:-}"
		for l in "${LINES[@]:1}"; do
			read -r -a v <<<"$l"
			[[ ${v[0]:-} =~ ^[0-9]+$ ]] && ((v[0] > 0)) || continue
			for ((c = 1; c < ${#h[@]}; c++)); do
				_c["${file}_${h[c]}"]=$((${_c["${file}_${h[c]}"]:-0} + ${v[c]:-0}))
			done
		done
	done
	if [[ -r $d/steering ]]; then
		lines_of "$d/steering"
		for l in "${LINES[@]}"; do
			read -r key val <<<"$l"
			[[ $val =~ ^[0-9]+$ ]] && _c["steering_$key"]=$val
		done
	fi
	return 0
}

# Deltas of two snapshots as a JSON object (t_us becomes window_us).
snapshot_delta() { # before-array after-array
	local -n _a=$1 _b=$2
	local k out='' sep='' x y
	for k in "${!_b[@]}"; do
		x=${_b[$k]} y=${_a[$k]:-0}
		[[ $k == t_us ]] && k=window_us
		out+="$sep\"$k\":$((x - y))"
		sep=,
	done
	echo "{$out}"
}

# ------------------------------------------------------------ fio

# Fio options every measured job shares: io_uring, O_DIRECT, the
# preconditioned region, time based, latency percentiles of the whole
# submit-to-complete time. Same seed on both sides (randrepeat default):
# both controllers see the same offsets. Batching options are per job.
FIO_COMMON=()
fio_common() { # runtime_s ramp_ms
	FIO_COMMON=(--ioengine=io_uring --direct=1 --size="$B_SIZE" --norandommap
		--time_based --runtime="$1" --ramp_time="${2}ms" --group_reporting=1
		--lat_percentiles=1 --percentile_list=50:99:99.9 --output-format=json)
}

# The sampler must get the CPU the moment its sleep ends, even while fio
# keeps both vCPUs busy, or the window overruns the run: run this shell at
# nice -5 and fio (FIO_NICE) back at 0. The sampler sleeps almost always,
# so it takes nothing from fio.
FIO_NICE=0
sampler_priority() {
	if renice -n -5 -p $$ >/dev/null 2>&1; then
		FIO_NICE=5
	fi
}

# Reads + writes completed so far on DISK, into IOS (no subshell: even a
# fork is slow under TCG).
IOS=0
disk_ios() { # disk
	local r w
	read -r r _ _ _ w _ <"/sys/block/$1/stat"
	IOS=$((r + w))
}

# fio's io_uring rings, for a ring-counted side: the fdinfo files of every
# io_uring fd of fio's job processes (PID's descendants, through each
# thread's children list; only a ring's fdinfo has a CqHead line), found
# once before the window and then read at its ends. It must be quick: fio's
# first I/O is taken to be when the rings first count one, and a late look
# moves the window towards fio's end (a walk of all of /proc took hundreds
# of ms under TCG).
RING_FILES=()
RING_LOST=0 # a ring's fdinfo went away (its job ended) since find_rings
# The CQ head in an io_uring fd's fdinfo, into CQ_HEAD; fails for any
# other fd, or one that went away. It is the tenth line (after pos, flags,
# mnt_id, ino and five of the ring's), before the long lists of entries.
CQ_HEAD=
cq_head() { # fdinfo-file
	local l
	lines_of "$1" 16 2>/dev/null || return 1
	for l in "${LINES[@]}"; do
		[[ $l =~ ^CqHead:[[:space:]]*([0-9]+) ]] || continue
		CQ_HEAD=${BASH_REMATCH[1]}
		return 0
	done
	return 1
}

find_rings() { # pid
	local p t f
	local -a todo=("$1") kids
	RING_FILES=()
	while ((${#todo[@]})); do
		p=${todo[0]}
		todo=("${todo[@]:1}")
		for t in "/proc/$p/task"/*; do
			kids=()
			read -r -a kids <"$t/children" 2>/dev/null || true
			todo+=("${kids[@]}")
		done
		for f in "/proc/$p/fdinfo"/*; do
			cq_head "$f" && RING_FILES+=("$f")
		done
	done
	RING_LOST=0
}

# Completions fio has reaped from the rings find_rings found, into IOS
# (the CQ heads, summed).
ring_ios() {
	local f
	IOS=0
	for f in "${RING_FILES[@]}"; do
		if cq_head "$f"; then
			IOS=$((IOS + CQ_HEAD))
		else
			RING_LOST=1
		fi
	done
}

# I/Os SIDE has completed before its fio starts, into IOS: what
# wait_io_start waits to see exceeded. A ring-counted side starts from 0
# (fio's rings are new).
side_base() { # side
	IOS=0
	[[ ${COUNT_OF[$1]} == ring ]] || disk_ios "${DISK_OF[$1]}"
}

# Wait (up to 60 s) until SIDE completes I/O beyond BASE or PID exits: fio
# takes a second or more to start under TCG, and that must not be counted.
# A ring-counted side waits for the rings of all JOBS job processes.
wait_io_start() { # side base pid jobs
	local end=$((SECONDS + 60)) ring=0
	[[ ${COUNT_OF[$1]} != ring ]] || ring=1
	RING_FILES=()
	while :; do
		if ((ring)); then
			# The /proc walk only until every job's ring is there.
			((${#RING_FILES[@]} >= $4)) || find_rings "$3"
			ring_ios
			((${#RING_FILES[@]} < $4)) || ((IOS == $2)) || return 0
		else
			disk_ios "${DISK_OF[$1]}"
			((IOS == $2)) || return 0
		fi
		kill -0 "$3" 2>/dev/null || return 1
		((SECONDS < end)) || return 1
		nap 0.05
	done
}

# Sleep until the moment END (us, the clock of EPOCHREALTIME), if still ahead.
nap_until() { # end-us
	local us=$(($1 - ${EPOCHREALTIME/./})) secs
	((us > 0)) || return 0
	printf -v secs '%d.%06d' $((us / 1000000)) $((us % 1000000))
	nap "$secs"
}

# The numjobs of fio options (fio's default: 1).
fio_numjobs() { # fio-args...
	local a n=1
	for a in "$@"; do
		[[ $a != --numjobs=* ]] || n=${a#--numjobs=}
	done
	echo "$n"
}

# Size of the QEMU trace log so far, into TRACE_OFF (empty without one).
TRACE_OFF=
trace_off() {
	TRACE_OFF=
	[[ -n $B_TRACE && -e $B_TRACE ]] && TRACE_OFF=$(stat -c %s "$B_TRACE")
	return 0
}

# One measured run. fio runs in the background; the counters are sampled
# inside its steady state: from the end of its ramp time (counted from the
# first completed I/O) to shortly before its runtime ends. So fio's start-up
# (over a second of CPU under TCG), ramp and teardown are in no CPU or
# interrupt figure, and the window matches the one fio reports IOPS and
# latency for. QEMU's trace is delimited around the whole run instead
# (reading its size starts a program, which must not happen inside the
# window); its counts are divided by the I/Os of the whole run.
# Never fatal: a failed run is recorded with its status and the bench goes
# on. Args: section job side variant qd round runtime_s ramp_ms fio-args...
measure_run() {
	local section=$1 job=$2 side=$3 variant=$4 qd=$5 round=$6 rt=$7 ramp=$8
	shift 8
	local disk=${DISK_OF[$side]:?no disk registered for $side} tag rc=0 delta what
	local pid base tl ti te margin_ms sampled=0 late=0 tr0 tr1 snap_us=0 run_ios
	RING_LOST=0
	RUN_SEQ=$((RUN_SEQ + 1))
	printf -v tag '%03d-%s-%s-%s-%s-qd%s-r%s' "$RUN_SEQ" "$section" "$job" "$side" "$variant" "$qd" "$round"
	local json=$B_OUT/fio/$tag.json err=$B_OUT/fio/$tag.err
	fio_common "$rt" "$ramp"
	# Stop sampling a tenth of the runtime (at least 300 ms) before the end.
	margin_ms=$((rt * 100 > 300 ? rt * 100 : 300))
	trace_off
	tr0=$TRACE_OFF
	# A ring-counted side counts from 0: fio's rings are new.
	side_base "$side"
	base=$IOS
	tl=${EPOCHREALTIME/./}
	# fio at nice 0; this sampler runs at -5 (see sampler_priority).
	timeout -k 10 $((rt + ramp / 1000 + 60)) nice -n "$FIO_NICE" fio --name="$job" --filename="${FILE_OF[$side]}" \
		"${FIO_COMMON[@]}" "$@" --output="$json" >/dev/null 2>"$err" &
	pid=$!
	if wait_io_start "$side" "$base" "$pid" "$(fio_numjobs "$@")"; then
		ti=${EPOCHREALTIME/./}
		nap_until $((ti + ramp * 1000))
		snapshot "$side" SNAP_A a
		# The end counts from the first I/O, not from the first sample:
		# reading ssdq's counters there must not push it past fio's end.
		nap_until $((ti + (ramp + rt * 1000 - margin_ms) * 1000))
		snapshot "$side" SNAP_B b
		snap_us=$((${EPOCHREALTIME/./} - SNAP_B[t_us]))
		# A sample taken after fio (or one of its jobs) ended would count
		# idle time.
		kill -0 "$pid" 2>/dev/null || late=1
		((RING_LOST == 0)) || late=1
		sampled=1
	fi
	wait "$pid" || rc=$?
	te=${EPOCHREALTIME/./}
	# The whole run's I/Os divide QEMU's counts; fio's rings are gone by
	# now, so a ring-counted side has none (its device-side figures per
	# I/O stay empty; ssdq's own counters still have theirs).
	run_ios=null
	if [[ ${COUNT_OF[$side]} != ring ]]; then
		disk_ios "$disk"
		run_ios=$((IOS - base))
	fi
	trace_off
	tr1=$TRACE_OFF
	((sampled)) || { ((rc != 0)) || rc=98; }
	if ((sampled)); then
		delta=$(snapshot_delta SNAP_A SNAP_B)
		# Timings in us from launch: fio's start-up under TCG is why a
		# run takes longer than its runtime.
		delta="${delta%\}},\"run_ios\":$run_ios,\"first_io_us\":$((ti - tl)),\"fio_exit_us\":$((te - tl)),\"snapshot_us\":$snap_us,\"late_sample\":$late"
		[[ -z $tr0 || -z $tr1 ]] || delta+=",\"trace_start\":$tr0,\"trace_end\":$tr1"
		delta+="}"
	else
		delta='{}'
	fi
	printf '{"seq":%d,"section":"%s","job":"%s","side":"%s","variant":"%s","qd":%d,"round":%d,"disk":"%s","slot":"%s","rc":%d,"tag":"%s","fio_args":"%s","counters":%s}\n' \
		"$RUN_SEQ" "$section" "$job" "$side" "$variant" "$qd" "$round" "$disk" "${SLOT_OF[$side]}" "$rc" "$tag" "$*" "$delta" \
		>>"$B_OUT/runs.jsonl"
	RUN_DONE=$((RUN_DONE + 1))
	if ((rc == 0 && sampled)); then
		# I/Os the disk completed in the sampled window (fio's own
		# figures are read on the host).
		local n=$((SNAP_B[ios_read] + SNAP_B[ios_write] - SNAP_A[ios_read] - SNAP_A[ios_write]))
		local w=$((SNAP_B[t_us] - SNAP_A[t_us]))
		what="$((n * 1000000 / (w > 0 ? w : 1))) IOPS"
		((late == 0)) || what+=" (late sample)"
	else
		local -a e=()
		[[ -s $err ]] && mapfile -t -n 2 e <"$err"
		what="FAILED (status $rc): ${e[*]:-no message}"
	fi
	progress "$(printf '[%3d/%d] %-6s %-14s %-5s %-17s qd%-2s r%s: %s' \
		"$RUN_DONE" "$RUN_TOTAL" "$section" "$job" "$side" "$variant" "$qd" "$round" "$what")"
}

# ------------------------------------------------------------ memory

# Kernel memory state after dropping clean caches, as one JSON object (kB).
# MemFree catches everything the page allocator handed out (slab, the
# DMA-coherent rings and pools, blk-mq's request pages); the others say
# which kind it was.
MEM_JSON=
mem_sample() { # -> MEM_JSON
	local k v out='' sep=''
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# Let RCU-deferred frees (kfree_rcu, blk-mq teardown) land first.
	nap 0.5
	echo 3 >/proc/sys/vm/drop_caches
	while read -r k v _; do
		case $k in
		MemFree: | MemAvailable: | Buffers: | Cached: | Slab: | SReclaimable: | SUnreclaim: | \
			KernelStack: | PageTables: | VmallocUsed: | Percpu:)
			out+="$sep\"${k%:}\":$v"
			sep=,
			;;
		esac
	done </proc/meminfo
	# Free pages parked on the per-CPU page lists are not in MemFree; they
	# come and go in batches of hundreds of kB and would swamp the deltas.
	local pcp=0
	while read -r k v _; do
		[[ $k == count: ]] && pcp=$((pcp + v))
	done </proc/zoneinfo
	MEM_JSON="{$out,\"PcpFree\":$((pcp * 4))}"
}

# Loaded modules and their size in bytes, from /proc/modules.
MODS_JSON=
modules_json() { # -> MODS_JSON
	local name size out='' sep=''
	while read -r name size _; do
		out+="$sep\"$name\":$size"
		sep=,
	done </proc/modules
	MODS_JSON="{$out}"
}

# Record one memory state (step: unloaded_before, module_before, bound,
# module_after, unloaded_after).
mem_record() { # driver step cycle
	mem_sample
	modules_json
	printf '{"driver":"%s","step":"%s","cycle":%d,"meminfo_kb":%s,"modules":%s}\n' \
		"$1" "$2" "$3" "$MEM_JSON" "$MODS_JSON" >>"$B_OUT/mem.jsonl"
}

# Slab caches as "name bytes" (active objects x object size), to show which
# caches a bind grew.
slab_bytes() {
	awk 'NR > 2 { print $1, $2 * $4 }' /proc/slabinfo 2>/dev/null | sort
}
