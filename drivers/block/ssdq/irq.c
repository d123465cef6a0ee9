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
 *   adaptive each queue moves between the two by itself: direct while
 *            deferring gains nothing, irqpoll with a deferral it picks
 *            from a short ladder when that reaps more per interrupt
 *            without reaping less per second (ssdq_moder_decide()).
 * A completion never waits for an interrupt that will not come: the unmask
 * path looks at the CQ again, and an interrupt that arrived while masked is
 * replayed by the IRQ core when the vector is unmasked. A queue whose CPUs
 * all go offline reaps directly until one is back (ssdq_irq_cpu_offline()):
 * the IRQ core shuts its vector down, which must not be masked then.
 *
 * Every reaper here calls the queue's own (ssdq_queue_reap()): this file
 * decides when a CQ is reaped and by whom, not what a CQE means. Polled
 * queues, which have no vector, are poll.c's.
 *
 * Switches: /sys/block/ssdqN/irq/{mode,budget,defer_us,defer_rounds}
 * Counters: /sys/kernel/debug/ssdq/ssdqN/irq, one line per queue
 */
#include <linux/cpuhotplug.h>
#include <linux/interrupt.h>
#include <linux/irq_poll.h>
#include <linux/math64.h>
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
	[SSDQ_IRQ_ADAPTIVE]	= "adaptive",
	NULL
};

/*
 * Adaptive moderation, learned from lib/dim's rdma_dim (which the RDMA core
 * pairs with irq_poll in drivers/infiniband/core/cq.c) but kept here: lib/dim
 * is not built into every kernel ssdq supports. Each queue has a level, an
 * index into this ladder of deferrals; level 0 is direct mode. Every
 * SSDQ_MODER_EVENTS events (interrupts and deferred rounds: each costs the
 * CPU an interrupt) the queue compares the window's completions per second,
 * then its completions per event, with the last window's, and keeps stepping
 * the way that helped or turns back. The levels are short next to an SSD's
 * service time, so a step costs little latency.
 */
static const unsigned int ssdq_moder_defer_us[] = { 0, 8, 16, 32, 64, 128 };
#define SSDQ_MODER_LEVELS	ARRAY_SIZE(ssdq_moder_defer_us)
#define SSDQ_MODER_EVENTS	128
#define SSDQ_MODER_MAX_NS	NSEC_PER_SEC

/* The switches' defaults: direct mode, no deferral. */
void ssdq_irq_init(struct ssdq_dev *dev)
{
	dev->irq_mode = SSDQ_IRQ_DIRECT;
	dev->irq_budget = SSDQ_IRQ_DEFAULT_BUDGET;
	dev->irq_defer_us = 0;
	dev->irq_defer_rounds = SSDQ_IRQ_DEFAULT_DEFER_ROUNDS;
}

/*
 * Commands submitted and not yet reaped. The submitter's count is read
 * without its lock: a command added just after is one this reaper would
 * not have waited for anyway, and its completion interrupts. Signed, so a
 * stray CQE (counted in reaped) cannot make an idle queue look busy. A
 * wrong answer, as from a torn read on 32-bit, costs a round or an
 * interrupt, never a completion: see ssdq_irqpoll().
 */
static bool ssdq_queue_busy(struct ssdq_queue *q)
{
	return (s64)(READ_ONCE(q->plug.submitted) - q->reaped) > 0;
}

/* 1 if @cur is better than @prev by more than 1/@frac of it, -1 if worse. */
static int ssdq_moder_cmp(u32 cur, u32 prev, unsigned int frac)
{
	if (!prev || abs((s64)cur - prev) * frac <= prev)
		return 0;
	return cur > prev ? 1 : -1;
}

/*
 * One window's verdict: throughput first, then completions per event. A
 * deferral has to keep earning its place: when neither moved, the queue
 * steps back toward direct, so a light load (one completion per event
 * whatever the level) or a gain that was only noise ends up there. A
 * window with no measurement (cps 0: see ssdq_moder_update()) moved
 * nothing.
 */
