// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq polled queues: queue pairs with no interrupt at all.
 *
 * The load-time poll_queues=N asks for them besides the interrupt-driven
 * ones. Their CQs are created without an interrupt vector (ctrl.c), they
 * form blk-mq's HCTX_TYPE_POLL map, and io_uring's IOPOLL (fio --hipri)
 * reaps them through ->poll, completing in batches (io_comp_batch, io.c).
 * Whoever reaps one holds its cq_poll_lock: a poller, or recovery.
 *
 * Switch:   the poll_queues parameter; per I/O, RWF_HIPRI (fio --hipri)
 * Counters: the "polled" column of /sys/kernel/debug/ssdq/ssdqN/irq
 */
#include <linux/blk-mq.h>

#include <ssdq/ssdq.h>

/* More poll queues than CPUs would leave some without a poller. */
unsigned int ssdq_poll_queues_wanted(void)
{
	return min(ssdq_params.poll_queues, num_possible_cpus());
}

/*
 * The poll map follows the interrupt-driven queues, spread over the CPUs
 * without regard to interrupts. There are no separate read queues.
 */
void ssdq_poll_map_queues(struct blk_mq_tag_set *set)
{
	struct ssdq_dev *dev = set->driver_data;
	struct blk_mq_queue_map *map = &set->map[HCTX_TYPE_POLL];

	if (set->nr_maps <= HCTX_TYPE_POLL)
		return;
	set->map[HCTX_TYPE_READ].nr_queues = 0;
	map->nr_queues = dev->nr_poll_queues;
	map->queue_offset = ssdq_nr_irq_queues(dev);
	blk_mq_map_queues(map);
}

/* ->poll for the HCTX_TYPE_POLL queues: no interrupt ever comes. */
int ssdq_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct ssdq_queue *q = hctx->driver_data;
	int found;

	if (!ssdq_cq_pending(q))
		return 0;
	spin_lock(&q->cq_poll_lock);
	q->reaper = SSDQ_REAPER_POLL;
	found = ssdq_queue_reap(q, INT_MAX, iob);
	q->irq.polled += found;
	spin_unlock(&q->cq_poll_lock);
	return found;
}

/* Reap a poll queue from process context, with no poller meanwhile. */
int ssdq_poll_reap_alone(struct ssdq_queue *q)
{
	int found;

	spin_lock(&q->cq_poll_lock);
	q->reaper = SSDQ_REAPER_RECOVERY;
	found = ssdq_queue_reap(q, INT_MAX, NULL);
	spin_unlock(&q->cq_poll_lock);
	return found;
}
