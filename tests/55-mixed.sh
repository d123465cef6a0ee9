#!/bin/bash
# mixed: writes, reads, discards and write zeroes at once, on three
# neighbouring 16 MiB areas of the disk:
#  W: io_uring QD16 random writes of mixed sizes, each 32 read back and
#     verified while the writing goes on (verify_backlog), and a libaio
#     QD8 random reader over the same area;
#  T: a pattern, then BLKDISCARD (Dataset Management) of random 64 KiB
#     chunks;
#  Z: a pattern, then BLKZEROOUT (Write Zeroes) of random chunks;
# a discard and a write zeroes every 20 ms from before fio starts until it
# is done.
# Then every chunk of T and Z named reads zero (the device model says
# deallocated blocks do), every other chunk holds its pattern, and W
# verifies again: no command spilled into a neighbour or lost data.
# timeout: 600
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): flush-discard
# runs its commands there, recovery and the matrix their concurrency.
# debug-lane: full
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dut_load
[[ $(device_dlfeat) == 1 ]] || skip "the device model does not say deallocated blocks read as zeroes (DLFEAT)"
AREA=$((16 * MiB)) CHUNK=$((64 * KiB))
W=$REG_INTEGRITY_OFF
T=$((W + AREA))
Z=$((W + 2 * AREA))
NCHUNK=$((AREA / CHUNK))

tpat=$(pattern_file mixed-discard.bin "$AREA")
zpat=$(pattern_file mixed-zeroes.bin "$AREA")
dev_write "$tpat" "$DEV" "$T"
dev_write "$zpat" "$DEV" "$Z"

discards() { disk_stat "$DISK" discard_ios; }
d0=$(discards)

# ioctl(BLKDISCARD) and ioctl(BLKZEROOUT) from one process (a blkdiscard
# per chunk takes longer to start under TCG than fio takes to finish), a
# pair every 20 ms from before fio starts until it is done, at most 96: most
# of the patterns stay, to be checked.
python3 - "$DEV" "$T" "$Z" "$AREA" "$CHUNK" "$T_DIR" <<'EOF' &
import fcntl, os, random, struct, sys, time

dev, t, z, area, chunk, tdir = sys.argv[1:]
t, z, area, chunk = int(t), int(z), int(area), int(chunk)
BLKDISCARD, BLKZEROOUT = 0x1277, 0x127f
fd = os.open(dev, os.O_RDWR)
with open(tdir + '/discarded', 'w') as dl, open(tdir + '/zeroed', 'w') as zl:
    open(tdir + '/zero-ready', 'w').close()
    n = 0
    while not os.path.exists(tdir + '/stop') and n < 96:
        for base, op, log in ((t, BLKDISCARD, dl), (z, BLKZEROOUT, zl)):
            c = random.randrange(area // chunk)
            fcntl.ioctl(fd, op, struct.pack('QQ', base + c * chunk, chunk))
            print(c, file=log, flush=True)
        n += 1
        time.sleep(0.02)
EOF
zpid=$!
wait_for 60 "the discard loop to start" test -e "$T_DIR/zero-ready"

wjob=(--filename="$DEV" --direct=1 --rw=randwrite --verify=crc32c --verify_fatal=1
	--randseed=55 --size="$AREA" --offset="$W" --bssplit=4k/40:8k/20:64k/30:256k/10
	--name=verify-backlog --ioengine=io_uring --iodepth=16)
rc=0
fio "${wjob[@]}" --verify_backlog=32 \
	--name=reader --rw=randread --verify=0 --ioengine=libaio \
	--iodepth=8 --bs=4k --offset="$W" --size="$AREA" --number_ios=$((8192 / IO_DIV)) \
	--output-format=json --output="$T_DIR/fio-mixed.json" 2>"$T_DIR/fio-mixed.err" || rc=$?
touch "$T_DIR/stop"
wait "$zpid" || fail "the discard and write-zeroes loop failed"
n=$(wc -l <"$T_DIR/discarded")
fio_check mixed - - "$rc"
assert_eq "bytes the verify-backlog job wrote" \
	"$(jq '[.jobs[] | select(.jobname == "verify-backlog") | .write.io_bytes] | add' "$T_DIR/fio-mixed.json.clean")" "$AREA"
assert_gt "discard and write-zeroes pairs issued beside fio" "$n" 0
assert_gt "discards the disk completed" "$(($(discards) - d0))" $((n - 1))

# Chunk by chunk: those named read zero, the others hold the pattern.
check_area() { # what off pattern named-chunks
	local out
	dev_read "$DEV" "$2" "$AREA" >"$T_DIR/area.bin"
	out=$(python3 - "$T_DIR/area.bin" "$3" "$4" "$CHUNK" <<'EOF'
import sys
got = open(sys.argv[1], 'rb').read()
pat = open(sys.argv[2], 'rb').read()
named = {int(l) for l in open(sys.argv[3])}
chunk = int(sys.argv[4])
zero = bytes(chunk)
bad = []
for i in range(len(got) // chunk):
    g = got[i * chunk:(i + 1) * chunk]
    want = zero if i in named else pat[i * chunk:(i + 1) * chunk]
    if g != want:
        bad.append('%d (%s)' % (i, 'not zero' if i in named else 'pattern lost'))
print(len(named), ' '.join(bad[:8]))
EOF
	) || fail "$1: the chunk check did not run"
	read -r nz bad <<<"$out"
	[[ -z $bad ]] || fail "$1: chunks wrong: $bad"
	ok "$1: $nz chunks read zero, the other $((NCHUNK - nz)) hold the pattern"
}
check_area discard "$T" "$tpat" "$T_DIR/discarded"
check_area write-zeroes "$Z" "$zpat" "$T_DIR/zeroed"

run_fio verify-again - "$AREA" "${wjob[@]}" --verify_only=1
