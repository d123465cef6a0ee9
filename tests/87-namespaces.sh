#!/bin/bash
# namespaces: every active namespace of a controller gets a disk
# (Documentation/abi.rst, "Namespaces"), on controllers vm.sh --namespaces
# adds beside the DUT:
#  - "multi", in an NVMe subsystem: namespaces 1 (512-byte blocks) and 2
#    (4096) attached, 3 detached. ssdq names them ssdqN and ssdqNn2; each
#    has its own nsid, size and block size, and keeps its own data. Nsid 3
#    is attached through ssdq's admin passthrough (nvme-cli attach-ns on the
#    disk): the controller's Namespace Attribute Changed event and the
#    passthrough's rescan add ssdqNn3, which reads back what is written.
#    Detached under a reader that holds it open, the disk goes and the
#    reader gets an error, not a hang. A reset with verified I/O on two
#    namespaces runs each one's requests again; sysfs rescan_namespaces
#    finds the same two; bad input there is refused with one line.
#  - "ns2only", whose one namespace is nsid 2 (ssdq once failed its probe:
#    "namespace 1 is not active"): nvme drives it first and writes a
#    pattern, then ssdq names it ssdqN, reads the pattern back, and shows
#    the nsid, size and block size nvme showed.
#  - "odd": namespaces 1 and 2 keep 8 bytes of metadata per block (apart;
#    in the block), 3 has 8 KiB blocks. ssdq gives each a disk of no
#    capacity and a generic device that carries passthrough: what nvme
#    writes through its generic devices (data, and metadata kept apart)
#    ssdq reads through its own (ioctls, and io_uring) and the reverse (a
#    disk read-only meanwhile); reads whose buffers are shorter than their blocks' data or
#    metadata are refused (EINVAL, one line each).
# In the main boot (check.sh gives it vm.sh --namespaces).
# timeout: 300
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd /tmp

[[ $DUT == ssdq ]] || skip "ssdq's namespaces (the controllers are given to ssdq)"
[[ -e /sys/bus/pci/devices/$PCI_MULTI && -e /sys/bus/pci/devices/$PCI_NS2ONLY ]] ||
	skip "no namespace controllers (vm.sh --namespaces)"
command -v nvme >/dev/null || fail "nvme-cli missing (make deps)"
allow_dmesg 'failed: NVMe status 0x4002 \(Invalid Field in Command, DNR\)|operation not supported error, dev ssdq[0-9]+n3|namespace [0-9]+ is not active any more|namespace attribute changed|rescan_namespaces takes 1|resetting the controller|reset done|Buffer I/O error|removing the disk'

# A poll queue: the odd controller's metadata reads on a polled ring.
dut_load poll_queues=1
ref_load

disk_count_is() { [[ $(disks_of_pci "$1" | wc -l) == "$2" ]]; }
# nsid, size in 512-byte sectors and logical block size of a disk.
disk_shape() { # disk
	echo "$(cat "/sys/block/$1/nsid") $(cat "/sys/block/$1/size") $(cat "/sys/block/$1/queue/logical_block_size")"
}
# stat's 5th field: writes completed.
writes_of() { awk '{ print $5 }' "/sys/block/$1/stat"; }
bind_to() { # pci driver
	set_override "$1" "$2"
	echo "$1" >"/sys/bus/pci/drivers/$2/bind"
}
unbind() { # pci
	echo "$1" >"/sys/bus/pci/devices/$1/driver/unbind"
}
# 1 MiB written at OFF of a disk, read back and compared.
verify_mib() { # disk off name what
	local pat
	pat=$(pattern_file "$3" $MiB)
	dev_write "$pat" "/dev/$1" "$2"
	dev_cmp "/dev/$1" "$2" $MiB "$pat" "$4"
}
SECTORS=$((16 * MiB / 512))

