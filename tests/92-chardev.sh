#!/bin/bash
# chardev: ssdq's char devices and io_uring passthrough (Documentation/
# passthrough.rst), side by side with nvme's /dev/nvmeN and /dev/ngNnM:
#  - the nodes: /dev/ssdqcN (class ssdq) and /dev/ssdqgNnM (ssdq-generic);
#  - nvme-cli on them: id-ctrl, id-ns, smart-log, error-log, get-feature 7
#    and 8 and list-ns give nvme's fields (model, firmware, nsze, LBA
#    formats, feature values); nvme reset resets, ns-rescan rescans, and as
#    nobody both are refused as nvme refuses them;
#  - admin commands through io_uring from plain, vectored, registered and
#    8 KiB buffers, and an Identify into 16 KiB through the ioctl, answered
#    as nvme answers them, with the same data whatever the buffer;
#  - fio's io_uring_cmd engine on the generic device: a verified randwrite
#    at QD32 (batches of 16 SQEs: 2 commands or more per doorbell, from
#    ssdq's counters), its read-back at QD1, and a polled (--hipri) one with
#    --fixedbufs, reaped on ssdq's poll queue; what passthrough writes reads
#    back through the disk and the reverse (tests/uring-pt.c: plain,
#    registered, vectored, unaligned and polled buffers);
#  - every case of uring-pt, good and bad input, gives ssdq nvme's outcome,
#    as root and as nobody through read-only and read-write opens, and
#    nvme-ioctl.py's cases through the char devices too; ssdq's refusals
#    say one line each; a read into a buffer shorter than its blocks (which
#    nvme lets the controller overrun) is refused;
#  - uring reads in flight through a reset, lost interrupts (interrupt and
#    polled rings) and a give-up: every command ends, the buffers go back
#    (kmemleak in the debug lane); devices held open across the unbind
#    answer ENODEV; the controller and its data come back after a rebind.
# timeout: 400
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/events.sh"
cd /tmp

