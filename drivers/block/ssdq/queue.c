// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq queue rings: the submission and completion queues shared with the
 * controller, and every doorbell write that tells it about them.
 *
 * This is the lowest layer of the data path. It knows NVMe commands and
 * CQEs, never requests: a reaper (io.c's for I/O queues, ctrl.c's for the
 * admin queue) hands it a function that handles each CQE (ssdq_cq_reap()
 * in ssdq.h), and batching (plug.c) tells it when to ring.
 *
 * Shadow doorbells (NVMe Doorbell Buffer Config, OACS bit 8; the pages are
 * ctrl.c's): tails and heads are also published in host memory, and the
 * MMIO write is needed only when the controller's event index says it
 * stopped looking. The plugging/shadow_doorbells switch decides whether
 * the event index may spare it.
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>

#include <ssdq/ssdq.h>
#include "trace.h"

static size_t ssdq_sq_bytes(u16 depth)
{
	return depth * sizeof(struct nvme_command);
}

static size_t ssdq_cq_bytes(u16 depth)
{
	return depth * sizeof(struct nvme_completion);
}

/* SQ y's tail doorbell, then CQ y's head doorbell, each a stride apart. */
static unsigned int ssdq_sq_db_index(struct ssdq_queue *q)
{
	return q->qid * 2 * q->dev->db_stride;
}

static unsigned int ssdq_cq_db_index(struct ssdq_queue *q)
{
	return (q->qid * 2 + 1) * q->dev->db_stride;
}

/*
 * Allocate a queue pair's rings. @reap is the reaper of its kind: what the
 * interrupt handler and the pollers call to consume its CQEs.
 */
int ssdq_queue_alloc(struct ssdq_dev *dev, u16 qid, u16 depth,
		     ssdq_reap_fn reap)
{
	struct ssdq_queue *q = &dev->queues[qid];
	struct device *dmadev = &dev->pdev->dev;

	q->dev = dev;
	q->reap = reap;
	q->qid = qid;
	q->depth = depth;
	spin_lock_init(&q->sq_lock);
	spin_lock_init(&q->cq_poll_lock);

	q->cqes = dma_alloc_coherent(dmadev, ssdq_cq_bytes(depth), &q->cq_dma,
				     GFP_KERNEL);
	if (!q->cqes)
		return -ENOMEM;
	q->sq_cmds = dma_alloc_coherent(dmadev, ssdq_sq_bytes(depth),
					&q->sq_dma, GFP_KERNEL);
	if (!q->sq_cmds) {
		dma_free_coherent(dmadev, ssdq_cq_bytes(depth), q->cqes,
				  q->cq_dma);
		q->cqes = NULL;
		return -ENOMEM;
	}
	/* Doorbells sit in BAR0 from 0x1000. */
	q->sq_db = &dev->dbs[ssdq_sq_db_index(q)];
	q->cq_db = &dev->dbs[ssdq_cq_db_index(q)];
	ssdq_queue_set_dbbuf(q, dev->dbbuf_dbs, dev->dbbuf_eis);
	ssdq_queue_reset_rings(q);
	return 0;
}

void ssdq_queue_free(struct ssdq_queue *q)
{
	struct device *dmadev;

	if (!q->dev)
		return;
	dmadev = &q->dev->pdev->dev;
	if (q->sq_cmds)
		dma_free_coherent(dmadev, ssdq_sq_bytes(q->depth), q->sq_cmds,
				  q->sq_dma);
	if (q->cqes)
		dma_free_coherent(dmadev, ssdq_cq_bytes(q->depth), q->cqes,
				  q->cq_dma);
	q->sq_cmds = NULL;
	q->cqes = NULL;
}

/*
 * A freshly created queue starts empty with the phase bit expected at 1.
 * Interrupt-driven queues are reset with their reapers stopped; the lock
 * keeps a poll queue's poller out.
 */
void ssdq_queue_reset_rings(struct ssdq_queue *q)
{
	spin_lock(&q->cq_poll_lock);
	q->sq_tail = 0;
	q->last_sq_tail = 0;
	q->sq_head = 0;
	q->rang_early = false;
	/* Whatever was in flight is gone with the old rings. */
	q->reaped = q->plug.submitted;
	q->cq_head = 0;
	q->cq_phase = 1;
	memset(q->cqes, 0, ssdq_cq_bytes(q->depth));
	spin_unlock(&q->cq_poll_lock);
}

/*
 * Point a queue at its slots of the shadow doorbell and event index pages,
 * or (NULL) back at MMIO doorbells only.
 */
void ssdq_queue_set_dbbuf(struct ssdq_queue *q, __le32 *dbs, __le32 *eis)
{
	q->dbbuf_sq_db = dbs ? &dbs[ssdq_sq_db_index(q)] : NULL;
	q->dbbuf_sq_ei = eis ? &eis[ssdq_sq_db_index(q)] : NULL;
	q->dbbuf_cq_db = dbs ? &dbs[ssdq_cq_db_index(q)] : NULL;
	q->dbbuf_cq_ei = eis ? &eis[ssdq_cq_db_index(q)] : NULL;
}

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
 * The admin queue always takes the MMIO write, as the spec asks. Returns
 * whether it took one.
 */
static bool ssdq_ring(struct ssdq_queue *q, u32 __iomem *db, __le32 *shadow,
		      __le32 *ei, u16 value, u64 *mmio)
{
	if (shadow && !ssdq_dbbuf_publish(shadow, ei, value) && q->qid &&
	    READ_ONCE(q->dev->shadow_doorbells))
		return false;
	writel(value, db);
	(*mmio)++;
	return true;
}

/* Caller holds q->sq_lock. Publishes every command copied so far. */
void ssdq_sq_ring_doorbell(struct ssdq_queue *q)
{
	bool mmio;

	if (q->sq_tail == q->last_sq_tail)
		return;
	mmio = ssdq_ring(q, q->sq_db, q->dbbuf_sq_db, q->dbbuf_sq_ei,
			 q->sq_tail, &q->plug.sq_db_mmio);
	trace_ssdq_sq_doorbell(q, q->last_sq_tail, mmio);
	q->plug.sq_db_updates++;
	q->last_sq_tail = q->sq_tail;
}

/* One command, and its doorbell (the admin queue's way). */
void ssdq_submit_cmd(struct ssdq_queue *q, const struct nvme_command *cmd)
{
	spin_lock(&q->sq_lock);
	ssdq_sq_copy_cmd(q, cmd);
	ssdq_sq_ring_doorbell(q);
	spin_unlock(&q->sq_lock);
}

/* Called by the queue's reaper once it has consumed CQEs. */
void ssdq_cq_ring_doorbell(struct ssdq_queue *q)
{
	ssdq_ring(q, q->cq_db, q->dbbuf_cq_db, q->dbbuf_cq_ei, q->cq_head,
		  &q->plug.cq_db_mmio);
	q->plug.cq_db_updates++;
}
