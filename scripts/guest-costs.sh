#!/bin/bash
# What things cost inside the test VM: the figures of "Where the time went"
# in Documentation/debug-lane.rst. Runs in the guest:
#
#   scripts/vm.sh [--debug-kernel "$(scripts/debug-kernel.sh)"] \
#       -o build/vm/costs -- scripts/guest-costs.sh
#
# Prints "seconds  what" lines to stdout and $SSDQ_OUT/costs.txt. Uses the
# reference controller (nvme on 00:05.0) and, if SSDQ_FIO_DIR is set (as
# check.sh sets it: scripts/test-fio.sh), that fio beside Debian's.
set -euo pipefail
cd "$(dirname "$0")/../tests"
# shellcheck source=tests/lib.sh
. ./lib.sh

out=$SSDQ_OUT/costs.txt
: >"$out"
timed() { # what cmd...
	local what=$1 s
	shift
	s=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || what="$what (FAILED)"
	printf '%8.2f  %s\n' "$(bc <<<"$EPOCHREALTIME - $s")" "$what" | tee -a "$out"
}
echo "kernel $(uname -r)" | tee -a "$out"

mb=32
big=$SSDQ_OUT/costs-$mb.bin # on the repo's 9p share
timed "head -c ${mb}M /dev/urandom into a file on the 9p repo share" \
	sh -c "head -c ${mb}M /dev/urandom >$big"
timed "cat of that ${mb} MiB file (9p, cache=none)" cat "$big"
rm -f "$big"
timed "head -c 1M /dev/urandom" head -c 1M /dev/urandom
timed "pattern_file: ${mb} MiB of AES-CTR keystream into tmpfs" pattern_file costs.bin $((mb * MiB))
timed "/bin/true" /bin/true
timed "cat /proc/version" cat /proc/version
timed "sleep 0.1 (the process)" sleep 0.1
timed "nap 0.1 (builtin)" nap 0.1
timed "Debian's fio --version" /usr/bin/fio --version
if [[ -n ${SSDQ_FIO_DIR:-} ]]; then
	timed "static test fio --version" "$SSDQ_FIO_DIR/fio" --version
fi

ref_load
timed "O_DIRECT dd of ${mb} MiB from the reference NVMe disk" \
	dd if="/dev/$REF_DISK" of=/dev/null bs=1M count="$mb" iflag=direct
modprobe -r nvme
