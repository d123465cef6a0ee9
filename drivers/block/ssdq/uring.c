// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq io_uring passthrough: IORING_OP_URING_CMD on the char devices
 * (chrdev.c), nvme's user ABI (<uapi/linux/nvme_ioctl.h>) as fio's
 * io_uring_cmd engine and liburing speak it:
 *
 *   NVME_URING_CMD_IO         an I/O command on a namespace's generic device
 *   NVME_URING_CMD_IO_VEC     ... its data an iovec array (data_len entries)
 *   NVME_URING_CMD_ADMIN      an admin command on the controller's device
 *   NVME_URING_CMD_ADMIN_VEC  ... its data an iovec array
 *
 * The ring needs 128-byte SQEs and 32-byte CQEs (IORING_SETUP_SQE128 |
 * IORING_SETUP_CQE32): the CQE's res is the NVMe status (or -errno), its
 * first extra word dword 0 of the answer, as nvme's.
 *
 * An I/O command is the same blk-mq passthrough request as the ioctl's
 * (ioctl.c) but not waited for: it is issued from the submitter's context
 * and ends in its end_io, which keeps its outcome, frees the request and
 * moves the rest to the submitter's task (task work), where the user's
 * buffers are unmapped and the CQE posted.
 * What it skips of the block path is the bio: no splitting, merging,
 * accounting or I/O scheduler; what still applies is all of ssdq's (queue
 * mapping, plugging, steering, interrupt mitigation, timeout, reset).
 *
 * Polled (IORING_SETUP_IOPOLL): the request is REQ_POLLED, so blk-mq puts
 * it on a poll queue where there is one (poll_queues=), and io_uring reaps
 * it by ->uring_cmd_iopoll, which polls that queue (poll.c). On a kernel
 * without blk_rq_poll() ssdq offers no iopoll and io_uring refuses such
 * rings (EOPNOTSUPP).
 *
 * Registered buffers (IORING_URING_CMD_FIXED, fio's --fixedbufs) are
 * mapped from io_uring's pinned pages (an admin command's copied from
 * them), for the non-vectored commands.
 *
 * An admin command runs as the ioctl's does, synchronously, its data
 * copied through ssdq's buffer (ioctl.c): from io_uring's worker thread
 * (ssdq tells a non-blocking issue to try again there), then completed
 * through task work like an I/O command. Not on a polled ring (EOPNOTSUPP,
 * as nvme).
 */
#include <linux/blk-mq.h>

#include <ssdq/ssdq.h>

/* Lives in io_uring's command (its 32-byte pdu) from issue to CQE. */
struct ssdq_uring_pdu {
	/* A polled command's poll queue, for iopoll; NULL once it ended. */
	struct blk_mq_hw_ctx *poll_hctx;
	struct bio *bio;		/* to unmap: req->bio is NULL by then */
	struct ssdq_pt_meta *meta;	/* its metadata buffer, to copy back */
	u32 result;			/* dword 0 of the CQE */
	int status;			/* the NVMe status, or -errno */
};

static struct ssdq_uring_pdu *ssdq_uring_pdu(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct ssdq_uring_pdu) > sizeof(ioucmd->pdu));
	return (struct ssdq_uring_pdu *)ioucmd->pdu;
}

/* The SQE's command, read once: user space may change it meanwhile. */
static void ssdq_uring_copy_in(struct nvme_passthru_cmd64 *uc,
			       struct io_uring_cmd *ioucmd)
{
	const struct nvme_uring_cmd *cmd = ssdq_uring_cmd_of(ioucmd);

	memset(uc, 0, sizeof(*uc));
	uc->opcode = READ_ONCE(cmd->opcode);
	uc->flags = READ_ONCE(cmd->flags);
	uc->nsid = READ_ONCE(cmd->nsid);
	uc->cdw2 = READ_ONCE(cmd->cdw2);
	uc->cdw3 = READ_ONCE(cmd->cdw3);
	uc->metadata = READ_ONCE(cmd->metadata);
	uc->addr = READ_ONCE(cmd->addr);
	uc->metadata_len = READ_ONCE(cmd->metadata_len);
	uc->data_len = READ_ONCE(cmd->data_len);
	uc->cdw10 = READ_ONCE(cmd->cdw10);
	uc->cdw11 = READ_ONCE(cmd->cdw11);
	uc->cdw12 = READ_ONCE(cmd->cdw12);
	uc->cdw13 = READ_ONCE(cmd->cdw13);
	uc->cdw14 = READ_ONCE(cmd->cdw14);
	uc->cdw15 = READ_ONCE(cmd->cdw15);
	uc->timeout_ms = READ_ONCE(cmd->timeout_ms);
}

/* nvme's passthrough needs the big SQEs and CQEs. */
static int ssdq_uring_ring_ok(unsigned int issue_flags)
{
	unsigned int big = IO_URING_F_SQE128 | IO_URING_F_CQE32;

	return (issue_flags & big) == big ? 0 : -EOPNOTSUPP;
}

