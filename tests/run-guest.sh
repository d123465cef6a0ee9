#!/bin/bash
# Runs inside the test VM (vm.sh passes it as the command). Runs each test
# script in order and prints one line per test:
#   PASS name
#   FAIL name: reason
# The same lines go to $SSDQ_OUT/results.txt; each test's output goes to
# $SSDQ_OUT/logs/<name>.log. Exit status: number of failures (capped).
#
# Env: SSDQ_TESTS="load integrity ..." to run a subset (default: all),
#      SSDQ_SUFFIX appended to every name (e.g. -4k for a second config),
#      SSDQ_TEST_TIMEOUT default per-test timeout (a test may declare
#      "# timeout: SECS" in its header).
#
# Framework rules applied to every test, after it exits:
#  - it must have made at least one assertion (ok/assert_*),
#  - the kernel log it caused must not contain WARNING, BUG, Oops,
#    "Call Trace", hung_task, nor a warning-or-worse line mentioning the DUT,
#    unless the test declared the line with allow_dmesg,
#  - a DUT module still loaded is unloaded (and must unload).
set -uo pipefail
cd "$(dirname "$0")" || exit 1
TESTS_DIR=$(pwd -P)
export SSDQ_REPO=${SSDQ_REPO:-$(dirname "$TESTS_DIR")}
export SSDQ_OUT=${SSDQ_OUT:?}
# shellcheck source=tests/lib.sh
. ./lib.sh

results=$SSDQ_OUT/results.txt
mkdir -p "$SSDQ_OUT/logs" "$SSDQ_OUT/t"
: >"$results"

# Lines every test may cause: loading an unsigned out-of-tree module.
GLOBAL_ALLOW='loading out-of-tree module taints kernel|module verification failed: signature and/or required key missing|ssdqtest: mark'
BAD_ANY='WARNING|\<BUG\>|Oops|Call Trace|hung_task|blocked for more than|general protection fault|Kernel panic|UBSAN|KASAN'

test_name() { # tests/10-load.sh -> load
	local n=${1##*/}
	n=${n%.sh}
	echo "${n#[0-9][0-9]-}"
}

# dmesg lines (raw, "<prio>[time] text") after the begin marker of $1 that
# break the rules. Kernel messages have facility 0, so prio = level 0-7.
dmesg_violations() { # name allowfile
	local dut_re="$DUT_MOD|${DISK_NAME_RE}"
	dmesg -r | awk -v m="ssdqtest: begin $1" 'index($0, m) { n = NR; delete b; next } { b[NR] = $0 }
		END { for (i = n + 1; i <= NR; i++) if (i in b) print b[i] }' |
		while IFS= read -r line; do
			prio=${line#<}
			prio=${prio%%>*}
			text=$(sed -E 's/^<[0-9]+>(\[ *[0-9.]+\] )?//' <<<"$line")
			bad=0
			if grep -Eq "$BAD_ANY" <<<"$text"; then
				bad=1
			elif [[ $prio =~ ^[0-9]+$ ]] && ((prio <= 4)) && grep -Eq "$dut_re" <<<"$text"; then
				bad=1
			fi
			((bad)) || continue
			grep -Eq "$GLOBAL_ALLOW" <<<"$text" && continue
			[[ -s $2 ]] && grep -Eqf "$2" <<<"$text" && continue
			echo "$text"
		done
}
# DUT disks: ssdq0.. or, for DUT=nvme, nvmeXnY.
if [[ $DUT == ssdq ]]; then DISK_NAME_RE='ssdq[0-9]'; else DISK_NAME_RE='nvme[0-9]'; fi

run_one() { # script
	local script=$1 name tmo rc reason v
	name=$(test_name "$script")${SSDQ_SUFFIX:-}
	tmo=$(sed -nE 's/^# timeout: ([0-9]+).*/\1/p' "$script" | head -n1)
	tmo=${tmo:-${SSDQ_TEST_TIMEOUT:-300}}
	export T_DIR=$SSDQ_OUT/t/$name
	rm -rf "$T_DIR"
	mkdir -p "$T_DIR"
	local logf=$SSDQ_OUT/logs/$name.log
	echo "ssdqtest: begin $name" >/dev/kmsg
	echo "=== $name (timeout ${tmo}s)" >"$logf"
	local t0=$SECONDS
	rc=0
	# cwd = the test's scratch dir: fio leaves state files in its cwd.
	(cd "$T_DIR" && timeout -k 10 "$tmo" bash "$script") >>"$logf" 2>&1 || rc=$?
	reason=
	if ((rc == 124 || rc == 137)); then
		reason="timed out after ${tmo}s"
	elif ((rc != 0)); then
		reason=$(head -n1 "$T_DIR/reason" 2>/dev/null)
		reason=${reason:-"exit status $rc (see logs/$name.log)"}
	elif [[ ! -s $T_DIR/asserts ]]; then
		reason="made no assertion"
	fi

	# Leave no DUT module behind for the next test; unload problems and
	# their kernel messages belong to this test.
	if [[ -d /sys/module/$DUT_MOD ]]; then
		if [[ $DUT == ssdq ]]; then
			timeout 60 rmmod ssdq >>"$logf" 2>&1 || reason=${reason:-"teardown: rmmod ssdq failed"}
		else
			timeout 60 modprobe -r nvme >>"$logf" 2>&1 || reason=${reason:-"teardown: modprobe -r nvme failed"}
		fi
	fi
	# The reference controller's nvme too (tests count device-side events
	# that do not name the controller).
	if [[ -d /sys/module/nvme ]]; then
		timeout 60 modprobe -r nvme >>"$logf" 2>&1 || reason=${reason:-"teardown: modprobe -r nvme (reference) failed"}
	fi

	v=$(dmesg_violations "$name" "$T_DIR/allow")
	if [[ -n $v ]]; then
		{ echo "unexpected kernel messages:"; echo "$v"; } >>"$logf"
		reason=${reason:-"dmesg: $(head -n1 <<<"$v")"}
	fi
	echo "--- $((SECONDS - t0))s" >>"$logf"
	if [[ -z $reason ]]; then
		echo "PASS $name" | tee -a "$results"
	else
		echo "FAIL $name: $reason" | tee -a "$results"
		sed 's/^/    | /' "$logf" | tail -n 25
	fi
}

set_overrides
scripts=()
if [[ -n ${SSDQ_TESTS:-} ]]; then
	for n in $SSDQ_TESTS; do
		f=$(ls "$TESTS_DIR"/[0-9][0-9]-"$n".sh 2>/dev/null | head -n1)
		[[ -n $f ]] || { echo "FAIL $n${SSDQ_SUFFIX:-}: no such test" | tee -a "$results"; continue; }
		scripts+=("$f")
	done
else
	scripts=("$TESTS_DIR"/[0-9][0-9]-*.sh)
fi
for s in "${scripts[@]}"; do
	run_one "$s"
done
dmesg >"$SSDQ_OUT/dmesg.txt"
sync
nfail=$(grep -c '^FAIL' "$results")
exit $((nfail > 100 ? 100 : nfail))
