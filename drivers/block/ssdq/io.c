// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq I/O path: one request from ->queue_rq to its end, in the order it
 * happens.
 *
 *   submit    ssdq_setup_cmd() turns the request into an NVMe command
 *             (read/write with PRPs, flush, discard, write zeroes; a
 *             passthrough command from ioctl.c comes built);
 *             ssdq_queue_rq() and ssdq_queue_rqs() copy commands into the
 *             hardware queue's SQ, and plugging (plug.c) says when to ring
 *             its doorbell (queue.c).
 *   reap      an interrupt, irq_poll round or poller (irq.c, poll.c) runs
 *             the queue's reaper, ssdq_io_reap(), which hands each CQE to
 *             ssdq_handle_cqe(): find the request by command id, take its
 *             status, mark it complete.
 *   complete  steering (steer.c) may send it to its submitting CPU; there,
 *             or here, ssdq_complete_rq() unmaps its data and ends it with
 *             the NVMe status mapped to a blk_status_t, unless recovery
 *             (recovery.c) runs it again. The successful requests of one
 *             reap that stay on its CPU end together, in
 *             ssdq_complete_batch().
 *
 * Fault injection (fault.c) decides what the device "did" at the points
 * where it could misbehave. The ops table that blk-mq calls is in disk.c.
 */
#include <linux/blk-mq.h>
#include <linux/dma-mapping.h>
#include <linux/dmapool.h>
#include <linux/random.h>

#include <ssdq/ssdq.h>
#include "trace.h"

#define SSDQ_PRPS_PER_PAGE	(SSDQ_CTRL_PAGE_SIZE / sizeof(__le64))

static struct device *ssdq_dmadev(struct ssdq_dev *dev)
{
	return &dev->pdev->dev;
}

/* ---- submit: request to NVMe command */

static u64 ssdq_sect_to_lba(struct ssdq_ns *ns, sector_t sector)
{
	return sector >> (ns->lba_shift - SECTOR_SHIFT);
}

static u32 ssdq_nlb(struct ssdq_ns *ns, struct request *req)
{
	return blk_rq_bytes(req) >> ns->lba_shift;
}

static void ssdq_setup_rw(struct ssdq_ns *ns, struct request *req,
			  struct nvme_command *cmd)
{
	cmd->rw.opcode = req_op(req) == REQ_OP_WRITE ? nvme_cmd_write :
						       nvme_cmd_read;
	cmd->rw.nsid = cpu_to_le32(ns->nsid);
	cmd->rw.slba = cpu_to_le64(ssdq_sect_to_lba(ns, blk_rq_pos(req)));
	cmd->rw.length = cpu_to_le16(ssdq_nlb(ns, req) - 1);
	if (req->cmd_flags & REQ_FUA)
		cmd->rw.control = cpu_to_le16(NVME_RW_FUA);
}

static void ssdq_setup_write_zeroes(struct ssdq_ns *ns, struct request *req,
				    struct nvme_command *cmd)
{
	cmd->write_zeroes.opcode = nvme_cmd_write_zeroes;
	cmd->write_zeroes.nsid = cpu_to_le32(ns->nsid);
	cmd->write_zeroes.slba =
		cpu_to_le64(ssdq_sect_to_lba(ns, blk_rq_pos(req)));
	cmd->write_zeroes.length = cpu_to_le16(ssdq_nlb(ns, req) - 1);
}

/*
 * Discard is a Dataset Management command with one range (the queue allows
 * one discard segment), which lives in the request's PDU and is DMA'd from
 * there. If the 16 bytes straddle a controller page, PRP2 names the next one.
 */
static blk_status_t ssdq_setup_discard(struct ssdq_ns *ns,
				       struct request *req,
				       struct nvme_command *cmd)
{
	struct ssdq_dev *dev = ns->dev;
	struct ssdq_iod *iod = ssdq_iod(req);
	u64 page = SSDQ_CTRL_PAGE_SIZE;
	dma_addr_t end;

	iod->range.cattr = 0;
	iod->range.nlb = cpu_to_le32(ssdq_nlb(ns, req));
	iod->range.slba = cpu_to_le64(ssdq_sect_to_lba(ns, blk_rq_pos(req)));
	iod->range_dma = dma_map_single(ssdq_dmadev(dev), &iod->range,
					sizeof(iod->range), DMA_TO_DEVICE);
	if (dma_mapping_error(ssdq_dmadev(dev), iod->range_dma))
		return BLK_STS_RESOURCE;