# ---- multi: two namespaces, 512- and 4096-byte blocks
bind_to "$PCI_MULTI" ssdq
wait_for 60 "two disks of $PCI_MULTI" disk_count_is "$PCI_MULTI" 2
mapfile -t disks < <(disks_of_pci "$PCI_MULTI")
prim=${disks[0]}
[[ $prim =~ ^ssdq[0-9]+$ && ${disks[1]} == "${prim}n2" ]] ||
	fail "multi's disks are ${disks[*]}, not ssdqN and ssdqNn2"
ok "multi's namespaces: ${disks[*]}"
assert_eq "$prim nsid, size, block size" "$(disk_shape "$prim")" "1 $SECTORS 512"
assert_eq "${prim}n2 nsid, size, block size" "$(disk_shape "${prim}n2")" "2 $SECTORS 4096"
DBG=/sys/kernel/debug/ssdq/$prim
assert_eq "namespaces added (debugfs)" "$(kv_get "$DBG/namespaces" added)" 2

# Each keeps its own data: both written, then both read back.
pa=$(pattern_file ns-a $MiB)
pb=$(pattern_file ns-b $MiB)
dev_write "$pa" "/dev/$prim" $MiB
dev_write "$pb" "/dev/${prim}n2" $MiB
dev_cmp "/dev/$prim" $MiB $MiB "$pa" "namespace 1"
dev_cmp "/dev/${prim}n2" $MiB $MiB "$pb" "namespace 2"

# ---- a reset with verified I/O running on both namespaces
fio_ns() { # disk tag
	fio --name="$2" --filename="/dev/$1" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --iodepth=8 --offset=$((4 * MiB)) \
		--size=$((4 * MiB)) --verify=crc32c --do_verify=1 \
		--output="$T_DIR/$2.out" >/dev/null 2>&1
}
fio_ns "$prim" ns1 &
f1=$!
fio_ns "${prim}n2" ns2 &
f2=$!
resets=$(kv_get "$DBG/recovery" resets)
wait_for 30 "writes on both namespaces" eval '(( $(writes_of "$prim") > 0 && $(writes_of "${prim}n2") > 0 ))'
echo 1 >"/sys/block/${prim}n2/recovery/reset"
wait "$f1" || fail "verified I/O on namespace 1 across a reset failed: $(tail -n 3 "$T_DIR/ns1.out")"
wait "$f2" || fail "verified I/O on namespace 2 across a reset failed: $(tail -n 3 "$T_DIR/ns2.out")"
assert_eq "resets" "$(kv_get "$DBG/recovery" resets)" $((resets + 1))
ok "verified I/O on both namespaces ran across a reset"

# ---- sysfs rescan: the same two; bad input refused with one line
rescan=/sys/bus/pci/devices/$PCI_MULTI/rescan_namespaces
scans=$(kv_get "$DBG/namespaces" scans)
echo 1 >"$rescan"
assert_eq "scans after rescan_namespaces" "$(kv_get "$DBG/namespaces" scans)" $((scans + 1))
assert_eq "disks after the rescan" "$(disks_of_pci "$PCI_MULTI" | tr '\n' ' ')" "$prim ${prim}n2 "
kmsg_mark bad-rescan
if echo 2 >"$rescan" 2>/dev/null; then fail "rescan_namespaces took 2"; fi
assert_eq "lines for the bad rescan" "$(dmesg_since bad-rescan | grep -c 'rescan_namespaces takes 1' || true)" 1

