#!/bin/bash
# make check: build, lint, then the test suite in the VM, in two lanes:
#   prod   Debian's 6.12 kernel, ssdq.ko built in the repo (plus one
#          4096-byte-LBA boot for load, integrity, flush-discard and
#          recovery, one swiotlb=force boot for dma-limits);
#   debug  a debug kernel built from linux-source-6.12 (KASAN, lockdep,
#          kmemleak, UBSAN; scripts/debug-kernel.sh, cached outside the
#          repo), ssdq.ko built against it in build/check/debug-ko/ (the
#          same boots but the 4096-byte-LBA one).
# Prints one line per test on stdout (debug-lane names end in -debug),
#   PASS name
#   FAIL name: short reason
#   SKIP name: why it does not apply (e.g. ssdq's own switches, DUT=nvme)
# and last "N passed, N failed, N skipped". Exits non-zero if anything
# failed.
# Progress and pointers to logs go to stderr; everything lands in
# build/check/ (per-test logs in <boot>/logs/, console.log, dmesg.txt).
#
#   reach  the kernels ssdq also supports (Documentation/kernels.rst):
#          Debian 12's 6.1 and the newest in Debian's archive (7.3, built
#          from its linux-source), both from scripts/kernel.sh and cached
#          outside the repo; a subset of the tests (REACH_TESTS below),
#          named <test>-6.1 and <test>-newest; then DKMS builds. With
#          --lane all (make check, CI) the newest kernel is not built
#          nor booted: ssdq is built against its configured tree
#          (build-newest), since its build cost CI about ten minutes
#          (debug-lane.rst); make check-reach boots it.
#
# The lanes run in this order: prod, reach on 6.1 and DKMS, debug, reach
# on the newest kernel. On a cold cache (CI) the debug kernel builds in the
# background during the prod lane and 6.1's, and the newest kernel's tree
# is prepared after it, during the debug lane, each at nice 19.
#
#   scripts/check.sh [--lane prod|reach|debug|all]   (default all)
#   scripts/check.sh --kernel 6.1|6.12|newest        every prod test on
#                                                    that kernel (newest:
#                                                    7.3, scripts/kernel.sh)
#
# A test runs in both lanes unless its header says "# lanes: debug" (or
# prod). Env: DUT=ssdq|nvme (nvme: run the tests against the kernel's
# driver, to prove them), SSDQ_TESTS="load persist ..." (subset),
# SSDQ_SKIP_LINT=1, SSDQ_CHECK_TIMEOUT (prod VM, default 2400 s),
# SSDQ_DEBUG_TIMEOUT (debug VM, default 3600 s), SSDQ_DEBUG_TESTS (subset
# of the debug lane only), SSDQ_DEBUG_FULL=1 (the debug lane runs the tests
# whose header says "# debug-lane: full" and the swiotlb=force boots too,
# which CI's budget leaves out), SSDQ_DEADLINE (epoch seconds by which the debug
# and reach-lane VMs must be done: CI's budget; their timeouts shrink to
# fit), SSDQ_IO_DIV
# (debug lane, default 4: lib.sh), SSDQ_TRACE_EVENTS (QEMU trace events of
# the main boots).
set -uo pipefail
. "$(dirname "$0")/common.sh"

lane=all
kernel=
bg_build=
while (($#)); do
	case $1 in
	--lane) lane=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	*) die "check.sh: unknown argument $1" ;;
	esac