	cmd->dsm.opcode = nvme_cmd_dsm;
	cmd->dsm.nsid = cpu_to_le32(ns->nsid);
	cmd->dsm.dptr.prp1 = cpu_to_le64(iod->range_dma);
	end = iod->range_dma + sizeof(iod->range) - 1;
	if (round_down(end, page) != round_down(iod->range_dma, page))
		cmd->dsm.dptr.prp2 = cpu_to_le64(round_down(end, page));
	cmd->dsm.nr = 0;	/* 0-based: one range */
	cmd->dsm.attributes = cpu_to_le32(NVME_DSMGMT_AD);
	return BLK_STS_OK;
}

/*
 * Describe the mapped scatterlist with PRPs. The queue's virt boundary makes
 * the data a run of whole controller pages, except that the first may start
 * at an offset and the last may end early. PRP1 names the first page; PRP2
 * the second, or a list of every page after the first when there are more.
 */
static blk_status_t ssdq_setup_prps(struct ssdq_dev *dev, struct request *req,
				    struct nvme_command *cmd)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	struct scatterlist *sg = iod->sgt.sgl;
	u32 len = blk_rq_payload_bytes(req);
	u64 addr = sg_dma_address(sg);
	u32 seg_len = sg_dma_len(sg);
	u32 step = SSDQ_CTRL_PAGE_SIZE - (addr & (SSDQ_CTRL_PAGE_SIZE - 1));
	unsigned int i = 0;
	__le64 *list;

	cmd->rw.dptr.prp1 = cpu_to_le64(addr);
	for (;;) {
		if (len <= step)
			return BLK_STS_OK;
		len -= step;
		/* Move on to the next controller page of the data. */
		if (seg_len > step) {
			addr += step;
			seg_len -= step;
		} else {
			sg = sg_next(sg);
			if (!sg)
				goto bad_sgl;
			addr = sg_dma_address(sg);
			seg_len = sg_dma_len(sg);
		}
		step = SSDQ_CTRL_PAGE_SIZE;

		if (!iod->prp_list) {
			if (len <= SSDQ_CTRL_PAGE_SIZE) {
				cmd->rw.dptr.prp2 = cpu_to_le64(addr);
				return BLK_STS_OK;
			}
			list = dma_pool_alloc(dev->prp_pool, GFP_ATOMIC,
					      &iod->prp_list_dma);
			if (!list)
				return BLK_STS_RESOURCE;
			iod->prp_list = list;
			cmd->rw.dptr.prp2 = cpu_to_le64(iod->prp_list_dma);
		}
		if (i == SSDQ_PRPS_PER_PAGE)
			goto bad_sgl;
		list[i++] = cpu_to_le64(addr);
	}

bad_sgl:
	dev_err_ratelimited(ssdq_dmadev(dev),
			    "%u-byte request does not fit its PRPs (%u segments)\n",
			    blk_rq_payload_bytes(req), iod->sgt.nents);
	return BLK_STS_IOERR;
}

/*
 * The common case, one segment that two PRPs describe (any 4 KiB I/O, and
 * up to 8 KiB from a page boundary): map the bvec itself and name it in
 * PRP1/PRP2, with no scatterlist to build, map and walk, as nvme's
 * nvme_setup_prp_simple() does. Only when the segment is the whole
 * payload: a request merged from physically adjacent bios is one segment
 * of several bvecs, and req_bvec() is only the first.
 */
static bool ssdq_map_simple(struct ssdq_dev *dev, struct request *req,
			    struct nvme_command *cmd, blk_status_t *sts)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	struct bio_vec bv;
	u32 first;

	if (blk_rq_nr_phys_segments(req) != 1)
		return false;
	bv = req_bvec(req);
	first = SSDQ_CTRL_PAGE_SIZE - (bv.bv_offset & (SSDQ_CTRL_PAGE_SIZE - 1));
	if (bv.bv_len != blk_rq_payload_bytes(req) ||
	    bv.bv_len > first + SSDQ_CTRL_PAGE_SIZE)
		return false;
	iod->first_dma = dma_map_bvec(ssdq_dmadev(dev), &bv, rq_dma_dir(req), 0);
	if (dma_mapping_error(ssdq_dmadev(dev), iod->first_dma)) {
		*sts = BLK_STS_RESOURCE;
		return true;
	}
	iod->first_len = bv.bv_len;
	iod->mapped = true;
	cmd->rw.dptr.prp1 = cpu_to_le64(iod->first_dma);
	if (bv.bv_len > first)
		cmd->rw.dptr.prp2 = cpu_to_le64(iod->first_dma + first);
	*sts = BLK_STS_OK;
	return true;
}