[[ $DUT == ssdq ]] || skip "compares ssdq's char devices with nvme's; nothing to do for $DUT"
command -v nvme >/dev/null || fail "nvme-cli missing (make deps)"
URING=${SSDQ_URING_PT:-}
[[ -x $URING ]] || fail "tests/uring-pt.c not built (scripts/check.sh builds it; liburing-dev: make deps)"
IO_TIMEOUT=$((3 * ${SSDQ_TIMEOUT_SCALE:-1}))
dut_load poll_queues=1 io_timeout=$IO_TIMEOUT
ref_load
paths
N=${DISK#ssdq}
NSID=$(cat "$SYS/nsid")
CTRL=/dev/ssdqc$N
GEN=/dev/ssdqg${N}n$NSID
REF_GEN=/dev/ng${REF_CTRL#nvme}n1
lbs=$(sysq logical_block_size)
ref_lbs=$(cat "/sys/block/$REF_DISK/queue/logical_block_size")
# 32 MiB of the integrity region for this test; the same place on nvme's.
OFF=$((REG_INTEGRITY_OFF + 96 * MiB))
slba=$((OFF / lbs))
ref_slba=$((OFF / ref_lbs))
kernel=$(uname -r)
# ssdq polls a uring command only where the kernel has blk_rq_poll() (6.6).
old_kernel=0
[[ $(printf '%s\n' 6.6 "${kernel%%-*}" | sort -V | head -n1) == 6.6 ]] || old_kernel=1

# ---- the nodes
wait_for 10 "$CTRL and $GEN" test -c "$CTRL" -a -c "$GEN"
assert_eq "$CTRL's PCI function" "$(basename "$(readlink -f "/sys/class/ssdq/ssdqc$N/device")")" "$PCI_DUT"
read -r maj min < <(stat -c '%t %T' "$GEN")
assert_eq "$GEN's device number" "$(cat "/sys/class/ssdq-generic/ssdqg${N}n$NSID/dev")" \
	"$((16#$maj)):$((16#$min))"
assert_eq "$GEN's NVME_IOCTL_ID" "$(nvme get-ns-id "$GEN" 2>&1 | grep -oE 'namespace-id:[0-9]+' | cut -d: -f2)" "$NSID"

# ---- nvme-cli through the char devices, as on nvme's
summary() { # ctrl-dev ns-dev
	nvme id-ctrl "$1" -o json | jq -c '{mn, fr, vid, ssvid, ver, mdts, nn, oacs, oncs, vwc, lpa, sqes, cqes}'
	nvme id-ns "$2" -o json | jq -c '{nsze, ncap, flbas, nlbaf, lbafs}'
	nvme smart-log "$1" -o json | jq -c '{critical_warning, keys: keys}'
	nvme error-log "$1" -e 4 -o json | jq -c '.errors | length'
	nvme get-feature "$1" -f 7 | sed -E 's/^get-feature://'
	nvme get-feature "$1" -f 8 | sed -E 's/^get-feature://'
	nvme list-ns "$1"
}
summary "$CTRL" "$GEN" >"$T_DIR/ssdq-cli.txt" 2>"$T_DIR/ssdq-cli.err" ||
	fail "nvme-cli on $CTRL, $GEN: $(tail -n 3 "$T_DIR/ssdq-cli.err")"
summary "/dev/$REF_CTRL" "$REF_GEN" >"$T_DIR/nvme-cli.txt" 2>"$T_DIR/nvme-cli.err" ||
	fail "nvme-cli on nvme's: $(tail -n 3 "$T_DIR/nvme-cli.err")"
diff "$T_DIR/nvme-cli.txt" "$T_DIR/ssdq-cli.txt" >"$T_DIR/cli.diff" ||
	fail "nvme-cli: ssdq's devices answer unlike nvme's: $(tr '\n' ' ' <"$T_DIR/cli.diff")"
ok "nvme-cli id-ctrl, id-ns, smart-log, error-log, get-feature 7 and 8, list-ns: as on nvme's ($(wc -l <"$T_DIR/ssdq-cli.txt") lines)"
assert_eq "id-ctrl's serial" "$(nvme id-ctrl "$CTRL" -o json | jq -r .sn | xargs)" "$(xargs <"/sys/bus/pci/devices/$PCI_DUT/serial")"

allow_dmesg 'reset asked for through ioctl|resetting the controller|reset done'
r0=$(rec resets)
kmsg_mark reset
nvme reset "$CTRL" >"$T_DIR/reset.out" 2>&1 || fail "nvme reset: $(cat "$T_DIR/reset.out")"
assert_eq "resets after nvme reset" "$(rec resets)" $((r0 + 1))
dmesg_since reset | grep -q 'reset asked for through ioctl' || fail "nvme reset: no line in dmesg"
s0=$(kv_get "$DBG/namespaces" scans)
nvme ns-rescan "$CTRL" >"$T_DIR/rescan.out" 2>&1 || fail "nvme ns-rescan: $(cat "$T_DIR/rescan.out")"
scanned() { (($(kv_get "$DBG/namespaces" scans) > s0)); }
wait_for 20 "the rescan nvme ns-rescan asked for" scanned
ok "nvme reset and ns-rescan through $CTRL"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
perms=$(stat -c %a "$CTRL" "/dev/$REF_CTRL" "$GEN" "$REF_GEN" | tr '\n' ' ')
chmod 0666 "$CTRL" "/dev/$REF_CTRL" "$GEN" "$REF_GEN"
for c in "$CTRL" "/dev/$REF_CTRL"; do
	as_nobody nvme reset "$c" >"$T_DIR/nobody.out" 2>&1 && fail "nvme reset of $c as nobody succeeded"
	grep -qiE 'permission denied' "$T_DIR/nobody.out" || fail "nvme reset of $c as nobody: $(cat "$T_DIR/nobody.out")"
done
ok "nvme reset as nobody: refused by both"

# ---- who may send what: the ioctls and the uring commands, as nvme
IOCTL="python3 $(dirname "$0")/nvme-ioctl.py"
ICASES="id identify-ctrl smart-log read write dsm flush vendor big-admin"
UCASES="read write read-unaligned read-vec read-fixed timeout-huge flags metadata other-nsid no-nsid too-big unmapped unknown-opcode small-sqe admin"
# 6.1's nvme keeps the request of a uring command whose buffer it fails to
# map (metadata, too big, unmapped): the reference's removal then waits in
# del_gendisk() forever (seen here). There these go to ssdq alone, and
# must give what nvme gives on 6.12.
MAPCASES="metadata too-big unmapped"
if ((old_kernel)); then
	for c in $MAPCASES; do UCASES=${UCASES/ $c / }; done
fi
map_cases_alone() { # as-nobody|as-root
	local want="metadata errno EINVAL,too-big errno EINVAL,unmapped errno EFAULT,"
	((old_kernel)) || return 0
	# shellcheck disable=SC2086 # the cases are words
	if [[ $1 == as-nobody ]]; then
		want="metadata errno EACCES,too-big errno EACCES,unmapped errno EACCES,"
		LBS=$lbs as_nobody "$URING" cases "$GEN" r "$slba" $MAPCASES >"$T_DIR/map.txt"
	else
		LBS=$lbs "$URING" cases "$GEN" rw "$slba" $MAPCASES >"$T_DIR/map.txt"
	fi
	assert_eq "uring commands whose buffer cannot be mapped, $1 (ssdq alone: 6.1's nvme leaks them)" \
		"$(tr '\n' ',' <"$T_DIR/map.txt")" "$want"
}
side_by_side() { # what mode "cases" runner...
	local what=$1 mode=$2 cases=$3
	shift 3
	# shellcheck disable=SC2086 # the cases are words
	LBS=$lbs "$@" "$GEN" "$mode" "$slba" $cases >"$T_DIR/ssdq-$what.txt" 2>"$T_DIR/ssdq-$what.err" || true
	# shellcheck disable=SC2086
	LBS=$ref_lbs "$@" "$REF_GEN" "$mode" "$ref_slba" $cases >"$T_DIR/nvme-$what.txt" 2>"$T_DIR/nvme-$what.err" || true
	diff "$T_DIR/nvme-$what.txt" "$T_DIR/ssdq-$what.txt" >"$T_DIR/$what.diff" ||
		fail "$what: ssdq differs from nvme: $(tr '\n' ' ' <"$T_DIR/$what.diff")"
	ok "$what, as nvme: $(tr '\n' ',' <"$T_DIR/ssdq-$what.txt")"
}
allow_dmesg 'passthrough: flags take 0 only|passthrough: namespace [0-9]+ keeps no metadata apart|passthrough: nsid [0-9]+ is not the device|passthrough: data_len [0-9]+, at most [0-9]+|passthrough: opcode 0x2 moves 4096 bytes'
for m in r rw; do
	side_by_side "ioctl-nobody-$m" "$m" "$ICASES" as_nobody $IOCTL
	side_by_side "uring-nobody-$m" "$m" "$UCASES" as_nobody "$URING" cases
done
map_cases_alone as-nobody
kmsg_mark bad
side_by_side ioctl-root rw "$ICASES" $IOCTL
side_by_side uring-root rw "$UCASES" "$URING" cases
map_cases_alone as-root
# flags, metadata, other-nsid, no-nsid, too-big: ssdq's line each.
assert_eq "lines for bad uring commands" "$(dmesg_since bad | grep -cE 'passthrough: (flags|nsid|data_len|namespace [0-9]+ keeps no metadata)' || true)" 5
# An Identify into plain, vectored, registered and 8 KiB buffers: each as
# nvme answers it, each with the same data as the plain one.
admin_cases() { # ctrl-dev
	local c
	for c in admin admin-poll admin-vec admin-big admin-fixed; do
		"$URING" cases "$1" rw 0 "$c"
	done
}
admin_cases "$CTRL" >"$T_DIR/ssdq-admin.txt"
admin_cases "/dev/$REF_CTRL" >"$T_DIR/nvme-admin.txt"
assert_eq "uring admin commands on $CTRL, as nvme's /dev/$REF_CTRL" \
	"$(sed 's/ data .*//' "$T_DIR/ssdq-admin.txt" | tr '\n' ',')" \
	"$(sed 's/ data .*//' "$T_DIR/nvme-admin.txt" | tr '\n' ',')"
# (A polled ring takes admin commands on 7.3, for both drivers.)
for f in ssdq nvme; do
	assert_eq "$f's Identify data through each kind of buffer: answers, different data" \
		"$(grep -c ' data ' "$T_DIR/$f-admin.txt") $(grep -o ' data .*' "$T_DIR/$f-admin.txt" | sort -u | wc -l)" \
		"$(grep -c ' ok ' "$T_DIR/$f-admin.txt") 1"
done
grep -q '^admin-fixed ok 0 ' "$T_DIR/ssdq-admin.txt" ||
	fail "a uring admin command from a registered buffer: $(cat "$T_DIR/ssdq-admin.txt")"
# An Identify into 16 KiB (PRP1 and a PRP list, ssdq's copy of 4 pages):
# its 4 KiB, then zeroes, on ssdq as on nvme.
for c in "$CTRL" "/dev/$REF_CTRL"; do
	for n in 4096 16384; do
		nvme admin-passthru "$c" --opcode=6 --cdw10=1 --data-len=$n --read \
			--raw-binary >"$T_DIR/id-$n.bin" 2>"$T_DIR/id.err" ||
			fail "nvme admin-passthru $c, $n bytes: $(cat "$T_DIR/id.err")"
	done
	cmp -n 4096 "$T_DIR/id-4096.bin" "$T_DIR/id-16384.bin" ||
		fail "$c: an Identify into 16 KiB differs from one into 4 KiB"
	assert_eq "$c: an Identify into 16 KiB: its length, and non-zero bytes after 4 KiB" \
		"$(stat -c %s "$T_DIR/id-16384.bin") $(tail -c +4097 "$T_DIR/id-16384.bin" | tr -d '\0' | wc -c)" \
		"16384 0"
done
# A read of 4 KiB into 512 bytes: nvme lets the controller DMA past the
# buffer (not tried here); ssdq refuses it.
assert_eq "a uring read whose buffer is shorter than its blocks" \
	"$(LBS=$lbs "$URING" cases "$GEN" rw "$slba" short-buffer)" "short-buffer errno EINVAL"
assert_eq "its line" "$(dmesg_since bad | grep -c 'passthrough: opcode 0x2 moves 4096 bytes, its buffer has 512' || true)" 1
chmod "${perms%% *}" "$CTRL"
read -r -a p <<<"$perms"
chmod "${p[1]}" "/dev/$REF_CTRL"
chmod "${p[2]}" "$GEN"
chmod "${p[3]}" "$REF_GEN"

# ---- data through passthrough and through the disk
pat=$(pattern_file chardev $MiB)
dev_write "$pat" "$DEV" "$OFF"
head -c 65536 "$pat" >"$T_DIR/want.bin"
for how in plain fixed vec unaligned poll; do
	if [[ $how == poll ]] && ((old_kernel)); then
		"$URING" xfer "$GEN" read "$slba" "$lbs" 65536 "$T_DIR/got.bin" poll >"$T_DIR/xfer.out" 2>&1 &&
			fail "a polled uring read on $kernel (no blk_rq_poll) did not fail"
		grep -q 'Operation not supported' "$T_DIR/xfer.out" || fail "polled uring read: $(cat "$T_DIR/xfer.out")"
		ok "polled uring read on $kernel: EOPNOTSUPP (no blk_rq_poll)"
		continue
	fi
	"$URING" xfer "$GEN" read "$slba" "$lbs" 65536 "$T_DIR/got.bin" "$how" >"$T_DIR/xfer.out" 2>&1 ||
		fail "uring read ($how): $(cat "$T_DIR/xfer.out")"
	assert_eq "uring read ($how) status" "$(cat "$T_DIR/xfer.out")" "status 0"
	cmp "$T_DIR/got.bin" "$T_DIR/want.bin" || fail "uring read ($how): data differs from what dd wrote"
done
ok "uring reads (plain, registered, vectored, unaligned, polled): as dd wrote them"
# The generic device does not follow the disk's read-only flag (nvme's
# does not either): what may write is the file's open mode.
tail -c 65536 "$pat" >"$T_DIR/w.bin"
blockdev --setro "$DEV"
"$URING" xfer "$GEN" write $((slba + 65536 / lbs)) "$lbs" 65536 "$T_DIR/w.bin" fixed >"$T_DIR/xfer.out" 2>&1 ||
	fail "uring write with the disk read-only: $(cat "$T_DIR/xfer.out")"
blockdev --setrw "$DEV"
dev_cmp "$DEV" $((OFF + 65536)) 65536 "$T_DIR/w.bin" "uring write (registered buffer, disk read-only meanwhile), read back by dd"

# ---- fio's io_uring_cmd engine on the generic device
seed=$RANDOM
ucmd=(--filename="$GEN" --ioengine=io_uring_cmd --cmd_type=nvme --bs=4k
	--offset=$((OFF + 2 * MiB)) --size=$((4 * MiB)) --randseed="$seed" --verify=crc32c --verify_fatal=1)
read -r sub0 db0 < <(queue_cols "$DBG/plugging" -1 submitted sq_db_updates)
fio --name=qd32 "${ucmd[@]}" --rw=randwrite --iodepth=32 --iodepth_batch_submit=16 \
	--iodepth_batch_complete_min=16 --output="$T_DIR/fio-qd32.txt" ||
	fail "fio io_uring_cmd randwrite QD32 with verify: $(tail -n 5 "$T_DIR/fio-qd32.txt")"
read -r sub1 db1 < <(queue_cols "$DBG/plugging" -1 submitted sq_db_updates)
# Batches of 16 SQEs reach ->queue_rqs as one plug list: a doorbell each.
assert_gt "passthrough commands per SQ doorbell, fio QD32 in batches of 16 (x10)" \
	$((10 * (sub1 - sub0) / (db1 - db0 > 0 ? db1 - db0 : 1))) 20
fio --name=qd1 "${ucmd[@]}" --rw=randwrite --verify_only=1 --iodepth=1 --output="$T_DIR/fio-qd1.txt" ||
	fail "fio io_uring_cmd read-back at QD1: $(tail -n 5 "$T_DIR/fio-qd1.txt")"
ok "fio io_uring_cmd: 4 MiB randwrite at QD32 verified, read back at QD1"
if ((old_kernel)); then
	log "no polled fio job: $kernel has no blk_rq_poll(), ssdq offers no iopoll there"
else
	read -r _ p0 < <(queue_cols "$DBG/irq" -1 completions polled)
	fio --name=hipri "${ucmd[@]}" --offset=$((OFF + 8 * MiB)) --size=$((2 * MiB)) --rw=randwrite \
		--iodepth=8 --hipri=1 --fixedbufs=1 --output="$T_DIR/fio-hipri.txt" ||
		fail "fio io_uring_cmd --hipri --fixedbufs: $(tail -n 5 "$T_DIR/fio-hipri.txt")"
	read -r _ p1 < <(queue_cols "$DBG/irq" -1 completions polled)
	# 512 writes and their 512 verifying reads, reaped by polling.
	assert_gt "completions reaped by polling for fio --hipri" $((p1 - p0)) 1023
fi
dev_cmp "$DEV" "$OFF" 65536 "$T_DIR/want.bin" "the disk after fio, where fio did not write"

# ---- uring reads in flight through a reset, lost interrupts, a give-up
allow_dmesg 'timed out|completed without an interrupt|not in flight, ignored|stopping the controller|disabling the controller|does not disable|controller not disabled|I/O error'
load_check() { # what out-file
	local line
	line=$(cat "$2")
	[[ $line == "load ok "* ]] || fail "$1: $line"
	ok "$1: every uring command ended: $line"
}
loading() { (($(reaped) > rp0 + 64)); }
# Each load runs until told to stop (SIGUSR1) once its events are done.
load_start() { # out-file args...
	local out=$1
	shift
	rp0=$(reaped)
	"$URING" load "$GEN" "$slba" "$lbs" 120 "$@" >"$out" 2>&1 &
	lpid=$!
	wait_for 30 "uring reads under way" loading
}
load_stop() {
	kill -USR1 "$lpid"
	wait "$lpid" || true
}
dropped() { (($(kv_get "$FAULT/injected" dropped_irqs) >= 2)); }
load_start "$T_DIR/load-reset.txt" 16
r0=$(rec resets)
echo 2 >"$FAULT/drop_irqs"
wait_for 60 "2 interrupts dropped under the uring reads" dropped
echo 1 >"$SYS/recovery/reset"
load_stop
load_check "interrupt ring, 2 lost interrupts and a reset" "$T_DIR/load-reset.txt"
assert_eq "resets" "$(rec resets)" $((r0 + 1))
assert_eq "interrupts dropped" "$(kv_get "$FAULT/injected" dropped_irqs)" 2
if ((!old_kernel)); then
	load_start "$T_DIR/load-poll.txt" 8 poll
	echo 1 >"$SYS/recovery/reset"
	load_stop
	load_check "polled ring, reset" "$T_DIR/load-poll.txt"
fi
load_start "$T_DIR/load-dead.txt" 16
echo 1 >"$FAULT/fail_disable"
if echo 1 >"$SYS/recovery/reset" 2>/dev/null; then
	fail "a reset of a controller that does not disable succeeded"
fi
assert_eq "controller dead" "$(rec dead)" 1
lgone() { ! kill -0 "$lpid" 2>/dev/null; }
wait_for 60 "the uring reads to end on the dead controller" lgone
wait "$lpid" || true
load_check "given up" "$T_DIR/load-dead.txt"
grep -qE 'errno [1-9]|status [1-9]' "$T_DIR/load-dead.txt" || fail "no uring read failed on a dead controller: $(cat "$T_DIR/load-dead.txt")"
# Held open across the unbind: ENODEV, as the disk's own ioctls get.
exec {gfd}<"$GEN" {cfd}<"$CTRL"
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/unbind
LBS=$lbs "$URING" cases "fd:$gfd" r "$slba" read >"$T_DIR/held.txt" 2>&1
"$URING" cases "fd:$cfd" r 0 admin >>"$T_DIR/held.txt" 2>&1
$IOCTL "fd:$cfd" r 0 identify-ctrl >>"$T_DIR/held.txt" 2>&1
exec {gfd}<&- {cfd}<&-
assert_eq "uring read, uring admin and admin ioctl through devices held across the unbind" \
	"$(tr '\n' ',' <"$T_DIR/held.txt")" "read errno ENODEV,admin errno ENODEV,identify-ctrl errno ENODEV,"
echo "$PCI_DUT" >/sys/bus/pci/drivers/ssdq/bind
dut_wait_disk
paths
wait_for 10 "$GEN again" test -c "$GEN"
"$URING" xfer "$GEN" read "$slba" "$lbs" 65536 "$T_DIR/got.bin" >"$T_DIR/xfer.out" 2>&1 ||
	fail "uring read after the rebind: $(cat "$T_DIR/xfer.out")"
cmp "$T_DIR/got.bin" "$T_DIR/want.bin" || fail "uring read after the rebind: data differs"
ok "after the give-up and a rebind: $GEN reads what dd wrote"