done
case $lane in prod | reach | debug | all) ;; *) die "--lane takes prod, reach, debug or all, not '$lane'" ;; esac
case $kernel in
'' | 6.1) ;;
6.12) kernel='' lane=prod ;;
newest) ;;
*) die "--kernel takes 6.1, 6.12 or newest, not '$kernel'" ;;
esac
[[ -z $kernel ]] || lane=kernel
# The reach lane, on each other kernel: the tests whose paths cross the
# kernel interfaces compat.h adapts (disk and limits, the I/O path and
# ->queue_rqs with its batches, partial when tags run out, ->poll on a
# polled queue, freeze/quiesce and ->timeout), and namespaces (disks added
# and removed on one tag set, at run time, and ioctls).
REACH_TESTS="load integrity qdepth recovery namespaces passthru chardev"
# The tests that run again on a namespace of 4096-byte LBAs (prod lane):
# those whose I/O sizes and limits follow the block size.
LBS4K_TESTS="load integrity flush-discard"
# DKMS builds against installed Debian headers: 6.12's and these.
DKMS_KERNELS=(6.1)

export DUT=${DUT:-ssdq}
# Device-side counters for the tests: SQ doorbell writes, flushes, DSM; a
# shutdown's queue deletions and CC.SHN, and config writes (bus mastering).
trace_events=${SSDQ_TRACE_EVENTS:-pci_nvme_mmio_doorbell_sq,pci_nvme_flush_ns,pci_nvme_dsm,pci_nvme_mmio_shutdown_set,pci_nvme_del_sq,pci_cfg_write}
# Sparse images; past the tests' 512 MiB layout (tests/lib.sh) lies the
# long discard of flush-discard, which must exceed the device's DMRSL
# (about 2 GiB in QEMU).
img_mb=3072
out=$SSDQ_BUILD/check
# The previous run's logs stay, one run back, in build/check.prev/.
rm -rf "$out.prev"
[[ -d $out ]] && mv "$out" "$out.prev"
mkdir -p "$out"
npass=0
nfail=0
nskip=0

result() { # PASS|FAIL|SKIP name [reason]
	if [[ $1 == PASS ]]; then
		npass=$((npass + 1))
		echo "PASS $2"
	elif [[ $1 == SKIP ]]; then
		nskip=$((nskip + 1))
		echo "SKIP $2: $3"
	else
		nfail=$((nfail + 1))
		echo "FAIL $2: ${3:-failed}"
	fi
}

# A test's header may also say "# boot: NAME": it then runs in a boot of
# that name, with the other tests that name it, not in the main one. NAME
# pcie is the PCI Express machine (vm.sh --pcie), mdts8 controllers that
# take 1 MiB transfers (--mdts 8), cpu4 a machine of 4 vCPUs (--smp 4),
# sleep one under single-threaded TCG (--tcg-thread single: system sleep);
# any other NAME is the main machine with images of its own. Tests that
# write all over the disk (filesystems), where the main boot's host
# post-checks read their regions, run in the pcie boot.
all_tests() { # lane [boot|'*'] -> names of tests/NN-name.sh, in order, optionally filtered
	local f n lanes boot
	for f in "$SSDQ_REPO"/tests/[0-9][0-9]-*.sh; do
		[[ $f == *.post.sh ]] && continue
		lanes=$(sed -nE 's/^# lanes: (.*)/\1/p' "$f" | head -n1)
		[[ -z $lanes || " $lanes " == *" $1 "* ]] || continue
		if [[ $1 == debug && ${SSDQ_DEBUG_FULL:-0} != 1 ]] &&
			grep -q '^# debug-lane: full$' "$f"; then
			continue
		fi
		boot=$(sed -nE 's/^# boot: (.*)/\1/p' "$f" | head -n1)
		[[ ${2:-main} == '*' || ${boot:-main} == "${2:-main}" ]] || continue
		n=${f##*/}
		n=${n%.sh}
		n=${n#[0-9][0-9]-}
		if [[ -n ${SSDQ_TESTS:-} && " $SSDQ_TESTS " != *" $n "* ]]; then
			continue
		fi
		echo "$n"
	done
}

# The boot names tests ask for besides main, each once, in test order.
extra_boots() {
	sed -nE 's/^# boot: (.*)/\1/p' "$SSDQ_REPO"/tests/[0-9][0-9]-*.sh | awk '!seen[$0]++'
}

boot_args() { # boot name -> vm.sh arguments
	case $1 in
	pcie) echo --pcie ;;
	mdts8) echo --mdts 8 ;;
	cpu4) echo --smp 4 ;;
	sleep) echo --tcg-thread single ;;
	esac
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

