// SPDX-License-Identifier: GPL-2.0
/*
 * uring-pt: nvme's io_uring passthrough (<linux/nvme_ioctl.h>'s
 * NVME_URING_CMD_IO, _IO_VEC, _ADMIN on a char device) from user space, so
 * that tests/92-chardev.sh can ask ssdq's devices and nvme's the same
 * questions. Built by scripts/check.sh with liburing.
 *
 *   uring-pt xfer DEV read|write SLBA LBS BYTES FILE [fixed|vec|unaligned|poll|md=LEN:MDFILE]...
 *	one command moving BYTES between FILE and the namespace at SLBA
 *	(LBS-byte blocks), and LEN bytes of metadata kept apart between
 *	MDFILE and it: prints "status 0x<NVMe status>", or fails
 *   uring-pt cases DEV|fd:N r|rw SLBA CASE...
 *	one line per case: "<case> ok <status, hex> <dword 0, hex>" when the
 *	CQE came, "<case> errno <NAME>" when it said an errno (one_case()
 *	names them); the namespace's blocks are $LBS bytes (512 without)
 *   uring-pt load DEV SLBA LBS SECONDS QD [poll] [md=MS] [reset=CTRL]
 *	QD 4 KiB reads in flight for SECONDS (or until SIGUSR1, or until
 *	4 * QD have failed: a dead controller), then every CQE waited for (at
 *	most 120 s): "load ok
 *	N status N errno N" and each kind's count; exit status 2 if CQEs are
 *	missing. md=MS: each read also takes its blocks' metadata kept apart,
 *	MS bytes a block, into a buffer of its own. reset=CTRL: once the QD
 *	reads are submitted, this thread resets the controller (NVME_IOCTL_RESET
 *	on CTRL, its char device) before it reaps any CQE, on a ring whose
 *	completions wait for it (DEFER_TASKRUN, or IOPOLL with poll): prints
 *	"reset <0 or errno name>" first
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <liburing.h>
#include <linux/nvme_ioctl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define NVME_CMD_WRITE	0x01
#define NVME_CMD_READ	0x02
#define ADMIN_IDENTIFY	0x06
#define BUF_SIZE	(8u << 20)

static const char *errname(int e)
{
	static char s[16];

	switch (e) {
	case EINVAL: return "EINVAL";
	case EFAULT: return "EFAULT";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTTY: return "ENOTTY";
	case ENODEV: return "ENODEV";
	case ENXIO: return "ENXIO";
	case EAGAIN: return "EAGAIN";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case ENOMEM: return "ENOMEM";
	}
	snprintf(s, sizeof(s), "E%d", e);
	return s;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "uring-pt: %s: %s\n", what, strerror(err));
	exit(1);
}

static void ring_init(struct io_uring *ring, unsigned int depth,
		      unsigned int flags)
{
	int ret = io_uring_queue_init(depth, ring, flags);

	if (ret < 0)
		die("io_uring_queue_init", -ret);
}

/* A 128-byte SQE carrying one nvme_uring_cmd. */
static struct nvme_uring_cmd *prep(struct io_uring *ring, int fd, __u32 op,
				   __u64 tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		die("io_uring_get_sqe", EBUSY);
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->user_data = tag;
	return (struct nvme_uring_cmd *)sqe->cmd;
}

static void rw_cmd(struct nvme_uring_cmd *c, __u8 opcode, __u32 nsid,
		   __u64 slba, __u32 nlb, void *buf, __u32 len)
{
	c->opcode = opcode;
	c->nsid = nsid;
	c->addr = (__u64)(uintptr_t)buf;
	c->data_len = len;
	c->cdw10 = slba & 0xffffffff;
	c->cdw11 = slba >> 32;
	c->cdw12 = nlb - 1;
}

/* Submit what is prepared, wait for one CQE: its res, and dword 0. */
static int run_one(struct io_uring *ring, __u64 *result)
{
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_submit(ring);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret < 0)
		return ret;
	ret = cqe->res;
	if (result)
		*result = cqe->big_cqe[0];
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

