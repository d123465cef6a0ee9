// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq interrupts: the vectors, their handler, and iopoll-style mitigation.
 *
 * An interrupt per completion is what a fast SSD cannot afford. Modes, per
 * device:
 *   direct   the hard interrupt handler reaps the CQ
 *   irqpoll  the handler masks its vector and schedules lib/irq_poll (the
 *            kernel's blk-iopoll); the softirq reaps up to budget CQEs a
 *            round and unmasks only once the CQ is empty. With defer_us,
 *            a round that found completions does not unmask: like NAPI's
 *            deferred hard-irq re-arm, a timer runs the next round defer_us
 *            later, so while completions keep coming they take no
 *            interrupt at all, and the CPU is free for the submitter in
 *            between. After defer_rounds deferred rounds in a row find the
 *            CQ empty, the vector is unmasked.
 * A completion never waits for an interrupt that will not come: the unmask
 * path looks at the CQ again, and an interrupt that arrived while masked is
 * replayed by the IRQ core when the vector is unmasked.
 *
 * Every reaper here calls the queue's own (ssdq_queue_reap()): this file
 * decides when a CQ is reaped and by whom, not what a CQE means. Polled
 * queues, which have no vector, are poll.c's.
 *
 * Switches: /sys/block/ssdqN/irq/{mode,budget,defer_us,defer_rounds}
 * Counters: /sys/kernel/debug/ssdq/ssdqN/irq, one line per queue
 */
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/pci.h>

#include <ssdq/ssdq.h>
#include "trace.h"

#define SSDQ_IRQ_MAX_BUDGET	1024
#define SSDQ_IRQ_MAX_DEFER_US	10000
#define SSDQ_IRQ_MAX_DEFER_ROUNDS	100

#define SSDQ_IRQ_DEFAULT_BUDGET	64
#define SSDQ_IRQ_DEFAULT_DEFER_ROUNDS	2

static const char * const ssdq_irq_mode_names[] = {
	[SSDQ_IRQ_DIRECT]	= "direct",
	[SSDQ_IRQ_IRQPOLL]	= "irqpoll",
	NULL
};

/* The switches' defaults: direct mode, no deferral. */
void ssdq_irq_init(struct ssdq_dev *dev)
{
	dev->irq_mode = SSDQ_IRQ_DIRECT;
	dev->irq_budget = SSDQ_IRQ_DEFAULT_BUDGET;
	dev->irq_defer_us = 0;
	dev->irq_defer_rounds = SSDQ_IRQ_DEFAULT_DEFER_ROUNDS;
}

/* Mask the vector and let the softirq reap; the caller holds irq_lock. */
static void ssdq_irqpoll_start(struct ssdq_queue *q)
{
	if (q->in_irqpoll)
		return;
	disable_irq_nosync(q->irqnr);
	q->in_irqpoll = true;
	q->reaper = SSDQ_REAPER_IRQPOLL;
	trace_ssdq_irqpoll_mask(q);
	irq_poll_sched(&q->iop);
}

static irqreturn_t ssdq_irq(int irq, void *data)
{
	struct ssdq_queue *q = data;
	int found;

	if (unlikely(ssdq_fault_drop_irq(q)))
		return IRQ_HANDLED;
	q->irq.interrupts++;
	/*
	 * irq_lock orders this against an irq_poll round: while one owns the
	 * CQ (q->in_irqpoll), even a direct-mode handler leaves it alone, e.g.
	 * right after the mode was switched.
	 */
	spin_lock(&q->irq_lock);
	if (q->in_irqpoll) {
		found = 1;
	} else if (q->qid && READ_ONCE(q->dev->irq_mode) == SSDQ_IRQ_IRQPOLL) {
		ssdq_irqpoll_start(q);
		found = 1;
	} else {
		q->reaper = SSDQ_REAPER_IRQ;
		found = ssdq_queue_reap(q, INT_MAX, NULL);
		q->irq.completions += found;
	}
	spin_unlock(&q->irq_lock);
	return found ? IRQ_HANDLED : IRQ_NONE;
}

/* The deferred re-arm timer: run the next round, vector still masked. */
static enum hrtimer_restart ssdq_defer_timer(struct hrtimer *timer)
{
	struct ssdq_queue *q = container_of(timer, struct ssdq_queue,
					    defer_timer);

	q->irq.deferred++;
	q->reaper = SSDQ_REAPER_TIMER;
	irq_poll_sched(&q->iop);
	return HRTIMER_NORESTART;
}

/*
 * Completions keep coming: look again in defer_us rather than unmask, until
 * defer_rounds deferred looks in a row found nothing.
 */
static bool ssdq_irqpoll_defer(struct ssdq_queue *q, int found)
{
	unsigned int defer_us = READ_ONCE(q->dev->irq_defer_us);
	unsigned long flags;

	if (found || !q->deferring)
		q->defer_empty = 0;
	else
		q->defer_empty++;
	q->deferring = defer_us && (found || q->deferring) &&
		       q->defer_empty < READ_ONCE(q->dev->irq_defer_rounds);
	if (!q->deferring)
		return false;
	/* Under irq_lock, so a quiesce cannot slip in before the timer. */
	spin_lock_irqsave(&q->irq_lock, flags);
	irq_poll_complete(&q->iop);
	hrtimer_start(&q->defer_timer, ns_to_ktime((u64)defer_us * NSEC_PER_USEC),
		      HRTIMER_MODE_REL);
	spin_unlock_irqrestore(&q->irq_lock, flags);
	return true;
}

static int ssdq_irqpoll(struct irq_poll *iop, int budget)
{
	struct ssdq_queue *q = container_of(iop, struct ssdq_queue, iop);
	unsigned long flags;
	int found;

	found = ssdq_queue_reap(q, budget, NULL);
	q->irq.rounds++;
	q->irq.completions += found;
	if (found >= budget) {
		q->irq.budget_exhausted++;
		trace_ssdq_irqpoll_round(q, found, budget, "again");
		return budget;		/* irq_poll keeps us scheduled */
	}
	if (ssdq_irqpoll_defer(q, found)) {
		trace_ssdq_irqpoll_round(q, found, budget, "defer");
		return found;
	}
	trace_ssdq_irqpoll_round(q, found, budget, "unmask");

	spin_lock_irqsave(&q->irq_lock, flags);
	irq_poll_complete(iop);
	q->in_irqpoll = false;
	enable_irq(q->irqnr);
	/* A CQE that landed after our last look: go round again. */
	if (ssdq_cq_pending(q))
		ssdq_irqpoll_start(q);
	spin_unlock_irqrestore(&q->irq_lock, flags);
	return found;
}

/*
 * Give a queue its vector: the admin queue's, or an I/O queue's own, with
 * irq_poll and the deferral timer ready for irqpoll mode. Only for a queue
 * nothing reaps yet: at probe (the admin queue twice, its first vector
 * freed in between), never on a live one.
 */
int ssdq_irq_request(struct ssdq_queue *q)
{
	struct ssdq_dev *dev = q->dev;
	int ret;

	spin_lock_init(&q->irq_lock);
	if (q->qid) {
		irq_poll_init(&q->iop, READ_ONCE(dev->irq_budget),
			      ssdq_irqpoll);
		ssdq_hrtimer_setup(&q->defer_timer, ssdq_defer_timer,
				   CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	}
	ret = pci_request_irq(dev->pdev, q->vector, ssdq_irq, NULL, q,
			      "ssdq%dq%u", dev->instance, q->qid);
	q->irq_requested = !ret;
	/* pci_irq_vector() may sleep: look it up once, here. */
	if (!ret)
		q->irqnr = pci_irq_vector(dev->pdev, q->vector);
	return ret;
}

/*
 * Stop irq_poll and the deferred re-arm timer of an interrupt-driven I/O
 * queue: neither runs again until ssdq_irq_unquiesce().
 */
static void ssdq_irqpoll_stop(struct ssdq_queue *q)
{
	irq_poll_disable(&q->iop);
	/* A round that just deferred has its timer started by now. */
	spin_lock_irq(&q->irq_lock);
	spin_unlock_irq(&q->irq_lock);
	hrtimer_cancel(&q->defer_timer);
	q->deferring = false;
}

/* Give the vector back; a deferred re-arm may still be polling: stop it. */
void ssdq_irq_free(struct ssdq_queue *q)
{
	if (!q->irq_requested)
		return;
	if (q->qid)
		ssdq_irqpoll_stop(q);
	pci_free_irq(q->dev->pdev, q->vector, q);
	q->irq_requested = false;
}

/*
 * Stop everything that reaps an interrupt-driven queue, so the caller can
 * reap it (or reset it) alone: the irq_poll softirq, then the interrupt
 * handler. A queue parked in irqpoll mode had its vector masked by the
 * handler; that mask is taken over here so enables and disables balance.
 */
void ssdq_irq_quiesce(struct ssdq_queue *q)
{
	if (q->qid)
		ssdq_irqpoll_stop(q);
	disable_irq(q->irqnr);
	if (q->in_irqpoll) {
		q->in_irqpoll = false;
		enable_irq(q->irqnr);
	}
}

/*
 * irq_poll first: an interrupt that came while the vector was disabled is
 * replayed by enable_irq(), and its handler may mask the vector again and
 * schedule irq_poll, which must then be able to run. The other way round,
 * irq_poll_sched() would find the SCHED bit still held by the disabler, do
 * nothing, and leave the queue masked with nobody reaping it.
 */
void ssdq_irq_unquiesce(struct ssdq_queue *q)
{
	if (q->qid)
		irq_poll_enable(&q->iop);
	enable_irq(q->irqnr);
}

/*
 * Reap from process context, alone: no handler, softirq or poller
 * meanwhile. What a timeout and an admin command that waited too long use
 * to tell a lost interrupt from a lost command.
 */
int ssdq_queue_reap_alone(struct ssdq_queue *q)
{
	int found;

	if (q->poll_queue)
		return ssdq_poll_reap_alone(q);
	ssdq_irq_quiesce(q);
	q->reaper = SSDQ_REAPER_RECOVERY;
	found = ssdq_queue_reap(q, INT_MAX, NULL);
	ssdq_irq_unquiesce(q);
	return found;
}

/* A new budget reaches irq_poll, which reads its weight afresh each round. */
static int ssdq_irq_set_budget(struct ssdq_dev *dev, unsigned int val)
{
	unsigned int qid;

	WRITE_ONCE(dev->irq_budget, val);
	for (qid = 1; qid <= ssdq_nr_irq_queues(dev); qid++)
		WRITE_ONCE(dev->queues[qid].iop.weight, val);
	return 0;
}

static struct ssdq_attr ssdq_irq_mode =
	SSDQ_ATTR_CHOICE(mode, "irq", irq_mode, ssdq_irq_mode_names);
static struct ssdq_attr ssdq_irq_budget =
	SSDQ_ATTR_UINT(budget, "irq", irq_budget, 1, SSDQ_IRQ_MAX_BUDGET,
		       ssdq_irq_set_budget);
static struct ssdq_attr ssdq_irq_defer_us =
	SSDQ_ATTR_UINT(defer_us, "irq", irq_defer_us, 0,
		       SSDQ_IRQ_MAX_DEFER_US, NULL);
static struct ssdq_attr ssdq_irq_defer_rounds =
	SSDQ_ATTR_UINT(defer_rounds, "irq", irq_defer_rounds, 1,
		       SSDQ_IRQ_MAX_DEFER_ROUNDS, NULL);

SSDQ_ATTR_GROUP(ssdq_irq_attr_group, "irq",
		&ssdq_irq_mode.dattr.attr, &ssdq_irq_budget.dattr.attr,
		&ssdq_irq_defer_us.dattr.attr,
		&ssdq_irq_defer_rounds.dattr.attr);

const struct ssdq_queue_stats ssdq_irq_stats =
	SSDQ_QUEUE_STATS("irq", irq, struct ssdq_irq_stats,
			 "qid interrupts completions rounds budget_exhausted polled deferred");
