#!/bin/bash
# Boot the ssdq test VM, run one command inside it, power off.
#
#   scripts/vm.sh [options] [--] COMMAND [ARGS...]
#
# Options:
#   -t, --timeout SECS  kill the VM after SECS (default $SSDQ_VM_TIMEOUT or 900)
#   -o, --out DIR       results dir; must be inside the repo, which the guest
#                       sees writable at the same path (default build/vm/last)
#   --lbs N             logical/physical block size of both NVMe namespaces
#                       (default: QEMU's 512)
#   --mdts N            MDTS of both controllers: transfers up to 2^N
#                       4 KiB pages (default: QEMU's 7, 512 KiB)
#   --img-mb N          size of each NVMe image in MiB (default 512)
#   --console           also stream the guest console to stdout
#   --debug-kernel DIR  boot the debug kernel cached in DIR (the directory
#                       scripts/debug-kernel.sh prints) instead of Debian's:
#                       acpi=noirq (QEMU's _PRT AML loops time out for
#                       minutes on it under TCG otherwise),
#                       kasan_multi_shot, its modules on /lib/modules
#   --pcie              a PCI Express machine (q35) with the device under test
#                       behind a root port with AER, at 0000:01:00.0
#                       ($SSDQ_PCI_DUT in the guest), so the kernel's AER
#                       driver (and aer_inject) can run error recovery on it
#   --smp N             N vCPUs (default 2; the matrix test's boot has 4)
#   --namespaces        three more controllers for 87-namespaces, bound to
#                       no driver until a test gives them one: "multi" at
#                       0000:00:08.0, in an NVMe subsystem, with namespaces
#                       1 (512-byte blocks), 2 (4096) and 3 (512, detached:
#                       Namespace Attachment attaches it), "ns2only" at
#                       0000:00:09.0, whose one namespace is nsid 2, and
#                       "odd" at 0000:00:0a.0: 1 and 2 with 8 bytes of
#                       metadata per block (apart; in the block), 3 with
#                       8 KiB blocks; 16 MiB each
#   --tcg-thread single|multi
#                       TCG's threading, as SSDQ_TCG_THREAD (the sleep
#                       test's boot: single; a wake from S3 under multi
#                       came back with EFLAGS garbled in most boots)
#   QMP: every boot has a QMP socket, $OUT/qmp.sock, and
#                       scripts/qmp-agent.py beside QEMU, which wakes a
#                       sleeping guest or sets a device's property when it
#                       asks on the console; the NVMe controllers' ids are
#                       dut and ref
#   --kernel-dir DIR    boot another Debian kernel, unpacked in DIR by
#                       scripts/kernel.sh (e.g. 6.1), its modules on
#                       /lib/modules
#   --trace EV[,EV...]  enable QEMU trace events (e.g. pci_nvme_mmio_doorbell_sq),
#                       logged to $OUT/qemu-trace.log, which the guest reads
#                       live at $SSDQ_QEMU_TRACE (same path; the event list
#                       is in $SSDQ_TRACE_EVENTS there). Default:
#                       $SSDQ_TRACE_EVENTS. The events do not name the
#                       controller: keep the reference one idle when counting.
#
# Environment: SSDQ_ACCEL=tcg|kvm (default: probe KVM once, else TCG),
# SSDQ_TCG_THREAD=multi|single (default multi; single avoids MTTCG's
# cross-modifying-code races at half the speed),
# SSDQ_QEMU_EXTRA (extra QEMU args, word-split), SSDQ_KVER, SSDQ_VM_MEM
# (guest MiB, default 2048), SSDQ_APPEND (extra kernel command line). Variables named
# DUT or SSDQ_* are forwarded into the guest environment, plus:
#   SSDQ_OUT (results dir), SSDQ_IMG_BYTES, SSDQ_LBS, SSDQ_REPO, SSDQ_IN_VM=1.
#
# The guest has the host's userland (chroot over 9p). PCI layout, fixed:
#   00:04.0 NVMe serial=ssdq0   image $OUT/ssdq0.img   (device under test)
#   00:05.0 NVMe serial=nvmeref image $OUT/nvmeref.img (reference, nvme)
#   00:06.0/00:07.0 virtio-9p (host root read-only, repo writable)
# Both drives use discard=unmap: with QEMU's default (ignore) DSM deallocate
# is a no-op although the namespace reports DLFEAT=1 (reads as zeroes).
# Images are created fresh (sparse, zero-filled) for each boot and kept in
# $OUT for host-side checks, with console.log and qemu.rc (QEMU's exit
# status: 0 when the guest reset or powered off, 124 when timed out).
#
# Exit status: the command's, or 124 if the VM timed out, 125 if the guest
# died without reporting one (panic, init failure). A command that cuts
# itself off from 9p (a system sleep) reports it on the console instead, in
# a line "ssdq-vm: exit status N". On those the last 40
# console lines are printed to stderr.
#
# Only one VM may run on the machine: the whole VM lifetime holds an
# exclusive flock on /tmp/ssdq-vm.lock, so concurrent callers queue up.
set -euo pipefail
. "$(dirname "$0")/common.sh"