static blk_status_t ssdq_map_data(struct ssdq_dev *dev, struct request *req,
				  struct nvme_command *cmd)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	blk_status_t sts;
	int ret;

	iod->first_len = 0;
	if (ssdq_map_simple(dev, req, cmd, &sts))
		return sts;
	/*
	 * The table's orig_nents is what sg_free_table_chained() frees by, so
	 * it stays as allocated; merging may map fewer entries (sg_count).
	 */
	iod->sgt.sgl = iod->inline_sg;
	if (sg_alloc_table_chained(&iod->sgt, blk_rq_nr_phys_segments(req),
				   iod->inline_sg, SSDQ_INLINE_SGES))
		return BLK_STS_RESOURCE;
	iod->sg_count = ssdq_rq_map_sg(req, iod->sgt.sgl);
	if (!iod->sg_count) {
		sts = BLK_STS_IOERR;
		goto free_sgt;
	}
	ret = dma_map_sg_attrs(ssdq_dmadev(dev), iod->sgt.sgl, iod->sg_count,
			       rq_dma_dir(req), DMA_ATTR_NO_WARN);
	if (!ret) {
		sts = BLK_STS_RESOURCE;
		goto free_sgt;
	}
	iod->sgt.nents = ret;
	iod->mapped = true;
	sts = ssdq_setup_prps(dev, req, cmd);
	if (sts)
		goto unmap;
	return BLK_STS_OK;

unmap:
	if (iod->prp_list)
		dma_pool_free(dev->prp_pool, iod->prp_list, iod->prp_list_dma);
	iod->prp_list = NULL;
	dma_unmap_sg(ssdq_dmadev(dev), iod->sgt.sgl, iod->sg_count,
		     rq_dma_dir(req));
	iod->mapped = false;
free_sgt:
	sg_free_table_chained(&iod->sgt, SSDQ_INLINE_SGES);
	return sts;
}

static void ssdq_unmap_data(struct ssdq_dev *dev, struct request *req)
{
	struct ssdq_iod *iod = ssdq_iod(req);

	if (req_op(req) == REQ_OP_DISCARD) {
		dma_unmap_single(ssdq_dmadev(dev), iod->range_dma,
				 sizeof(iod->range), DMA_TO_DEVICE);
		return;
	}
	if (!iod->mapped)
		return;
	iod->mapped = false;
	if (iod->first_len) {
		dma_unmap_page(ssdq_dmadev(dev), iod->first_dma, iod->first_len,
			       rq_dma_dir(req));
		return;
	}
	if (iod->prp_list)
		dma_pool_free(dev->prp_pool, iod->prp_list, iod->prp_list_dma);
	iod->prp_list = NULL;
	dma_unmap_sg(ssdq_dmadev(dev), iod->sgt.sgl, iod->sg_count,
		     rq_dma_dir(req));
	sg_free_table_chained(&iod->sgt, SSDQ_INLINE_SGES);
}

/*
 * A passthrough command (ioctl.c) comes built, in the PDU: only its data
 * pointer is ssdq's to fill, on each issue (a reset may run it again).
 */
static blk_status_t ssdq_setup_passthru(struct ssdq_dev *dev,
					struct request *req,
					struct nvme_command *cmd)
{
	memset(&cmd->common.dptr, 0, sizeof(cmd->common.dptr));
	if (!blk_rq_nr_phys_segments(req))
		return BLK_STS_OK;
	return ssdq_map_data(dev, req, cmd);
}

