// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq implicit plugging and the doorbells it saves.
 *
 * A submitter's plug gathers its requests and hands them over together:
 * either as a whole list to ->queue_rqs, or one by one to ->queue_rq with
 * bd->last set on the final one (and ->commit_rqs if blk-mq stops early).
 * ssdq copies the commands into the SQ first and writes the tail doorbell,
 * an uncached MMIO write that is a VM exit under virtualisation, once for
 * the batch. No command is ever left in an SQ without its doorbell once the
 * batch ends.
 *
 * Shadow doorbells (NVMe Doorbell Buffer Config, OACS bit 8) go further:
 * tails and heads are published in host memory, and the MMIO write is needed
 * only when the controller's event index says it stopped looking.
 *
 * Switches: /sys/block/ssdqN/plugging/{batching,shadow_doorbells}
 * Counters: /sys/kernel/debug/ssdq/ssdqN/plugging, one line per queue
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <ssdq/ssdq.h>

/* True when the controller's event index lies in (old, new]. */
static bool ssdq_dbbuf_need_event(u16 event_idx, u16 new_idx, u16 old)
{
	return (u16)(new_idx - event_idx - 1) < (u16)(new_idx - old);
}

/* Publish a shadow doorbell; returns true if an MMIO write is also needed. */
static bool ssdq_dbbuf_publish(__le32 *db, __le32 *ei, u16 value)
{
	u16 old = le32_to_cpu(READ_ONCE(*db));

	/* The SQ entries (or the consumed CQEs) come before the new value. */
	wmb();
	WRITE_ONCE(*db, cpu_to_le32(value));
	/*
	 * The value must be visible before the event index is read: the
	 * controller updates its event index before it re-reads the shadow,
	 * so at least one side sees the other's write.
	 */
	mb();
	return ssdq_dbbuf_need_event(le32_to_cpu(READ_ONCE(*ei)), value, old);
}

/*
 * Tell the controller a new SQ tail or CQ head. While a shadow buffer is
 * configured the controller reads it, so it is always kept current; the
 * switch only decides whether its event index may spare the MMIO write.
 * The admin queue always takes the MMIO write, as the spec asks.
 */
static void ssdq_ring(struct ssdq_queue *q, u32 __iomem *db, __le32 *shadow,
		      __le32 *ei, u16 value, u64 *mmio)
{
	if (shadow && !ssdq_dbbuf_publish(shadow, ei, value) && q->qid &&
	    READ_ONCE(q->dev->shadow_doorbells))
		return;
	writel(value, db);
	(*mmio)++;
}

/* Caller holds q->sq_lock. Publishes every command copied so far. */
void ssdq_sq_flush(struct ssdq_queue *q)
{
	if (q->sq_tail == q->last_sq_tail)
		return;
	ssdq_ring(q, q->sq_db, q->dbbuf_sq_db, q->dbbuf_sq_ei, q->sq_tail,
		  &q->plug.sq_db_mmio);
	q->plug.sq_db_updates++;
	q->last_sq_tail = q->sq_tail;
}

/* Called by the queue's reaper once it has consumed CQEs. */
void ssdq_cq_ring_doorbell(struct ssdq_queue *q)
{
	ssdq_ring(q, q->cq_db, q->dbbuf_cq_db, q->dbbuf_cq_ei, q->cq_head,
		  &q->plug.cq_db_mmio);
	q->plug.cq_db_updates++;
}

/* One command from ->queue_rq: the doorbell waits while more are coming. */
void ssdq_submit_cmd(struct ssdq_queue *q, const struct nvme_command *cmd,
		     bool last)
{
	spin_lock(&q->sq_lock);
	ssdq_sq_copy_cmd(q, cmd);
	q->plug.submitted++;
	if (last || !READ_ONCE(q->dev->batch_doorbells))
		ssdq_sq_flush(q);
	spin_unlock(&q->sq_lock);
}

/* blk-mq stopped before the request marked last: ring for what it sent. */
void ssdq_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	struct ssdq_queue *q = hctx->driver_data;

	spin_lock(&q->sq_lock);
	ssdq_sq_flush(q);
	spin_unlock(&q->sq_lock);
}

/* Copy a run of prepared requests into one SQ under one lock hold. */
static void ssdq_submit_batch(struct ssdq_queue *q, struct rq_list *batch)
{
	bool batching = READ_ONCE(q->dev->batch_doorbells);
	struct request *req;
	u64 n = 0;

	if (rq_list_empty(batch))
		return;
	spin_lock(&q->sq_lock);
	while ((req = rq_list_pop(batch))) {
		ssdq_sq_copy_cmd(q, &ssdq_iod(req)->cmd);
		n++;
		if (!batching)
			ssdq_sq_flush(q);
	}
	ssdq_sq_flush(q);
	q->plug.submitted += n;
	q->plug.batches++;
	q->plug.max_batch = max(q->plug.max_batch, n);
	spin_unlock(&q->sq_lock);
}

