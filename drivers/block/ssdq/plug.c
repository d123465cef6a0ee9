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
 * A batch's one doorbell comes at its end: until then the controller does
 * not know of its first command. That costs nothing while the controller is
 * busy with earlier commands, but if it had fetched everything (the SQ was
 * empty) it sits idle while the rest of the batch is prepared. With
 * ring_idle, such a batch's first command gets its own doorbell, so the
 * controller starts on it at once: at most two doorbells per batch, and
 * still one while the controller has work queued.
 *
 * The I/O path (io.c) asks ssdq_plug_ring_now() after each command copied;
 * the ring (queue.c) writes the doorbells, and with shadow doorbells
 * (ctrl.c configures them) may spare the MMIO write altogether.
 *
 * Switches: /sys/block/ssdqN/plugging/{batching,ring_idle,shadow_doorbells}
 * Counters: /sys/kernel/debug/ssdq/ssdqN/plugging, one line per queue
 */

#include <ssdq/ssdq.h>

/* Batching is on from the start; shadow doorbells once configured. */
void ssdq_plug_init(struct ssdq_dev *dev)
{
	dev->batch_doorbells = true;
}

/*
 * Had the controller fetched every command it was told of? The head in the
 * last CQE reaped says how far it had read; a later fetch only makes the
 * answer "yes" sooner, a stale one errs towards batching.
 */
static bool ssdq_plug_sq_was_empty(struct ssdq_queue *q)
{
	return READ_ONCE(q->sq_head) == q->last_sq_tail;
}

/*
 * A command was copied into the SQ (caller holds sq_lock): ring now? For
 * the last of a batch; for every command if batching is off; and with
 * ring_idle, for the first of a batch (@first: no command before it waits
 * for a doorbell) that finds the SQ empty. Once per batch: after the early
 * ring the next command is "first" again, and the controller may have
 * fetched the first one already.
 */
bool ssdq_plug_ring_now(struct ssdq_queue *q, bool first, bool last)
{
	struct ssdq_dev *dev = q->dev;

	if (last || !READ_ONCE(dev->batch_doorbells)) {
		q->rang_early = false;
		return true;
	}
	if (first && !q->rang_early && READ_ONCE(dev->ring_idle) &&
	    ssdq_plug_sq_was_empty(q)) {
		q->rang_early = true;
		q->plug.early_rings++;
		return true;
	}
	return false;
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
		dev_err_ratelimited(&dev->pdev->dev,
				    "plugging/shadow_doorbells: the controller has none, only 0 is allowed\n");
		return -EINVAL;
	}
	WRITE_ONCE(dev->shadow_doorbells, on);
	return 0;
}

static struct ssdq_attr ssdq_plug_batching =
	SSDQ_ATTR_BOOL(batching, "plugging", batch_doorbells, NULL);
static struct ssdq_attr ssdq_plug_ring_idle =
	SSDQ_ATTR_BOOL(ring_idle, "plugging", ring_idle, NULL);
static struct ssdq_attr ssdq_plug_shadow_doorbells =
	SSDQ_ATTR_BOOL(shadow_doorbells, "plugging", shadow_doorbells,
		       ssdq_plug_set_shadow);

SSDQ_ATTR_GROUP(ssdq_plug_attr_group, "plugging",
		&ssdq_plug_batching.dattr.attr,
		&ssdq_plug_ring_idle.dattr.attr,
		&ssdq_plug_shadow_doorbells.dattr.attr);

const struct ssdq_queue_stats ssdq_plug_stats =
	SSDQ_QUEUE_STATS("plugging", plug, struct ssdq_plug_stats,
			 "qid submitted batches max_batch sq_db_updates sq_db_mmio cq_db_updates cq_db_mmio early_rings");
