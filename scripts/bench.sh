#!/bin/bash
# make bench / make bench-quick: ssdq side by side with the kernel's nvme on
# two identical QEMU NVMe controllers, in ONE VM boot, plus ablations of
# ssdq's techniques; then the report (scripts/bench-report.py).
#
#   scripts/bench.sh [--quick] [--timeout SECS] [--sections "mem main ..."]
#                    [--smp N]
#
# --quick (or QUICK=1): shorter runs, fewer depths/cycles, no A/A check;
# under 5 minutes. The full run takes about 40 minutes on TCG.
# --smp N (or SMP=N): a VM of N vCPUs instead of 2 (vm.sh --smp). On a
# 2-core host 4 vCPUs are functional only: they share 2 host threads, so
# only the ssdq/nvme ratios of such a run mean anything.
# Results: build/bench/<timestamp>[-quick][-smpN]/ (report.md, results.json, *.png,
# raw runs.jsonl/mem.jsonl, fio/ per run), linked from build/bench/latest.
# Guest-side knobs (SSDQ_BENCH_*) are documented in
# scripts/guest-bench-suite.sh and Documentation/bench.rst.
#
# Only one VM runs on the machine at a time: vm.sh queues behind others.
set -euo pipefail
. "$(dirname "$0")/common.sh"

quick=${QUICK:-0}
smp=${SMP:-2}
timeout=
sections=
while (($#)); do
	case $1 in
	--quick) quick=1; shift ;;
	-t | --timeout) timeout=$2; shift 2 ;;
	--sections) sections=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	*) die "bench.sh: unknown argument $1 (see the header of $0)" ;;
	esac
done
[[ $quick == 0 || $quick == 1 ]] || die "QUICK must be 0 or 1, not '$quick'"
[[ $smp =~ ^[1-9][0-9]?$ ]] || die "SMP (--smp) must be a vCPU count, not '$smp'"
# The VM timeout bounds the whole guest part (vm.sh kills QEMU after it).
if [[ -z $timeout ]]; then
	timeout=${SSDQ_BENCH_TIMEOUT:-$((quick ? 600 : 3600))}
fi

# Charts need gnuplot; install it when we may, else report without charts.
ensure_gnuplot() {
	command -v gnuplot >/dev/null && return 0
	if ((EUID == 0)) && command -v apt-get >/dev/null; then
		note "installing gnuplot-nox for the charts"
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -qq -y \
			--no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
			{ DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq &&
				DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -qq -y \
					--no-install-recommends gnuplot-nox >/dev/null 2>&1; } || true
	fi
	command -v gnuplot >/dev/null || note "gnuplot missing: the report will have no charts"
}

# Host facts for the report: what ran where, and how busy the host was (a
# busy host slows TCG and widens the spread between rounds).
host_meta() { # file status
	jq -n --arg status "$2" --arg git "$(git -C "$SSDQ_REPO" describe --always --dirty 2>/dev/null || echo unknown)" \
		--arg qemu "$(qemu-system-x86_64 --version | head -n1)" \
		--arg cpu "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" \
		--argjson ncpu "$(nproc)" --arg load_start "$load_start" --arg load_end "$(cut -d' ' -f1-3 /proc/loadavg)" \
		--arg accel "$(sed -n 's/.*booting VM (\([a-z]*\),.*/\1/p' "$out/vm.stderr" 2>/dev/null | head -n1)" \
		--argjson vm_rc "${vm_rc:-null}" --argjson wall "$((SECONDS - t_start))" \
		--argjson wait "$(vm_wait)" \
		--argjson quick "$quick" --arg started "$started" --argjson smp "$smp" \
		--arg ko_sha "$(sha256sum "$out/ssdq.ko" 2>/dev/null | cut -c1-16)" \
		'{status: $status, git: $git, qemu: $qemu, host_cpu: $cpu, host_cpus: $ncpu,
		  host_load_start: $load_start, host_load_end: $load_end, accel: $accel,
		  ssdq_ko_sha256: $ko_sha, vm_status: $vm_rc, wall_s: $wall, lock_wait_s: $wait, quick: ($quick == 1), started: $started,
		  vm_smp: $smp}' >"$1"
}

# Seconds spent queueing for the VM lock (vm.sh writes guest.sh once it has
# it), so the report can tell the bench's own time from the wait.
vm_wait() {
	local f=$out/guest.sh
	if [[ -e $f ]]; then echo $(($(stat -c %Y "$f") - t_epoch)); else echo null; fi
}

[[ -f $SSDQ_REPO/ssdq.ko ]] || die "ssdq.ko not built (make module)"
command -v jq >/dev/null || die "jq missing (make deps)"
command -v python3 >/dev/null || die "python3 missing (make deps)"
ensure_gnuplot

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
name=$(date +%Y%m%d-%H%M%S)
((quick)) && name+=-quick
((smp == 2)) || name+=-smp$smp
mkdir -p "$SSDQ_BUILD/bench"
out=$SSDQ_BUILD/bench/$name
mkdir -p "$out"
ln -sfn "$name" "$SSDQ_BUILD/bench/latest"
# A snapshot of the module: others may rebuild ssdq.ko while we run.
cp "$SSDQ_REPO/ssdq.ko" "$out/ssdq.ko"
: >"$out/progress.log"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$SECONDS
t_epoch=$(date +%s)
vm_rc=
host_meta "$out/host.json" running

export SSDQ_BENCH_QUICK=$quick SSDQ_BENCH_KO=$out/ssdq.ko
[[ -z $sections ]] || export SSDQ_BENCH_SECTIONS=$sections
kind=full
((quick)) && kind=quick
note "bench ($kind, $smp vCPUs): results in ${out#"$SSDQ_REPO"/} (VM timeout ${timeout}s)"

# The guest appends a line per job to progress.log; show it as it comes.
tail -n +1 -F "$out/progress.log" 2>/dev/null &
tailpid=$!
trap 'kill "$tailpid" 2>/dev/null || true' EXIT
vm_rc=0
# Device-side counters: SQ/CQ doorbell MMIO writes and MSI-X messages.
"$SSDQ_REPO/scripts/vm.sh" -o "$out" -t "$timeout" --smp "$smp" \
	--trace pci_nvme_mmio_doorbell_sq,pci_nvme_mmio_doorbell_cq,pci_nvme_irq_msix \
	-- scripts/guest-bench-suite.sh 2> >(tee "$out/vm.stderr" >&2) || vm_rc=$?
sleep 0.5
kill "$tailpid" 2>/dev/null || true
wait "$tailpid" 2>/dev/null || true
trap - EXIT
host_meta "$out/host.json" "$( ((vm_rc == 0)) && echo finished || echo "vm status $vm_rc")"

# The images are 2 x 512 MiB of scratch data nobody checks afterwards.
rm -f "$out/ssdq0.img" "$out/nvmeref.img"

rc=0
"$SSDQ_REPO/scripts/bench-report.py" "$out" || rc=$?
# The trace is only an input to the counts now in results.json.
if ((rc == 0)) && [[ ${SSDQ_BENCH_KEEP_TRACE:-0} != 1 ]]; then
	rm -f "$out/qemu-trace.log"
fi
if ((vm_rc != 0)); then
	echo "bench: the VM part failed (status $vm_rc); the report covers what ran." \
		"Console: ${out#"$SSDQ_REPO"/}/console.log" >&2
	rc=1
fi
echo "bench: report ${out#"$SSDQ_REPO"/}/report.md (build/bench/latest)"
exit "$rc"
