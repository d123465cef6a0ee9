#!/bin/bash
# make soak [DURATION=10m] [SEED=N] [KERNEL=debug]: verified mixed I/O on
# /dev/ssdq0 while a driver script flips every switch, injects faults,
# resets, offlines a CPU and rebinds the device at random, from a seed it
# prints (scripts/guest-soak.sh has the details). Not part of make check.
#
#   scripts/soak.sh [DURATION]   10m default; N (seconds), Nm or Nh
#   SEED=N                       replay a run (default: a fresh one)
#   KERNEL=debug                 on the debug kernel (scripts/debug-kernel.sh;
#                                built and cached if missing), else 6.12
#
# Report: build/soak/soak-report.txt (printed); logs in build/soak/soak/.
# Exit 0 only if the guest found no verify error, no I/O error and no
# kernel report.
set -euo pipefail
. "$(dirname "$0")/common.sh"

dur=${1:-${DURATION:-10m}}
case $dur in
*h) secs=$((${dur%h} * 3600)) ;;
*m) secs=$((${dur%m} * 60)) ;;
*s) secs=${dur%s} ;;
*) secs=$dur ;;
esac
[[ $secs =~ ^[0-9]+$ ]] && ((secs >= 30)) ||
	die "soak: DURATION takes N (seconds, at least 30), Nm or Nh, not '$dur'"
seed=${SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}
[[ $seed =~ ^[0-9]+$ ]] || die "soak: SEED takes a number, not '$seed'"

out=$SSDQ_BUILD/soak
mkdir -p "$out"
vm=(-o "$out" -t $((secs + 1200)) --img-mb 1024)
if [[ ${KERNEL:-} == debug ]]; then
	kdir=$("$SSDQ_REPO/scripts/debug-kernel.sh") || die "soak: no debug kernel (scripts/debug-kernel.sh)"
	ssdq_ko_copy "$kdir/src" "$out/debug-ko" "$out/build-debug.log" ||
		die "soak: building ssdq.ko for the debug kernel failed ($out/build-debug.log)"
	export SSDQ_KO=$out/debug-ko/ssdq.ko SSDQ_IO_DIV=4
	vm+=(--debug-kernel "$kdir")
elif [[ -n ${KERNEL:-} ]]; then
	die "soak: KERNEL takes debug, or nothing for Debian's 6.12, not '$KERNEL'"
else
	[[ -f $SSDQ_REPO/ssdq.ko ]] || die "soak: ssdq.ko not built (make module)"
fi
if fio_dir=$("$SSDQ_REPO/scripts/test-fio.sh" 2>"$out/test-fio.log"); then
	export SSDQ_FIO_DIR=$fio_dir
fi

note "soak: seed $seed, $secs s${KERNEL:+ on the $KERNEL kernel} (replay: make soak SEED=$seed DURATION=$dur${KERNEL:+ KERNEL=$KERNEL})"
rc=0
"$SSDQ_REPO/scripts/vm.sh" "${vm[@]}" -- scripts/guest-soak.sh "$secs" "$seed" || rc=$?
if [[ -s $out/soak-report.txt ]]; then
	cat "$out/soak-report.txt"
else
	echo "soak: no report (VM status $rc; console: ${out#"$SSDQ_REPO"/}/console.log)" >&2
	((rc)) || rc=1
fi
exit "$rc"