/* In the submitter's task: the buffers go back, the CQE is posted. */
static void ssdq_uring_finish(struct io_uring_cmd *ioucmd,
			      unsigned int issue_flags)
{
	struct ssdq_uring_pdu *pdu = ssdq_uring_pdu(ioucmd);

	if (pdu->meta && ssdq_passthru_meta_end(pdu->meta, pdu->status >= 0))
		pdu->status = -EFAULT;
	if (pdu->bio)
		blk_rq_unmap_user(pdu->bio);
	ssdq_uring_cmd_done(ioucmd, pdu->status, pdu->result, issue_flags);
}

SSDQ_URING_TASK_CB(ssdq_uring_finish)

/*
 * The request ended, in whatever context ended it (interrupt, poll,
 * steering's IPI, a reset's worker): keep its outcome and finish in the
 * task. Going through task work even when polled sends each CQE to its own
 * ring, whichever ring's iopoll reaped it (as nvme does).
 *
 * The request is freed here, by blk-mq, in the batch that ends it (its tag
 * and queue reference go back with the others', as for the block path),
 * never kept for the task: a reset waits for every request marked complete
 * to be freed (blk_mq_tagset_wait_completed_request()), and the task may be
 * the one asking for the reset (NVME_IOCTL_RESET from the ring's thread),
 * or not run for long (stopped; a DEFER_TASKRUN ring that nobody waits
 * on). So the metadata buffer moves to the pdu, and iopoll stops polling
 * through the request before it goes (ssdq_uring_iopoll()).
 */
static enum rq_end_io_ret ssdq_uring_end_io(SSDQ_END_IO_PARAMS)
{
	struct io_uring_cmd *ioucmd = req->end_io_data;
	struct ssdq_uring_pdu *pdu = ssdq_uring_pdu(ioucmd);

	pdu->status = ssdq_passthru_rq_status(req, err);
	pdu->result = ssdq_iod(req)->result;
	pdu->meta = ssdq_passthru_meta_take(req);
	WRITE_ONCE(pdu->poll_hctx, NULL);
	ssdq_uring_cmd_in_task(ioucmd, ssdq_uring_finish_tw);
	return RQ_END_IO_FREE;
}

/* As under 6.12's nvme: a registered buffer is one buffer, not a vector. */
static int ssdq_uring_fixed_vec_refused(struct device *d)
{
	dev_err_ratelimited(d, "uring passthrough: a registered buffer is one buffer, not vectored\n");
	return -EINVAL;
}

/* The data (a registered buffer or the user's) and metadata into @req. */
static int ssdq_uring_map(struct ssdq_ns *ns, struct request *req,
			  struct io_uring_cmd *ioucmd,
			  const struct nvme_passthru_cmd64 *uc, bool vec,
			  unsigned int issue_flags)
{
	struct iov_iter iter;
	int ret;

	if (!(ioucmd->flags & IORING_URING_CMD_FIXED) || !uc->data_len)
		return ssdq_passthru_rq_map(ns, req, uc, vec, NULL);
	if (vec)
		return ssdq_uring_fixed_vec_refused(&ns->dev->pdev->dev);
	ret = ssdq_uring_import_fixed(uc->addr, uc->data_len, rq_data_dir(req),
				      &iter, ioucmd, issue_flags);
	if (ret < 0)
		return ret;
	return ssdq_passthru_rq_map(ns, req, uc, false, &iter);
}

/* NVME_URING_CMD_IO{,_VEC}: issue, and end in ssdq_uring_end_io(). */
static int ssdq_uring_io(struct ssdq_ns *ns, struct io_uring_cmd *ioucmd,
			 unsigned int issue_flags, bool vec)
{
	struct ssdq_uring_pdu *pdu = ssdq_uring_pdu(ioucmd);
	bool writer = ioucmd->file->f_mode & FMODE_WRITE;
	blk_mq_req_flags_t blk_flags = 0;
	struct nvme_passthru_cmd64 uc;
	struct nvme_command c = { };
	blk_opf_t flags = 0;
	struct request *req;
	int ret;

	ssdq_uring_copy_in(&uc, ioucmd);
	ret = ssdq_passthru_check(ns->dev, &uc, true, vec, ns->nsid);
	if (ret)
		return ret;
	ssdq_passthru_build(&c, &uc);
	if (!ssdq_passthru_allowed(ns->dev, false, writer, &c, true))
		return -EACCES;

	/* No sleeping for a tag where io_uring can retry from its worker. */
	if (issue_flags & IO_URING_F_NONBLOCK) {
		flags |= REQ_NOWAIT;
		blk_flags |= BLK_MQ_REQ_NOWAIT;
	}
	if (issue_flags & IO_URING_F_IOPOLL)
		flags |= REQ_POLLED;
	req = ssdq_passthru_rq_alloc(ns, &c, flags, blk_flags, uc.timeout_ms);
	if (IS_ERR(req))
		return PTR_ERR(req);
	ret = ssdq_uring_map(ns, req, ioucmd, &uc, vec, issue_flags);
	if (ret) {
		blk_mq_free_request(req);
		return ret;
	}
	pdu->bio = req->bio;
	pdu->meta = NULL;
	pdu->poll_hctx = blk_rq_is_poll(req) ? req->mq_hctx : NULL;
	req->end_io = ssdq_uring_end_io;
	req->end_io_data = ioucmd;
	blk_execute_rq_nowait(req, false);
	return -EIOCBQUEUED;
}

