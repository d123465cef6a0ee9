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
 * The I/O path (io.c) asks ssdq_plug_ring_now() after each command copied;
 * the ring (queue.c) writes the doorbells, and with shadow doorbells
 * (ctrl.c configures them) may spare the MMIO write altogether.
 *
 * Switches: /sys/block/ssdqN/plugging/{batching,shadow_doorbells}
 * Counters: /sys/kernel/debug/ssdq/ssdqN/plugging, one line per queue
 */

#include <ssdq/ssdq.h>

/* Batching is on from the start; shadow doorbells once configured. */
void ssdq_plug_init(struct ssdq_dev *dev)
{
	dev->batch_doorbells = true;
}

/*
 * A command was copied into the SQ: ring now? Only for the last of a batch,
 * unless batching is off (then every command gets its own doorbell).
 */
bool ssdq_plug_ring_now(struct ssdq_queue *q, bool last)
{
	return last || !READ_ONCE(q->dev->batch_doorbells);
}

/* A plug list's run for one queue went in under one lock hold. */
void ssdq_plug_account_batch(struct ssdq_queue *q, unsigned int n)
{
	q->plug.batches++;
	q->plug.max_batch = max_t(u64, q->plug.max_batch, n);
}

/* Shadow doorbells need the controller to have taken the buffer. */
static int ssdq_plug_set_shadow(struct ssdq_dev *dev, unsigned int on)
{
	if (on && !dev->dbbuf_dbs) {
		dev_err_ratelimited(disk_to_dev(dev->disk),
				    "plugging/shadow_doorbells: the controller has none, only 0 is allowed\n");
		return -EINVAL;
	}
	WRITE_ONCE(dev->shadow_doorbells, on);
	return 0;
}

static struct ssdq_attr ssdq_plug_batching =
	SSDQ_ATTR_BOOL(batching, "plugging", batch_doorbells, NULL);
static struct ssdq_attr ssdq_plug_shadow_doorbells =
	SSDQ_ATTR_BOOL(shadow_doorbells, "plugging", shadow_doorbells,
		       ssdq_plug_set_shadow);

SSDQ_ATTR_GROUP(ssdq_plug_attr_group, "plugging",
		&ssdq_plug_batching.dattr.attr,
		&ssdq_plug_shadow_doorbells.dattr.attr);

const struct ssdq_queue_stats ssdq_plug_stats =
	SSDQ_QUEUE_STATS("plugging", plug, struct ssdq_plug_stats,
			 "qid submitted batches max_batch sq_db_updates sq_db_mmio cq_db_updates cq_db_mmio");
