// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq queue rings: the submission and completion queues shared with the
 * controller, their doorbells and the reaping of completions.
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>

#include <ssdq/ssdq.h>

static size_t ssdq_sq_bytes(u16 depth)
{
	return depth * sizeof(struct nvme_command);
}

static size_t ssdq_cq_bytes(u16 depth)
{
	return depth * sizeof(struct nvme_completion);
}

/* Doorbells sit in BAR0 from 0x1000: SQ y tail, then CQ y head, each stride. */
static void ssdq_queue_set_doorbells(struct ssdq_queue *q)
{
	struct ssdq_dev *dev = q->dev;

	q->sq_db = &dev->dbs[q->qid * 2 * dev->db_stride];
	q->cq_db = &dev->dbs[(q->qid * 2 + 1) * dev->db_stride];
}

int ssdq_queue_alloc(struct ssdq_dev *dev, u16 qid, u16 depth)
{
	struct ssdq_queue *q = &dev->queues[qid];
	struct device *dmadev = &dev->pdev->dev;

	q->dev = dev;
	q->qid = qid;
	q->depth = depth;
	spin_lock_init(&q->sq_lock);
	ssdq_irq_init_queue(q);
	if (qid && !zalloc_cpumask_var(&q->steer_pending, GFP_KERNEL))
		return -ENOMEM;

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
	ssdq_queue_set_doorbells(q);
	ssdq_dbbuf_init_queue(q);
	ssdq_queue_reset_rings(q);
	return 0;
}

void ssdq_queue_free(struct ssdq_queue *q)
{
	struct device *dmadev;

	if (!q->dev)
		return;
	if (q->qid)
		free_cpumask_var(q->steer_pending);
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
 * keeps a polled queue's poller out.
 */
void ssdq_queue_reset_rings(struct ssdq_queue *q)
{
	spin_lock(&q->cq_poll_lock);
	q->sq_tail = 0;
	q->last_sq_tail = 0;
	q->cq_head = 0;
	q->cq_phase = 1;
	memset(q->cqes, 0, ssdq_cq_bytes(q->depth));
	spin_unlock(&q->cq_poll_lock);
}

/* Caller holds q->sq_lock. */
void ssdq_sq_copy_cmd(struct ssdq_queue *q, const struct nvme_command *cmd)
{
	memcpy(&q->sq_cmds[q->sq_tail], cmd, sizeof(*cmd));
	if (++q->sq_tail == q->depth)
		q->sq_tail = 0;
}

bool ssdq_cq_pending(struct ssdq_queue *q)
{
	struct nvme_completion *cqe = &q->cqes[q->cq_head];

	return (le16_to_cpu(READ_ONCE(cqe->status)) & 1) == q->cq_phase;
}

static void ssdq_cq_advance(struct ssdq_queue *q)
{
	if (++q->cq_head == q->depth) {
		q->cq_head = 0;
		q->cq_phase ^= 1;
	}
}

/*
 * Consume every new CQE and tell the controller once, at the end, how far we
 * got. Callers make sure only one context reaps a queue at a time: its
 * interrupt handler, or a poller with that interrupt disabled.
 */
int ssdq_cq_reap(struct ssdq_queue *q, int budget, struct io_comp_batch *iob)
{
	int found = 0;

	while (found < budget && ssdq_cq_pending(q)) {
		struct nvme_completion *cqe = &q->cqes[q->cq_head];

		/* The phase bit was seen; read the rest of the entry after it. */
		dma_rmb();
		if (q->qid)
			ssdq_io_complete(q, cqe, iob);
		else
			ssdq_admin_complete(q, cqe);
		ssdq_cq_advance(q);
		found++;
	}
	if (found)
		ssdq_cq_ring_doorbell(q);
	if (q->qid && !cpumask_empty(q->steer_pending))
		ssdq_steer_flush(q);
	return found;
}

/* Reap from process context, alone: no handler, softirq or poller meanwhile. */
int ssdq_cq_reap_exclusive(struct ssdq_queue *q)
{
	int found;

	if (q->polled) {
		spin_lock(&q->cq_poll_lock);
		found = ssdq_cq_reap(q, INT_MAX, NULL);
		spin_unlock(&q->cq_poll_lock);
		return found;
	}
	ssdq_queue_quiesce_reapers(q);
	found = ssdq_cq_reap(q, INT_MAX, NULL);
	ssdq_queue_resume_reapers(q);
	return found;
}
