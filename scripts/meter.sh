#!/bin/bash
# make meter: what an I/O costs the guest, counted, not timed. A QEMU TCG
# plugin of ours (scripts/meter-plugin.c) counts every guest instruction by
# the block it runs in; the guest (scripts/guest-meter.sh) runs each job on
# ssdq and on nvme in windows of N and 2N I/Os; scripts/meter-report.py
# puts the difference on the guest's symbols and layers, per I/O.
#
#   scripts/meter.sh [--boots N] [--jobs "rr4k-qd1 ..."] [--n N] [--quick]
#                    [--out DIR]
#
# --boots N (or BOOTS=N): boots to run (default 2): each bucket's spread
# over the boots is in the report. --quick: one boot, the QD1 and QD32
# read jobs. Results: build/meter/<time>/ (report.md, results.json, per
# boot boot-K/ with the plugin's blocks.txt, kallsyms, windows.jsonl),
# linked from build/meter/latest, or DIR (--out). The guest's settings
# (SSDQ_METER_SIDES, _VARIANTS, ...: scripts/guest-meter.sh) pass through
# the environment. Documentation/meter.rst.
#
# QEMU runs single-threaded TCG (-accel tcg,thread=single): the plugin's
# counters are plain adds, exact only when one host thread runs every vCPU.
set -euo pipefail
. "$(dirname "$0")/common.sh"

boots=${BOOTS:-2}
jobs=${SSDQ_METER_JOBS:-}
n=${SSDQ_METER_N:-}
timeout=${SSDQ_METER_TIMEOUT:-1800}
out=
while (($#)); do
	case $1 in
	--boots) boots=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--n) n=$2; shift 2 ;;
	--quick) boots=1; jobs=${jobs:-"rr4k-qd1 rr4k-qd32x2"}; export SSDQ_METER_VARIANTS=${SSDQ_METER_VARIANTS-}; shift ;;
	--out) out=$2; shift 2 ;;
	*) die "meter.sh: unknown argument $1 (see the header of $0)" ;;
	esac
done
[[ $boots =~ ^[1-9]$ ]] || die "BOOTS (--boots) must be 1-9, not '$boots'"
[[ -z $n || $n =~ ^[1-9][0-9]*$ ]] || die "--n must be a count of I/Os, not '$n'"

[[ -f $SSDQ_REPO/ssdq.ko ]] || die "ssdq.ko not built (make module)"
command -v python3 >/dev/null || die "python3 missing (make deps)"

out_root=$SSDQ_BUILD/meter
if [[ -z $out ]]; then
	name=$(date +%Y%m%d-%H%M%S)
	out=$out_root/$name
	mkdir -p "$out"
	ln -sfn "$name" "$out_root/latest"
else
	[[ $out == "$SSDQ_REPO"/* ]] || die "--out must be inside the repo (the guest writes there): $out"
	rm -rf "$out"
	mkdir -p "$out"
fi

# The plugin and the marker, built against the installed QEMU's plugin API.
hdr=$("$SSDQ_REPO/scripts/meter-header.sh")
bin=$out_root/bin
mkdir -p "$bin"
gcc -O2 -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC -I"$hdr" \
	-o "$bin/meter-plugin.so" "$SSDQ_REPO/scripts/meter-plugin.c" || die "building the meter's plugin failed"
gcc -O2 -Wall -Werror -o "$bin/meter-mark" "$SSDQ_REPO/scripts/meter-mark.c" ||
	die "building the meter's marker failed"
cp "$SSDQ_REPO/ssdq.ko" "$out/ssdq.ko"

export SSDQ_TCG_THREAD=single SSDQ_METER_MARK=$bin/meter-mark SSDQ_BENCH_KO=$out/ssdq.ko
[[ -z $jobs ]] || export SSDQ_METER_JOBS=$jobs
# The ablation table's switches, each against ssdq's defaults (abi.rst):
# doorbell batching, ring_idle, shadow doorbells, steering, interrupt
# modes, and entropy gathering (add_random=1).
export SSDQ_METER_VARIANTS=${SSDQ_METER_VARIANTS-"batching-off:plugging/batching=0 ring-idle:plugging/ring_idle=1
shadow-off:plugging/shadow_doorbells=0 steer-off:steering/mode=off steer-blk:steering/mode=blk
irq-irqpoll:irq/mode=irqpoll irq-defer:irq/mode=irqpoll,irq/defer_us=300 irq-adaptive:irq/mode=adaptive
add-random:queue/add_random=1"}
[[ -z $n ]] || export SSDQ_METER_N=$n
rc=0
for ((b = 1; b <= boots; b++)); do
	o=$out/boot-$b
	mkdir -p "$o"
	note "meter: boot $b of $boots (results in ${o#"$SSDQ_REPO"/})"
	# The plugin writes on the host; -msg timestamp=on stamps QEMU's trace
	# lines with the clock the plugin stamps its marks with.
	SSDQ_QEMU_EXTRA="-plugin $bin/meter-plugin.so,out=$o/blocks.txt -msg timestamp=on" \
		"$SSDQ_REPO/scripts/vm.sh" -o "$o" -t "$timeout" \
		--trace pci_nvme_mmio_doorbell_sq,pci_nvme_mmio_doorbell_cq,pci_nvme_irq_msix,pci_nvme_eventidx_sq,pci_nvme_eventidx_cq,pci_nvme_enqueue_req_completion \
		-- scripts/guest-meter.sh || { rc=$?; note "meter: boot $b failed (status $rc; ${o#"$SSDQ_REPO"/}/console.log)"; }
	rm -f "$o/ssdq0.img" "$o/nvmeref.img"
done
"$SSDQ_REPO/scripts/meter-report.py" "$out" || rc=$?
echo "meter: report ${out#"$SSDQ_REPO"/}/report.md (build/meter/latest)"
exit "$rc"