static void ssdq_moder_decide(struct ssdq_queue *q, u32 cps, u32 cpe)
{
	struct ssdq_moder *m = &q->moder;
	unsigned int level = q->irq.level;
	int cmp;

	cmp = cps ? ssdq_moder_cmp(cps, m->prev_cps, 16) : 0;
	if (!cmp && cps)
		cmp = ssdq_moder_cmp(cpe, m->prev_cpe, 10);
	if (cmp < 0)
		m->step = -m->step;
	if (cmp) {
		if ((m->step < 0 && level == 0) ||
		    (m->step > 0 && level == SSDQ_MODER_LEVELS - 1))
			m->step = -m->step;
		level += m->step;
	} else if (level) {
		level--;
		m->step = -1;
	}
	m->prev_cps = cps;
	m->prev_cpe = cpe;
	if (level != q->irq.level) {
		WRITE_ONCE(q->irq.level, level);
		q->irq.steps++;
	}
	trace_ssdq_moder(q, cps, cpe, level, m->step);
}

/*
 * After each reap in adaptive mode: close the window once it holds enough
 * events. Only the queue's current reaper calls this, so the state needs
 * no lock of its own. A window longer than SSDQ_MODER_MAX_NS spans idle
 * time or time in another mode, so it measured nothing about the level:
 * it is judged as one that moved nothing (cps and cpe 0).
 */
static void ssdq_moder_update(struct ssdq_queue *q)
{
	struct ssdq_moder *m = &q->moder;
	u64 events = q->irq.interrupts + q->irq.deferred;
	u64 comps, now, ns;

	if (events - m->start_events < SSDQ_MODER_EVENTS)
		return;
	now = ktime_get_ns();
	ns = now - m->start_ns;
	comps = q->irq.completions - m->start_completions;
	if (m->start_ns && ns > SSDQ_MODER_MAX_NS)
		ssdq_moder_decide(q, 0, 0);
	else if (m->start_ns && ns)
		ssdq_moder_decide(q, div64_u64(comps * NSEC_PER_SEC, ns),
				  div64_u64(comps * 100, events - m->start_events));
	m->start_ns = now;
	m->start_events = events;
	m->start_completions = q->irq.completions;
}

/* Does the handler hand this queue's CQ to irq_poll? */
static bool ssdq_irq_polls(struct ssdq_queue *q, unsigned int mode)
{
	if (READ_ONCE(q->cpus_offline))
		return false;
	if (mode == SSDQ_IRQ_ADAPTIVE)
		return q->irq.level;
	return mode == SSDQ_IRQ_IRQPOLL;
}

/*
 * How long a round that found the CQ drained waits to look again: the
 * switch, or in adaptive mode the queue's level, unless nothing it could
 * wait for is in flight.
 */
