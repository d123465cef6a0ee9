// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq interrupt mitigation: iopoll and polled queues.
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
 * Polled queues (load-time poll_queues=N) have no interrupt at all: they
 * form blk-mq's HCTX_TYPE_POLL map, and io_uring's IOPOLL (fio --hipri)
 * reaps them through ->poll, completing in batches (io_comp_batch).
 *
 * Switches: /sys/block/ssdqN/irq/{mode,budget,defer_us,defer_rounds}
 * Counters: /sys/kernel/debug/ssdq/ssdqN/irq, one line per queue
 */
#include <linux/debugfs.h>
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/seq_file.h>

#include <ssdq/ssdq.h>

#define SSDQ_IRQ_MAX_BUDGET	1024
#define SSDQ_IRQ_MAX_DEFER_US	10000
#define SSDQ_IRQ_MAX_DEFER_ROUNDS	100

static const char * const ssdq_irq_mode_names[] = {
	[SSDQ_IRQ_DIRECT]	= "direct",
	[SSDQ_IRQ_POLL]		= "irqpoll",
};

/* Mask the vector and let the softirq reap; the caller holds irq_lock. */
static void ssdq_irqpoll_start(struct ssdq_queue *q)
{
	if (q->polling)
		return;
	disable_irq_nosync(q->irqnr);
	q->polling = true;
	irq_poll_sched(&q->iop);
}

irqreturn_t ssdq_irq(int irq, void *data)
{
	struct ssdq_queue *q = data;
	int found;

	if (unlikely(ssdq_fault_drop_irq(q)))
		return IRQ_HANDLED;
	q->irq.interrupts++;
	/*
	 * irq_lock orders this against an irq_poll round: while one owns the
	 * CQ (q->polling), even a direct-mode handler leaves it alone, e.g.
	 * right after the mode was switched.
	 */
	spin_lock(&q->irq_lock);
	if (q->polling) {
		found = 1;
	} else if (q->qid && READ_ONCE(q->dev->irq_mode) == SSDQ_IRQ_POLL) {
		ssdq_irqpoll_start(q);
		found = 1;
	} else {
		found = ssdq_cq_reap(q, INT_MAX, NULL);
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

	found = ssdq_cq_reap(q, budget, NULL);
	q->irq.rounds++;
	q->irq.completions += found;
	if (found >= budget) {
		q->irq.budget_exhausted++;
		return budget;		/* irq_poll keeps us scheduled */
	}
	if (ssdq_irqpoll_defer(q, found))
		return found;

	spin_lock_irqsave(&q->irq_lock, flags);
	irq_poll_complete(iop);
	q->polling = false;
	enable_irq(q->irqnr);
	/* A CQE that landed after our last look: go round again. */
	if (ssdq_cq_pending(q))
		ssdq_irqpoll_start(q);
	spin_unlock_irqrestore(&q->irq_lock, flags);
	return found;
}

void ssdq_irq_init_queue(struct ssdq_queue *q)
{
	spin_lock_init(&q->irq_lock);
	spin_lock_init(&q->cq_poll_lock);
	if (q->qid && !q->polled) {
		irq_poll_init(&q->iop, READ_ONCE(q->dev->irq_budget),
			      ssdq_irqpoll);
		hrtimer_init(&q->defer_timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_REL);
		q->defer_timer.function = ssdq_defer_timer;
	}
}

/*
 * Stop irq_poll and the deferred re-arm timer of an interrupt-driven I/O
 * queue: neither runs again until ssdq_queue_resume_reapers(). Also what
 * teardown calls before it frees the vector.
 */
void ssdq_queue_stop_irqpoll(struct ssdq_queue *q)
{
	irq_poll_disable(&q->iop);
	/* A round that just deferred has its timer started by now. */
	spin_lock_irq(&q->irq_lock);
	spin_unlock_irq(&q->irq_lock);
	hrtimer_cancel(&q->defer_timer);
	q->deferring = false;
}

/*
 * Stop everything that reaps an interrupt-driven queue, so the caller can
 * reap it (or reset it) alone: the irq_poll softirq, then the interrupt
 * handler. A queue parked in irqpoll mode had its vector masked by the
 * handler; that mask is taken over here so enables and disables balance.
 * (Polled queues have no such reapers; their lock serves instead.)
 */
void ssdq_queue_quiesce_reapers(struct ssdq_queue *q)
{
	if (q->qid)
		ssdq_queue_stop_irqpoll(q);
	disable_irq(q->irqnr);
	if (q->polling) {
		q->polling = false;
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
void ssdq_queue_resume_reapers(struct ssdq_queue *q)
{
	if (q->qid)
		irq_poll_enable(&q->iop);
	enable_irq(q->irqnr);
}

/* ->poll for the HCTX_TYPE_POLL queues: no interrupt ever comes. */
int ssdq_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob)
{
	struct ssdq_queue *q = hctx->driver_data;
	int found;

	if (!ssdq_cq_pending(q))
		return 0;
	spin_lock(&q->cq_poll_lock);
	found = ssdq_cq_reap(q, INT_MAX, iob);
	q->irq.polled += found;
	spin_unlock(&q->cq_poll_lock);
	return found;
}

static struct ssdq_dev *ssdq_irq_dev(struct device *d)
{
	return dev_to_disk(d)->private_data;
}

static ssize_t mode_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	return ssdq_sysfs_emit_choice(buf, ssdq_irq_mode_names,
				      ARRAY_SIZE(ssdq_irq_mode_names),
				      READ_ONCE(ssdq_irq_dev(d)->irq_mode));
}

static ssize_t mode_store(struct device *d, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	int mode = sysfs_match_string(ssdq_irq_mode_names, buf);

	if (mode < 0) {
		dev_err(d, "irq/mode takes direct or irqpoll\n");
		return -EINVAL;
	}
	WRITE_ONCE(ssdq_irq_dev(d)->irq_mode, mode);
	return count;
}
static DEVICE_ATTR_RW(mode);

static ssize_t budget_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(ssdq_irq_dev(d)->irq_budget));
}