/*
 * ->queue_rqs: a flushed plug list, whole. Consecutive requests for the same
 * hardware queue form one batch. A request that cannot be prepared stays on
 * the list, and blk-mq sends it through ->queue_rq, which reports its error.
 */
void ssdq_queue_rqs(struct rq_list *rqlist)
{
	struct rq_list batch = { }, leftover = { };
	struct ssdq_queue *q = NULL;
	struct request *req;

	while ((req = rq_list_pop(rqlist))) {
		struct ssdq_queue *hq = req->mq_hctx->driver_data;

		if (q && q != hq)
			ssdq_submit_batch(q, &batch);
		q = hq;
		if (ssdq_prep_rq(q, req) == BLK_STS_OK)
			rq_list_add_tail(&batch, req);
		else
			rq_list_add_tail(&leftover, req);
	}
	if (q)
		ssdq_submit_batch(q, &batch);
	*rqlist = leftover;
}

static size_t ssdq_dbbuf_bytes(struct ssdq_dev *dev, unsigned int nr_queues)
{
	return PAGE_ALIGN(nr_queues * 2 * sizeof(__le32) * dev->db_stride);
}

/* Point a queue at its slots of the shadow doorbell and event index pages. */
void ssdq_dbbuf_init_queue(struct ssdq_queue *q)
{
	struct ssdq_dev *dev = q->dev;
	unsigned int sq = q->qid * 2 * dev->db_stride;
	unsigned int cq = (q->qid * 2 + 1) * dev->db_stride;

	if (!dev->dbbuf_dbs)
		return;
	q->dbbuf_sq_db = &dev->dbbuf_dbs[sq];
	q->dbbuf_sq_ei = &dev->dbbuf_eis[sq];
	q->dbbuf_cq_db = &dev->dbbuf_dbs[cq];
	q->dbbuf_cq_ei = &dev->dbbuf_eis[cq];
}

void ssdq_dbbuf_free(struct ssdq_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;

	if (dev->dbbuf_dbs)
		dma_free_coherent(dmadev, dev->dbbuf_len, dev->dbbuf_dbs,
				  dev->dbbuf_dbs_dma);
	if (dev->dbbuf_eis)
		dma_free_coherent(dmadev, dev->dbbuf_len, dev->dbbuf_eis,
				  dev->dbbuf_eis_dma);
	dev->dbbuf_dbs = NULL;
	dev->dbbuf_eis = NULL;
}

/*
 * Hand the controller its shadow doorbell and event index pages, before the
 * I/O queues exist so that each is created with its slots. A controller that
 * lacks the feature, or refuses it, simply runs on MMIO doorbells.
 */
int ssdq_dbbuf_setup(struct ssdq_dev *dev, unsigned int nr_queues)
{
	struct device *dmadev = &dev->pdev->dev;
	int ret;

	if (!(dev->oacs & NVME_CTRL_OACS_DBBUF_SUPP))
		return 0;
	dev->dbbuf_len = ssdq_dbbuf_bytes(dev, nr_queues);
	dev->dbbuf_dbs = dma_alloc_coherent(dmadev, dev->dbbuf_len,
					    &dev->dbbuf_dbs_dma, GFP_KERNEL);
	dev->dbbuf_eis = dma_alloc_coherent(dmadev, dev->dbbuf_len,
					    &dev->dbbuf_eis_dma, GFP_KERNEL);
	if (!dev->dbbuf_dbs || !dev->dbbuf_eis) {
		ssdq_dbbuf_free(dev);
		return -ENOMEM;
	}

	ret = ssdq_dbbuf_config(dev);
	if (ret) {
		dev_warn(dmadev,
			 "Doorbell Buffer Config failed (%d), MMIO doorbells only\n",
			 ret);
		ssdq_dbbuf_free(dev);
		return ret < 0 ? ret : 0;
	}
	ssdq_dbbuf_init_queue(&dev->queues[0]);
	dev->shadow_doorbells = true;
	return 0;
}

/*
 * Send Doorbell Buffer Config with zeroed pages: at probe, and again after
 * every reset, which makes the controller forget them along with the queues.
 */
