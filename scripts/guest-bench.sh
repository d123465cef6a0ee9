#!/bin/bash
# Runs inside the VM for `make run`: load ssdq (or DUT=nvme), run a short
# 4k random-read fio job on its disk, print IOPS and latency.
# Env: SSDQ_BENCH_RUNTIME (s, default 10), SSDQ_BENCH_QD (32),
#      SSDQ_BENCH_JOBS (2), SSDQ_RUN_REF=1 also measures the reference
#      controller with the kernel's nvme driver, on the same device model.
set -euo pipefail
. "$SSDQ_REPO/tests/lib.sh"
T_DIR=$SSDQ_OUT
rt=${SSDQ_BENCH_RUNTIME:-10}
qd=${SSDQ_BENCH_QD:-32}
jobs=${SSDQ_BENCH_JOBS:-2}

bench() { # label dev
	local json=$SSDQ_OUT/bench-$1.json
	fio --output-format=json --output="$json" --name="$1" --filename="$2" \
		--rw=randread --bs=4k --ioengine=io_uring --direct=1 --iodepth="$qd" \
		--numjobs="$jobs" --group_reporting=1 --time_based --runtime="$rt" \
		--ramp_time=1 >/dev/null 2>"$SSDQ_OUT/bench-$1.err" ||
		{ echo "fio on $2 failed: $(head -n3 "$SSDQ_OUT/bench-$1.err")"; return 1; }
	sed -i -n '/^{/,$p' "$json"
	jq -r --arg l "$1" --arg d "$2" '.jobs[0].read as $r |
		"\($l) (\($d)): 4k randread, io_uring, O_DIRECT" +
		"\n  IOPS        \($r.iops | floor)" +
		"\n  bandwidth   \($r.bw_bytes / 1048576 * 10 | floor / 10) MiB/s" +
		"\n  latency us  mean \($r.lat_ns.mean / 1000 | floor)" +
		"  p50 \($r.clat_ns.percentile["50.000000"] / 1000 | floor)" +
		"  p99 \($r.clat_ns.percentile["99.000000"] / 1000 | floor)" +
		"  p99.9 \($r.clat_ns.percentile["99.900000"] / 1000 | floor)" +
		"  max \($r.lat_ns.max / 1000 | floor)" +
		"\n  errors      \([.jobs[].error] | add)"' "$json"
}

# ssdq's live view beside fio: one line per queue per second.
stat_pid=
stat_start() {
	[[ $DUT == ssdq ]] || return 0
	"$SSDQ_REPO/scripts/ssdq-stat" -i 1 -n "$rt" "$DISK" >"$SSDQ_OUT/stat.txt" 2>&1 &
	stat_pid=$!
}
stat_show() {
	[[ -n $stat_pid ]] || return 0
	wait "$stat_pid" || true
	echo "ssdq-stat during the run ($SSDQ_OUT/stat.txt), its busiest second:"
	# Blocks start with the disk's name; the busiest has the most I/O
	# commands per second (queues 1 and up).
	awk -v d="$DISK" 'index($0, d " ") == 1 { n = 0; c = 0 }
		{ b[++n] = $0 } $1 ~ /^[1-9][0-9]*$/ { c += $2 }
		/^steered/ && c >= best { best = c; m = n; for (i = 1; i <= n; i++) keep[i] = b[i] }
		END { for (i = 1; i <= m; i++) print "  " keep[i] }' "$SSDQ_OUT/stat.txt"
}

{
	dut_load
	echo "fio: ${jobs} jobs x QD${qd}, ${rt} s, on $(nproc) vCPUs (QEMU TCG: compare ratios only)"
	stat_start
	bench "$DUT_MOD" "$DEV"
	stat_show
	if [[ ${SSDQ_RUN_REF:-0} == 1 ]]; then
		ref_load
		bench nvme-ref "/dev/$REF_DISK"
	fi
} | tee "$SSDQ_OUT/bench.txt"
