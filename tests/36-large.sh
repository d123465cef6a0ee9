#!/bin/bash
# large: requests as large as the controller takes, and O_DIRECT buffers at
# every alignment the queue advertises. In a boot of its own whose
# controllers report MDTS 8 (1 MiB transfers; QEMU's default is 512 KiB):
#  - 1 MiB writes from buffers 512 bytes into a page reach the driver
#    whole (the disk's stat: one request per I/O, 2048 sectors each): 257
#    pages, a PRP list of 256 entries; verified;
#  - pwritev() with iovecs that start and end inside pages: the block
#    layer splits at each gap the virt boundary forbids, and only there
#    (the requests the disk counts = gaps + 1), and one request may take
#    as many iovecs as max_segments allows; read back byte for byte;
#  - a 4 KiB buffer at every dma_alignment multiple from 4 to 508 bytes
#    into a page (crossing a page: PRP1 at that offset, PRP2 the next
#    page), read back; an address off dma_alignment gets EINVAL.
# boot: mdts8
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): its PRP lists
# and offsets take the code paths integrity and dma-limits run there.
# debug-lane: full
# timeout: 600
set -euo pipefail
. "$(dirname "$0")/lib.sh"

((SSDQ_LBS == 512)) || fail "large needs 512-byte LBAs, have $SSDQ_LBS"
dut_load
mdts=$(device_mdts) || fail "could not read MDTS from the device model"
assert_eq "MDTS of the device model (vm.sh --mdts 8)" "$mdts" 8
maxkb=$(sysq max_hw_sectors_kb)
if [[ $DUT == ssdq ]]; then
	assert_eq "max_hw_sectors_kb" "$maxkb" 1024
else
	((maxkb >= 1024)) || fail "max_hw_sectors_kb $maxkb < 1024"
fi
echo 1024 >"/sys/block/$DISK/queue/max_sectors_kb"
log "max_segments $(sysq max_segments), dma_alignment $(sysq dma_alignment)"

stat_w() { disk_stat "$DISK" write_ios write_sectors; }
N=$((32 / IO_DIV))
read -r w0 s0 < <(stat_w)
run_fio whole-1m $((N * MiB)) $((N * MiB)) --filename="$DEV" --direct=1 \
	--rw=randwrite --bs=1m --mem_align=512 --ioengine=io_uring --iodepth=4 \
	--size=$((N * MiB)) --offset="$REG_INTEGRITY_OFF" --verify=crc32c \
	--verify_fatal=1 --randrepeat=0 --name=whole
read -r w1 s1 < <(stat_w)
assert_eq "write requests for $N 1 MiB writes" $((w1 - w0)) "$N"
assert_eq "sectors written" $((s1 - s0)) $((N * 2048))

out=$(python3 - "$DEV" "$DISK" $((REG_INTEGRITY_OFF + 64 * MiB)) "$(sysq max_segments)" \
	"$(sysq dma_alignment)" 2>&1 <<'EOF'
import errno, mmap, os, random, sys

dev, disk, base = sys.argv[1], sys.argv[2], int(sys.argv[3])
max_segs, dma_mask = int(sys.argv[4]), int(sys.argv[5])
PAGE, LBS = 4096, 512
fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
wbuf = mmap.mmap(-1, 8 << 20)
rbuf = mmap.mmap(-1, 8 << 20)
rnd = random.Random(36)


def writes():
    with open('/sys/block/%s/stat' % disk) as f:
        return int(f.read().split()[4])


def gaps(iov):
    # A gap: an iovec that does not end on a page boundary followed by
    # one, or one that does not start on a page boundary after another.
    n = 0
    for (a_off, a_len), (b_off, _) in zip(iov, iov[1:]):
        if (a_off + a_len) % PAGE or b_off % PAGE:
            n += 1
    return n


def one(name, iov, want_reqs):
    # iov: (offset into wbuf, length). Fill, pwritev, read back, compare.
    mvs = []
    for off, ln in iov:
        wbuf[off:off + ln] = rnd.randbytes(ln)
        mvs.append(memoryview(wbuf)[off:off + ln])
    total = sum(ln for _, ln in iov)
    w0 = writes()
    if os.pwritev(fd, mvs, base) != total:
        sys.exit('%s: short pwritev' % name)
    got_reqs = writes() - w0
    for mv in mvs:
        mv.release()
    if os.preadv(fd, [memoryview(rbuf)[:total]], base) != total:
        sys.exit('%s: short read' % name)
    want = b''.join(wbuf[off:off + ln] for off, ln in iov)
    if rbuf[:total] != want:
        bad = next(i for i in range(total) if rbuf[i] != want[i])
        sys.exit('%s: data differs at byte %d of %d' % (name, bad, total))
    if want_reqs is not None and got_reqs != want_reqs:
        sys.exit('%s: %d write requests, want %d' % (name, got_reqs, want_reqs))
    return got_reqs


# Gapped iovecs: lengths LBS multiples, addresses on dma_alignment.
n = 0
for case in range(40):
    iov, pos = [], 0
    for _ in range(rnd.randint(2, 6)):
        pos = (pos // PAGE + 1 + rnd.randint(0, 2)) * PAGE  # a fresh page
        start = rnd.choice([0, 0, rnd.randrange(0, PAGE, dma_mask + 1)])
        ln = LBS * rnd.randint(1, 16)
        if rnd.random() < 0.5 and start:  # end exactly on a page boundary
            ln = max(LBS, (PAGE - start) // LBS * LBS)
        iov.append((pos + start, ln))
        pos += start + ln
    one('gapped %d %s' % (case, iov), iov, gaps(iov) + 1)
    n += 1
print('ok %d gapped iovec sets: one request per gap-free run' % n)

# 256 whole pages, one iovec each, no two adjacent: no gap, so one 1 MiB
# request when max_segments allows 256 segments (ssdq: 257), else split
# at max_segments (fewer requests if pages happen to be adjacent in
# physical memory and share a segment).
k = 256
iov = [(2 * i * PAGE, PAGE) for i in range(k)]
r = one('%d page iovecs' % k, iov, None)
most = -(-k // max_segs)
if not 1 <= r <= most:
    sys.exit('%d page iovecs: %d requests, want 1 to %d' % (k, r, most))
print('ok %d separate page iovecs: %d request(s), at most %d' % (k, r, most))

# One 4 KiB buffer at each dma_alignment multiple into a page.
m = 0
for a in range(dma_mask + 1, LBS, dma_mask + 1):
    one('4k at +%d' % a, [(PAGE + a, PAGE)], 1)
    m += 1
print('ok 4 KiB buffers at %d offsets from %d to %d bytes into a page: one request each'
      % (m, dma_mask + 1, LBS - dma_mask - 1))
if dma_mask:
    try:
        os.pwritev(fd, [memoryview(wbuf)[PAGE + 1:PAGE + 1 + LBS]], base)
        sys.exit('a buffer 1 byte into a page (dma_alignment %d) was accepted' % dma_mask)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
    print('ok a buffer off dma_alignment gets EINVAL')
EOF
) || fail "iovec checks: $(tail -n1 <<<"$out")"
while read -r line; do ok "${line#ok }"; done <<<"$out"