# ---- attach namespace 3 through the passthrough
cntlid=$(nvme id-ctrl "/dev/$prim" | awk '$1 == "cntlid" { print $3 }')
[[ -n $cntlid ]] || fail "nvme id-ctrl on /dev/$prim gave no cntlid"
ok "nvme id-ctrl on /dev/$prim: cntlid $cntlid"
assert_eq "nvme id-ctrl's serial" "$(nvme id-ctrl "/dev/$prim" | awk '$1 == "sn" { print $3 }')" ssdqmulti
nvme smart-log "/dev/$prim" >"$T_DIR/smart.out" 2>&1 || fail "nvme smart-log: $(cat "$T_DIR/smart.out")"
grep -q '^critical_warning' "$T_DIR/smart.out" || fail "nvme smart-log shows no critical_warning: $(head -n 3 "$T_DIR/smart.out")"
ok "nvme smart-log on /dev/$prim"
assert_eq "nvme-cli's nsid of /dev/${prim}n2" "$(nvme get-ns-id "/dev/${prim}n2" | grep -o 'namespace-id:[0-9]*')" "namespace-id:2"
notices=$(kv_get "$DBG/aen" notices)
new_notice() { (($(kv_get "$DBG/aen" notices) > notices)); }
kmsg_mark attach
nvme attach-ns "/dev/$prim" --namespace-id=3 --controllers="$cntlid" >"$T_DIR/attach.out" 2>&1 ||
	fail "nvme attach-ns: $(cat "$T_DIR/attach.out")"
wait_for 60 "disk ${prim}n3" test -e "/sys/block/${prim}n3"
assert_eq "${prim}n3 nsid, size, block size" "$(disk_shape "${prim}n3")" "3 $SECTORS 512"
wait_for 30 "the namespace change event" new_notice
wait_for 10 "its line" eval 'dmesg_since attach | grep -q "namespace attribute changed"'
ok "attached: ${prim}n3, with the controller's event"
verify_mib "${prim}n3" 0 ns-c "namespace 3, attached at run time"

# ---- detach it under a writer holding it open: O_DIRECT 4 KiB at 0, again
# and again, until a write fails; its errno goes to the file.
python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
while True:
    try:
        os.pwritev(fd, [buf], 0)
    except OSError as e:
        open(sys.argv[2], "w").write("%d %s\n" % (e.errno, os.strerror(e.errno)))
        sys.exit(0)
' "/dev/${prim}n3" "$T_DIR/writer.err" &
writer=$!
w0=$(writes_of "${prim}n3")
writer_busy() { (($(writes_of "${prim}n3") > w0 + 2)); }
wait_for 30 "the writer writing" writer_busy
notices=$(kv_get "$DBG/aen" notices)
nvme detach-ns "/dev/$prim" --namespace-id=3 --controllers="$cntlid" >"$T_DIR/detach.out" 2>&1 ||
	fail "nvme detach-ns: $(cat "$T_DIR/detach.out")"
wait_for 60 "${prim}n3 gone" eval '[[ ! -e /sys/block/${prim}n3 ]]'
wait_for 30 "the writer to the detached namespace to get an error" eval '! kill -0 "$writer" 2>/dev/null'
wait "$writer" || fail "the writer failed otherwise than by a write's error"
[[ -s $T_DIR/writer.err ]] || fail "the writer ended without an error"
ok "detached: ${prim}n3 gone, its writer got errno $(cat "$T_DIR/writer.err")"
wait_for 30 "the namespace change event" new_notice
assert_eq "namespaces added, removed (debugfs)" \
	"$(kv_get "$DBG/namespaces" added) $(kv_get "$DBG/namespaces" removed)" "3 1"
dev_cmp "/dev/$prim" $MiB $MiB "$pa" "namespace 1 after the detach"
dev_cmp "/dev/${prim}n2" $MiB $MiB "$pb" "namespace 2 after the detach"
assert_eq "rescans that failed" "$(kv_get "$DBG/namespaces" scan_failures)" 0

# ---- unbound under an opener: its ioctls find the controller gone (the
# debug lane's KASAN watches them), the disk's last close frees the rest.
exec {held}<"/dev/$prim"
unbind "$PCI_MULTI"
wait_for 30 "multi's disks gone" disk_count_is "$PCI_MULTI" 0
python3 "$(dirname "$0")/nvme-ioctl.py" "fd:$held" r 0 id identify-ctrl read >"$T_DIR/held.txt" 2>&1 ||
	fail "ioctls on a held disk of an unbound controller: $(cat "$T_DIR/held.txt")"