static unsigned int ssdq_irq_next_look_us(struct ssdq_queue *q)
{
	if (READ_ONCE(q->dev->irq_mode) != SSDQ_IRQ_ADAPTIVE)
		return READ_ONCE(q->dev->irq_defer_us);
	return ssdq_queue_busy(q) ? ssdq_moder_defer_us[q->irq.level] : 0;
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

/*
 * An interrupt's work, under irq_lock, which orders it against an irq_poll
 * round: while one owns the CQ (q->in_irqpoll), even a direct-mode handler
 * leaves it alone, e.g. right after the mode was switched; and so does a
 * handler while the queue is quiesced.
 */
static __always_inline irqreturn_t
ssdq_irq_handle_locked(struct ssdq_queue *q)
{
	unsigned int mode;
	int found;

	if (q->in_irqpoll || q->irq_stopped)
		return IRQ_HANDLED;
	mode = q->qid ? READ_ONCE(q->dev->irq_mode) : SSDQ_IRQ_DIRECT;
	if (ssdq_irq_polls(q, mode)) {
		ssdq_irqpoll_start(q);
		return IRQ_HANDLED;
	}
	q->reaper = SSDQ_REAPER_IRQ;
	found = ssdq_queue_reap(q, INT_MAX, NULL);
	q->irq.completions += found;
	if (mode == SSDQ_IRQ_ADAPTIVE)
		ssdq_moder_update(q);
	return found ? IRQ_HANDLED : IRQ_NONE;
}

/*
 * The drop_irqs fault takes only an interrupt this handler would act on,
 * with a CQE waiting: one a quiesce ignores is replayed when it ends, and
 * one whose CQE was reaped already strands nothing. Either would use up
 * an injected loss that no timeout ever finds.
 */
static bool ssdq_irq_dropped(struct ssdq_queue *q)
{
	return !q->in_irqpoll && !q->irq_stopped && ssdq_fault_armed(q->dev) &&
	       ssdq_fault_drop_irq(q);
}

static irqreturn_t ssdq_irq(int irq, void *data)
{
	struct ssdq_queue *q = data;
	irqreturn_t ret = IRQ_HANDLED;

	spin_lock(&q->irq_lock);
	if (likely(!ssdq_irq_dropped(q))) {
		q->irq.interrupts++;
		ret = ssdq_irq_handle_locked(q);
	}
	spin_unlock(&q->irq_lock);
	return ret;
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
	unsigned int defer_us = ssdq_irq_next_look_us(q);
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
	if (READ_ONCE(q->dev->irq_mode) == SSDQ_IRQ_ADAPTIVE)
		ssdq_moder_update(q);
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
	mutex_init(&q->quiesce_lock);
	if (q->qid) {
		irq_poll_init(&q->iop, READ_ONCE(dev->irq_budget),
			      ssdq_irqpoll);
		ssdq_hrtimer_setup(&q->defer_timer, ssdq_defer_timer,
				   CLOCK_MONOTONIC, HRTIMER_MODE_REL);
		q->moder.step = 1;	/* first try: more deferral */
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

/*
 * Give the vector back; a deferred re-arm may still be polling: stop it
 * (a quiesced queue's is stopped already).
 */
void ssdq_irq_free(struct ssdq_queue *q)
{
	if (!q->irq_requested)
		return;
	if (q->qid && !q->quiesced)
		ssdq_irqpoll_stop(q);
	pci_free_irq(q->dev->pdev, q->vector, q);
	q->irq_requested = false;
}

/*
 * Stop everything that reaps an interrupt-driven queue, so the caller can
 * reap it (or reset it) alone: the irq_poll softirq and its timer, then the
 * interrupt handler, which finds the queue stopped and leaves its CQ. Not
 * with disable_irq(): recovery keeps a queue quiesced for as long as a
 * reset takes, and the IRQ core shuts a managed vector down and starts it
 * again as CPUs go and come, whatever a driver's disable depth says (a
 * WARN in irq_startup(), an unbalanced enable). A queue parked in irqpoll
 * mode had its vector masked by the handler: that mask ends here. Quiesces
 * nest (recovery, a timeout's reap, a CPU going offline): the first stops
 * the queue, the last ssdq_irq_unquiesce() starts it.
 */
void ssdq_irq_quiesce(struct ssdq_queue *q)
{
	mutex_lock(&q->quiesce_lock);
	if (q->quiesced++)
		goto out;
	if (q->qid)
		ssdq_irqpoll_stop(q);
	spin_lock_irq(&q->irq_lock);
	q->irq_stopped = true;
	if (q->in_irqpoll) {
		q->in_irqpoll = false;
		enable_irq(q->irqnr);
	}
	spin_unlock_irq(&q->irq_lock);
out:
	mutex_unlock(&q->quiesce_lock);
}

/*
 * irq_poll first: the handler may hand the CQ to irq_poll at once, which
 * must then be able to run (irq_poll_sched() does nothing while the SCHED
 * bit is held by irq_poll_disable()). An interrupt that came while the
 * queue was stopped was ignored: what it announced is reaped here, as its
 * handler would have (with bottom halves off, so that an irq_poll round
 * scheduled meanwhile runs when they come back on).
 */
void ssdq_irq_unquiesce(struct ssdq_queue *q)
{
	mutex_lock(&q->quiesce_lock);
	if (WARN_ON_ONCE(!q->quiesced) || --q->quiesced)
		goto out;
	if (q->qid)
		irq_poll_enable(&q->iop);
	local_bh_disable();
	spin_lock_irq(&q->irq_lock);
	q->irq_stopped = false;
	if (ssdq_cq_pending(q))
		ssdq_irq_handle_locked(q);
	spin_unlock_irq(&q->irq_lock);
	local_bh_enable();
out:
	mutex_unlock(&q->quiesce_lock);
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

/*
 * CPU hotplug. The IRQ core shuts a queue's managed vector down when the
 * last CPU of its affinity goes offline, and starts it again when one comes
 * back; it does not expect the driver to hold the vector disabled across
 * either (recovery does not: see ssdq_irq_quiesce()). A queue masked by
 * irqpoll or a deferral would then be unmasked later on a vector that is
 * shut down (a WARN in irq_startup()) or was started again meanwhile (an
 * unbalanced enable). So before its last CPU
 * goes, the queue ends any round or deferral and reaps directly from then
 * on (cpus_offline); blk-mq drains it afterwards (its own callback runs
 * later on the way down), and the flag drops when a CPU comes back.
 */
static enum cpuhp_state ssdq_cpuhp_state;

/* Is @cpu the last online CPU of the queue's vector? */
static bool ssdq_irq_last_cpu(struct ssdq_queue *q, unsigned int cpu)
{
	const struct cpumask *mask = pci_irq_get_affinity(q->dev->pdev,
							  q->vector);
	unsigned int other;

	if (!mask || !cpumask_test_cpu(cpu, mask))
		return false;
	for_each_cpu_and(other, mask, cpu_online_mask)
		if (other != cpu)
			return false;
	return true;
}

static int ssdq_irq_cpu_offline(unsigned int cpu, struct hlist_node *node)
{
	struct ssdq_dev *dev = hlist_entry(node, struct ssdq_dev, cpuhp_node);
	unsigned int qid;

	for (qid = 1; qid <= ssdq_nr_irq_queues(dev); qid++) {
		struct ssdq_queue *q = &dev->queues[qid];

		if (!ssdq_irq_last_cpu(q, cpu))
			continue;
		WRITE_ONCE(q->cpus_offline, true);
		/* Ends a round or deferral, and with it the vector's mask. */
		ssdq_irq_quiesce(q);
		ssdq_irq_unquiesce(q);
	}
	return 0;
}

static int ssdq_irq_cpu_online(unsigned int cpu, struct hlist_node *node)
{
	struct ssdq_dev *dev = hlist_entry(node, struct ssdq_dev, cpuhp_node);
	unsigned int qid;

	for (qid = 1; qid <= ssdq_nr_irq_queues(dev); qid++) {
		struct ssdq_queue *q = &dev->queues[qid];
		const struct cpumask *mask =
			pci_irq_get_affinity(dev->pdev, q->vector);

		if (mask && cpumask_test_cpu(cpu, mask))
			WRITE_ONCE(q->cpus_offline, false);
	}
	return 0;
}

int __init ssdq_irq_hotplug_init(void)
{
	int ret;

	ret = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN, "block/ssdq:online",
				      ssdq_irq_cpu_online,
				      ssdq_irq_cpu_offline);
	if (ret < 0)
		return ret;
	ssdq_cpuhp_state = ret;
	return 0;
}

void ssdq_irq_hotplug_exit(void)
{
	cpuhp_remove_multi_state(ssdq_cpuhp_state);
}

/*
 * Watch the CPUs for the I/O queues' vectors, once they are requested; stop
 * before they are freed. (A vector whose CPUs are all offline already is
 * shut down: its handler does not run, and nothing masks it.)
 */
int ssdq_irq_watch_cpus(struct ssdq_dev *dev)
{
	int ret;

	ret = cpuhp_state_add_instance_nocalls(ssdq_cpuhp_state,
					       &dev->cpuhp_node);
	dev->watching_cpus = !ret;
	return ret;
}

void ssdq_irq_unwatch_cpus(struct ssdq_dev *dev)
{
	if (dev->watching_cpus)
		cpuhp_state_remove_instance_nocalls(ssdq_cpuhp_state,
						    &dev->cpuhp_node);
	dev->watching_cpus = false;
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
			 "qid interrupts completions rounds budget_exhausted polled deferred level steps");