static blk_status_t ssdq_setup_cmd(struct ssdq_dev *dev, struct request *req)
{
	struct ssdq_ns *ns = req->q->queuedata;
	struct ssdq_iod *iod = ssdq_iod(req);
	struct nvme_command *cmd = &iod->cmd;
	blk_status_t sts = BLK_STS_OK;

	if (!blk_rq_is_passthrough(req))
		memset(cmd, 0, sizeof(*cmd));
	iod->nvme_status = 0;
	iod->mapped = false;
	iod->aborted = false;
	iod->escalated = false;
	iod->cancelled = false;
	iod->prp_list = NULL;
	iod->start = jiffies;

	switch (req_op(req)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		ssdq_setup_rw(ns, req, cmd);
		sts = ssdq_map_data(dev, req, cmd);
		break;
	case REQ_OP_FLUSH:
		cmd->common.opcode = nvme_cmd_flush;
		cmd->common.nsid = cpu_to_le32(ns->nsid);
		break;
	case REQ_OP_DISCARD:
		sts = ssdq_setup_discard(ns, req, cmd);
		break;
	case REQ_OP_WRITE_ZEROES:
		ssdq_setup_write_zeroes(ns, req, cmd);
		break;
	case REQ_OP_DRV_IN:
	case REQ_OP_DRV_OUT:
		sts = ssdq_setup_passthru(dev, req, cmd);
		break;
	default:
		return BLK_STS_NOTSUPP;
	}
	iod->genctr++;
	cmd->common.command_id = ssdq_cid(req);
	return sts;
}

/* Build the request's command and mark it started; nothing is sent yet. */
static blk_status_t ssdq_prep_rq(struct ssdq_queue *q, struct request *req)
{
	blk_status_t sts;

	if (unlikely(ssdq_dead(q->dev)))
		return BLK_STS_IOERR;
	/* First issue, not a requeue: no retries yet. */
	if (!(req->rq_flags & RQF_DONTPREP)) {
		ssdq_iod(req)->retries = 0;
		req->rq_flags |= RQF_DONTPREP;
	}
	sts = ssdq_setup_cmd(q->dev, req);
	if (sts)
		return sts;
	trace_ssdq_submit(q, req);
	blk_mq_start_request(req);
	return BLK_STS_OK;
}

/* ---- submit: into the SQ, and the doorbell */

/*
 * Copy a prepared request into the SQ; unless it is the @last of its batch,
 * the doorbell may wait for more to come (plug.c decides). Caller holds
 * q->sq_lock.
 */
static void ssdq_sq_add(struct ssdq_queue *q, struct request *req, bool last)
{
	bool first = q->sq_tail == q->last_sq_tail;

	ssdq_sq_copy_cmd(q, &ssdq_iod(req)->cmd);
	if (ssdq_plug_ring_now(q, first, last))
		ssdq_sq_ring_doorbell(q);
}

blk_status_t ssdq_queue_rq(struct blk_mq_hw_ctx *hctx,
			   const struct blk_mq_queue_data *bd)
{
	struct ssdq_queue *q = hctx->driver_data;
	blk_status_t sts;

	sts = ssdq_prep_rq(q, bd->rq);
	if (sts)
		return sts;
	spin_lock(&q->sq_lock);
	ssdq_sq_add(q, bd->rq, bd->last);
	spin_unlock(&q->sq_lock);
	return BLK_STS_OK;
}

/* blk-mq stopped before the request marked last: ring for what it sent. */
void ssdq_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	struct ssdq_queue *q = hctx->driver_data;

	spin_lock(&q->sq_lock);
	ssdq_sq_ring_doorbell(q);
	q->rang_early = false;		/* the batch ends here */
	spin_unlock(&q->sq_lock);
}

/* Copy a run of prepared requests into one SQ under one lock hold. */
static void ssdq_submit_batch(struct ssdq_queue *q,
			      struct ssdq_rq_list *batch)
{
	struct request *req;
	unsigned int n = 0;

	if (ssdq_rq_list_empty(batch))
		return;
	spin_lock(&q->sq_lock);
	while ((req = ssdq_rq_list_pop(batch))) {
		ssdq_sq_add(q, req, ssdq_rq_list_empty(batch));
		n++;
	}
	ssdq_plug_account_batch(q, n);
	spin_unlock(&q->sq_lock);
}

/*
 * ->queue_rqs: a flushed plug list, whole. Consecutive requests for the same
 * hardware queue form one batch. A request that cannot be prepared stays on
 * the list, and blk-mq sends it through ->queue_rq, which reports its error.
 */