# The guest's result lines on stderr as it writes them, until killed: the
# verdicts (with the host post-checks) follow on stdout after the boot.
progress() { # results-file
	tail -n +1 -F "$1" 2>/dev/null | while read -r line; do note "guest: $line"; done
}

# One VM boot running tests/run-guest.sh; then one line per expected test.
# Did the guest in DIR die before ssdq could have been involved? Before its
# init ran the suite; or with the early-boot int3 (below) while no test had
# finished and no module was loaded ("Modules linked in:" empty in the
# Oops: seen once on 7.3, 0.3 s after init started, before the first test).
died_before_ssdq() { # dir
	local c=$1/console.log
	grep -q '^ssdq-init: running' "$c" 2>/dev/null || return 0
	[[ ! -s $1/results.txt ]] && grep -q 'Oops: int3' "$c" &&
		grep -q 'Modules linked in:[[:space:]]*$' "$c"
}

# Did the guest in DIR die of an int3 that was no longer in memory? An
# int3 trap reports the address after it, so in the Oops's code bytes the
# one before <...> is where the int3 ran: anything but cc there means the
# kernel had finished patching that site back, and the vCPU ran a stale
# translation of it. Only the emulator does that (QEMU's multi-threaded
# TCG after a static-key patch on the other vCPU; seen in early boot,
# crng_make_state, sched_clock, __schedule, ssdq_prep_rq under trace
# events); the kernel's own int3 handler covers the patch's window. An
# int3 a wild jump met in a function's cc padding stays a death.
died_of_stale_int3() { # dir
	awk '!oops && /Oops: / { if (!/Oops: int3/) exit 1; oops = 1 }
	     oops && /Code: / {
		n = split(substr($0, index($0, "Code: ") + 6), b, " ")
		for (i = 1; i <= n; i++)
			if (b[i] ~ /^</) exit (i == 1 || b[i - 1] == "cc")
		exit 1
	     }
	     END { if (!oops) exit 1 }' "$1/console.log" 2>/dev/null
}

# The result line of test NAME (with the boot's suffix) in DIR's results.
result_line() { # dir name
	grep -E "^(PASS|FAIL|SKIP) $2(:|$)" "$1/results.txt" 2>/dev/null | tail -n1
}