exec {held}<&-
assert_eq "ioctls of an unbound controller's held disk" "$(tr '\n' ',' <"$T_DIR/held.txt")" \
	"id ok 0x0 1,identify-ctrl errno ENODEV,read errno ENODEV,"

# ---- ns2only: nvme first, then ssdq
bind_to "$PCI_NS2ONLY" nvme
wait_for 60 "nvme's disk of $PCI_NS2ONLY" eval '[[ -n $(disk_of_pci "$PCI_NS2ONLY") ]]'
nd=$(disk_of_pci "$PCI_NS2ONLY")
nvme_shape=$(disk_shape "$nd")
assert_eq "nvme's $nd nsid, size, block size" "$nvme_shape" "2 $SECTORS 512"
pn=$(pattern_file ns-2only $MiB)
dev_write "$pn" "/dev/$nd" $((2 * MiB))
unbind "$PCI_NS2ONLY"
bind_to "$PCI_NS2ONLY" ssdq
wait_for 60 "ssdq's disk of $PCI_NS2ONLY" eval '[[ -n $(disk_of_pci "$PCI_NS2ONLY") ]]'
sd=$(disk_of_pci "$PCI_NS2ONLY")
[[ $sd =~ ^ssdq[0-9]+$ ]] || fail "the only namespace's disk is $sd, not ssdqN"
assert_eq "ssdq's $sd nsid, size, block size (nvme's: $nvme_shape)" "$(disk_shape "$sd")" "$nvme_shape"
dev_cmp "/dev/$sd" $((2 * MiB)) $MiB "$pn" "what nvme wrote to nsid 2, read by ssdq"
unbind "$PCI_NS2ONLY"
set_override "$PCI_NS2ONLY" none
set_override "$PCI_MULTI" none

# ---- odd: namespaces whose blocks the block layer cannot carry, whose
# generic devices do (Documentation/passthrough.rst, "Namespaces without
# block I/O"). nvme writes through its generic devices, ssdq reads that
# back through its own, writes (its disk set read-only) and nvme reads it.
IOCTL_PY=$(dirname "$0")/nvme-ioctl.py
# One read or write through a generic device, and its metadata kept apart:
# io DEV read|write SLBA NLB DATA LEN [META MLEN]
io() {
	python3 "$IOCTL_PY" io "$@" >"$T_DIR/io.out" 2>&1
	[[ $(cat "$T_DIR/io.out") == "io ok 0x0" ]] || fail "io $*: $(cat "$T_DIR/io.out")"
}
# The generic devices of the odd controller: ssdq's are the PCI
# function's, nvme's its controller's.
odd_gens() { # count
	local p=/sys/bus/pci/devices/$PCI_ODD
	[[ $(ls -d "$p"/ssdq-generic/ssdqg* "$p"/nvme/nvme*/ng* 2>/dev/null | wc -l) == "$1" ]]
}
# nvme's generic device of namespace NSID of it (nvme numbers them by
# its own instance, not by nsid).
nvme_odd_gen() { # nsid
	local b
	for b in /sys/block/nvme*; do
		[[ $b/device/device -ef /sys/bus/pci/devices/$PCI_ODD && $(cat "$b/nsid") == "$1" ]] &&
			echo "/dev/ng${b##*/nvme}" && return 0
	done
	fail "no nvme disk of nsid $1 of $PCI_ODD"
}
# nvme's disks of it: nsid, size, block size.
nvme_odd_view() {
	local b
	for b in /sys/block/nvme*; do
		[[ $b/device/device -ef /sys/bus/pci/devices/$PCI_ODD ]] && disk_shape "${b##*/}"
	done
	return 0
}
# Each namespace's I/O, one set written by nvme (a), one by ssdq (b):
# nsid 1, 4 blocks of 512 bytes and 4 x 8 bytes of metadata apart; nsid 2,
# 4 blocks of 512 + 8 bytes (metadata in the block); nsid 3, one 8 KiB
# block (a) and two (b).
for v in a b; do
	head -c 2048 "$(pattern_file "odd-1$v" 2048)" >"$T_DIR/1$v.dat"
	head -c 32 "$(pattern_file "odd-1$v-md" 32)" >"$T_DIR/1$v.md"
	head -c 2080 "$(pattern_file "odd-2$v" 2080)" >"$T_DIR/2$v.dat"
	head -c 16384 "$(pattern_file "odd-3$v" 16384)" >"$T_DIR/3$v.dat"