void ssdq_queue_rqs(ssdq_plug_list_t *plug_list)
{
	struct ssdq_rq_list rqlist = ssdq_rq_list_take(plug_list);
	struct ssdq_rq_list batch = { }, leftover = { };
	struct ssdq_queue *q = NULL;
	struct request *req;

	while ((req = ssdq_rq_list_pop(&rqlist))) {
		struct ssdq_queue *hq = req->mq_hctx->driver_data;

		if (q && q != hq)
			ssdq_submit_batch(q, &batch);
		q = hq;
		ssdq_rq_record_tag(req);
		if (ssdq_prep_rq(q, req) == BLK_STS_OK)
			ssdq_rq_list_add_tail(&batch, req);
		else
			ssdq_rq_list_add_tail(&leftover, req);
	}
	if (q)
		ssdq_submit_batch(q, &batch);
	ssdq_rq_list_give_back(plug_list, &leftover);
}

/* ---- reap: CQE to request */

static void ssdq_complete_batch(struct io_comp_batch *iob);

/*
 * Called by an I/O queue's reaper for each CQE. The command id comes from
 * the device: one that names no request in flight is reported and dropped,
 * never followed.
 *
 * The reaper owns what it reaps: it marks the request complete before
 * handing it anywhere (an IPI list, the poller's io_comp_batch, blk-mq), so
 * that a reset's cancel (recovery.c), which takes back only requests still
 * in flight, can never complete it a second time.
 */
static void ssdq_handle_cqe(struct ssdq_queue *q, struct nvme_completion *cqe,
			    struct io_comp_batch *iob)
{
	struct ssdq_dev *dev = q->dev;
	u16 cid = READ_ONCE(cqe->command_id);
	bool faults = ssdq_fault_armed(dev);
	struct ssdq_iod *iod;
	struct request *req;

	if (faults)
		cid = ssdq_fault_cqe_cid(q, cid);
	req = blk_mq_tag_to_rq(q->tags, cid & SSDQ_CID_TAG_MASK);
	if (unlikely(!req || blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT ||
		     ssdq_cid(req) != cid)) {
		atomic64_inc(&dev->recovery.bad_cqes);
		dev_warn_ratelimited(ssdq_dmadev(dev),
				     "queue %u: completion for id %#x, not in flight, ignored\n",
				     q->qid, cid);
		return;
	}
	iod = ssdq_iod(req);
	iod->nvme_status = le16_to_cpu(cqe->status) >> 1;
	/* Passthrough hands dword 0 of the answer to user space. */
	if (unlikely(blk_rq_is_passthrough(req)))
		iod->result = le32_to_cpu(cqe->result.u32);
	trace_ssdq_cqe(q, cid, iod->nvme_status);
	/* The block layer's fail_io_timeout: pretend the CQE never came. */
	if (blk_should_fake_timeout(req->q))
		return;
	if (faults) {
		iod->nvme_status =
			ssdq_fault_cqe_status(dev, req, iod->nvme_status);
		if (ssdq_fault_take(dev, SSDQ_FAULT_DROP_COMPLETION) ||
		    ssdq_fault_delay(dev, req))
			return;
	}
	blk_mq_set_request_complete(req);
	if (!q->poll_queue && ssdq_steer_away(q, req))
		return;
	/* A failed request ends alone: recovery may run it again. */
	if (!blk_mq_add_to_batch(req, iob, iod->nvme_status,
				 ssdq_complete_batch))
		ssdq_complete_rq(req);
}

/*
 * For ring_idle (plug.c): how far the controller has read the SQ, from the
 * last CQE reaped (whatever its command id). Once per reap, not per CQE:
 * the submitter reads this cache line. The slot is ours to read after the
 * CQ doorbell: the controller cannot post into head - 1 until the head
 * moves again. Published after this reap's requests were completed, so a
 * submitter they wake may see the previous reap's head and lean toward
 * batching, which plug.c allows.
 */
static void ssdq_note_sq_head(struct ssdq_queue *q)
{
	u16 last = (q->cq_head ? q->cq_head : q->depth) - 1;

	WRITE_ONCE(q->sq_head, le16_to_cpu(q->cqes[last].sq_head));
}

/*
 * The I/O queues' reaper (struct ssdq_queue's reap): every new CQE, then
 * one IPI per CPU that steering sent completions to. The requests a reap
 * ends here end together, in one blk_mq_end_request_batch(): in the
 * poller's batch, which blk-mq completes after ->poll, or in one of the
 * reap's own (an interrupt, irq_poll round or recovery's reap), completed
 * before it returns, so that whoever waits for the reapers to stop
 * (ssdq_irq_quiesce()) finds the requests ended too.
 */
