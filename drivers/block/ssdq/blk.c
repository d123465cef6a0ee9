// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq blk-mq glue: the tag set with one hardware context per NVMe I/O queue,
 * turning requests into NVMe commands (data described by PRPs), completing
 * them, and the gendisk that users see as /dev/ssdqN.
 */
#include <linux/blk-mq-pci.h>
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>

#include <ssdq/ssdq.h>

#define SSDQ_PRPS_PER_PAGE	(SSDQ_CTRL_PAGE_SIZE / sizeof(__le64))

static struct device *ssdq_dmadev(struct ssdq_dev *dev)
{
	return &dev->pdev->dev;
}

static u64 ssdq_sect_to_lba(struct ssdq_dev *dev, sector_t sector)
{
	return sector >> (dev->lba_shift - SECTOR_SHIFT);
}

static u32 ssdq_nlb(struct ssdq_dev *dev, struct request *req)
{
	return blk_rq_bytes(req) >> dev->lba_shift;
}

static void ssdq_setup_rw(struct ssdq_dev *dev, struct request *req,
			  struct nvme_command *cmd)
{
	cmd->rw.opcode = req_op(req) == REQ_OP_WRITE ? nvme_cmd_write :
						       nvme_cmd_read;
	cmd->rw.nsid = cpu_to_le32(dev->nsid);
	cmd->rw.slba = cpu_to_le64(ssdq_sect_to_lba(dev, blk_rq_pos(req)));
	cmd->rw.length = cpu_to_le16(ssdq_nlb(dev, req) - 1);
	if (req->cmd_flags & REQ_FUA)
		cmd->rw.control = cpu_to_le16(NVME_RW_FUA);
}

static void ssdq_setup_write_zeroes(struct ssdq_dev *dev, struct request *req,
				    struct nvme_command *cmd)
{
	cmd->write_zeroes.opcode = nvme_cmd_write_zeroes;
	cmd->write_zeroes.nsid = cpu_to_le32(dev->nsid);
	cmd->write_zeroes.slba =
		cpu_to_le64(ssdq_sect_to_lba(dev, blk_rq_pos(req)));
	cmd->write_zeroes.length = cpu_to_le16(ssdq_nlb(dev, req) - 1);
}

/*
 * Discard is a Dataset Management command with one range (the queue allows
 * one discard segment), which lives in the request's PDU and is DMA'd from
 * there. If the 16 bytes straddle a controller page, PRP2 names the next one.
 */
static blk_status_t ssdq_setup_discard(struct ssdq_dev *dev,
				       struct request *req,
				       struct nvme_command *cmd)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	u64 page = SSDQ_CTRL_PAGE_SIZE;
	dma_addr_t end;

	iod->range.cattr = 0;
	iod->range.nlb = cpu_to_le32(ssdq_nlb(dev, req));
	iod->range.slba = cpu_to_le64(ssdq_sect_to_lba(dev, blk_rq_pos(req)));
	iod->range_dma = dma_map_single(ssdq_dmadev(dev), &iod->range,
					sizeof(iod->range), DMA_TO_DEVICE);
	if (dma_mapping_error(ssdq_dmadev(dev), iod->range_dma))
		return BLK_STS_RESOURCE;

	cmd->dsm.opcode = nvme_cmd_dsm;
	cmd->dsm.nsid = cpu_to_le32(dev->nsid);
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

static blk_status_t ssdq_map_data(struct ssdq_dev *dev, struct request *req,
				  struct nvme_command *cmd)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	blk_status_t sts;
	int ret;

	/*
	 * The table's orig_nents is what sg_free_table_chained() frees by, so
	 * it stays as allocated; merging may map fewer entries (sg_count).
	 */
	iod->sgt.sgl = iod->inline_sg;
	if (sg_alloc_table_chained(&iod->sgt, blk_rq_nr_phys_segments(req),
				   iod->inline_sg, SSDQ_INLINE_SGES))
		return BLK_STS_RESOURCE;
	iod->sg_count = blk_rq_map_sg(req->q, req, iod->sgt.sgl);
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
	if (iod->prp_list)
		dma_pool_free(dev->prp_pool, iod->prp_list, iod->prp_list_dma);
	iod->prp_list = NULL;
	dma_unmap_sg(ssdq_dmadev(dev), iod->sgt.sgl, iod->sg_count,
		     rq_dma_dir(req));
	sg_free_table_chained(&iod->sgt, SSDQ_INLINE_SGES);
	iod->mapped = false;
}

