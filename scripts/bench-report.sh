#!/bin/bash
# Turn one bench results dir (scripts/bench.sh) into results.json,
# report.md and the PNG charts. Re-runnable on an existing dir:
#
#   scripts/bench-report.sh build/bench/latest
#
# Inputs, all written by the guest (scripts/guest-bench-suite.sh) except
# host.json and the QEMU trace: runs.jsonl (one line per fio run: fio summary
# and counter deltas), mem.jsonl, mem-slab.jsonl, notes.jsonl, meta.json,
# qemu-trace.log. Only jq, awk and gnuplot: no Python on the CI image.
set -euo pipefail
. "$(dirname "$0")/common.sh"

dir=${1:?usage: bench-report.sh RESULTS_DIR}
dir=$(cd "$dir" && pwd -P)
[[ -s $dir/runs.jsonl || -s $dir/mem.jsonl ]] || die "$dir has no runs.jsonl or mem.jsonl"

# jsonl -> JSON array file (empty array when missing).
slurp() { # name
	if [[ -s $dir/$1.jsonl ]]; then jq -s . "$dir/$1.jsonl"; else echo '[]'; fi
}
objfile() { # name
	if [[ -s $dir/$1.json ]]; then cat "$dir/$1.json"; else echo '{}'; fi
}

# QEMU's trace events per run, counted in the byte range of the trace log
# the guest noted before and after each run. Only one controller is busy at
# a time, so the events are that run's device's. Admin queue (id 0) and
# vector 0 are left out: they are not I/O. Output: {"seq": {sq, cq, msix}}.
trace_counts() {
	local trace=$dir/qemu-trace.log
	if [[ ! -s $trace ]]; then
		# bench.sh deletes the (large) log once counted.
		if [[ -s $dir/trace-counts.json ]]; then cat "$dir/trace-counts.json"; else echo '{}'; fi
		return
	fi
	jq -r 'select(.counters.trace_start != null) |
		"\(.seq) \(.counters.trace_start) \(.counters.trace_end)"' "$dir/runs.jsonl" |
		sort -k2,2n >"$dir/.ranges"
	# Byte offsets are counted in the C locale so length() is bytes.
	LC_ALL=C awk '
		NR == FNR { n++; id[n] = $1; s[n] = $2; e[n] = $3; next }
		FNR == 1 { k = 1; off = 0 }
		{
			at = off; off += length($0) + 1
			while (k <= n && at >= e[k]) k++
			if (k > n) next
			if (at < s[k]) next
			if ($1 == "pci_nvme_mmio_doorbell_sq" && $3 != "0") sq[k]++
			else if ($1 == "pci_nvme_mmio_doorbell_cq" && $3 != "0") cq[k]++
			else if ($1 == "pci_nvme_irq_msix" && $NF != "0") mx[k]++
		}
		END {
			printf "{"
			for (i = 1; i <= n; i++)
				printf "%s\"%s\":{\"sq\":%d,\"cq\":%d,\"msix\":%d}", (i > 1 ? "," : ""), id[i], sq[i], cq[i], mx[i]
			print "}"
		}' "$dir/.ranges" "$trace"
	rm -f "$dir/.ranges"
}