timeout=${SSDQ_VM_TIMEOUT:-900}
out=$SSDQ_BUILD/vm/last
lbs=
mdts=
img_mb=512
console=0
debug_dir=
kernel_dir=
pcie=0
namespaces=0
smp=2
trace=${SSDQ_TRACE_EVENTS:-}
while (($#)); do
	case $1 in
	-t | --timeout) timeout=$2; shift 2 ;;
	-o | --out) out=$2; shift 2 ;;
	--lbs) lbs=$2; shift 2 ;;
	--mdts) mdts=$2; shift 2 ;;
	--img-mb) img_mb=$2; shift 2 ;;
	--console) console=1; shift ;;
	--trace) trace=$2; shift 2 ;;
	--debug-kernel) debug_dir=$2; shift 2 ;;
	--kernel-dir) kernel_dir=$2; shift 2 ;;
	--pcie) pcie=1; shift ;;
	--namespaces) namespaces=1; shift ;;
	--smp) smp=$2; shift 2 ;;
	--tcg-thread) SSDQ_TCG_THREAD=$2; shift 2 ;;
	--) shift; break ;;
	-*) die "vm.sh: unknown option $1" ;;
	*) break ;;
	esac
done
(($#)) || set -- true
case ${SSDQ_TCG_THREAD:-multi} in single | multi) ;; *) die "--tcg-thread takes single or multi, not '$SSDQ_TCG_THREAD'" ;; esac

mem=2048
append=
initrd_args=()
if [[ -n $debug_dir ]]; then
	[[ -f $debug_dir/ready ]] || die "--debug-kernel $debug_dir: no ready debug kernel there"
	kver=$(cat "$debug_dir/kver")
	kernel=$debug_dir/bzImage
	mods=$debug_dir/modroot/lib/modules
	[[ $mods =~ ^[A-Za-z0-9_./+-]+$ ]] || die "debug kernel path '$mods' has unusual characters"
	# Small: kmemleak scans all of it (13 s at 1.5 GiB, 70 s at 3 GiB).
	mem=1536
	append="acpi=noirq kasan_multi_shot ssdq_modules=$mods"
	initrd_args=(--builtin)
	: "${SSDQ_ACCEL:=tcg}"
elif [[ -n $kernel_dir ]]; then
	[[ -f $kernel_dir/ready ]] || die "--kernel-dir $kernel_dir: no kernel there (scripts/kernel.sh)"
	kver=$(cat "$kernel_dir/kver")
	kernel=$kernel_dir/vmlinuz
	mods=$kernel_dir/lib/modules
	[[ $mods =~ ^[A-Za-z0-9_./+-]+$ ]] || die "kernel path '$mods' has unusual characters"
	append="ssdq_modules=$mods"
	# What that kernel needs on its command line (kernel.sh writes it).
	[[ -s $kernel_dir/append ]] && append="$(cat "$kernel_dir/append") $append"
	initrd_args=(--kernel-dir "$kernel_dir")
else
	kver=$(ssdq_kver) || die "no 6.12*-amd64 kernel installed (run: make deps)"
	kernel=/boot/vmlinuz-$kver
