#!/bin/bash
# Runs inside the test VM (vm.sh passes it as the command). Runs each test
# script in order and prints one line per test:
#   PASS name
#   FAIL name: reason
#   SKIP name: why it does not apply (lib.sh's skip)
# The same lines go to $SSDQ_OUT/results.txt; each test's output goes to
# $SSDQ_OUT/logs/<name>.log. Exit status: number of failures (capped).
#
# Env: SSDQ_TESTS="load integrity ..." to run a subset (default: all),
#      SSDQ_SUFFIX appended to every name (e.g. -4k for a second config),
#      SSDQ_TEST_TIMEOUT default per-test timeout (a test may declare
#      "# timeout: SECS" in its header), SSDQ_TIMEOUT_SCALE multiplies
#      both (the debug kernel runs several times slower),
#      SSDQ_FIO_DIR put first on PATH (check.sh: scripts/test-fio.sh's),
#      SSDQ_XTRACE=1 traces each test with a timestamp on every line
#      (where the time goes: the debug lane pays about 1 s per process).
#
# Framework rules applied to every test, after it exits:
#  - it must have made at least one assertion (ok/assert_*), or skipped,
#  - whatever it left running in the background (fio, switch flippers,
#    loops; a failed test's in particular) is killed before the next one,
#  - a DUT module still loaded is unloaded (and must unload, within 90 s:
#    an unload stuck in the kernel wedges the boot, and the tests after
#    it are reported not run rather than left to the VM's timeout),
#  - the kernel log it caused must not contain a kernel report (WARNING,
#    BUG, Oops, Call Trace, KASAN, UBSAN, lockdep, hung task: BAD_ANY in
#    lib.sh), nor a warning-or-worse line mentioning the DUT, unless the
#    test declared the line with allow_dmesg,
#  - on a kernel with kmemleak (the debug lane): lockdep is still on; and
#    after the last test, a kmemleak scan finds no leaked object allocated
#    while the test ran (a second, FAIL, line for that test if it does).
set -uo pipefail
cd "$(dirname "$0")" || exit 1
TESTS_DIR=$(pwd -P)
export SSDQ_REPO=${SSDQ_REPO:-$(dirname "$TESTS_DIR")}
export SSDQ_OUT=${SSDQ_OUT:?}
# shellcheck source=tests/lib.sh
. ./lib.sh

results=$SSDQ_OUT/results.txt
mkdir -p "$SSDQ_OUT/logs" "$SSDQ_OUT/t"
rm -f "$SSDQ_OUT/at-reboot"
: >"$results"