static blk_status_t ssdq_setup_cmd(struct ssdq_dev *dev, struct request *req)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	struct nvme_command *cmd = &iod->cmd;
	blk_status_t sts = BLK_STS_OK;

	memset(cmd, 0, sizeof(*cmd));
	iod->nvme_status = 0;
	iod->mapped = false;
	iod->aborted = false;
	iod->prp_list = NULL;
	iod->start = jiffies;

	switch (req_op(req)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		ssdq_setup_rw(dev, req, cmd);
		sts = ssdq_map_data(dev, req, cmd);
		break;
	case REQ_OP_FLUSH:
		cmd->common.opcode = nvme_cmd_flush;
		cmd->common.nsid = cpu_to_le32(dev->nsid);
		break;
	case REQ_OP_DISCARD:
		sts = ssdq_setup_discard(dev, req, cmd);
		break;
	case REQ_OP_WRITE_ZEROES:
		ssdq_setup_write_zeroes(dev, req, cmd);
		break;
	default:
		return BLK_STS_NOTSUPP;
	}
	iod->genctr++;
	cmd->common.command_id = ssdq_cid(req);
	return sts;
}

/* Build the request's command and mark it started; nothing is sent yet. */
blk_status_t ssdq_prep_rq(struct ssdq_queue *q, struct request *req)
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
	blk_mq_start_request(req);
	return BLK_STS_OK;
}

static blk_status_t ssdq_queue_rq(struct blk_mq_hw_ctx *hctx,
				  const struct blk_mq_queue_data *bd)
{
	struct ssdq_queue *q = hctx->driver_data;
	blk_status_t sts;

	sts = ssdq_prep_rq(q, bd->rq);
	if (sts)
		return sts;
	ssdq_submit_cmd(q, &ssdq_iod(bd->rq)->cmd, bd->last);
	return BLK_STS_OK;
}

static blk_status_t ssdq_error_status(struct ssdq_dev *dev, struct request *req,
				      u16 status)
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
		dev_err_ratelimited(ssdq_dmadev(dev),
				    "media error %#x on %s at sector %llu\n",
				    status, blk_op_str(req_op(req)),
				    (unsigned long long)blk_rq_pos(req));
		return BLK_STS_MEDIUM;
	default:
		return BLK_STS_IOERR;
	}
}

/*
 * The end of every request: blk-mq's ->complete, and what steer.c calls in
 * place or from its IPI. A request that failed may be run again
 * (recovery.c decides); the rest end here with their status.
 */
void ssdq_complete_rq(struct request *req)
{
	struct ssdq_dev *dev = req->q->queuedata;
	u16 status = ssdq_iod(req)->nvme_status;

	ssdq_steer_account(dev, req);
	ssdq_unmap_data(dev, req);
	if (unlikely(status) && ssdq_retry_rq(dev, req, status))
		return;
	blk_mq_end_request(req, ssdq_error_status(dev, req, status));
}

/* Polled completions end together: one batch per ->poll call. */
static void ssdq_complete_batch(struct io_comp_batch *iob)
{
	struct request *req;

	rq_list_for_each(&iob->req_list, req) {
		struct ssdq_dev *dev = req->q->queuedata;

		ssdq_steer_account(dev, req);
		ssdq_unmap_data(dev, req);
	}
	blk_mq_end_request_batch(iob);
}

/*
 * Called by an I/O queue's reaper for each CQE. The command id comes from
 * the device: one that names no request in flight is reported and dropped,
 * never followed.
 *
 * The reaper owns what it reaps: it marks the request complete before
 * handing it anywhere (an IPI list, the poller's io_comp_batch, blk-mq), so
 * that a reset's cancel (ssdq_cancel_rq), which takes back only requests
 * still in flight, can never complete it a second time.
 */
void ssdq_io_complete(struct ssdq_queue *q, struct nvme_completion *cqe,
		      struct io_comp_batch *iob)
{
	struct ssdq_dev *dev = q->dev;
	u16 cid = READ_ONCE(cqe->command_id);
	bool faults = unlikely(READ_ONCE(dev->fault.armed));
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
	/* The block layer's fail_io_timeout: pretend the CQE never came. */
	if (blk_should_fake_timeout(req->q))
		return;
	if (faults) {
		iod->nvme_status = ssdq_fault_cqe_status(dev, iod->nvme_status);
		if (ssdq_fault_take(dev, SSDQ_FAULT_DROP_COMPLETION) ||
		    ssdq_fault_delay(dev, req))
			return;
	}
	blk_mq_set_request_complete(req);
	if (q->polled) {
		if (!blk_mq_add_to_batch(req, iob, iod->nvme_status,
					 ssdq_complete_batch))
			ssdq_complete_rq(req);
		return;
	}
	ssdq_steer_complete(q, req);
}