int ssdq_dbbuf_config(struct ssdq_dev *dev)
{
	struct nvme_command c = { };

	if (!dev->dbbuf_dbs)
		return 0;
	if (ssdq_fault_take(dev, SSDQ_FAULT_REFUSE_DBBUF))
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	memset(dev->dbbuf_dbs, 0, dev->dbbuf_len);
	memset(dev->dbbuf_eis, 0, dev->dbbuf_len);
	c.dbbuf.opcode = nvme_admin_dbbuf;
	c.dbbuf.prp1 = cpu_to_le64(dev->dbbuf_dbs_dma);
	c.dbbuf.prp2 = cpu_to_le64(dev->dbbuf_eis_dma);
	return ssdq_admin_exec(dev, &c, NULL);
}

/*
 * The controller refused Doorbell Buffer Config after a reset: run on MMIO
 * doorbells from now on. The I/O queues are stopped; the admin queue's
 * reaper, which publishes its CQ head, is held off while its slots go.
 */
void ssdq_dbbuf_abandon(struct ssdq_dev *dev)
{
	struct ssdq_queue *aq = &dev->queues[0];
	unsigned int qid;

	ssdq_queue_quiesce_reapers(aq);
	for (qid = 0; qid <= dev->nr_io_queues; qid++) {
		struct ssdq_queue *q = &dev->queues[qid];

		q->dbbuf_sq_db = NULL;
		q->dbbuf_sq_ei = NULL;
		q->dbbuf_cq_db = NULL;
		q->dbbuf_cq_ei = NULL;
	}
	ssdq_queue_resume_reapers(aq);
	WRITE_ONCE(dev->shadow_doorbells, false);
	ssdq_dbbuf_free(dev);
}

static struct ssdq_dev *ssdq_from_device(struct device *d)
{
	return dev_to_disk(d)->private_data;
}

/* sysfs switches take 0 or 1; anything else is refused with one line. */
static int ssdq_parse_switch(struct device *d, const char *name,
			     const char *buf, bool *on)
{
	if (kstrtobool(buf, on)) {
		dev_err(d, "plugging/%s takes 0 or 1\n", name);
		return -EINVAL;
	}
	return 0;
}

static ssize_t batching_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  READ_ONCE(ssdq_from_device(d)->batch_doorbells));
}

static ssize_t batching_store(struct device *d, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	bool on;
	int ret;

	ret = ssdq_parse_switch(d, "batching", buf, &on);
	if (ret)
		return ret;
	WRITE_ONCE(ssdq_from_device(d)->batch_doorbells, on);
	return count;
}
static DEVICE_ATTR_RW(batching);

static ssize_t shadow_doorbells_show(struct device *d,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  READ_ONCE(ssdq_from_device(d)->shadow_doorbells));
}

static ssize_t shadow_doorbells_store(struct device *d,
				      struct device_attribute *attr,
				      const char *buf, size_t count)
{
	struct ssdq_dev *dev = ssdq_from_device(d);
	bool on;
	int ret;

	ret = ssdq_parse_switch(d, "shadow_doorbells", buf, &on);
	if (ret)
		return ret;
	if (on && !dev->dbbuf_dbs) {
		dev_err(d, "plugging/shadow_doorbells: the controller has none, only 0 is allowed\n");
		return -EINVAL;
	}
	WRITE_ONCE(dev->shadow_doorbells, on);
	return count;
}
static DEVICE_ATTR_RW(shadow_doorbells);

static struct attribute *ssdq_plug_attrs[] = {
	&dev_attr_batching.attr,
	&dev_attr_shadow_doorbells.attr,
	NULL,
};

const struct attribute_group ssdq_plug_attr_group = {
	.name	= "plugging",
	.attrs	= ssdq_plug_attrs,
};

static int ssdq_plug_stats_show(struct seq_file *m, void *unused)
{
	struct ssdq_dev *dev = m->private;
	unsigned int qid;

	seq_puts(m, "qid submitted batches max_batch sq_db_updates sq_db_mmio cq_db_updates cq_db_mmio\n");
	for (qid = 0; qid <= dev->nr_io_queues; qid++) {
		const struct ssdq_plug_stats *s = &dev->queues[qid].plug;

		seq_printf(m, "%u %llu %llu %llu %llu %llu %llu %llu\n", qid,
			   s->submitted, s->batches, s->max_batch,
			   s->sq_db_updates, s->sq_db_mmio, s->cq_db_updates,
			   s->cq_db_mmio);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_plug_stats);

void ssdq_plug_debugfs_init(struct ssdq_dev *dev)
{
	debugfs_create_file("plugging", 0400, dev->debugfs, dev,
			    &ssdq_plug_stats_fops);
}