done
# nsid 1 (0: left out) and the others.
odd_write() { # dev1 dev2 dev3 a|b slba 1|0
	[[ $6 == 0 ]] || io "$1" write "$5" 4 "$T_DIR/1$4.dat" 2048 "$T_DIR/1$4.md" 32
	io "$2" write "$5" 4 "$T_DIR/2$4.dat" 2080
	if [[ $4 == a ]]; then
		io "$3" write "$5" 1 "$T_DIR/3$4.dat" 8192
	else
		io "$3" write "$5" 2 "$T_DIR/3$4.dat" 16384
	fi
}
odd_check() { # dev1 dev2 dev3 a|b slba 1|0 who
	local n3=1 said="2080 bytes"
	if [[ $6 == 1 ]]; then
		io "$1" read "$5" 4 "$T_DIR/1.got" 2048 "$T_DIR/1.md.got" 32
		cmp "$T_DIR/1$4.dat" "$T_DIR/1.got" && cmp "$T_DIR/1$4.md" "$T_DIR/1.md.got" ||
			fail "$7: nsid 1's data or metadata differ"
		said="2048 bytes and 32 of metadata, $said"
	fi
	io "$2" read "$5" 4 "$T_DIR/2.got" 2080
	[[ $4 == b ]] && n3=2
	io "$3" read "$5" $n3 "$T_DIR/3.got" $((n3 * 8192))
	cmp "$T_DIR/2$4.dat" "$T_DIR/2.got" || fail "$7: nsid 2's blocks differ"
	head -c $((n3 * 8192)) "$T_DIR/3$4.dat" | cmp - "$T_DIR/3.got" || fail "$7: nsid 3's blocks differ"
	ok "$7: $said, $((n3 * 8192)) bytes match"
}

bind_to "$PCI_ODD" nvme
wait_for 60 "nvme's generic devices of $PCI_ODD" odd_gens 3
nvme_view=$(nvme_odd_view | tr '\n' ' ')
# nvme carries metadata kept apart only through the block layer's integrity
# data (CONFIG_BLK_DEV_INTEGRITY; not the debug kernel's): without it the
# disk has no capacity and ssdq alone moves nsid 1's metadata.
nvme_md=1
[[ $(cat "/sys/block/$(basename "$(nvme_odd_gen 1)" | sed 's/^ng/nvme/')/size") != 0 ]] || nvme_md=0
odd_write "$(nvme_odd_gen 1)" "$(nvme_odd_gen 2)" "$(nvme_odd_gen 3)" a 8 $nvme_md
unbind "$PCI_ODD"