boot_suite() { # bootdir suffix vm-args... -- names...
	local dir=$1 suffix=$2 rc=0 vm_args=() names=() run=() n line reason why prog
	local stale=$1-stale-int3 restarted=0 from
	shift 2
	while (($#)) && [[ $1 != -- ]]; do vm_args+=("$1"); shift; done
	shift
	names=("$@")
	run=("$@")
	rm -rf "$stale"
	mkdir -p "$dir"
	: >"$dir/results.txt"
	progress "$dir/results.txt" &
	prog=$!
	# A guest that died before its init ran the suite died in the kernel's
	# own boot, before ssdq existed: under TCG a static-key patch can leave
	# a stale int3 on the other vCPU ("Oops: int3" in early boot, seen once
	# in sched_clock_cpu). And QEMU itself may crash (SIGSEGV, SIGABRT):
	# seen in 2 of 8 matrix runs on 4 vCPUs, QEMU 7.2 at the same point, an
	# admin timeout's controller disable with I/O in flight; no guest can
	# make an emulator crash legitimately, so it says nothing of ssdq. One
	# more boot after a death in boot, two after QEMU crashes, each said
	# out loud with the console kept. A guest that died of a stale int3
	# (died_of_stale_int3) later, once per boot: its directory is kept as
	# DIR-stale-int3, with the verdicts of the tests that finished, and a
	# new boot runs the rest, the one that died first.
	local qrc tries=0
	while :; do
		rc=0
		SSDQ_TESTS="${run[*]}" SSDQ_SUFFIX=$suffix \
			"$SSDQ_REPO/scripts/vm.sh" -o "$dir" "${vm_args[@]}" -- tests/run-guest.sh ||
			rc=$?
		((rc == 125)) || break
		qrc=
		[[ -r $dir/qemu.rc ]] && read -r qrc <"$dir/qemu.rc"
		if ((!restarted)) && ! died_before_ssdq "$dir" && died_of_stale_int3 "$dir"; then
			restarted=1
			mv "$dir" "$stale"
			mkdir -p "$dir"
			: >"$dir/results.txt"
			run=()
			for n in "${names[@]}"; do
				[[ -n $(result_line "$stale" "$n$suffix") ]] || run+=("$n")
			done
			((${#run[@]})) || break
			note "guest died of a stale int3, an emulator fault (see ${stale#"$SSDQ_REPO"/}/console.log); the ${#run[@]} tests without a verdict run in a new boot"
			continue
		fi
		((tries < 2)) || break
		if [[ $qrc == 134 || $qrc == 139 ]]; then
			tries=$((tries + 1))
			cp "$dir/console.log" "$dir/console-qemu-crashed-$tries.log"
			note "QEMU itself crashed (exit status $qrc; see ${dir#"$SSDQ_REPO"/}/console-qemu-crashed-$tries.log); booting once more ($tries of 2)"
		elif ((tries == 0)) && died_before_ssdq "$dir"; then
			tries=2
			cp "$dir/console.log" "$dir/console-died-in-boot.log"
			note "guest died in the kernel's boot, before ssdq was loaded (see ${dir#"$SSDQ_REPO"/}/console-died-in-boot.log); booting once more"
		else
			break
		fi
	done
	# SIGPIPE: the one signal bash does not report a death by.
	pkill -PIPE -P "$prog"
	wait "$prog" 2>/dev/null
	case $rc in
	124) why="not run: VM timed out (see ${dir#"$SSDQ_REPO"/}/console.log)" ;;
	125) why="not run: guest died (see ${dir#"$SSDQ_REPO"/}/console.log)" ;;
	*) why="not run: test runner stopped early (status $rc)" ;;
	esac
	for n in "${names[@]}"; do
		from=$dir
		line=$(result_line "$dir" "$n$suffix")
		if [[ -z $line ]] && ((restarted)); then
			from=$stale
			line=$(result_line "$stale" "$n$suffix")
		fi
		if [[ -z $line ]]; then
			result FAIL "$n$suffix" "$why"
		elif [[ $line == SKIP* ]]; then
			result SKIP "$n$suffix" "${line#SKIP "$n$suffix": }"
		elif [[ $line == PASS* ]]; then
			if reason=$(post_check "$n$suffix" "$from"); then
				result PASS "$n$suffix"
			else
				result FAIL "$n$suffix" "$reason"
			fi
		else
			reason=${line#FAIL "$n$suffix"}
			result FAIL "$n$suffix" "${reason#: }"
			note "$n$suffix: see ${from#"$SSDQ_REPO"/}/logs/$n$suffix.log"
		fi
	done
}

prod_lane() {
	local tests every built=1 err kdir b
	mapfile -t tests < <(all_tests prod)
	mapfile -t every < <(all_tests prod '*')
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

	((${#every[@]})) || return 0
	if ((!built)); then
		for n in "${every[@]}"; do result FAIL "$n" "not run: build failed"; done
		return 0
	fi
	if ((${#tests[@]})); then
		# --namespaces: 87-namespaces' controllers, idle until it runs.
		boot_suite "$out/main" "" -t "${SSDQ_CHECK_TIMEOUT:-2400}" \
			--img-mb "$img_mb" --trace "$trace_events" --namespaces \
			-- "${tests[@]}"
	fi
	# Boots of their own: PCI error recovery needs PCI Express (q35); the
	# filesystems write the whole disk.
	for b in $(extra_boots); do
		mapfile -t tests < <(all_tests prod "$b")
		((${#tests[@]})) || continue
		# shellcheck disable=SC2046 # boot_args: options without spaces
		boot_suite "$out/$b" "" -t 900 --img-mb "$img_mb" $(boot_args "$b") -- "${tests[@]}"
	done
	# Second controller config: 4096-byte LBAs, for the tests whose I/O
	# sizes follow the block size (LBS4K_TESTS), named <test>-4k.
	mapfile -t tests < <(lbs4k_tests "${every[@]}")
	if ((${#tests[@]})); then
		boot_suite "$out/lbs4k" -4k --lbs 4096 -t 900 --img-mb "$img_mb" \
			--trace "$trace_events" -- "${tests[@]}"
	fi
	swiotlb_boots boot_suite "$out/swiotlb" -swiotlb -t 600
}

# Every DMA mapping bounced through swiotlb, on 512-byte and 4 KiB LBAs:
# the queue's largest request must still map, and unaligned buffers keep
# their offsets (dma-limits only, two cheap boots per lane).
swiotlb_boots() { # boot-function bootdir suffix args...
	local sw_boot=$1 sw_dir=$2 sw_suffix=$3
	shift 3
	[[ " ${every[*]} " == *" dma-limits "* ]] || return 0
	SSDQ_APPEND=swiotlb=force "$sw_boot" "$sw_dir" "$sw_suffix" "$@" -- dma-limits
	SSDQ_APPEND=swiotlb=force "$sw_boot" "$sw_dir-4k" "${sw_suffix/swiotlb/swiotlb-4k}" --lbs 4096 "$@" -- dma-limits
}

# Of the selected tests (arguments), those of LBS4K_TESTS, in its order.
lbs4k_tests() { # name...
	local n
	for n in $LBS4K_TESTS; do
		[[ " $* " == *" $n "* ]] && echo "$n"
	done
	return 0
}

# ssdq.ko for another kernel: common.sh's ssdq_ko_copy, into $out.
build_ko_copy() { # kernel-build-dir tag -> status; $out/<tag>-ko, $out/build-<tag>.log
	ssdq_ko_copy "$1" "$out/$2-ko" "$out/build-$2.log"
}

# A VM's timeout inside CI's budget (SSDQ_DEADLINE, epoch seconds): the
# VM's own timeout comes first, so every test still gets its line (the
# budget's backstop would cut the summary). Fails if under 2 min are left.
vm_timeout() { # default-secs -> secs
	local t=$1 left
	if [[ -n ${SSDQ_DEADLINE:-} ]]; then
		left=$((SSDQ_DEADLINE - $(date +%s)))
		((left < t)) && t=$left
	fi
	((t >= 120)) && echo "$t"
}

# Another kernel than Debian's 6.12 (scripts/kernel.sh NAME): ssdq built
# against its headers, the given tests in one boot, named <test>-NAME.
kernel_lane() { # name test...
	local name=$1 dir kver n tmo
	shift
	(($#)) || return 0
	note "kernel $name (scripts/kernel.sh; cached outside the repo)"
	if ! dir=$("$SSDQ_REPO/scripts/kernel.sh" "$name" 2>"$out/kernel-$name.log"); then
		result FAIL "kernel-$name" "$(grep -m1 '^error' "$out/kernel-$name.log" || echo "see build/check/kernel-$name.log")"
		for n; do result FAIL "$n-$name" "not run: no $name kernel"; done
		return 0
	fi
	kver=$(cat "$dir/kver")
	if [[ $DUT == ssdq ]]; then
		note "building ssdq.ko against $kver"
		if ! build_ko_copy "$dir/build" "$name"; then
			result FAIL "build-$name" "$(grep -m1 -E 'error|warning' "$out/build-$name.log" || echo "see build/check/build-$name.log")"
			for n; do result FAIL "$n-$name" "not run: build failed"; done
			return 0
		fi
		result PASS "build-$name"
	fi
	if ! tmo=$(vm_timeout "${SSDQ_CHECK_TIMEOUT:-2400}"); then
		for n; do result FAIL "$n-$name" "not run: too little time left before SSDQ_DEADLINE"; done
		return 0
	fi
	SSDQ_KO=$out/$name-ko/ssdq.ko boot_suite "$out/k$name" "-$name" \
		-t "$tmo" --img-mb "$img_mb" --trace "$trace_events" \
		--kernel-dir "$dir" --namespaces -- "$@"
}

# ssdq built against another kernel's configured tree, not booted: make
# check's (CI's) newest kernel, whose full build cost CI about ten minutes.
kernel_build_only() { # name
	local name=$1 dir
	[[ $DUT == ssdq ]] || return 0
	note "kernel $name: its tree only (scripts/kernel.sh $name --headers)"
	if ! dir=$("$SSDQ_REPO/scripts/kernel.sh" "$name" --headers 2>"$out/kernel-$name.log"); then
		result FAIL "build-$name" "$(grep -m1 '^error' "$out/kernel-$name.log" || echo "see build/check/kernel-$name.log")"
		return 0
	fi
	note "building ssdq.ko against $name ($dir/build)"
	# No vmlinux, so no Module.symvers: modpost cannot know what the kernel
	# exports, and says so as warnings (the compile itself is W=1, and any
	# compiler warning fails it).
	if KBUILD_MODPOST_WARN=1 build_ko_copy "$dir/build" "$name"; then
		result PASS "build-$name"
	else
		result FAIL "build-$name" "$(grep -m1 -E 'error|warning' "$out/build-$name.log" || echo "see build/check/build-$name.log")"
	fi
}

# SSDQ_DEBUG_TESTS narrows the debug lane only (CI's time budget: .ci/run).
debug_tests() { # [boot]
	local n
	for n in $(all_tests debug "$@"); do
		[[ -z ${SSDQ_DEBUG_TESTS:-} || " $SSDQ_DEBUG_TESTS " == *" $n "* ]] && echo "$n"
	done
}

debug_lane() {
	local tests every dir n b
	mapfile -t tests < <(debug_tests)
	mapfile -t every < <(debug_tests '*')
	((${#every[@]})) || return 0
	note "debug kernel (scripts/debug-kernel.sh; cached outside the repo)"
	# A background build that failed is not tried again (20 minutes).
	if [[ -n ${bg_build:-} ]] && ! wait "$bg_build"; then
		dir=
	else
		dir=$("$SSDQ_REPO/scripts/debug-kernel.sh" 2>>"$out/debug-kernel.log") || dir=
	fi
	if [[ -z $dir ]]; then
		result FAIL debug-kernel "$(grep -m1 '^error' "$out/debug-kernel.log" || echo "see build/check/debug-kernel.log")"
		for n in "${every[@]}"; do result FAIL "$n-debug" "not run: no debug kernel"; done
		return 0
	fi
	result PASS debug-kernel
	local tmo
	if ! tmo=$(vm_timeout "${SSDQ_DEBUG_TIMEOUT:-3600}"); then
		for n in "${every[@]}"; do result FAIL "$n-debug" "not run: too little time left before SSDQ_DEADLINE"; done
		return 0
	fi
	if [[ $DUT == ssdq ]]; then
		note "building ssdq.ko against the debug kernel"
		if ! build_ko_copy "$dir/src" debug; then
			result FAIL build-debug "$(grep -m1 -E 'error|warning' "$out/build-debug.log" || echo "see build/check/build-debug.log")"
			for n in "${every[@]}"; do result FAIL "$n-debug" "not run: build failed"; done
			return 0
		fi
		result PASS build-debug
	fi
	# Several times slower than Debian's kernel under TCG: per-test
	# timeouts scale; the tests themselves wait on conditions.
	# Amounts of I/O that only add confidence shrink (IO_DIV in lib.sh).
	if ((${#tests[@]})); then
		debug_boot "$dir" "$out/debug" "$tmo" -debug --trace "$trace_events" --namespaces -- "${tests[@]}"
	fi
	for b in $(extra_boots); do
		mapfile -t tests < <(debug_tests "$b")
		((${#tests[@]})) || continue
		# shellcheck disable=SC2046 # boot_args: options without spaces
		debug_boot "$dir" "$out/debug-$b" "$tmo" -debug $(boot_args "$b") -- "${tests[@]}"
	done
	# No 4 KiB-LBA boot here, nor, but with SSDQ_DEBUG_FULL=1, the
	# swiotlb=force boots: their tests take the mapping code of the main
	# boot's dma-limits (a bounced copy is swiotlb's), and the prod lane
	# runs them (CI's critical path is this lane: debug-lane.rst).
	if [[ ${SSDQ_DEBUG_FULL:-0} == 1 ]]; then
		swiotlb_boots debug_boot_in "$out/debug-swiotlb" -swiotlb-debug
	fi
}

# debug_boot with the kernel directory and timeout of the lane.
# (No locals named dir or tmo in swiotlb_boots: this reads the lane's.)
debug_boot_in() { # bootdir suffix vm-args... -- names...
	debug_boot "$dir" "$1" "$tmo" "${@:2}"
}

debug_boot() { # kernel-dir bootdir timeout suffix vm-args... -- names...
	local dir=$1 boot=$2 tmo=$3 suffix=$4 a n
	shift 4
	# The budget left now, not at the lane's start: each boot's own timeout
	# must end before SSDQ_DEADLINE, or the backstop cuts the summary.
	if ! tmo=$(vm_timeout "$tmo"); then
		for a; do
			[[ $a == -- ]] && n=1 && continue
			[[ -n ${n:-} ]] && result FAIL "$a$suffix" "not run: too little time left before SSDQ_DEADLINE"
		done
		return 0
	fi
	SSDQ_KO=$out/debug-ko/ssdq.ko SSDQ_TIMEOUT_SCALE=${SSDQ_TIMEOUT_SCALE:-4} \
		SSDQ_IO_DIV=${SSDQ_IO_DIV:-4} \
		boot_suite "$boot" "$suffix" -t "$tmo" --img-mb "$img_mb" \
		--debug-kernel "$dir" "$@"
}

# dkms.conf: DKMS builds ssdq for Debian's 6.12 and DKMS_KERNELS, and
# modinfo says what it should (scripts/dkms.sh check).
dkms_check() {
	local kvers=() k dir reason
	kvers+=("$(ssdq_kver)") || true
	for k in "${DKMS_KERNELS[@]}"; do
		dir=$("$SSDQ_REPO/scripts/kernel.sh" "$k" 2>/dev/null) && kvers+=("$(cat "$dir/kver")")
	done
	note "dkms build for ${kvers[*]}"
	if reason=$("$SSDQ_REPO/scripts/dkms.sh" check "${kvers[@]}" 2>&1 >"$out/dkms.log"); then
		result PASS dkms
	else
		result FAIL dkms "$(tail -n1 <<<"$reason")"
	fi
}

# The cost meter's own test (scripts/meter-check.sh, meter.rst): one short
# boot under single-threaded TCG with the meter's plugin, in the prod lane.
meter_check() {
	local reason
	[[ -z ${SSDQ_TESTS:-} || " $SSDQ_TESTS " == *" meter "* ]] || return 0
	note "meter: one short boot (scripts/meter-check.sh; log build/check/meter.log)"
	if reason=$("$SSDQ_REPO/scripts/meter-check.sh" "$out/meter" 2>&1); then
		result PASS meter
		note "meter: $reason"
	else
		result FAIL meter "$(tail -n1 <<<"$reason")"
	fi
}

reach_tests() {
	local n
	for n in $(all_tests prod); do
		[[ " $REACH_TESTS " == *" $n "* ]] && echo "$n"
	done
}

selected=$( {
	[[ $lane == prod || $lane == all || $lane == kernel ]] && all_tests prod
	[[ ($lane == prod || $lane == all) && " ${SSDQ_TESTS:-} " == *" meter "* ]] && echo meter
	[[ $lane == prod || $lane == all ]] && all_tests prod '*'
	[[ $lane == reach || $lane == all ]] && reach_tests
	[[ $lane == debug || $lane == all ]] && debug_tests '*'
} | wc -l)
((selected)) || result FAIL tests "no test selected (SSDQ_TESTS=${SSDQ_TESTS:-}, lane $lane)"
# Every lane and no cached debug kernel (CI, a fresh machine): build it
# meanwhile, at the lowest priority, so it only takes the CPU time the prod
# lane leaves idle. debug_lane's own call then waits on the build's lock.
if [[ $lane == all ]] && ! "$SSDQ_REPO/scripts/debug-kernel.sh" --ready >/dev/null 2>&1; then
	note "building the debug kernel in the background (nice 19)"
	nice -n 19 "$SSDQ_REPO/scripts/debug-kernel.sh" >/dev/null 2>"$out/debug-kernel.log" &
	bg_build=$!
fi
# Then the reach lane's kernels during the debug lane: 6.1 (unpacked) and
# the newest one's configured tree (make check builds ssdq there, but
# neither builds nor boots that kernel: its build took about ten minutes of
# CI's critical path). The last step waits on kernel.sh's lock. Cached,
# each returns at once.
if [[ $lane == all ]]; then
	(
		if [[ -n $bg_build ]]; then
			while kill -0 "$bg_build" 2>/dev/null; do sleep 5; done
		fi
		nice -n 19 "$SSDQ_REPO/scripts/kernel.sh" 6.1 >/dev/null 2>>"$out/kernels-bg.log"
		nice -n 19 "$SSDQ_REPO/scripts/kernel.sh" newest --headers >/dev/null 2>>"$out/kernels-bg.log"
	) &
fi
# The tests' own static fio (scripts/test-fio.sh): Debian's takes seconds
# to start on the debug kernel. Without it they run Debian's, slower.
if fio_dir=$("$SSDQ_REPO/scripts/test-fio.sh" 2>"$out/test-fio.log"); then
	result PASS test-fio
	export SSDQ_FIO_DIR=$fio_dir
else
	result FAIL test-fio "$(grep -m1 '^error' "$out/test-fio.log" || echo "see build/check/test-fio.log")"
fi
# The tests' io_uring passthrough tool (tests/uring-pt.c, 92-chardev),
# built on the host with Debian's liburing; the guest runs it from there.
if gcc -O2 -Wall -Werror -o "$out/uring-pt" "$SSDQ_REPO/tests/uring-pt.c" -luring \
	>"$out/uring-pt.log" 2>&1; then
	result PASS uring-pt
	export SSDQ_URING_PT=$out/uring-pt
else
	result FAIL uring-pt "$(head -n 1 "$out/uring-pt.log")"
fi
if [[ $lane == kernel ]]; then
	mapfile -t tests < <(all_tests prod)
	kernel_lane "$kernel" "${tests[@]}"
else
	if [[ $lane == prod || $lane == all ]]; then
		prod_lane
		meter_check
	fi
	mapfile -t reach < <(reach_tests)
	# Debian's 6.1 needs no build: on a cold cache it and DKMS run while
	# the debug kernel is still building, before the debug lane waits for
	# it; the newest kernel builds during the debug lane, and runs last.
	if [[ $lane == reach || $lane == all ]]; then
		kernel_lane 6.1 "${reach[@]}"
		dkms_check
	fi
	[[ $lane == debug || $lane == all ]] && debug_lane
	[[ $lane == reach ]] && kernel_lane newest "${reach[@]}"
	[[ $lane == all ]] && kernel_build_only newest
fi

echo "$npass passed, $nfail failed, $nskip skipped"
((nfail == 0))