/*
 * Take back a request the controller will never complete (it is disabled):
 * ->complete requeues it, or fails it if the controller is dead.
 *
 * Only a request still in flight is ours to take. One marked complete
 * belongs to its completer; and the tag iterator may hand us one that its
 * completer has just ended (MQ_RQ_IDLE, kept alive only by the iterator's
 * reference): completing that again would requeue a request about to be
 * freed.
 */
bool ssdq_cancel_rq(struct request *req, void *data)
{
	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT)
		return true;
	ssdq_iod(req)->nvme_status = NVME_SC_HOST_ABORTED_CMD;
	blk_mq_complete_request(req);
	return true;
}

static int ssdq_init_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			  unsigned int hctx_idx)
{
	struct ssdq_dev *dev = data;
	struct ssdq_queue *q = &dev->queues[hctx_idx + 1];

	q->tags = hctx->tags;
	hctx->driver_data = q;
	return 0;
}

/*
 * Each CPU submits to the queue whose interrupt vector is affine to it.
 * Polled queues follow, spread over the CPUs without regard to interrupts.
 */
static void ssdq_map_queues(struct blk_mq_tag_set *set)
{
	struct ssdq_dev *dev = set->driver_data;
	struct blk_mq_queue_map *map = &set->map[HCTX_TYPE_DEFAULT];

	map->nr_queues = ssdq_nr_irq_queues(dev);
	map->queue_offset = 0;
	blk_mq_pci_map_queues(map, dev->pdev, 1);
	if (set->nr_maps <= HCTX_TYPE_POLL)
		return;
	/* No separate read queues: reads share the default map. */
	set->map[HCTX_TYPE_READ].nr_queues = 0;
	map = &set->map[HCTX_TYPE_POLL];
	map->nr_queues = dev->nr_poll_queues;
	map->queue_offset = ssdq_nr_irq_queues(dev);
	blk_mq_map_queues(map);
}

static const struct blk_mq_ops ssdq_mq_ops = {
	.queue_rq	= ssdq_queue_rq,
	.queue_rqs	= ssdq_queue_rqs,
	.commit_rqs	= ssdq_commit_rqs,
	.complete	= ssdq_complete_rq,
	.timeout	= ssdq_timeout,
	.poll		= ssdq_poll,
	.init_hctx	= ssdq_init_hctx,
	.map_queues	= ssdq_map_queues,
};

static const struct block_device_operations ssdq_fops = {
	.owner		= THIS_MODULE,
};

/* Each technique's switches, as /sys/block/ssdqN/<technique>/. */
static const struct attribute_group *ssdq_disk_groups[] = {
	&ssdq_plug_attr_group,
	&ssdq_recovery_attr_group,
	&ssdq_steer_attr_group,
	&ssdq_irq_attr_group,
	NULL,
};

/* Each technique's counters, in /sys/kernel/debug/ssdq/ssdqN/. */
static void ssdq_debugfs_init(struct ssdq_dev *dev)
{
	dev->debugfs = debugfs_create_dir(dev->disk->disk_name,
					  ssdq_debugfs_root);
	ssdq_plug_debugfs_init(dev);
	ssdq_recovery_debugfs_init(dev);
	ssdq_fault_debugfs_init(dev);
	ssdq_steer_debugfs_init(dev);
	ssdq_irq_debugfs_init(dev);
}