bind_to "$PCI_ODD" ssdq
wait_for 60 "ssdq's generic devices of $PCI_ODD" odd_gens 3
mapfile -t odd < <(disks_of_pci "$PCI_ODD")
on=${odd[0]#ssdq}
assert_eq "ssdq's disks of the odd namespaces: nsid, size, block size (nvme's: $nvme_view)" \
	"$(for d in "${odd[@]}"; do disk_shape "$d"; done | tr '\n' ' ')" "1 0 512 2 0 512 3 0 512 "
assert_eq "ssdq's generic devices of the odd namespaces" \
	"$(ls "/sys/bus/pci/devices/$PCI_ODD/ssdq-generic" | tr '\n' ' ')" \
	"ssdqg${on}n1 ssdqg${on}n2 ssdqg${on}n3 "
g=/dev/ssdqg${on}n
((nvme_md)) || io "${g}1" write 8 4 "$T_DIR/1a.dat" 2048 "$T_DIR/1a.md" 32
odd_check "${g}1" "${g}2" "${g}3" a 8 1 "what nvme wrote (nsid 1: nvme's if nvme_md=$nvme_md), ssdq reads through its generic devices"
# ... and through io_uring, the metadata too (its buffer kept to the CQE).
URING=${SSDQ_URING_PT:-}
[[ -x $URING ]] || fail "tests/uring-pt.c not built (scripts/check.sh builds it)"
"$URING" xfer "${g}1" read 8 512 2048 "$T_DIR/1.got" "md=32:$T_DIR/1.md.got" >/dev/null
cmp "$T_DIR/1a.dat" "$T_DIR/1.got" && cmp "$T_DIR/1a.md" "$T_DIR/1.md.got" ||
	fail "a uring read of nsid 1: its data or metadata differ from what nvme wrote"
"$URING" xfer "${g}2" read 8 520 2080 "$T_DIR/2.got" >/dev/null
cmp "$T_DIR/2a.dat" "$T_DIR/2.got" || fail "a uring read of nsid 2 differs from what nvme wrote"
ok "uring reads of nsid 1 (with its metadata) and 2: as nvme wrote them"
# Short buffers: the controller would write past them (metadata kept
# apart: to address 0); ssdq refuses them.
allow_dmesg 'passthrough: opcode 0x2 moves (32 bytes of metadata, its metadata buffer has 0|2080 bytes, its buffer has 2048)'
kmsg_mark odd
python3 "$IOCTL_PY" io "${g}1" read 8 4 "$T_DIR/x" 2048 >"$T_DIR/short.txt" 2>&1
python3 "$IOCTL_PY" io "${g}2" read 8 4 "$T_DIR/x" 2048 >>"$T_DIR/short.txt" 2>&1
assert_eq "reads without their metadata buffer, or into 2048 bytes for 2080" \
	"$(tr '\n' ',' <"$T_DIR/short.txt")" "io errno EINVAL,io errno EINVAL,"
assert_eq "their lines" "$(dmesg_since odd | grep -c 'passthrough: opcode 0x2 moves' || true)" 2
# Metadata commands in flight through resets: nsid 1's uring reads, each
# with its own metadata buffer of ssdq's kept with its command to the CQE,
# on an interrupt ring under irqpoll and on a polled ring (where the
# kernel polls uring commands: 6.6) through a sysfs reset, and on an
# interrupt ring whose one completion is dropped (a timeout, an Abort,
# a reset that cancels that command); and reset by the ring's own thread
# (NVME_IOCTL_RESET) before it reaps a CQE, on a ring whose completions
# wait for that thread (DEFER_TASKRUN; polled): a request kept until its
# CQE would hold that reset forever. Every command ends, and what nvme
# wrote reads back after, metadata too; the debug lane's kmemleak finds a
# buffer left behind.
OSYS=/sys/block/${odd[0]}
ODBG=/sys/kernel/debug/ssdq/${odd[0]}
odd_reaped() { DBG=$ODBG reaped; }
odd_resets() { kv_get "$ODBG/recovery" resets; }
odd_loading() { (($(odd_reaped) > rp0 + 64)); }
odd_reset_since() { (($(odd_resets) > $1)); }
load_ended() { grep -q '^load ' "$1"; }
md_load() { # what reset|drop|own [poll]
	local what=$1 how=$2 out r0 lpid res
	shift 2
	md_runs=$((${md_runs:-0} + 1))
	out=$T_DIR/md-load-$md_runs.txt
	rp0=$(odd_reaped) r0=$(odd_resets)
	if [[ $how == own ]]; then
		"$URING" load "${g}1" 0 512 0 16 md=8 "reset=/dev/ssdqc$on" "$@" >"$out" 2>&1 &
		lpid=$!
		wait_for 60 "the ring's own reset to return, and its CQEs ($what)" load_ended "$out"
		[[ $(head -n1 "$out") == "reset 0" ]] || fail "metadata reads, $what: $(cat "$out")"
	else
		"$URING" load "${g}1" 0 512 120 16 md=8 "$@" >"$out" 2>&1 &
		lpid=$!
		wait_for 30 "metadata reads under way ($what)" odd_loading
		if [[ $how == reset ]]; then
			echo 1 >"$OSYS/recovery/reset"
		else
			echo 1 >"$ODBG/fault/drop_completions"
			wait_for $((IO_TIMEOUT_S * 10)) "the reset after a dropped completion ($what)" \
				odd_reset_since "$r0"
		fi
		kill -USR1 "$lpid"
	fi
	wait "$lpid" || true
	res=$(grep '^load ' "$out")
	[[ $res == "load ok "* ]] || fail "metadata reads, $what: $(cat "$out")"
	# The dropped one, cancelled by the reset, ends as nvme's would.
	[[ $how != drop || $res == *" EINTR:1"* ]] ||
		fail "metadata reads, $what: no one command ended EINTR (cancelled by the reset): $res"
	# The ring's 16 end read (0) or taken back by the reset (EINTR).
	[[ $how != own || $res =~ ^load\ ok\ [0-9]+\ status\ 0\ errno\ [0-9]+(\ (0|EINTR):[0-9]+)+$ ]] ||
		fail "metadata reads, $what: a command ended neither read nor EINTR: $res"
	assert_eq "resets ($what)" "$(odd_resets)" $((r0 + 1))
	"$URING" xfer "${g}1" read 8 512 2048 "$T_DIR/1.got" "md=32:$T_DIR/1.md.got" >/dev/null
	cmp "$T_DIR/1a.dat" "$T_DIR/1.got" && cmp "$T_DIR/1a.md" "$T_DIR/1.md.got" ||
		fail "after metadata reads ($what): nsid 1's data or metadata differ"
	ok "metadata reads, $what: every command ended ($res), nsid 1 reads back"
}
allow_dmesg 'timed out|not aborted|I/O error|reset asked for through ioctl'
IO_TIMEOUT_S=$((3 * ${SSDQ_TIMEOUT_SCALE:-1}))
echo $((IO_TIMEOUT_S * 1000)) >"$OSYS/queue/io_timeout"
echo irqpoll >"$OSYS/irq/mode"
md_load "irqpoll, a sysfs reset" reset
echo direct >"$OSYS/irq/mode"
md_load "a dropped completion" drop
md_load "the ring's thread's own reset" own
kernel=$(uname -r)
if [[ $(printf '%s\n' 6.6 "${kernel%%-*}" | sort -V | head -n1) == 6.6 ]]; then
	md_load "polled, a sysfs reset" reset poll
	md_load "polled, the ring's thread's own reset" own poll
fi
# A read-only disk does not stop its generic device (nor nvme's).
blockdev --setro "/dev/${odd[2]}"
odd_write "${g}1" "${g}2" "${g}3" b 16 1
# nsid 1's again through io_uring, its metadata too.
"$URING" xfer "${g}1" write 16 512 2048 "$T_DIR/1b.dat" "md=32:$T_DIR/1b.md" >/dev/null
((nvme_md)) || odd_check "${g}1" "${g}2" "${g}3" b 16 1 "what ssdq wrote, read back by ssdq"
unbind "$PCI_ODD"

bind_to "$PCI_ODD" nvme
wait_for 60 "nvme's generic devices of $PCI_ODD again" odd_gens 3
odd_check "$(nvme_odd_gen 1)" "$(nvme_odd_gen 2)" "$(nvme_odd_gen 3)" b 16 $nvme_md \
	"what ssdq wrote (one disk read-only), nvme reads through its generic devices"
unbind "$PCI_ODD"
set_override "$PCI_ODD" none

# The DUT was not disturbed.
[[ $(disk_of_pci "$PCI_DUT") == "$DISK" ]] || fail "the DUT's disk changed"
ok "the DUT's disk is still $DISK"