test_name() { # tests/10-load.sh -> load
	local n=${1##*/}
	n=${n%.sh}
	echo "${n#[0-9][0-9]-}"
}

# dmesg lines after the begin marker of $1; those that break the rules
# (lib.sh).
dmesg_since_begin() { # name
	dmesg -r | awk -v m="ssdqtest: begin $1" 'index($0, m) { n = NR; delete b; next } { b[NR] = $0 }
		END { for (i = n + 1; i <= NR; i++) if (i in b) print b[i] }'
}
dmesg_violations() { # name allowfile
	dmesg_since_begin "$1" | dmesg_filter_bad "$2"
}

# Debug kernel, after the last test: scan for leaks once every module is
# gone, and blame each leaked object on the test that was running when it
# was allocated (kmemleak dates objects in jiffies; $jiffies_log has each
# test's start). One pass instead of one per test: a scan walks all memory.
# A test with leaks gets a second, FAIL, line; check.sh keeps the last.
leak_check() {
	local rep n name first
	have_kmemleak || return 0
	# Let the last test's allocations pass kmemleak's minimum age, then two
	# scans: the first only records each new object's checksum.
	sleep $((KMEMLEAK_MIN_AGE + 1))
	rep=$( {
		kmemleak_scan
		kmemleak_scan
	})
	printf '%s\n' "$rep" >"$SSDQ_OUT/kmemleak.txt"
	n=$(kmemleak_count <<<"$rep")
	echo "kmemleak: $n leaks after the last rmmod" >>"$SSDQ_OUT/logs/kmemleak.log"
	((n == 0)) && return 0
	# Per object: "unreferenced object ...", "comm "x", pid N, jiffies J",
	# hex dump, "backtrace (crc ..):", frames (the allocator first). ->
	# test name <TAB> object <TAB> the frame below the allocator.
	awk -v starts="$jiffies_log" '
		BEGIN { while ((getline l < starts) > 0) { split(l, f, " "); nt++; tn[nt] = f[1]; tj[nt] = f[2] } }
		/^unreferenced object/ { obj = $0; t = "-"; nf = -1; next }
		/^  comm .*jiffies/ {
			j = $NF
			for (i = 1; i <= nt; i++) if (j + 0 >= tj[i] + 0) t = tn[i]
			next
		}
		/^  backtrace/ { nf = 0; next }
		nf >= 0 && /^    / {
			if (++nf == 2) { sub(/^ +/, ""); print t "\t" obj "\t" $0; nf = -1 }
		}' <<<"$rep" >"$SSDQ_OUT/kmemleak-by-test.txt"
	cut -f1 "$SSDQ_OUT/kmemleak-by-test.txt" | sort | uniq -c |
		while read -r n name; do
			# Boot's own leaks, if any, are in kmemleak.txt, blamed on none.
			[[ $name == - ]] && continue
			if [[ -e $SSDQ_OUT/t/$name/leaks-expected ]]; then
				echo "$name: $n leaked objects, expected" >>"$SSDQ_OUT/logs/kmemleak.log"
				continue
			fi
			first=$(awk -F'\t' -v n="$name" '$1 == n { print $3; exit }' "$SSDQ_OUT/kmemleak-by-test.txt")
			echo "FAIL $name: kmemleak: $n objects allocated during the test leaked, e.g. from $first (kmemleak.txt)" |
				tee -a "$results"
		done
}

# A test that timed out: what the block layer and the driver held then
# (requests in flight or waiting for dispatch, tags, ssdq's own debugfs),
# and where blocked tasks sleep. For the log; a stall in CI is otherwise
# a line saying only that the time ran out.
dump_stuck() { # logf
	local f p
	{
		echo "--- state at the timeout"
		for f in /sys/kernel/debug/block/{ssdq,nvme}*/hctx*/{state,busy,dispatch,tags,*/*_rq_list} \
			/sys/kernel/debug/ssdq/*/*; do
			[[ -f $f && -r $f ]] || continue
			echo "$f:"
			if [[ $f == */tags ]]; then
				grep -E '^(nr_tags|active_queues|depth|busy|ws_active)=' "$f"
			else
				head -n 40 "$f"
			fi 2>&1 | sed 's/^/  /'
		done
		ps -eo pid=,stat=,wchan:32=,args= | awk '$2 ~ /D/' | while read -r p _; do
			echo "blocked: $(ps -o pid=,stat=,args= -p "$p")"
			sed 's/^/  /' "/proc/$p/stack" 2>/dev/null
		done
	} >>"$1" 2>&1
}

# Seconds since boot. Builtins only, as is stack_frames (hang_watch).
uptime_s() {
	local up
	read -r up _ </proc/uptime
	echo "${up%.*}"
}

# A task's kernel stack on one line, innermost first, the scheduler's own
# frames left out, at most MAX frames: "percpu_rwsem_wait < mnt_want_write".
stack_frames() { # pid [max]
	local f frames='' n=0
	while read -r f; do
		f=${f#*] }
		f=${f%%[+.]*}
		case $f in
		__schedule | schedule | schedule_timeout | schedule_preempt_disabled | io_schedule) continue ;;
		esac
		frames+="${frames:+ < }$f"
		n=$((n + 1))
		((n != ${2:-0})) || break
	done <"/proc/$1/stack"
	echo "$frames"
}

# For a timed-out test's FAIL line: the first task in D state and the top
# of its kernel stack, e.g.
# "; bash (204) blocked in __mutex_lock < ssdq_reset_store < kernfs_fop_write_iter".
stuck_summary() {
	local p comm frames
	p=$(ps -eo pid=,stat= | awk '$2 ~ /D/ { print $1; exit }')
	[[ -n $p ]] || return 0
	read -r comm <"/proc/$p/comm" 2>/dev/null
	frames=$(stack_frames "$p" 5 2>/dev/null)
	echo "; ${comm:-?} ($p) blocked in ${frames:-?}"
}

# The VM is killed at SSDQ_VM_END seconds of guest uptime (vm.sh): a test
# ends 150 s before then at the latest, so that one stuck in the kernel is
# still dumped and reported, and its teardown has its time.
vm_time_left() { echo $((SSDQ_VM_END - $(uptime_s))); }

# The console is all a hang may leave (a VM killed at its timeout, or this
# runner stuck itself): once the kernel's hung-task detector reported a
# task (hung_task_warnings counts down), or the test running is 60 s past
# its timeout (the runner is stuck: run_one's deadline file), every task
# then in D state gets one line there, "ssdq-hung: PID (COMM): its kernel
# stack", which vm.sh shows. (The detector's own stack is KERN_INFO,
# below the console's level; it never names a task that loops in
# msleep(), as blk-mq's waits do, nor one in a killable wait, as 9p's.)
# Builtins only after the start: their programs come from 9p, which may
# be what hangs.
HANG_DEADLINE=/tmp/ssdq-test-deadline
hang_watch() {
	local fifo=/tmp/ssdq-hang-watch w0 w zfd p st comm dl told=
	read -r w0 </proc/sys/kernel/hung_task_warnings || return 0
	mkfifo "$fifo" 2>/dev/null && exec {zfd}<>"$fifo" || return 0
	while :; do
		read -r -t 30 -u "$zfd" _
		read -r w </proc/sys/kernel/hung_task_warnings
		dl=
		[[ -s $HANG_DEADLINE ]] && read -r dl <"$HANG_DEADLINE"
		if [[ -n $dl && $dl != "$told" ]] && (($(uptime_s) > dl)); then
			told=$dl
			echo "<3>ssdq-hung: the runner is stuck: its test is 60 s past its timeout" >/dev/kmsg
		elif [[ $w == "$w0" ]]; then
			continue
		fi
		w0=$w
		for p in /proc/[0-9]*; do
			read -r st <"$p/stat" 2>/dev/null || continue
			st=${st##*) }
			[[ ${st%% *} == D ]] || continue
			read -r comm <"$p/comm"
			echo "<3>ssdq-hung: ${p#/proc/} ($comm): $(stack_frames "${p#/proc/}")" >/dev/kmsg
		done
	done 2>/dev/null
}

# Is a process group still there, or gone? A process?
group_alive() { kill -0 -- "-$1" 2>/dev/null; }
group_gone() { ! group_alive "$1"; }
pid_gone() { ! kill -0 "$1" 2>/dev/null; }

# A teardown command (run_one's): waited for 90 s at most. One stuck in
# the kernel (D state, which neither timeout(1) nor SIGKILL ends) would
# hold the boot until the VM's timeout, CI's budget with it: it is left
# where it is, the test fails, and the boot is wedged (the tests after it
# are reported not run).
teardown() { # what cmd...
	local what=$1 p
	shift
	"$@" >>"$logf" 2>&1 &
	p=$!
	if wait_until 90 pid_gone "$p"; then
		wait "$p" && return 0
		reason=${reason:-"teardown: $what failed"}
		return 1
	fi
	dump_stuck "$logf"
	reason=${reason:-"teardown: $what stuck in the kernel (see the log's blocked tasks)$(stuck_summary)"}
	wedged="$what stuck in the kernel after $name"
	return 1
}

run_one() { # script
	local script=$1 name tmo rc reason skipped v lockdep_was tpid
	name=$(test_name "$script")${SSDQ_SUFFIX:-}
	tmo=$(sed -nE 's/^# timeout: ([0-9]+).*/\1/p' "$script" | head -n1)
	tmo=$((${tmo:-${SSDQ_TEST_TIMEOUT:-300}} * ${SSDQ_TIMEOUT_SCALE:-1}))
	if [[ -n ${SSDQ_VM_END:-} ]]; then
		v=$(($(vm_time_left) - 150))
		((v >= tmo)) || tmo=$((v > 30 ? v : 30))
	fi
	echo $(($(uptime_s) + tmo + 60)) >"$HANG_DEADLINE"
	export T_DIR=$SSDQ_OUT/t/$name
	rm -rf "$T_DIR"
	mkdir -p "$T_DIR"
	local logf=$SSDQ_OUT/logs/$name.log
	lockdep_was=$(lockdep_on)
	have_kmemleak && echo "$name $(jiffies_now)" >>"$jiffies_log"
	echo "ssdqtest: begin $name" >/dev/kmsg
	echo "=== $name (timeout ${tmo}s)" >"$logf"
	local t0=$SECONDS
	rc=0
	# cwd = the test's scratch dir: fio leaves state files in its cwd.
	local -a sh=(bash)
	# Traced: PS4 set inside (bash ignores an inherited PS4 when root).
	[[ -n ${SSDQ_XTRACE:-} ]] &&
		sh=(bash -c 'PS4="+ \${EPOCHREALTIME} \${BASH_SOURCE[0]##*/}:\${LINENO} "; set -x; . "$0"')
	# timeout(1) makes its own process group, which everything the test
	# starts joins: what is left of it once the test is over is killed.
	(cd "$T_DIR" && exec timeout -k 10 "$tmo" "${sh[@]}" "$script") >>"$logf" 2>&1 &
	tpid=$!
	wait "$tpid" || rc=$?
	local t1=$SECONDS
	local stuck=''
	if ((rc == 124 || rc == 137)); then
		dump_stuck "$logf"
		stuck=$(stuck_summary)
	fi
	if group_alive "$tpid"; then
		echo "killing what the test left running: $(pgrep -g "$tpid" -d ' ' -l | tr '\n' ' ')" >>"$logf"
		kill -KILL -- "-$tpid" 2>/dev/null
		wait_until 30 group_gone "$tpid" ||
			echo "still running 30 s after SIGKILL: $(pgrep -g "$tpid" -d ' ')" >>"$logf"
	fi
	reason='' skipped=''
	if ((rc == 124 || rc == 137)); then
		reason="timed out after ${tmo}s$stuck"
	elif ((rc != 0)); then
		reason=$(head -n1 "$T_DIR/reason" 2>/dev/null)
		reason=${reason:-"exit status $rc (see logs/$name.log)"}
	elif [[ -s $T_DIR/skip ]]; then
		skipped=$(head -n1 "$T_DIR/skip")
	elif [[ ! -s $T_DIR/asserts ]]; then
		reason="made no assertion"
	fi

	# Leave no DUT module behind for the next test; unload problems and
	# their kernel messages belong to this test.
	if [[ -d /sys/module/$DUT_MOD ]]; then
		if [[ $DUT == ssdq ]]; then
			teardown "rmmod ssdq" timeout 60 rmmod ssdq
		else
			teardown "modprobe -r nvme" timeout 60 modprobe -r nvme
		fi
	fi
	# The reference controller's nvme too (tests count device-side events
	# that do not name the controller).
	if [[ -z $wedged && -d /sys/module/nvme ]]; then
		teardown "modprobe -r nvme (reference)" timeout 60 modprobe -r nvme
	fi

	if [[ $(lockdep_on) == 0 && $lockdep_was == 1 && ! -e $T_DIR/lockdep-off-expected ]]; then
		reason=${reason:-"lockdep turned itself off during the test (see dmesg)"}
	fi
	if dmesg_since_begin "$name" | grep -q 'WARNING: .* exc_debug_kernel'; then
		echo "note: QEMU's TCG garbled a vCPU's EFLAGS (an exc_debug_kernel WARNING; lib.sh's tcg_db_filter): not held against the test" >>"$logf"
	fi
	v=$(dmesg_violations "$name" "$T_DIR/allow")
	if [[ -n $v ]]; then
		{ echo "unexpected kernel messages:"; echo "$v"; } >>"$logf"
		reason=${reason:-"dmesg: $(head -n1 <<<"$v")"}
	fi
	echo "--- $((SECONDS - t0))s (test $((t1 - t0))s)" >>"$logf"
	if [[ -z $reason && -n $skipped ]]; then
		echo "SKIP $name: $skipped" | tee -a "$results"
	elif [[ -z $reason ]]; then
		echo "PASS $name" | tee -a "$results"
	else
		echo "FAIL $name: $reason" | tee -a "$results"
		sed 's/^/    | /' "$logf" | tail -n 25
	fi
	: >"$HANG_DEADLINE"
}

if [[ -n ${SSDQ_FIO_DIR:-} ]]; then
	export PATH=$SSDQ_FIO_DIR:$PATH
fi
echo "fio: $(command -v fio) ($(fio --version))" >"$SSDQ_OUT/logs/fio.log"
set_overrides
jiffies_log=$SSDQ_OUT/test-jiffies.txt
: >"$jiffies_log"
# Debug kernel: every hang is reported, not only the first ten (not -1,
# which hang_watch could not see count down).
have_kmemleak && echo 1000000 >/proc/sys/kernel/hung_task_warnings
hang_watch &
hang_watch_pid=$!
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
wedged=
for s in "${scripts[@]}"; do
	if [[ -n $wedged ]]; then
		echo "FAIL $(test_name "$s")${SSDQ_SUFFIX:-}: not run: $wedged" | tee -a "$results"
		continue
	fi
	run_one "$s"
done
kill "$hang_watch_pid" 2>/dev/null
leak_check
dmesg >"$SSDQ_OUT/dmesg.txt"
# A test that is judged by how the VM goes down (97-shutdown) names its
# second half here: it runs last, leaves the DUT bound with I/O running,
# and the reboot that follows (guest-init.sh) calls the driver's
# ->shutdown. Its host post-check reads the console and QEMU's trace.
if [[ -s $SSDQ_OUT/at-reboot ]]; then
	read -r at_reboot <"$SSDQ_OUT/at-reboot"
	"$at_reboot" at-reboot >"$SSDQ_OUT/logs/at-reboot.log" 2>&1 ||
		echo "at-reboot: $at_reboot exited $?" >>"$SSDQ_OUT/logs/at-reboot.log"
fi
sync
nfail=$(grep -c '^FAIL' "$results")
exit $((nfail > 100 ? 100 : nfail))
