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

dut_load
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

# The DUT was not disturbed.
[[ $(disk_of_pci "$PCI_DUT") == "$DISK" ]] || fail "the DUT's disk changed"
ok "the DUT's disk is still $DISK"