int ssdq_io_reap(struct ssdq_queue *q, int budget, struct io_comp_batch *iob)
{
	DEFINE_IO_COMP_BATCH(batch);
	int found;

	found = ssdq_cq_reap(q, budget, ssdq_handle_cqe, iob ? iob : &batch);
	if (!ssdq_iob_empty(&batch))
		batch.complete(&batch);
	if (found)
		ssdq_note_sq_head(q);
	if (!cpumask_empty(q->steer_pending))
		ssdq_steer_send_ipis(q);
	return found;
}

/* ---- complete: status and the end of the request */

static blk_status_t ssdq_error_status(u16 status)
{
	switch (status & NVME_SCT_SC_MASK) {
	case NVME_SC_SUCCESS:
		return BLK_STS_OK;
	case NVME_SC_CAP_EXCEEDED:
		return BLK_STS_NOSPC;
	case NVME_SC_LBA_RANGE:
		return BLK_STS_TARGET;
	case NVME_SC_INVALID_OPCODE:
	case NVME_SC_INVALID_FIELD:
	case NVME_SC_INVALID_NS:
	case NVME_SC_BAD_ATTRIBUTES:
		return BLK_STS_NOTSUPP;
	case NVME_SC_WRITE_FAULT:
	case NVME_SC_READ_ERROR:
	case NVME_SC_UNWRITTEN_BLOCK:
	case NVME_SC_GUARD_CHECK:
	case NVME_SC_APPTAG_CHECK:
	case NVME_SC_REFTAG_CHECK:
	case NVME_SC_COMPARE_FAILED:
	case NVME_SC_ACCESS_DENIED:
		return BLK_STS_MEDIUM;
	default:
		return BLK_STS_IOERR;
	}
}

/*
 * One line (rate-limited) per request that fails, with the NVMe status: the
 * block layer's own "I/O error" line names only the errno. Requests taken
 * back from a controller that is gone are not its errors; the line saying
 * why it went was printed once. RQF_QUIET: the submitter asked for silence.
 */
static void ssdq_log_error(struct ssdq_dev *dev, struct request *req,
			   u16 status)
{
	struct ssdq_queue *q = req->mq_hctx->driver_data;
	struct ssdq_msg m;

	if ((status & NVME_SCT_SC_MASK) == NVME_SC_HOST_ABORTED_CMD ||
	    (req->rq_flags & RQF_QUIET))
		return;
	dev_err_ratelimited(ssdq_dmadev(dev),
			    "queue %u: %s of %u bytes at sector %llu failed: %s\n",
			    q->qid, blk_op_str(req_op(req)), blk_rq_bytes(req),
			    (unsigned long long)blk_rq_pos(req),
			    ssdq_status_str(&m, status));
}

/*
 * queue/add_random: blk-mq leaves feeding the entropy pool to the driver
 * (SCSI does it for each command), so ssdq does, for each request, when the
 * switch asks. An SSD's completion times make poor entropy: off by default
 * (disk.c), and then this costs one test.
 */
static void ssdq_add_randomness(struct request *req)
{
	if (unlikely(ssdq_queue_add_random(req->q)))
		add_disk_randomness(req->q->disk);
}

/*
 * The end of every request: blk-mq's ->complete, called here, by steering's
 * IPI, or by blk-mq. A request that failed may be run again (recovery.c
 * decides); the rest end here with their status.
 */
void ssdq_complete_rq(struct request *req)
{
	struct ssdq_dev *dev = ssdq_rq_dev(req);
	u16 status = ssdq_iod(req)->nvme_status;

	ssdq_steer_account(dev, req);
	ssdq_unmap_data(dev, req);
	ssdq_add_randomness(req);
	if (unlikely(status)) {
		if (ssdq_retry_rq(dev, req, status))
			return;
		ssdq_log_error(dev, req, status);
	}
	blk_mq_end_request(req, ssdq_error_status(status));
}

/* Completions of one reap that succeeded end together (ssdq_io_reap()). */
static void ssdq_complete_batch(struct io_comp_batch *iob)
{
	struct request *req;

	rq_list_for_each(&iob->req_list, req) {
		struct ssdq_dev *dev = ssdq_rq_dev(req);

		ssdq_steer_account(dev, req);
		ssdq_unmap_data(dev, req);
		ssdq_add_randomness(req);
	}
	blk_mq_end_request_batch(iob);
}