static void ssdq_set_limits(struct ssdq_dev *dev, struct queue_limits *lim)
{
	u32 block = 1U << dev->lba_shift;

	lim->logical_block_size = block;
	lim->physical_block_size = block;
	lim->io_min = block;
	lim->max_hw_sectors = dev->max_transfer >> SECTOR_SHIFT;
	lim->max_segments = SSDQ_MAX_SEGMENTS;
	/* PRPs can only describe whole pages between the first and last. */
	lim->virt_boundary_mask = SSDQ_CTRL_PAGE_SIZE - 1;
	lim->dma_alignment = 3;		/* PRP entries are dword aligned */

	if (dev->oncs & NVME_CTRL_ONCS_DSM) {
		/* One range per command, at most DMRSL blocks long. */
		lim->max_hw_discard_sectors = UINT_MAX;
		if (dev->dmrsl &&
		    dev->dmrsl <= UINT_MAX >> (dev->lba_shift - SECTOR_SHIFT))
			lim->max_hw_discard_sectors =
				dev->dmrsl << (dev->lba_shift - SECTOR_SHIFT);
		lim->max_discard_segments = 1;
		lim->discard_granularity = block;
	}
	/* The NLB field of Write Zeroes is 16 bits. */
	if (dev->oncs & NVME_CTRL_ONCS_WRITE_ZEROES)
		lim->max_write_zeroes_sectors =
			(U16_MAX + 1) << (dev->lba_shift - SECTOR_SHIFT);

	if (dev->vwc & NVME_CTRL_VWC_PRESENT)
		lim->features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA;
	/* An SSD needs no seek-avoiding elevator and gives no entropy. */
	if (ssdq_params.rotational)
		lim->features |= BLK_FEAT_ROTATIONAL;
	if (ssdq_params.add_random)
		lim->features |= BLK_FEAT_ADD_RANDOM;
}

static int ssdq_alloc_tag_set(struct ssdq_dev *dev)
{
	struct blk_mq_tag_set *set = &dev->tag_set;

	set->ops = &ssdq_mq_ops;
	set->nr_hw_queues = dev->nr_io_queues;
	/* A poll map (and so BLK_FEAT_POLL) only when there are poll queues. */
	set->nr_maps = dev->nr_poll_queues ? HCTX_MAX_TYPES : 1;
	/* One SQ slot stays empty: a full ring would look empty. */
	set->queue_depth = dev->io_depth - 1;
	set->numa_node = dev_to_node(ssdq_dmadev(dev));
	set->cmd_size = sizeof(struct ssdq_iod);
	set->flags = BLK_MQ_F_SHOULD_MERGE;
	set->timeout = ssdq_params.io_timeout * HZ;
	set->driver_data = dev;
	return blk_mq_alloc_tag_set(set);
}

/* Register /dev/ssdqN on top of the controller's I/O queues. */
int ssdq_blk_init(struct ssdq_dev *dev)
{
	struct queue_limits lim = { };
	struct gendisk *disk;
	int ret;

	dev->prp_pool = dma_pool_create("ssdq prp list", ssdq_dmadev(dev),
					SSDQ_CTRL_PAGE_SIZE,
					SSDQ_CTRL_PAGE_SIZE, 0);
	if (!dev->prp_pool)
		return -ENOMEM;
	ret = ssdq_steer_init(dev);
	if (ret)
		goto destroy_pool;
	ret = ssdq_alloc_tag_set(dev);
	if (ret)
		goto free_steer;

	ssdq_set_limits(dev, &lim);
	disk = blk_mq_alloc_disk(&dev->tag_set, &lim, dev);
	if (IS_ERR(disk)) {
		ret = PTR_ERR(disk);
		goto free_tag_set;
	}
	disk->fops = &ssdq_fops;
	disk->private_data = dev;
	snprintf(disk->disk_name, DISK_NAME_LEN, "ssdq%d", dev->instance);
	set_capacity(disk, dev->capacity);

	dev->batch_doorbells = true;
	/* Set before adding: the partition scan's I/O may already time out. */
	dev->disk = disk;
	ret = device_add_disk(ssdq_dmadev(dev), disk, ssdq_disk_groups);
	if (ret)
		goto put_disk;
	ssdq_debugfs_init(dev);
	return 0;

put_disk:
	dev->disk = NULL;
	put_disk(disk);
free_tag_set:
	blk_mq_free_tag_set(&dev->tag_set);
free_steer:
	ssdq_steer_free(dev);
destroy_pool:
	dma_pool_destroy(dev->prp_pool);
	return ret;
}

/*
 * Unregister the disk. del_gendisk() writes back dirty pages and waits for
 * every request in flight, so the queues are idle when it returns.
 */
void ssdq_blk_del(struct ssdq_dev *dev)
{
	debugfs_remove_recursive(dev->debugfs);
	del_gendisk(dev->disk);
}

/* Free the tag set and the rest, once the controller can post no CQE. */
void ssdq_blk_free(struct ssdq_dev *dev)
{
	put_disk(dev->disk);
	blk_mq_free_tag_set(&dev->tag_set);
	ssdq_steer_free(dev);
	dma_pool_destroy(dev->prp_pool);
}