fi
[[ -r $kernel ]] || die "$kernel not readable (the VM needs root)"
mem=${SSDQ_VM_MEM:-$mem}
append="$append${SSDQ_APPEND:+ $SSDQ_APPEND}"
append=${append# }
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86 missing (run: make deps)"

mkdir -p "$out"
out=$(cd "$out" && pwd -P)
case $out/ in
"$SSDQ_REPO"/*) ;;
*) die "--out $out must be inside the repo $SSDQ_REPO (the guest writes there)" ;;
esac
# The kernel command line and 9p carry these paths; keep them simple.
[[ $out =~ ^[A-Za-z0-9_./+-]+$ ]] || die "results path '$out' has unusual characters"
# A unix socket's path (QMP's) holds at most 107 bytes.
((${#out} <= 90)) || die "results path '$out' is longer than 90 bytes (QMP socket)"


# Write the guest script: forwarded environment, then the command.
write_guest_script() { # $1=file, $2=VM timeout, rest=command
	local f=$1 tmo=$2 v
	shift 2
	{
		echo '#!/bin/bash'
		echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
		echo 'export HOME=/root TERM=dumb LANG=C.UTF-8'
		for v in $(compgen -v); do
			case $v in
			DUT | SSDQ_*)
				[[ $v == SSDQ_QEMU_EXTRA || $v == SSDQ_QEMU_TRACE ]] && continue
				printf 'export %s=%q\n' "$v" "${!v}"
				;;
			esac
		done
		printf 'export SSDQ_OUT=%q SSDQ_REPO=%q SSDQ_IN_VM=1\n' "$out" "$SSDQ_REPO"
		# When the VM will be killed, in seconds of the guest's uptime
		# (which starts after QEMU does): the runner ends a stuck test
		# before then, so it is still dumped and reported.
		printf 'export SSDQ_VM_END=%q\n' "$tmo"
		((pcie)) && echo 'export SSDQ_PCI_DUT=0000:01:00.0'
		printf 'export SSDQ_IMG_BYTES=%q SSDQ_LBS=%q SSDQ_KVER=%q\n' \
			"$((img_mb * 1024 * 1024))" "${lbs:-512}" "$kver"
		if [[ -n $trace ]]; then
			printf 'export SSDQ_QEMU_TRACE=%q SSDQ_TRACE_EVENTS=%q\n' "$out/qemu-trace.log" "$trace"
		else
			echo 'unset SSDQ_QEMU_TRACE SSDQ_TRACE_EVENTS'
		fi
		printf 'cd %q || exit 126\n' "$SSDQ_REPO"
		printf '%q ' "$@"
		echo
	} >"$f"
}

# One boot. $1=accel, $2=timeout, rest=command. Returns as documented above.
boot() {
	local accel=$1 tmo=$2 rc qrc
	shift 2
	local script=$out/guest.sh log=$out/console.log
	rm -f "$script.rc" "$log"
	write_guest_script "$script" "$tmo" "$@"

	local img nvme_opts='' machine=pc dut_at=addr=04.0
	local -a root_port=()
	[[ -n $lbs ]] && nvme_opts=",logical_block_size=$lbs,physical_block_size=$lbs"
	[[ -n $mdts ]] && nvme_opts+=",mdts=$mdts"
	if ((pcie)); then
		# A link of at most 5 GT/s: after a bus reset the kernel then
		# waits for the device, not for Data Link Layer Link Active,
		# which QEMU 7.2's root port never reports (recovery "fails").
		machine=q35
		root_port=(-device "pcie-root-port,id=rp0,chassis=1,slot=1,addr=04.0,x-speed=5,x-width=1")
		dut_at=bus=rp0
	fi
	for img in ssdq0 nvmeref; do
		rm -f "$out/$img.img"
		truncate -s "${img_mb}M" "$out/$img.img"
	done
	local -a more_ctrls=()
	if ((namespaces)); then
		for img in multi1 multi2 multi3 ns2only odd1 odd2 odd3; do
			rm -f "$out/$img.img"
			truncate -s 16M "$out/$img.img"
			more_ctrls+=(-drive "file=$out/$img.img,if=none,id=$img,format=raw,cache=writeback,discard=unmap")
		done
		more_ctrls+=(-device "nvme-subsys,id=subsys0,nqn=ssdq-multi"
			-device "nvme,id=multi,serial=ssdqmulti,subsys=subsys0,addr=08.0"
			-device "nvme-ns,drive=multi1,nsid=1,bus=multi"
			-device "nvme-ns,drive=multi2,nsid=2,bus=multi,logical_block_size=4096,physical_block_size=4096"
			-device "nvme-ns,drive=multi3,nsid=3,bus=multi,detached=on"
			-device "nvme,id=ns2only,serial=ssdqns2only,addr=09.0"
			-device "nvme-ns,drive=ns2only,nsid=2,bus=ns2only"
			-device "nvme,id=odd,serial=ssdqodd,addr=0a.0"
			-device "nvme-ns,drive=odd1,nsid=1,bus=odd,ms=8"
			-device "nvme-ns,drive=odd2,nsid=2,bus=odd,ms=8,mset=1"
			-device "nvme-ns,drive=odd3,nsid=3,bus=odd,logical_block_size=8192,physical_block_size=8192")
	fi

	local -a accel_args
	if [[ $accel == kvm ]]; then
		accel_args=(-accel kvm -cpu host)
	else
		accel_args=(-accel "tcg,thread=${SSDQ_TCG_THREAD:-multi}")
	fi
	# Extra args are deliberately word-split (documented).
	# shellcheck disable=SC2206
	local -a extra=(${SSDQ_QEMU_EXTRA:-})
	local ev
	rm -f "$out/qemu-trace.log"
	if [[ -n $trace ]]; then
		# QEMU's log file is line buffered: the guest sees events as they
		# happen, over the cache=none 9p share.
		for ev in ${trace//,/ }; do
			extra+=(-trace "enable=$ev")
		done
		extra+=(-D "$out/qemu-trace.log")
		: >"$out/qemu-trace.log"
	fi

	# tsc=reliable: under TCG the clocksource watchdog sees the TSC skew
	# against the HPET under load (11 ms in 500 ms) and marks it unstable
	# mid-run; the static-key flip that follows in sched_clock is patched
	# with int3 while the other vCPU runs that code, which MTTCG can turn
	# into an "Oops: int3" (seen in a make check's steering test).
	local -a qemu=(qemu-system-x86_64 -machine "$machine" "${accel_args[@]}"
		-smp "$smp" -m "$mem"
		-nodefaults -nographic -no-reboot -monitor none
		-qmp "unix:$out/qmp.sock,server=on,wait=off"
		-serial "file:$log"
		-kernel "$kernel" -initrd "$initrd"
		-append "console=ttyS0 quiet panic=-1 mitigations=off tsc=reliable ssdq_repo=$SSDQ_REPO ssdq_script=$script${append:+ $append}"
		-drive "file=$out/ssdq0.img,if=none,id=nvm0,format=raw,cache=writeback,discard=unmap"
		"${root_port[@]}"
		-device "nvme,id=dut,serial=ssdq0,drive=nvm0,$dut_at$nvme_opts"
		-drive "file=$out/nvmeref.img,if=none,id=nvm1,format=raw,cache=writeback,discard=unmap"
		-device "nvme,id=ref,serial=nvmeref,drive=nvm1,addr=05.0$nvme_opts"
		"${more_ctrls[@]}"
		-fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap"
		-device "virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot,addr=06.0"
		-fsdev "local,id=fsrepo,path=$SSDQ_REPO,security_model=none,multidevs=remap"
		-device "virtio-9p-pci,fsdev=fsrepo,mount_tag=repo,addr=07.0"
		"${extra[@]}")
	printf '%q ' "${qemu[@]}" >"$out/qemu.cmdline"
	echo >>"$out/qemu.cmdline"

	local tailpid=
	if ((console)); then
		: >"$log"
		tail -n +1 -F "$log" 2>/dev/null &
		tailpid=$!
	fi
	# What a sleeping guest asks of the host (scripts/qmp-agent.py).
	rm -f "$out/qmp.sock" "$out/qmp-agent.log"
	python3 "$SSDQ_REPO/scripts/qmp-agent.py" "$log" "$out/qmp.sock" \
		"$out/qmp-agent.log" 2>>"$out/qmp-agent.log" &
	local agent=$!
	qrc=0
	timeout -k 10 "$tmo" "${qemu[@]}" </dev/null >"$out/qemu.out" 2>&1 || qrc=$?
	echo "$qrc" >"$out/qemu.rc"
	kill "$agent" 2>/dev/null || true
	wait "$agent" 2>/dev/null || true
	if [[ -n $tailpid ]]; then
		sleep 0.3
		kill "$tailpid" 2>/dev/null || true
		wait "$tailpid" 2>/dev/null || true
	fi
	if ((qrc == 124 || qrc == 137)); then
		return 124
	fi
	if [[ -s $script.rc ]]; then
		rc=$(cat "$script.rc")
		[[ $rc =~ ^[0-9]+$ ]] || rc=125
		return "$rc"
	fi
	# A guest whose last step cut it off from 9p (a system sleep: see
	# tests/94-sleep.sh) reports its status on the console instead.
	rc=$(tr -d '\r' <"$log" | sed -nE 's/^(\[ *[0-9.]+\] )?ssdq-vm: exit status ([0-9]+)$/\2/p' | tail -n1)
	[[ -n $rc ]] && return "$rc"
	return 125
}

show_tail() { # $1=reason
	{
		echo "vm.sh: $1; last 40 console lines ($out/console.log):"
		# (minus SeaBIOS's terminal escapes)
		tail -n 40 "$out/console.log" 2>/dev/null |
			sed -E 's/\x1b(\[[0-9;?]*[A-Za-z]|c)//g; s/^/  | /'
		# A hung task's stack, and every task's then in D state
		# (tests/run-guest.sh's hang_watch).
		if grep -q 'ssdq-hung: ' "$out/console.log" 2>/dev/null; then
			echo "tasks in D state once a task hung:"
			grep 'ssdq-hung: ' "$out/console.log" | head -n 12 | sed 's/^/  | /'
		fi
		if [[ -s $out/qemu.out ]]; then
			echo "qemu said:"
			sed 's/^/  | /' "$out/qemu.out" | tail -n 10
		fi
	} >&2
}

# Does a KVM boot reach userspace? Asked once per kernel+QEMU, then cached.
pick_accel() {
	if [[ -n ${SSDQ_ACCEL:-} ]]; then
		echo "$SSDQ_ACCEL"
		return
	fi
	if [[ ! -w /dev/kvm ]]; then
		echo tcg
		return
	fi
	local key cache
	key=$(printf '%s %s' "$kver" "$(qemu-system-x86_64 --version | head -n1)" | sha256sum | cut -c1-16)
	cache=$SSDQ_BUILD/accel-$key
	if [[ -s $cache ]]; then
		cat "$cache"
		return
	fi
	note "probing whether KVM boots work (once; cached in $cache)"
	local saved_out=$out r=0
	out=$SSDQ_BUILD/vm/kvm-probe
	mkdir -p "$out"
	local saved_trace=$trace
	trace=
	boot kvm 40 true || r=$?
	trace=$saved_trace
	if ((r == 0)) || grep -q '^ssdq-init: started' "$out/console.log"; then
		echo kvm >"$cache"
	else
		note "KVM boot failed (status $r, see $out/), using TCG"
		echo tcg >"$cache"
	fi
	out=$saved_out
	cat "$cache"
}

exec 9>/tmp/ssdq-vm.lock
if ! flock -n 9; then
	note "another VM is running; waiting for /tmp/ssdq-vm.lock"
	flock 9
fi

# Under the lock, so two callers never build it at once.
initrd=$("$(dirname "$0")/mkinitramfs.sh" "${initrd_args[@]}")
accel=$(pick_accel)
case $accel in tcg | kvm) ;; *) die "SSDQ_ACCEL must be tcg or kvm, not '$accel'" ;; esac
note "booting VM ($accel, timeout ${timeout}s, results in ${out#"$SSDQ_REPO"/})"
rc=0
boot "$accel" "$timeout" "$@" || rc=$?
case $rc in
124) show_tail "VM timed out after ${timeout}s" ;;
125) show_tail "guest ended without reporting an exit status" ;;
esac
exit "$rc"
