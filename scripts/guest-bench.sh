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

{
	dut_load
	echo "fio: ${jobs} jobs x QD${qd}, ${rt} s, on $(nproc) vCPUs (QEMU TCG: compare ratios only)"
	bench "$DUT_MOD" "$DEV"
	if [[ ${SSDQ_RUN_REF:-0} == 1 ]]; then
		ref_load
		bench nvme-ref "/dev/$REF_DISK"
	fi
} | tee "$SSDQ_OUT/bench.txt"