static ssize_t budget_store(struct device *d, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct ssdq_dev *dev = ssdq_irq_dev(d);
	unsigned int val, qid;

	if (kstrtouint(buf, 0, &val) || !val || val > SSDQ_IRQ_MAX_BUDGET) {
		dev_err(d, "irq/budget takes 1-%u\n", SSDQ_IRQ_MAX_BUDGET);
		return -EINVAL;
	}
	WRITE_ONCE(dev->irq_budget, val);
	/* irq_poll reads the weight afresh each round. */
	for (qid = 1; qid <= dev->nr_io_queues; qid++)
		if (!dev->queues[qid].polled)
			WRITE_ONCE(dev->queues[qid].iop.weight, val);
	return count;
}
static DEVICE_ATTR_RW(budget);

static ssize_t defer_us_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(ssdq_irq_dev(d)->irq_defer_us));
}

static ssize_t defer_us_store(struct device *d, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	unsigned int val;

	if (kstrtouint(buf, 0, &val) || val > SSDQ_IRQ_MAX_DEFER_US) {
		dev_err(d, "irq/defer_us takes 0-%u\n", SSDQ_IRQ_MAX_DEFER_US);
		return -EINVAL;
	}
	WRITE_ONCE(ssdq_irq_dev(d)->irq_defer_us, val);
	return count;
}
static DEVICE_ATTR_RW(defer_us);

static ssize_t defer_rounds_show(struct device *d,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(ssdq_irq_dev(d)->irq_defer_rounds));
}

static ssize_t defer_rounds_store(struct device *d,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	unsigned int val;

	if (kstrtouint(buf, 0, &val) || !val ||
	    val > SSDQ_IRQ_MAX_DEFER_ROUNDS) {
		dev_err(d, "irq/defer_rounds takes 1-%u\n",
			SSDQ_IRQ_MAX_DEFER_ROUNDS);
		return -EINVAL;
	}
	WRITE_ONCE(ssdq_irq_dev(d)->irq_defer_rounds, val);
	return count;
}
static DEVICE_ATTR_RW(defer_rounds);

static struct attribute *ssdq_irq_attrs[] = {
	&dev_attr_mode.attr,
	&dev_attr_budget.attr,
	&dev_attr_defer_us.attr,
	&dev_attr_defer_rounds.attr,
	NULL,
};

const struct attribute_group ssdq_irq_attr_group = {
	.name	= "irq",
	.attrs	= ssdq_irq_attrs,
};

static int ssdq_irq_stats_show(struct seq_file *m, void *unused)
{
	struct ssdq_dev *dev = m->private;
	unsigned int qid;

	seq_puts(m, "qid interrupts completions rounds budget_exhausted polled deferred\n");
	for (qid = 0; qid <= dev->nr_io_queues; qid++) {
		const struct ssdq_irq_stats *s = &dev->queues[qid].irq;

		seq_printf(m, "%u %llu %llu %llu %llu %llu %llu\n", qid,
			   s->interrupts, s->completions, s->rounds,
			   s->budget_exhausted, s->polled, s->deferred);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_irq_stats);

void ssdq_irq_debugfs_init(struct ssdq_dev *dev)
{
	debugfs_create_file("irq", 0400, dev->debugfs, dev,
			    &ssdq_irq_stats_fops);
}