# fio's JSON of every run, summarised: {"tag": {iops, bw_bytes, lat...}}.
# Group reporting: jobs[0] is the whole job. fio may print notes before the
# JSON document in the same file, hence the sed.
fio_summaries() {
	local f
	for f in "$dir"/fio/*.json; do
		[[ -s $f ]] || continue
		sed -n '/^{/,$p' "$f" | jq -c --arg tag "$(basename "$f" .json)" '
			def pct(x; p): (x.lat_ns.percentile // x.clat_ns.percentile // {})[p];
			.jobs[0] as $j | ($j.read.io_bytes > 0) as $rd
			| (if $rd then $j.read else $j.write end) as $x
			| {($tag): {iops: ($j.read.iops + $j.write.iops),
			   bw_bytes: ($j.read.bw_bytes + $j.write.bw_bytes),
			   ios: ($j.read.total_ios + $j.write.total_ios),
			   lat_mean_ns: $x.lat_ns.mean,
			   lat_p50_ns: pct($x; "50.000000"), lat_p99_ns: pct($x; "99.000000"),
			   lat_p999_ns: pct($x; "99.900000"), lat_max_ns: $x.lat_ns.max,
			   usr_cpu: $j.usr_cpu, sys_cpu: $j.sys_cpu, ctx: $j.ctx,
			   runtime_ms: $j.job_runtime, error: $j.error}}' 2>/dev/null ||
			note "unreadable fio output $f"
	done | jq -s 'add // {}'
}

# ------------------------------------------------------------ results.json
JQ_RESULTS='
def median: map(select(. != null)) | sort |
	if length == 0 then null elif length % 2 == 1 then .[(length - 1) / 2]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def div(a; b): if a == null or b == null or b == 0 then null else a / b end;
def metrics: ["iops", "mibs", "p50_us", "p99_us", "p999_us", "mean_us",
	"cpu_us_per_io", "kcpu_us_per_io", "irq_per_io", "msix_per_io",
	"sqdb_per_io", "cqdb_per_io", "ipi_per_io"];
def ssdq_metrics: ["cmds_per_batch", "drv_sqdb_mmio_per_io", "drv_cqdb_mmio_per_io",
	"remote_per_io", "ipis_per_io", "irq_rounds_per_io", "irq_polled_per_io",
	"irq_budget_exhausted_per_io"];

# Per-run figures. CPU: /proc/stat ticks are USER_HZ (100/s): 1 tick = 10000 us.
def derive($tc; $fs):
	.fio = $fs[.tag] | .ok = (.rc == 0 and .fio != null and .fio.error == 0 and (.counters.late_sample // 0) == 0)
	| (.counters // {}) as $c | ((($c.ios_read // 0) + ($c.ios_write // 0))) as $ios
	| ($tc[.seq | tostring]) as $t
	| . + {m: (if .ok then {
		iops: .fio.iops, mibs: (.fio.bw_bytes / 1048576),
		p50_us: div(.fio.lat_p50_ns; 1000), p99_us: div(.fio.lat_p99_ns; 1000),
		p999_us: div(.fio.lat_p999_ns; 1000), mean_us: div(.fio.lat_mean_ns; 1000),
		ios: $ios, window_s: div($c.window_us; 1000000),
		iops_window: div($ios; div($c.window_us; 1000000)),
		cpu_util: div((($c.cpu_user // 0) + ($c.cpu_nice // 0) + ($c.cpu_system // 0)
			+ ($c.cpu_irq // 0) + ($c.cpu_softirq // 0) + ($c.cpu_steal // 0));
			(($c.cpu_user // 0) + ($c.cpu_nice // 0) + ($c.cpu_system // 0) + ($c.cpu_idle // 0)
			+ ($c.cpu_iowait // 0) + ($c.cpu_irq // 0) + ($c.cpu_softirq // 0) + ($c.cpu_steal // 0))),
		cpu_us_per_io: div((($c.cpu_user // 0) + ($c.cpu_nice // 0) + ($c.cpu_system // 0)
			+ ($c.cpu_irq // 0) + ($c.cpu_softirq // 0) + ($c.cpu_steal // 0)) * 10000; $ios),
		kcpu_us_per_io: div((($c.cpu_system // 0) + ($c.cpu_irq // 0) + ($c.cpu_softirq // 0)) * 10000; $ios),
		irq_per_io: div($c.irqs; $ios), ipi_per_io: div($c.ipi_cal; $ios),
		msix_per_io: div($t.msix; $c.run_ios), sqdb_per_io: div($t.sq; $c.run_ios), cqdb_per_io: div($t.cq; $c.run_ios),
		cmds_per_batch: div($c.plugging_submitted; $c.plugging_batches),
		# ssdq counters: divisors from the same debugfs files (commands
		# submitted, requests completed), read at the same moments.
		drv_sqdb_mmio_per_io: div($c.plugging_sq_db_mmio; $c.plugging_submitted),
		drv_cqdb_mmio_per_io: div($c.plugging_cq_db_mmio; $c.plugging_submitted),
		remote_per_io: div($c.steering_remote; (($c.steering_local // 0) + ($c.steering_remote // 0))),
		ipis_per_io: div($c.steering_ipis; (($c.steering_local // 0) + ($c.steering_remote // 0))),
		irq_rounds_per_io: div($c.irq_rounds; $c.plugging_submitted),
		irq_polled_per_io: div($c.irq_polled; $c.plugging_submitted),
		irq_budget_exhausted_per_io: div($c.irq_budget_exhausted; $c.plugging_submitted)
	} else null end)};

# Side A vs side B of one job: medians, and the ratio A/B round by round.
def compare($a; $b):
	. as $runs | ($runs | map(.round) | unique) as $rounds
	| reduce metrics[] as $k ({}; . + {($k): (
		[$runs[] | select(.side == $a and .ok) | .m[$k]] as $va
		| [$runs[] | select(.side == $b and .ok) | .m[$k]] as $vb
		| [$rounds[] as $r
			| div([$runs[] | select(.side == $a and .round == $r and .ok) | .m[$k]][0];
				[$runs[] | select(.side == $b and .round == $r and .ok) | .m[$k]][0])]
		| map(select(. != null)) as $ratios
		| {a: ($va | median), b: ($vb | median), a_values: $va, b_values: $vb,
			ratios: $ratios, ratio: ($ratios | median),
			ratio_min: ($ratios | min), ratio_max: ($ratios | max)})});

def job_order($meta): ($meta.jobs // []) | map(.name) | to_entries | map({(.value): .key}) | add // {};

def comparisons($runs; $sections; $a; $b; $meta):
	job_order($meta) as $ord
	| [$runs[] | select(.section as $s | $sections | index($s))]
	| group_by(.section + "/" + .job)
	| map({section: .[0].section, job: .[0].job, qd: .[0].qd, variant: .[0].variant,
		a: $a, b: $b, runs_ok: map(select(.ok)) | length, runs_failed: map(select(.ok | not)) | length,
		sides: (map(select(.ok) | .side) | unique),
		metrics: compare($a; $b)})
	| sort_by($ord[.job] // 99);

# Targets: IOPS/bandwidth >= nvme on every job, QD1 latency <= nvme, CPU
# per I/O <= nvme.
def verdicts:
	map(. as $c
		| [{metric: (if ($c.job | startswith("seq")) then "mibs" else "iops" end), better: "higher"}]
		+ (if $c.qd == 1 then [{metric: "p50_us", better: "lower"}, {metric: "p99_us", better: "lower"}] else [] end)
		+ [{metric: "cpu_us_per_io", better: "lower"}]
		| map(. as $t | $c.metrics[$t.metric] as $m
			| {job: $c.job, section: $c.section, metric: $t.metric, better: $t.better,
				nvme: $m.b, ssdq: $m.a, ratio: $m.ratio, ratios: $m.ratios,
				pass: (if $m.ratio == null then null elif $t.better == "higher" then $m.ratio >= 1 else $m.ratio <= 1 end),
				within_noise: ($m.ratio_min != null and $m.ratio_min < 1 and $m.ratio_max > 1)}))
	| flatten;

# ---- memory
def memdelta($a; $b):  # a = before, b = after (meminfo kB objects)
	{mem_taken_kb: (($a.MemFree + ($a.PcpFree // 0)) - ($b.MemFree + ($b.PcpFree // 0))), slab_kb: ($b.Slab - $a.Slab),
	 sunreclaim_kb: ($b.SUnreclaim - $a.SUnreclaim), percpu_kb: ($b.Percpu - $a.Percpu),
	 vmalloc_kb: ($b.VmallocUsed - $a.VmallocUsed), kernelstack_kb: ($b.KernelStack - $a.KernelStack),
	 pagetables_kb: ($b.PageTables - $a.PageTables)};
def avgmem($a; $b): reduce ($a | keys[]) as $k ({}; .[$k] = (($a[$k] + ($b[$k] // $a[$k])) / 2));
def summarize: . as $xs | if length == 0 then null else
	reduce (.[0] | keys[]) as $k ({}; .[$k] = {median: ([$xs[][$k]] | median),
		min: ([$xs[][$k]] | min), max: ([$xs[][$k]] | max), values: [$xs[][$k]]}) end;
def memory($mem):
	if ($mem | length) == 0 then null else
	[$mem | group_by([.driver, .cycle])[]
		| (map({(.step): .meminfo_kb}) | add) as $s
		| (map({(.step): .modules}) | add) as $mods
		| ($s.module_after // $s.module_before) as $ma
		| ($s.unloaded_after // $s.unloaded_before) as $ua
		| {driver: .[0].driver, cycle: .[0].cycle,
			module_names: (if $mods.module_before and $mods.unloaded_before then
				[$mods.module_before | keys[] | select($mods.unloaded_before[.] == null)] else [] end),
			controller: (if $s.bound and $s.module_before then memdelta(avgmem($s.module_before; $ma); $s.bound) else null end),
			module: (if $s.module_before and $s.unloaded_before then memdelta(avgmem($s.unloaded_before; $ua); avgmem($s.module_before; $ma)) else null end),
			drift_controller_kb: (if $s.module_after and $s.module_before then memdelta($s.module_before; $s.module_after).mem_taken_kb else null end),
			drift_module_kb: (if $s.unloaded_after and $s.unloaded_before then memdelta($s.unloaded_before; $s.unloaded_after).mem_taken_kb else null end)}
		| .module_bytes = ([.module_names[] as $n | $mods.module_before[$n]] | add)] as $cyc
	| def per($d; f): [$cyc[] | select(.driver == $d) | f | select(. != null)];
	{module: {ssdq: (per("ssdq"; .module) | summarize), nvme: (per("nvme"; .module) | summarize)},
	 module_bytes: {ssdq: (per("ssdq"; .module_bytes) | median), nvme: (per("nvme"; .module_bytes) | median)},
	 module_names: {ssdq: (per("ssdq"; .module_names)[0] // []), nvme: (per("nvme"; .module_names)[0] // [])},
	 controller: {ssdq: (per("ssdq"; .controller) | summarize), nvme: (per("nvme"; .controller) | summarize)},
	 drift_kb: {controller: [$cyc[] | .drift_controller_kb | select(. != null)],
		module: [$cyc[] | .drift_module_kb | select(. != null)]},
	 cycles: $cyc} end;

# ---- ablations: medians per (section, variant, qd)
def ablations($runs):
	[$runs[] | select(.section == "abl" or .section == "steer")]
	| group_by([.section, .variant, .qd])
	| map(. as $g | {section: .[0].section, variant: .[0].variant, side: .[0].side, qd: .[0].qd,
		runs_ok: map(select(.ok)) | length, runs_failed: map(select(.ok | not)) | length,
		m: (reduce (metrics + ssdq_metrics)[] as $k ({}; .[$k] = ([$g[] | select(.ok) | .m[$k]] | median))),
		values: {iops: [$g[] | select(.ok) | .m.iops]}});

(trace_counts) as $tc
| ($runs | map(derive($tc; fio_sums))) as $R
| comparisons($R; ["main", "polled"]; "ssdq"; "nvme"; $meta) as $cmp
| (memory($mem)) as $memory
| {host: $host, guest: $meta, notes: $notes,
   comparisons: $cmp,
   verdicts: (($cmp | verdicts)
	+ (if $memory != null and $memory.controller.ssdq != null and $memory.controller.nvme != null then
		[{job: "memory (module + one controller)", section: "mem", metric: "mem_taken_kb", better: "lower",
		  nvme: (($memory.module.nvme.mem_taken_kb.median // 0) + $memory.controller.nvme.mem_taken_kb.median),
		  ssdq: (($memory.module.ssdq.mem_taken_kb.median // 0) + $memory.controller.ssdq.mem_taken_kb.median)}
		 | .ratio = div(.ssdq; .nvme) | .ratios = [] | .pass = (if .ratio == null then null else .ratio <= 1 end)
		 | .within_noise = false] else [] end)),
   calibration: comparisons($R; ["calib"]; "slot04"; "slot05"; $meta),
   memory: $memory, memory_slab: $slab, memory_samples: $mem,
   ablations: ablations($R),
   failed_runs: [$R[] | select(.ok | not) | {tag, rc, section, job, side, variant, qd, round}],
   runs: $R}
'

counts=$(trace_counts)
echo "$counts" >"$dir/trace-counts.json"
jq -n --argjson trace_counts_in "$counts" --slurpfile fio_in <(fio_summaries) \
	--slurpfile runs_in <(slurp runs) --slurpfile mem_in <(slurp mem) \
	--slurpfile slab_in <(slurp mem-slab) --slurpfile notes_in <(slurp notes) \
	--slurpfile meta_in <(objfile meta) --slurpfile host_in <(objfile host) \
	"def trace_counts: \$trace_counts_in; def fio_sums: \$fio_in[0];
	 \$runs_in[0] as \$runs | \$mem_in[0] as \$mem | \$slab_in[0] as \$slab | \$notes_in[0] as \$notes
	 | \$meta_in[0] as \$meta | \$host_in[0] as \$host | $JQ_RESULTS" >"$dir/results.json.tmp"
mv "$dir/results.json.tmp" "$dir/results.json"

# ------------------------------------------------------------ charts
# Data files (tab separated) for gnuplot, from results.json.
chart_data() {
	# Job, nvme IOPS median/min/max, ssdq IOPS median/min/max, label (the
	# median of the per-round ratios, which is what the report judges by).
	jq -r '.comparisons[] | .metrics.iops as $i
		| [.job, ($i.b // 0), ($i.b_values | min // 0), ($i.b_values | max // 0),
			($i.a // 0), ($i.a_values | min // 0), ($i.a_values | max // 0),
			(if $i.ratio == null then "ssdq n/a" else "x\(($i.ratio * 100 | round) / 100)" end)] | @tsv' \
		"$dir/results.json" >"$dir/chart-iops.dat"
	# Per ablation variant, one gnuplot block (two blank lines apart)
	# of "QD value" rows, for one metric; variants without a value left out.
	local metric
	for metric in irq_per_io sqdb_per_io; do
		jq -r --arg k "$metric" '(.notes | map(select(.kind == "alias")) | map({(.what): .why}) | add // {}) as $alias
			| .ablations as $a
			| ["nvme", "default", "batching-off", "shadow-off", "irq-direct", "irq-irqpoll", "irq-irqpoll-defer",
				"steer-off", "steer-ipi", "steer-blk"][] as $v
			| ($alias[$v] // $v) as $src
			| [$a[] | select(.variant == $src and .m[$k] != null)] | select(length > 0)
			| "# \($v)", (sort_by(.qd)[] | [.qd, .m[$k]] | @tsv), "", ""' \
			"$dir/results.json" >"$dir/chart-$metric.dat"
	done
}

# gnuplot "plot" clause for the given variants of a chart-METRIC.dat file.
abl_plot_clause() { # metric variants...
	local f=$dir/chart-$1.dat v i=0 clause='' idx
	shift
	[[ -s $f ]] || return 0
	for v in "$@"; do
		idx=$(sed -n 's/^# //p' "$f" | grep -nx -- "$v" | cut -d: -f1) || continue
		[[ -n $idx ]] || continue
		clause+="${clause:+, }'$f' index $((idx - 1)) using 1:2 with linespoints lw 2 pt $((7 + i)) title '$v'"
		i=$((i + 1))
	done
	echo "$clause"
}

charts() {
	command -v gnuplot >/dev/null || { note "no gnuplot: skipping charts"; return 0; }
	chart_data
	local title
	title="ssdq vs nvme, same QEMU NVMe model, one TCG boot\\n{/*0.9 bars: median of rounds, whiskers: min-max; label: median of per-round ssdq/nvme ratios}"
	if [[ -s $dir/chart-iops.dat ]]; then
		gnuplot <<-EOF
			set terminal pngcairo size 1000,560 font "DejaVu Sans,10"
			set output '$dir/iops.png'
			set title "$title" enhanced
			set style data histograms
			set style histogram errorbars gap 1 lw 1
			set style fill solid 0.85 border -1
			set boxwidth 0.9
			set ylabel "IOPS (median of rounds)"
			set yrange [0:*]
			set offsets 0, 0, graph 0.1, 0
			set grid ytics
			set key top left
			set xtics noenhanced
			set datafile separator "\t"
			plot '$dir/chart-iops.dat' using 2:3:4:xtic(1) title "nvme" lc rgb "#7f7f7f", \
			     '' using 5:6:7 title "ssdq" lc rgb "#1f77b4", \
			     '' using 0:((\$4 > \$7 ? \$4 : \$7)):8 notitle with labels offset character 0,1 font ",10"
		EOF
	fi
	local irq_clause db_clause
	# The interrupt modes; "default" only stands in when irq-direct is absent.
	local direct=irq-direct
	grep -qx '# irq-direct' "$dir/chart-irq_per_io.dat" 2>/dev/null || direct=default
	irq_clause=$(abl_plot_clause irq_per_io nvme "$direct" irq-irqpoll irq-irqpoll-defer)
	if [[ -n $irq_clause ]]; then
		gnuplot <<-EOF
			set terminal pngcairo size 1000,560 font "DejaVu Sans,10"
			set output '$dir/irq_per_io.png'
			set title "Interrupts per I/O by mode and queue depth (4k randread, 1 job; /proc/interrupts)"
			set xlabel "queue depth"
			set ylabel "interrupts per I/O (log scale)"
			set logscale x 2
			set logscale y 10
			set xtics (1, 2, 4, 8, 16, 32)
			set grid
			set key outside right noenhanced
			set datafile separator "\t"
			set datafile missing "NaN"
			plot $irq_clause
		EOF
	fi
	db_clause=$(abl_plot_clause sqdb_per_io nvme default batching-off shadow-off)
	if [[ -n $db_clause ]]; then
		gnuplot <<-EOF
			set terminal pngcairo size 1000,560 font "DejaVu Sans,10"
			set output '$dir/sqdb_per_io.png'
			set title "SQ doorbell MMIO writes per I/O (QEMU trace; 4k randread, 1 job)"
			set xlabel "queue depth"
			set ylabel "SQ doorbell writes per I/O (log scale)"
			set logscale x 2
			set logscale y 10
			set xtics (1, 2, 4, 8, 16, 32)
			set grid
			set key outside right noenhanced
			set datafile separator "\t"
			set datafile missing "NaN"
			plot $db_clause
		EOF
	fi
}

# ------------------------------------------------------------ report.md
JQ_REPORT='
def fmt: if . == null then "n/a" elif (fabs) >= 100 then (round | tostring)
	elif fabs >= 10 then ((. * 10 | round) / 10 | tostring)
	elif fabs >= 1 then ((. * 100 | round) / 100 | tostring)
	else ((. * 1000 | round) / 1000 | tostring) end;
def r2: if . == null then "n/a" else (if . < 0 then "-" else "" end) as $sg | (fabs * 100 | round) as $n
	| "\($sg)\($n / 100 | floor).\(($n % 100) | tostring | if length < 2 then "0" + . else . end)" end;
def ratios: if . == null or length == 0 then "" else map(r2) | join(" ") end;
def mlabel: {iops: "IOPS", mibs: "MiB/s", p50_us: "p50 latency (us)", p99_us: "p99 latency (us)",
	p999_us: "p99.9 latency (us)", mean_us: "mean latency (us)", cpu_us_per_io: "CPU us per I/O (all vCPUs, busy)",
	kcpu_us_per_io: "kernel CPU us per I/O (sys+irq+softirq)", irq_per_io: "interrupts per I/O (/proc/interrupts)",
	msix_per_io: "MSI-X messages per I/O (QEMU)", sqdb_per_io: "SQ doorbell MMIO per I/O (QEMU)",
	cqdb_per_io: "CQ doorbell MMIO per I/O (QEMU)", ipi_per_io: "function-call IPIs per I/O (CAL)",
	mem_taken_kb: "MemFree taken (kB)"}[.] // .;
def verdict: if .pass == null then "n/a"
	elif .pass then "meets" + (if .within_noise then " (pairs straddle 1.00)" else "" end)
	else "**falls short**" + (if .within_noise then " (pairs straddle 1.00)" else "" end) end;
def kb: if . == null then "n/a" else "\(round) kB" end;
def memrow($name; $s; $n): "| \($name) | \($s | kb) | \($n | kb) | \(if $s == null or $n == null or $n <= 0 or $s < 0 then "n/a" else ($s / $n | r2) end) |";

. as $R
| ($R.host) as $h | ($R.guest) as $g
| (($R.notes // []) | map(select(.kind == "alias")) | map({(.what): .why}) | add // {}) as $alias
| [
"# ssdq vs nvme: side-by-side benchmark",
"",
"> **Read ratios, not absolute numbers.** This runs on QEMU TCG (software CPU emulation): absolute IOPS and latencies swing by tens of percent between boots and even between rounds of one boot, and say nothing about real hardware. Only the side-by-side ratios mean anything: both drivers ran in the same boot, on identical QEMU NVMe controllers, with the same fio options, alternately. Ratio = ssdq / nvme, computed round by round (pairs) and summarised by the median.",
"",
"- started \($h.started // "?"), \(if $g.quick then "**quick** variant" else "full run" end), status: guest \($g.status // "?"), VM \($h.vm_status // "?")",
"- repo \($h.git // "?"), ssdq.ko sha256 \($h.ssdq_ko_sha256 // "?") (params: \(($g.ssdq_params // []) | join(", ")))",
"- guest kernel \($g.guest_kernel // "?"), \($g.vcpus // "?") vCPUs, accel \($h.accel // "?"), \($h.qemu // "?"), \($g.fio // "?")",
"- main jobs: \($g.runtime_s // "?") s + \($g.ramp_ms // "?") ms ramp, \($g.rounds // "?") rounds (pair order flips each round); ablations: \($g.abl_runtime_s // "?") s x \($g.abl_rounds // "?") round(s) at QD \(($g.abl_qds // []) | map(tostring) | join("/")); region \($g.region // "?") per disk, preconditioned",
"- host: \($h.host_cpus // "?") CPUs (\($h.host_cpu // "?")), load \($h.host_load_start // "?") at start, \($h.host_load_end // "?") at end; \($h.wall_s // "?") s from start to VM exit, of which \($h.lock_wait_s // "?") s waiting for another VM to finish",
"",
"## Targets",
"",
"ssdq should reach >= 1.00x nvme IOPS/bandwidth on every job, <= 1.00x its QD1 latency, and <= 1.00x its CPU per I/O and memory. The verdict uses the median of the pair (round-by-round) ratios; the ratio of the two medians can differ from it when rounds swing. \"pairs straddle 1.00\" means some rounds went one way and some the other: the difference is inside the noise.",
"",
"| job | metric | nvme (median) | ssdq (median) | ssdq/nvme (median of pair ratios) | pair ratios | ratio of medians | target | result |",
"|---|---|---:|---:|---:|---|---:|---|---|",
($R.verdicts[] | "| \(.job) | \(.metric | mlabel) | \(.nvme | fmt) | \(.ssdq | fmt) | **\(.ratio | r2)** | \(.ratios | ratios) | \(if .ssdq != null and .nvme != null and .nvme != 0 then (.ssdq / .nvme | r2) else "n/a" end) | \(if .better == "higher" then ">= 1.00" else "<= 1.00" end) | \(verdict) |"),
"",
(($R.verdicts | map(select(.pass == false))) as $short
	| if ($short | length) == 0 then "**ssdq meets every target measured here.**"
	  else "**ssdq falls short on \($short | length) of \($R.verdicts | map(select(.pass != null)) | length) targets:** " + ($short | map("\(.job) \(.metric | mlabel) (x\(.ratio | r2))") | join("; ")) + "." end),
(($R.verdicts | map(select(.pass == null))) as $na
	| if ($na | length) == 0 then empty else "Not measured: " + ($na | map("\(.job) \(.metric | mlabel)") | join("; ")) + "." end),
"",
"## Throughput and latency (medians)",
"",
"| job | IOPS nvme | IOPS ssdq | ratio | MiB/s nvme | MiB/s ssdq | p50 us nvme | p50 us ssdq | ratio | p99 us nvme | p99 us ssdq | ratio |",
"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
($R.comparisons[] | .metrics as $m
	| "| \(.job)\(if .section == "polled" then " (poll_queues=1)" else "" end) | \($m.iops.b | fmt) | \($m.iops.a | fmt) | \($m.iops.ratio | r2) | \($m.mibs.b | fmt) | \($m.mibs.a | fmt) | \($m.p50_us.b | fmt) | \($m.p50_us.a | fmt) | \($m.p50_us.ratio | r2) | \($m.p99_us.b | fmt) | \($m.p99_us.a | fmt) | \($m.p99_us.ratio | r2) |"),
"",
(if $charts.iops then "![IOPS per job](iops.png)" else "(no chart: gnuplot missing or no data)" end),
"",
"## Cost per I/O (medians)",
"",
"CPU = busy ticks of all vCPUs over the run window (/proc/stat, includes fio itself) divided by the I/Os the disk completed (diskstats). Interrupts count the device'"'"'s I/O vectors in /proc/interrupts; doorbells and MSI-X messages are counted by QEMU itself (trace events), so they are the same measurement for both drivers. Lower is better for all.",
"",
"| job | CPU us/IO nvme | ssdq | ratio | kernel CPU us/IO nvme | ssdq | IRQ/IO nvme | ssdq | SQ db/IO nvme | ssdq | CQ db/IO nvme | ssdq |",
"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
($R.comparisons[] | .metrics as $m
	| "| \(.job) | \($m.cpu_us_per_io.b | fmt) | \($m.cpu_us_per_io.a | fmt) | \($m.cpu_us_per_io.ratio | r2) | \($m.kcpu_us_per_io.b | fmt) | \($m.kcpu_us_per_io.a | fmt) | \($m.irq_per_io.b | fmt) | \($m.irq_per_io.a | fmt) | \($m.sqdb_per_io.b | fmt) | \($m.sqdb_per_io.a | fmt) | \($m.cqdb_per_io.b | fmt) | \($m.cqdb_per_io.a | fmt) |"),
"",
"## Memory per driver",
"",
(if $R.memory == null then "Not measured (no mem section)." else
	($R.memory) as $M
	| ($M.controller.ssdq) as $cs | ($M.controller.nvme) as $cn
	| ($M.module.ssdq) as $ms | ($M.module.nvme) as $mn
	| "Measured in the same boot before any I/O, after one unmeasured load/unload of each module. Then, per driver and cycle (\($g.mem_cycles // "?") cycle(s), drivers alternating): unloaded, module loaded with its controller unbound, bound, unbound, unloaded; each state read from /proc/meminfo after sync and drop_caches. Module = (mean of the unloaded states) - (mean of the module-only states); one controller = (mean of the module-only states) - (bound state). Medians over cycles. The drift rows say how far the same state moved within a cycle: differences smaller than that are noise (page cache the drop cannot free, per-CPU slab caches, RCU-deferred frees).",
	"",
	"| | ssdq | nvme | ssdq/nvme |",
	"|---|---:|---:|---:|",
	"| module text+data (/proc/modules: \($M.module_names.ssdq | join("+")) vs \($M.module_names.nvme | join("+"))) | \(if $M.module_bytes.ssdq then "\($M.module_bytes.ssdq / 1024 | round) kB" else "n/a" end) | \(if $M.module_bytes.nvme then "\($M.module_bytes.nvme / 1024 | round) kB" else "n/a" end) | \(if $M.module_bytes.ssdq and $M.module_bytes.nvme then ($M.module_bytes.ssdq / $M.module_bytes.nvme | r2) else "n/a" end) |",
	memrow("module loaded: MemFree taken (median)"; $ms.mem_taken_kb.median; $mn.mem_taken_kb.median),
	memrow("**one controller bound: MemFree taken (median)**"; $cs.mem_taken_kb.median; $cn.mem_taken_kb.median),
	"| one controller: range over cycles | \($cs.mem_taken_kb.min | kb) .. \($cs.mem_taken_kb.max | kb) | \($cn.mem_taken_kb.min | kb) .. \($cn.mem_taken_kb.max | kb) | |",
	memrow("one controller, of which Slab"; $cs.slab_kb.median; $cn.slab_kb.median),
	memrow("one controller, of which unreclaimable Slab"; $cs.sunreclaim_kb.median; $cn.sunreclaim_kb.median),
	memrow("one controller, of which Percpu"; $cs.percpu_kb.median; $cn.percpu_kb.median),
	memrow("one controller, of which vmalloc"; $cs.vmalloc_kb.median; $cn.vmalloc_kb.median),
	memrow("one controller, of which kernel stacks"; $cs.kernelstack_kb.median; $cn.kernelstack_kb.median),
	memrow("**module + one controller**"; (($ms.mem_taken_kb.median // 0) + ($cs.mem_taken_kb.median // 0)); (($mn.mem_taken_kb.median // 0) + ($cn.mem_taken_kb.median // 0))),
	"| drift of the module-only state within a cycle (noise) | \([$M.cycles[] | select(.driver == "ssdq") | .drift_controller_kb] | map(tostring) | join(", ")) kB | \([$M.cycles[] | select(.driver == "nvme") | .drift_controller_kb] | map(tostring) | join(", ")) kB | |",
	"| drift of the unloaded state within a cycle (noise) | \([$M.cycles[] | select(.driver == "ssdq") | .drift_module_kb] | map(tostring) | join(", ")) kB | \([$M.cycles[] | select(.driver == "nvme") | .drift_module_kb] | map(tostring) | join(", ")) kB | |",
	"",
	"What is not Slab/Percpu/vmalloc/stacks is whole pages: the DMA-coherent SQ/CQ rings and PRP/SGL pools, blk-mq'"'"'s request pages (depth x queues x (request + driver PDU)) and the gendisk/bdi. Both drivers run their defaults here (one I/O queue per vCPU, 1024 entries for ssdq; nvme sizes its own).",
	"",
	(($R.memory_slab // []) | map("Largest slab growth on the first \(.driver) bind: " + (.slab_growth | map("\(.cache) \(.bytes / 1024 | round) kB") | join(", ")) + ".") | join("\n\n"))
end),
"",
"## A/A check: nvme on both controllers",
"",
(if ($R.calibration | length) == 0 then "Not run (quick variant, or calib not in the sections)." else
	"Both controllers driven by the kernel'"'"'s nvme, same job, same alternation. Any ratio away from 1.00 here is the two slots (and the noise), not a driver: read the ssdq/nvme ratios above against it.",
	"",
	"| job | metric | 00:04.0 (ssdq'"'"'s slot) | 00:05.0 (nvme'"'"'s slot) | ratio | pair ratios |",
	"|---|---|---:|---:|---:|---|",
	($R.calibration[] | .job as $j | .metrics as $m | ["iops", "p50_us", "p99_us", "cpu_us_per_io"][] as $k
		| "| \($j) | \($k | mlabel) | \($m[$k].a | fmt) | \($m[$k].b | fmt) | \($m[$k].ratio | r2) | \($m[$k].ratios | ratios) |")
end),
"",
"## Ablations of ssdq'"'"'s techniques",
"",
"4k random read, one fio job pinned to one CPU, at each queue depth; medians over \($g.abl_rounds // "?") round(s), variant order rotated each round. \"vs default\" = variant IOPS / ssdq default IOPS at the same depth. nvme is the reference row. Doorbells and MSI-X are QEMU'"'"'s counts; \"cmds/batch\" is ssdq'"'"'s own counter (commands per ->queue_rqs plug list).",
"",
(($R.notes // []) | map(select(.kind == "unavailable"))) as $un
| ($R.ablations) as $A
| def group($title; $vs; $match):
	"### \($title)", "",
	(($un | map(select(.what | test($match)))) as $u
		| if ($u | length) > 0 then ($u[] | "Not available: \(.what): \(.why).") , "" else empty end),
	([$vs[] | ($alias[.] // .) as $s | select([$A[] | select(.variant == $s)] | length > 0)] | length) as $have
	| if $have <= 1 then "No runs." else
		"| QD | variant | IOPS | vs default | p50 us | p99 us | IRQ/IO | MSI-X/IO | SQ db/IO | CQ db/IO | CPU us/IO | cmds/batch |",
		"|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
		([$vs[] | . as $v | ($alias[$v] // $v) as $s | [$A[] | select(.variant == $s)] | select(length > 0) | .[] | {v: $v, s: $s, qd}]
			| sort_by(.qd) | group_by(.qd)[] | .[] | . as $r
			| [$A[] | select(.variant == $r.s and .qd == $r.qd)][0] as $x
			| ([$A[] | select(.variant == "default" and .qd == $x.qd)][0].m.iops) as $d
			| "| \($x.qd) | \($r.v)\(if $r.s != $r.v then " (= \($r.s))" else "" end) | \($x.m.iops | fmt) | \(if $d and $x.m.iops then ($x.m.iops / $d | r2) else "n/a" end) | \($x.m.p50_us | fmt) | \($x.m.p99_us | fmt) | \($x.m.irq_per_io | fmt) | \($x.m.msix_per_io | fmt) | \($x.m.sqdb_per_io | fmt) | \($x.m.cqdb_per_io | fmt) | \($x.m.cpu_us_per_io | fmt) | \($x.m.cmds_per_batch | fmt) |")
	  end, "";
  group("Doorbell batching (one SQ doorbell per plug batch vs per command)"; ["nvme", "default", "batching-off"]; "batching"),
  group("Shadow doorbells"; ["nvme", "default", "shadow-off"]; "shadow"),
  group("Interrupt mode: direct, irqpoll, irqpoll with deferred re-arm"; ["nvme", "irq-direct", "irq-irqpoll", "irq-irqpoll-defer"]; "nterrupt mode"),
  (if $charts.irq_per_io then "![interrupts per I/O](irq_per_io.png)", "" else empty end),
  (if $charts.sqdb_per_io then "![SQ doorbells per I/O](sqdb_per_io.png)", "" else empty end),
  "### Completion steering (ssdq with io_queues=1, fio on a CPU the interrupt does not arrive on)", "",
  (($un | map(select(.what | test("steering")))) as $u
	| if ($u | length) > 0 then ($u[] | "Not available: \(.what): \(.why).")
	elif ([$A[] | select(.section == "steer")] | length) == 0 then "Not run." else
	"| QD | mode | IOPS | p50 us | p99 us | IRQ/IO | remote completions/IO | steering IPIs/IO | CAL IPIs/IO | CPU us/IO |",
	"|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
	([$A[] | select(.section == "steer")] | sort_by([.qd, ({"steer-off": 0, "steer-ipi": 1, "steer-blk": 2}[.variant] // 9)])[]
		| "| \(.qd) | \(.variant) | \(.m.iops | fmt) | \(.m.p50_us | fmt) | \(.m.p99_us | fmt) | \(.m.irq_per_io | fmt) | \(.m.remote_per_io | fmt) | \(.m.ipis_per_io | fmt) | \(.m.ipi_per_io | fmt) | \(.m.cpu_us_per_io | fmt) |")
	end),
"",
"## Not available in this ssdq build",
"",
(if ($un | length) == 0 then "Everything the bench knows how to measure was there." else ($un[] | "- \(.what): \(.why)") end),
"",
"## Failed runs",
"",
(if ($R.failed_runs | length) == 0 then "None." else ($R.failed_runs[] | "- \(.tag): status \(.rc) (fio/\(.tag).err)") end),
"",
"## Method, in short",
"",
"One VM boot (scripts/vm.sh: TCG, \($g.vcpus // 2) vCPUs, two identical QEMU NVMe controllers on raw images, cache=writeback). ssdq drives 00:04.0, the kernel'"'"'s nvme drives 00:05.0; both are loaded and idle except for the disk under test. Every comparison job runs on both sides alternately for \($g.rounds // "?") rounds with the pair order flipped each round; the table values are medians and the ratio is the median of the per-round ratios. The job region (\($g.region // "?")) of both disks is written once before any measurement, so neither side reads holes. Polled jobs reload both drivers with poll_queues=1. See Documentation/bench.rst for the full method and caveats. Raw figures: results.json (every run, every counter), runs.jsonl, mem.jsonl, fio/*.json."
] | .[]
'

# The ablation group matcher above needs the notes texts; build the report.
report() {
	local c charts='{' sep=''
	for c in iops irq_per_io sqdb_per_io; do
		charts+="$sep\"$c\":$([[ -s $dir/$c.png ]] && echo true || echo false)"
		sep=,
	done
	jq -r --argjson charts "$charts}" "$JQ_REPORT" "$dir/results.json" >"$dir/report.md.tmp"
	mv "$dir/report.md.tmp" "$dir/report.md"
}

rm -f "$dir"/iops.png "$dir"/irq_per_io.png "$dir"/sqdb_per_io.png
charts
report
# A short summary for the terminal: the targets table.
sed -n '/^## Targets/,/^## Throughput/p' "$dir/report.md" | sed '$d'
