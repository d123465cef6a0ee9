#!/bin/bash
# make check: build, lint, then the test suite in the VM. Prints one line
# per test on stdout,
#   PASS name
#   FAIL name: short reason
# and last "N passed, N failed". Exits non-zero if anything failed.
# Progress and pointers to logs go to stderr; everything lands in
# build/check/ (per-test logs in <boot>/logs/, console.log, dmesg.txt).
#
# Env: DUT=ssdq|nvme (nvme: run the tests against the kernel's driver, to
#      prove them), SSDQ_TESTS="load persist ..." (subset),
#      SSDQ_SKIP_LINT=1, SSDQ_CHECK_TIMEOUT (main VM, default 2400 s),
#      SSDQ_TRACE_EVENTS (QEMU trace events of the main boot).
set -uo pipefail
. "$(dirname "$0")/common.sh"

export DUT=${DUT:-ssdq}
out=$SSDQ_BUILD/check
rm -rf "$out"
mkdir -p "$out"
npass=0
nfail=0

result() { # PASS|FAIL name [reason]
	if [[ $1 == PASS ]]; then
		npass=$((npass + 1))
		echo "PASS $2"
	else
		nfail=$((nfail + 1))
		echo "FAIL $2: ${3:-failed}"
	fi
}

all_tests() { # names of tests/NN-name.sh, in order, optionally filtered
	local f n
	for f in "$SSDQ_REPO"/tests/[0-9][0-9]-*.sh; do
		[[ $f == *.post.sh ]] && continue
		n=${f##*/}
		n=${n%.sh}
		n=${n#[0-9][0-9]-}
		if [[ -n ${SSDQ_TESTS:-} && " $SSDQ_TESTS " != *" $n "* ]]; then
			continue
		fi
		echo "$n"
	done
}

# Host post-check of a test whose guest part passed: tests/NN-name.post.sh
post_check() { # name bootdir -> reason on stdout, status
	local f tdir
	f=$(ls "$SSDQ_REPO"/tests/[0-9][0-9]-"$1".post.sh 2>/dev/null | head -n1)
	[[ -n $f ]] || return 0
	tdir=$2/t/$1-post
	mkdir -p "$tdir"
	if ! T_DIR=$tdir SSDQ_OUT=$2 bash "$f" >>"$2/logs/$1.log" 2>&1; then
		echo "$(head -n1 "$tdir/reason" 2>/dev/null || echo "host post-check failed")"
		return 1
	fi
	[[ -s $tdir/asserts ]] || { echo "host post-check made no assertion"; return 1; }
}

# One VM boot running tests/run-guest.sh; then one line per expected test.
boot_suite() { # bootdir suffix vm-args... -- names...
	local dir=$1 suffix=$2 rc=0 vm_args=() names=() n line reason why
	shift 2
	while (($#)) && [[ $1 != -- ]]; do vm_args+=("$1"); shift; done
	shift
	names=("$@")
	mkdir -p "$dir"
	# The persistence test's pattern, made on the host.
	head -c $((16 * 1024 * 1024)) /dev/urandom >"$dir/pattern.bin"
	SSDQ_TESTS="${names[*]}" SSDQ_SUFFIX=$suffix \
		"$SSDQ_REPO/scripts/vm.sh" -o "$dir" "${vm_args[@]}" -- tests/run-guest.sh ||
		rc=$?
	case $rc in
	124) why="not run: VM timed out (see ${dir#"$SSDQ_REPO"/}/console.log)" ;;
	125) why="not run: guest died (see ${dir#"$SSDQ_REPO"/}/console.log)" ;;
	*) why="not run: test runner stopped early (status $rc)" ;;
	esac
	for n in "${names[@]}"; do
		line=$(grep -E "^(PASS|FAIL) $n$suffix(:|$)" "$dir/results.txt" 2>/dev/null | tail -n1)
		if [[ -z $line ]]; then
			result FAIL "$n$suffix" "$why"
		elif [[ $line == PASS* ]]; then
			if reason=$(post_check "$n$suffix" "$dir"); then
				result PASS "$n$suffix"
			else
				result FAIL "$n$suffix" "$reason"
			fi
		else
			reason=${line#FAIL "$n$suffix"}
			result FAIL "$n$suffix" "${reason#: }"
			note "$n$suffix: see ${dir#"$SSDQ_REPO"/}/logs/$n$suffix.log"
		fi
	done
}

mapfile -t tests < <(all_tests)
((${#tests[@]})) || { result FAIL tests "no test selected (SSDQ_TESTS=${SSDQ_TESTS:-})"; }

built=1
if [[ $DUT == ssdq ]]; then
	kdir=$(ssdq_kdir) || kdir=
	note "building ssdq.ko against ${kdir:-?}"
	if [[ -n $kdir ]] && make -C "$kdir" M="$SSDQ_REPO" modules >"$out/build.log" 2>&1 &&
		[[ -f $SSDQ_REPO/ssdq.ko ]]; then
		result PASS build
	else
		built=0
		err=$(grep -m1 -E 'error|No such file|No rule' "$out/build.log" || true)
		[[ -n $kdir ]] || err="no 6.12 kernel headers (make deps)"
		[[ -n $err || -f $SSDQ_REPO/ssdq.ko ]] || err="no ssdq.ko produced"
		result FAIL build "${err:-see build/check/build.log}"
	fi
fi

if [[ ${SSDQ_SKIP_LINT:-0} != 1 ]]; then
	note "lint"
	if reason=$("$SSDQ_REPO/scripts/lint.sh" 2>"$out/lint.stderr"); then
		result PASS lint
	else
		result FAIL lint "${reason:-see build/lint.log}"
	fi
	if reason=$("$SSDQ_REPO/scripts/shellcheck.sh" 2>/dev/null); then
		result PASS shellcheck
	else
		result FAIL shellcheck "${reason:-see build/shellcheck.log}"
	fi
fi

if ((built)) && ((${#tests[@]})); then
	# Device-side counters for the tests: SQ doorbell writes, flushes, DSM.
	boot_suite "$out/main" "" -t "${SSDQ_CHECK_TIMEOUT:-2400}" \
		--trace "${SSDQ_TRACE_EVENTS:-pci_nvme_mmio_doorbell_sq,pci_nvme_flush_ns,pci_nvme_dsm}" \
		-- "${tests[@]}"
	# Second controller config: 4096-byte LBAs, load test only (one cheap boot).
	if [[ " ${tests[*]} " == *" load "* ]]; then
		boot_suite "$out/lbs4k" -4k --lbs 4096 -t 600 -- load
	fi
elif ((${#tests[@]})); then
	for n in "${tests[@]}"; do result FAIL "$n" "not run: build failed"; done
fi

echo "$npass passed, $nfail failed"
((nfail == 0))
