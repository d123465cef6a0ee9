#!/bin/bash
# make run: boot the VM, load the driver, short fio, print IOPS/latency.
# Assumes ssdq.ko is built (the Makefile does that first).
set -euo pipefail
. "$(dirname "$0")/common.sh"

export DUT=${DUT:-ssdq}
if [[ $DUT == ssdq && ! -f $SSDQ_REPO/ssdq.ko ]]; then
	die "ssdq.ko not built (make module)"
fi
out=$SSDQ_BUILD/run
rm -rf "$out"
rc=0
"$SSDQ_REPO/scripts/vm.sh" -o "$out" -t "${SSDQ_RUN_TIMEOUT:-300}" -- scripts/guest-bench.sh || rc=$?
if [[ -s $out/bench.txt ]]; then
	cat "$out/bench.txt"
fi
if ((rc != 0)); then
	echo "make run: failed (status $rc); console: ${out#"$SSDQ_REPO"/}/console.log" >&2
	grep -E 'FAIL|fio on' "$out/console.log" 2>/dev/null | tail -n5 >&2 || true
fi
exit "$rc"
