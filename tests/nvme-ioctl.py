#!/usr/bin/env python3
# nvme's passthrough ioctls (<linux/nvme_ioctl.h>) on a block device, one
# line per case: "<case> ok <NVMe status, hex> <result>" when the ioctl
# returned, "<case> errno <NAME>" when it failed. Used by 89-passthru and
# 92-chardev to ask ssdq's devices and nvme's the same questions, as root
# or not.
#
#   nvme-ioctl.py DEV r|rw SLBA CASE...
#
# DEV is a disk, or a char device (its blocks then LBS bytes, from the
# environment; 512 without). The file is opened read-only (r) or read-write
# (rw), or DEV is fd:N, a
# descriptor the caller holds open (of a disk that may be gone by now: its
# blocks then count as 512 bytes); SLBA is where the
# writing cases write (one 4 KiB block of zeroes, or a deallocate). Cases:
# id, identify-ctrl, smart-log, read, write, dsm, flush, vendor, big-admin
# (an Identify into 8 KiB), and the
# bad ones: other-nsid, metadata, huge-admin, big-log, owned-admin.
#
#   nvme-ioctl.py io DEV read|write SLBA NLB DATA LEN [META MLEN]
#
# one read into (or write from) the file DATA, LEN bytes, and the file META
# of MLEN bytes of metadata kept apart: "io ok <NVMe status, hex>" or "io
# errno <NAME>".
import ctypes
import errno
import fcntl
import os
import struct
import sys

# _IOWR('N', nr, struct nvme_passthru_cmd): 72 bytes.
FMT = "<BBHIIIQQIIIIIIIIII"
SIZE = struct.calcsize(FMT)
assert SIZE == 72
IOWR = lambda nr: (3 << 30) | (SIZE << 16) | (ord("N") << 8) | nr
NVME_IOCTL_ID = (ord("N") << 8) | 0x40
NVME_IOCTL_ADMIN_CMD = IOWR(0x41)
NVME_IOCTL_IO_CMD = IOWR(0x43)


def passthru(fd, req, opcode, nsid=0, cdw10=0, cdw11=0, cdw12=0,
             length=0, buf=None, metadata=0, metadata_len=0):
    addr = ctypes.addressof(buf) if buf is not None else 0
    cmd = bytearray(struct.pack(FMT, opcode, 0, 0, nsid, 0, 0, metadata,
                                addr, metadata_len, length, cdw10, cdw11,
                                cdw12, 0, 0, 0, 0, 0))
    status = fcntl.ioctl(fd, req, cmd, True)
    return status, struct.unpack(FMT, cmd)[-1]


def main():
    dev, mode, slba = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if dev.startswith("fd:"):
        fd, lbs = int(dev[3:]), 512
    else:
        fd = os.open(dev, os.O_RDWR if mode == "rw" else os.O_RDONLY)
        sysfs = ("/sys/class/block/%s/queue/logical_block_size"
                 % os.path.basename(dev))
        if os.path.exists(sysfs):
            lbs = int(open(sysfs).read())
        else:
            lbs = int(os.environ.get("LBS", "512"))
    try:
        nsid = fcntl.ioctl(fd, NVME_IOCTL_ID)
    except OSError:  # a controller's device: admin cases only
        nsid = 0
    page = ctypes.create_string_buffer(8192)
    nlb = 4096 // lbs
    io, admin = NVME_IOCTL_IO_CMD, NVME_IOCTL_ADMIN_CMD
    cases = {
        "id": None,
        "identify-ctrl": (admin, 0x06, dict(cdw10=1, length=4096)),
        "smart-log": (admin, 0x02, dict(nsid=0xFFFFFFFF,
                                        cdw10=(127 << 16) | 0x02,
                                        length=512)),
        "read": (io, 0x02, dict(nsid=nsid, cdw10=slba, cdw12=nlb - 1,
                                length=4096)),
        "write": (io, 0x01, dict(nsid=nsid, cdw10=slba, cdw12=nlb - 1,
                                 length=4096)),
        # One range (16 bytes: attributes, blocks, start), deallocate.
        "dsm": (io, 0x09, dict(nsid=nsid, cdw10=0, cdw11=4, length=16)),
        "flush": (io, 0x00, dict(nsid=nsid)),
        "vendor": (io, 0x80, dict(nsid=nsid)),
        "other-nsid": (io, 0x02, dict(nsid=nsid + 1, cdw10=slba,
                                      cdw12=nlb - 1, length=4096)),
        "metadata": (io, 0x02, dict(nsid=nsid, cdw10=slba, cdw12=nlb - 1,
                                    length=4096, metadata=1,
                                    metadata_len=8)),
        "big-admin": (admin, 0x06, dict(cdw10=1, length=8192)),
        # Above any controller's transfer size (ssdq's at most 1 MiB).
        "huge-admin": (admin, 0x06, dict(cdw10=1, length=4 << 20)),
        # The SMART log's 512 bytes asked for as 8 KiB into 4 KiB: ssdq only
        # (the controller would write past the buffer).
        "big-log": (admin, 0x02, dict(nsid=0xFFFFFFFF,
                                      cdw10=(2047 << 16) | 0x02,
                                      length=4096)),
        "owned-admin": (admin, 0x05, dict()),
    }
    for name in sys.argv[4:]:
        ctypes.memset(page, 0, len(page))
        if name == "dsm":
            struct.pack_into("<IIQ", page, 0, 0, nlb, slba)
        try:
            if name == "id":
                print("id ok 0x0 %d" % fcntl.ioctl(fd, NVME_IOCTL_ID))
                continue
            req, opcode, kw = cases[name]
            status, result = passthru(fd, req, opcode, buf=page, **kw)
            print("%s ok %#x %d" % (name, status, result))
        except OSError as e:
            print("%s errno %s" % (name, errno.errorcode[e.errno]))
    sys.stdout.flush()


def io_main(argv):
    dev, rw, slba, nlb, data, dlen = argv[:6]
    meta, mlen = (argv[6], int(argv[7])) if len(argv) > 6 else (None, 0)
    dlen, slba = int(dlen), int(slba)
    fd = os.open(dev, os.O_RDWR)
    nsid = fcntl.ioctl(fd, NVME_IOCTL_ID)
    dbuf = ctypes.create_string_buffer(dlen)
    mbuf = ctypes.create_string_buffer(max(mlen, 1))
    if rw == "write":
        dbuf.raw = open(data, "rb").read(dlen).ljust(dlen, b"\0")
        if meta:
            mbuf.raw = open(meta, "rb").read(mlen).ljust(mlen, b"\0")
    try:
        status, _ = passthru(fd, NVME_IOCTL_IO_CMD, 0x01 if rw == "write" else 0x02,
                             nsid=nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                             cdw12=int(nlb) - 1, length=dlen, buf=dbuf,
                             metadata=ctypes.addressof(mbuf) if meta else 0,
                             metadata_len=mlen)
    except OSError as e:
        print("io errno %s" % errno.errorcode[e.errno])
        return
    if rw == "read" and not status:
        open(data, "wb").write(dbuf.raw)
        if meta:
            open(meta, "wb").write(mbuf.raw[:mlen])
    print("io ok %#x" % status)


if sys.argv[1] == "io":
    io_main(sys.argv[2:])
else:
    main()