static void *buf_alloc(void)
{
	void *p = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

/* DEV, or fd:N: a descriptor the caller holds (of a device maybe gone). */
static int open_dev(const char *dev, int flags)
{
	int fd;

	if (!strncmp(dev, "fd:", 3))
		return atoi(dev + 3);
	fd = open(dev, flags);
	if (fd < 0)
		die(dev, errno);
	return fd;
}

static int nsid_of(int fd)
{
	int nsid = ioctl(fd, NVME_IOCTL_ID);

	return nsid < 0 ? 0 : nsid;
}

/* LEN bytes of FILE into P, or P into FILE: 0, or -1. */
static int read_file(const char *file, char *p, unsigned int len)
{
	int fd = open(file, O_RDONLY), ret;

	if (fd < 0)
		return -1;
	ret = read(fd, p, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return ret;
}

static int write_file(const char *file, const char *p, unsigned int len)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, p, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return ret;
}

static int xfer(int argc, char **argv)
{
	const char *dev = argv[2], *file = argv[7];
	int wr = !strcmp(argv[3], "write");
	unsigned long long slba = strtoull(argv[4], NULL, 0);
	unsigned int lbs = strtoul(argv[5], NULL, 0);
	unsigned int bytes = strtoul(argv[6], NULL, 0);
	int fixed = 0, vec = 0, unaligned = 0, poll = 0, fd, ffd, ret, i;
	const char *mdfile = NULL;
	unsigned int mdlen = 0;
	struct nvme_uring_cmd *c;
	struct io_uring ring;
	struct iovec iov[2];
	char *buf, *md = NULL;

	for (i = 8; i < argc; i++) {
		fixed |= !strcmp(argv[i], "fixed");
		vec |= !strcmp(argv[i], "vec");
		unaligned |= !strcmp(argv[i], "unaligned");
		poll |= !strcmp(argv[i], "poll");
		if (!strncmp(argv[i], "md=", 3)) {
			mdlen = strtoul(argv[i] + 3, NULL, 0);
			mdfile = strchr(argv[i], ':');
			if (!mdfile || !mdlen)
				die("md=LEN:FILE", EINVAL);
			mdfile++;
		}
	}
	fd = open_dev(dev, wr ? O_RDWR : O_RDONLY);
	buf = buf_alloc();
	if (unaligned)
		buf += 1;
	ffd = open(file, wr ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (ffd < 0)
		die(file, errno);
	if (wr && read(ffd, buf, bytes) != (ssize_t)bytes)
		die("short read of the data file", EIO);
	if (mdlen) {
		/* Past the data, in the same mapping: dword aligned. */
		md = buf + BUF_SIZE / 2;
		if (wr && read_file(mdfile, md, mdlen))
			die("short read of the metadata file", EIO);
	}
	ring_init(&ring, 4, IORING_SETUP_SQE128 | IORING_SETUP_CQE32 |
			    (poll ? IORING_SETUP_IOPOLL : 0));
	if (fixed) {
		iov[0].iov_base = buf;
		iov[0].iov_len = bytes;
		ret = io_uring_register_buffers(&ring, iov, 1);
		if (ret)
			die("io_uring_register_buffers", -ret);
	}
	c = prep(&ring, fd, vec ? NVME_URING_CMD_IO_VEC : NVME_URING_CMD_IO, 1);
	rw_cmd(c, wr ? NVME_CMD_WRITE : NVME_CMD_READ, nsid_of(fd), slba,
	       bytes / lbs, buf, bytes);
	if (vec) {
		iov[0].iov_base = buf;
		iov[0].iov_len = bytes / 2;
		iov[1].iov_base = buf + bytes / 2;
		iov[1].iov_len = bytes - bytes / 2;
		c->addr = (__u64)(uintptr_t)iov;
		c->data_len = 2;
	}
	if (fixed) {
		struct io_uring_sqe *sqe = (struct io_uring_sqe *)
			((char *)c - offsetof(struct io_uring_sqe, cmd));

		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = 0;
	}
	if (mdlen) {
		c->metadata = (__u64)(uintptr_t)md;
		c->metadata_len = mdlen;
	}
	ret = run_one(&ring, NULL);
	if (ret < 0)
		die("the command", -ret);
	if (!wr && write(ffd, buf, bytes) != (ssize_t)bytes)
		die("writing the data file", errno);
	if (!wr && mdlen && write_file(mdfile, md, mdlen))
		die("writing the metadata file", errno);
	printf("status %#x\n", ret);
	return 0;
}

/* The command's data from 64 KiB at @buf, registered: 0, or -errno. */
static int use_fixed(struct io_uring *ring, struct nvme_uring_cmd *c,
		     char *buf)
{
	struct io_uring_sqe *sqe = (struct io_uring_sqe *)
		((char *)c - offsetof(struct io_uring_sqe, cmd));
	struct iovec iov = { .iov_base = buf, .iov_len = 65536 };
	int ret;

	ret = io_uring_register_buffers(ring, &iov, 1);
	if (!ret)
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	return ret;
}

static unsigned int fnv1a(const void *v, size_t len)
{
	const unsigned char *p = v;
	unsigned int h = 2166136261u;

	while (len--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/*
 * One case: a command on a fresh ring of the kind it needs; prints its
 * line. @lbs sizes the 4 KiB I/O cases.
 */

static void one_case(const char *name, int fd, __u32 nsid, __u64 slba,
		     unsigned int lbs, char *buf)
{
	unsigned int big = IORING_SETUP_SQE128 | IORING_SETUP_CQE32;
	unsigned int flags = big, nlb = 4096 / lbs;
	__u32 op = NVME_URING_CMD_IO;
	struct nvme_uring_cmd *c;
	struct io_uring ring;
	struct iovec iov[2];
	__u64 result = 0;
	int ret;

	if (!strcmp(name, "small-sqe"))
		flags = 0;
	if (!strcmp(name, "read-poll") || !strcmp(name, "admin-poll"))
		flags |= IORING_SETUP_IOPOLL;
	if (!strncmp(name, "admin", 5))
		op = NVME_URING_CMD_ADMIN;
	if (!strcmp(name, "admin-vec"))
		op = NVME_URING_CMD_ADMIN_VEC;
	if (!strcmp(name, "read-vec"))
		op = NVME_URING_CMD_IO_VEC;
	ret = io_uring_queue_init(4, &ring, flags);
	if (ret < 0) {
		printf("%s errno %s (ring)\n", name, errname(-ret));
		return;
	}
	if (flags) {
		c = prep(&ring, fd, op, 1);
	} else {
		/* A 64-byte SQE: the command's first 48 bytes fit. */
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		if (!sqe)
			die("io_uring_get_sqe", EBUSY);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_URING_CMD;
		sqe->fd = fd;
		sqe->cmd_op = op;
		c = (struct nvme_uring_cmd *)sqe->cmd;
	}
	rw_cmd(c, NVME_CMD_READ, nsid, slba, nlb, buf, 4096);

	if (!strcmp(name, "write")) {
		c->opcode = NVME_CMD_WRITE;
		memset(buf, 0, 4096);
	} else if (!strcmp(name, "read-unaligned")) {
		c->addr += 1;
	} else if (!strcmp(name, "read-vec")) {
		iov[0].iov_base = buf;
		iov[0].iov_len = 2048;
		iov[1].iov_base = buf + 8192;
		iov[1].iov_len = 2048;
		c->addr = (__u64)(uintptr_t)iov;
		c->data_len = 2;
	} else if (!strcmp(name, "read-fixed")) {
		ret = use_fixed(&ring, c, buf);
		if (ret) {
			printf("%s errno %s (register)\n", name, errname(-ret));
			goto out;
		}
	} else if (!strcmp(name, "timeout-huge")) {
		c->timeout_ms = 0xffffffff;
	} else if (!strcmp(name, "flags")) {
		c->flags = 1;
	} else if (!strcmp(name, "metadata")) {
		c->metadata = (__u64)(uintptr_t)(buf + 65536);
		c->metadata_len = 64;
	} else if (!strcmp(name, "other-nsid")) {
		c->nsid = nsid + 1;
	} else if (!strcmp(name, "no-nsid")) {
		c->nsid = 0;
	} else if (!strcmp(name, "too-big")) {
		c->data_len = BUF_SIZE;
		c->cdw12 = BUF_SIZE / lbs - 1;
	} else if (!strcmp(name, "short-buffer")) {
		c->data_len = 512;	/* for 4096 bytes of blocks */
	} else if (!strcmp(name, "unmapped")) {
		c->addr = 4096;
	} else if (!strcmp(name, "unknown-opcode")) {
		c->opcode = 0x7e;
		c->addr = 0;
		c->data_len = 0;
	} else if (!strncmp(name, "admin", 5)) {
		memset(c, 0, sizeof(*c));
		memset(buf, 0, 65536);
		c->opcode = ADMIN_IDENTIFY;
		c->cdw10 = 1;			/* the controller */
		c->addr = (__u64)(uintptr_t)buf;
		c->data_len = 4096;
		if (!strcmp(name, "admin-big"))
			c->data_len = 8192;
		if (!strcmp(name, "admin-vec")) {
			iov[0].iov_base = buf;
			iov[0].iov_len = 4096;
			c->addr = (__u64)(uintptr_t)iov;
			c->data_len = 1;
		}
		if (!strcmp(name, "admin-fixed")) {
			ret = use_fixed(&ring, c, buf);
			if (ret) {
				printf("%s errno %s (register)\n", name,
				       errname(-ret));
				goto out;
			}
		}
	}
	ret = run_one(&ring, &result);
	if (ret < 0)
		printf("%s errno %s\n", name, errname(-ret));
	else if (!strncmp(name, "admin", 5))
		/* What the Identify brought: the same whatever the buffer. */
		printf("%s ok %#x data %08x\n", name, ret, fnv1a(buf, 4096));
	else
		printf("%s ok %#x %#llx\n", name, ret,
		       (unsigned long long)result);
out:
	io_uring_queue_exit(&ring);
}

static int cases(int argc, char **argv)
{
	int rw = !strcmp(argv[3], "rw"), fd, i;
	__u64 slba = strtoull(argv[4], NULL, 0);
	const char *env = getenv("LBS");
	unsigned int lbs = env ? strtoul(env, NULL, 0) : 512;
	char *buf = buf_alloc();

	fd = open_dev(argv[2], rw ? O_RDWR : O_RDONLY);
	for (i = 5; i < argc; i++)
		one_case(argv[i], fd, nsid_of(fd), slba, lbs, buf);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define MAX_KINDS 16

struct kinds {
	int res[MAX_KINDS];
	long count[MAX_KINDS];
	int n;
};

static void count_res(struct kinds *k, int res)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (k->res[i] == res)
			break;
	if (i == k->n) {
		if (k->n == MAX_KINDS)
			return;
		k->res[k->n++] = res;
	}
	k->count[i]++;
}

static volatile sig_atomic_t load_stop;

static void on_usr1(int sig)
{
	(void)sig;
	load_stop = 1;
}

/* What load() reads: slot I is the 4 KiB at SLBA + I * 4 KiB. */
struct load_job {
	struct io_uring ring;
	int fd, nsid;
	__u64 slba;
	unsigned int nlb, ms;	/* blocks a read, metadata bytes a block */
	char *buf, *md;
};

static void load_read(struct load_job *j, unsigned int i)
{
	struct nvme_uring_cmd *c = prep(&j->ring, j->fd, NVME_URING_CMD_IO, i);

	rw_cmd(c, NVME_CMD_READ, j->nsid, j->slba + (__u64)i * j->nlb, j->nlb,
	       j->buf + i * 4096, 4096);
	if (j->ms) {
		c->metadata = (__u64)(uintptr_t)(j->md + i * j->nlb * j->ms);
		c->metadata_len = j->nlb * j->ms;
	}
}

static int load(int argc, char **argv)
{
	double end = now() + atof(argv[5]), give_up;
	unsigned int qd = strtoul(argv[6], NULL, 0), i;
	long inflight = 0, ok = 0, status = 0, err = 0;
	struct __kernel_timespec ts = { .tv_sec = 1 };
	struct load_job j = { .buf = buf_alloc() };
	struct io_uring_cqe *cqe;
	struct kinds k = { };
	const char *reset = NULL;
	int poll = 0, ret;

	struct sigaction sa = { .sa_handler = on_usr1 };

	j.slba = strtoull(argv[3], NULL, 0);
	j.nlb = 4096 / strtoul(argv[4], NULL, 0);
	for (i = 7; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "poll"))
			poll = 1;
		else if (!strncmp(argv[i], "md=", 3))
			j.ms = strtoul(argv[i] + 3, NULL, 0);
		else if (!strncmp(argv[i], "reset=", 6))
			reset = argv[i] + 6;
		else
			die(argv[i], EINVAL);
	}
	if (qd * 4096 > BUF_SIZE)
		die("QD", EINVAL);
	if (j.ms && !(j.md = calloc(qd, j.nlb * j.ms)))
		die("calloc", ENOMEM);
	sigaction(SIGUSR1, &sa, NULL);
	j.fd = open_dev(argv[2], O_RDONLY);
	j.nsid = nsid_of(j.fd);
	ring_init(&j.ring, qd, IORING_SETUP_SQE128 | IORING_SETUP_CQE32 |
			       (poll ? IORING_SETUP_IOPOLL : 0) |
			       (reset && !poll ? IORING_SETUP_SINGLE_ISSUER |
						 IORING_SETUP_DEFER_TASKRUN : 0));
	for (i = 0; i < qd; i++) {
		load_read(&j, i);
		inflight++;
	}
	ret = io_uring_submit(&j.ring);
	if (ret < 0)
		die("io_uring_submit", -ret);
	if (reset) {
		/* No CQE posted yet: each command's task work waits for us. */
		int cfd = open_dev(reset, O_RDONLY);

		ret = ioctl(cfd, NVME_IOCTL_RESET) < 0 ? errno : 0;
		printf("reset %s\n", ret ? errname(ret) : "0");
		close(cfd);
		end = now();
	}
	give_up = end + 120;
	while (inflight) {
		ret = io_uring_wait_cqe_timeout(&j.ring, &cqe, &ts);
		if (ret == -ETIME || ret == -EINTR) {
			if (now() > give_up) {
				printf("load hung: %ld commands without a CQE after 120 s\n",
				       inflight);
				return 2;
			}
			continue;
		}
		if (ret < 0)
			die("io_uring_wait_cqe", -ret);
		i = cqe->user_data;
		count_res(&k, cqe->res);
		if (cqe->res == 0)
			ok++;
		else if (cqe->res > 0)
			status++;
		else
			err++;
		io_uring_cqe_seen(&j.ring, cqe);
		inflight--;
		if (!load_stop && now() < end && status + err <= 4 * (long)qd) {
			load_read(&j, i);
			inflight++;
			ret = io_uring_submit(&j.ring);
			if (ret < 0)
				die("io_uring_submit", -ret);
		}
	}
	printf("load ok %ld status %ld errno %ld", ok, status, err);
	for (i = 0; i < (unsigned int)k.n; i++) {
		if (k.res[i] < 0)
			printf(" %s:%ld", errname(-k.res[i]), k.count[i]);
		else
			printf(" %#x:%ld", k.res[i], k.count[i]);
	}
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 8 && !strcmp(argv[1], "xfer"))
		return xfer(argc, argv);
	if (argc >= 6 && !strcmp(argv[1], "cases"))
		return cases(argc, argv);
	if (argc >= 7 && !strcmp(argv[1], "load"))
		return load(argc, argv);
	fprintf(stderr, "usage: see the head of tests/uring-pt.c\n");
	return 1;
}