/* A namespace's generic device: I/O commands only, as nvme's. */
int ssdq_uring_ns_cmd(struct ssdq_ns *ns, struct io_uring_cmd *ioucmd,
		      unsigned int issue_flags)
{
	int ret;

	ret = ssdq_uring_ring_ok(issue_flags);
	if (ret)
		return ret;
	switch (ioucmd->cmd_op) {
	case NVME_URING_CMD_IO:
		return ssdq_uring_io(ns, ioucmd, issue_flags, false);
	case NVME_URING_CMD_IO_VEC:
		return ssdq_uring_io(ns, ioucmd, issue_flags, true);
	default:
		return -ENOTTY;
	}
}

/* An admin command's data in a registered buffer. */
static int ssdq_uring_admin_fixed(struct ssdq_dev *dev,
				  struct io_uring_cmd *ioucmd,
				  struct nvme_command *c,
				  const struct nvme_passthru_cmd64 *uc,
				  unsigned int issue_flags, u64 *result)
{
	struct iov_iter iter;
	int ret;

	if (!uc->data_len)
		return ssdq_passthru_admin(dev, c, NULL, result);
	ret = ssdq_uring_import_fixed(uc->addr, uc->data_len,
				      ssdq_admin_data_dir(uc->opcode), &iter,
				      ioucmd, issue_flags);
	if (ret < 0)
		return ret;
	return ssdq_passthru_admin(dev, c, &iter, result);
}

/*
 * NVME_URING_CMD_ADMIN{,_VEC} on the controller's device: ssdq's admin
 * commands wait, so the command runs from io_uring's worker, where it may
 * sleep.
 */
static int ssdq_uring_admin(struct ssdq_dev *dev, struct io_uring_cmd *ioucmd,
			    unsigned int issue_flags, bool vec)
{
	struct ssdq_uring_pdu *pdu = ssdq_uring_pdu(ioucmd);
	struct nvme_passthru_cmd64 uc;
	struct nvme_command c = { };
	u64 result = 0;
	int ret;

	if (issue_flags & IO_URING_F_NONBLOCK)
		return -EAGAIN;
	ssdq_uring_copy_in(&uc, ioucmd);
	ret = ssdq_passthru_check(dev, &uc, false, vec, 0);
	if (ret)
		return ret;
	ssdq_passthru_build(&c, &uc);
	if (!ssdq_passthru_allowed(dev, false, false, &c, false))
		return -EACCES;
	if (!(ioucmd->flags & IORING_URING_CMD_FIXED))
		ret = ssdq_passthru_admin_user(dev, &c, uc.addr, uc.data_len,
					       vec, &result);
	else if (!vec)
		ret = ssdq_uring_admin_fixed(dev, ioucmd, &c, &uc, issue_flags,
					     &result);
	else
		ret = ssdq_uring_fixed_vec_refused(&dev->pdev->dev);
	if (ret < 0)
		return ret;
	pdu->poll_hctx = NULL;
	pdu->bio = NULL;
	pdu->meta = NULL;
	pdu->result = result;		/* dword 0: 32 bits */
	pdu->status = ret;
	ssdq_uring_cmd_in_task(ioucmd, ssdq_uring_finish_tw);
	return -EIOCBQUEUED;
}

int ssdq_uring_ctrl_cmd(struct ssdq_dev *dev, struct io_uring_cmd *ioucmd,
			unsigned int issue_flags)
{
	int ret;

	ret = ssdq_uring_ring_ok(issue_flags);
	if (ret)
		return ret;
	/* As nvme's: no admin command on a polled ring. */
	if (issue_flags & IO_URING_F_IOPOLL)
		return -EOPNOTSUPP;
	switch (ioucmd->cmd_op) {
	case NVME_URING_CMD_ADMIN:
		return ssdq_uring_admin(dev, ioucmd, issue_flags, false);
	case NVME_URING_CMD_ADMIN_VEC:
		return ssdq_uring_admin(dev, ioucmd, issue_flags, true);
	default:
		return -ENOTTY;
	}
}

/*
 * io_uring's iopoll for one of its commands: poll its poll queue until it
 * ends. Not through the request (blk_rq_poll(), as nvme does): its end_io
 * frees it, and another command may have it by now. The queue outlives
 * the command as seen here: its end_io clears poll_hctx before it ends,
 * and removal waits for this RCU read side (ssdq_remove()) after the last
 * request ended, before the queues go; the open char device holds the
 * disk, and with it the hctx.
 */
int ssdq_uring_iopoll(struct io_uring_cmd *ioucmd, struct io_comp_batch *iob,
		      unsigned int poll_flags)
{
	struct blk_mq_hw_ctx *hctx;
	int ret = 0;

	rcu_read_lock();
	hctx = READ_ONCE(ssdq_uring_pdu(ioucmd)->poll_hctx);
	if (hctx)
		ret = ssdq_poll(hctx, iob);
	rcu_read_unlock();
	return ret;
}
