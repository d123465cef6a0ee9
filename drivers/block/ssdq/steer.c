// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq completion steering: finish each request on the CPU that submitted
 * it.
 *
 * With fewer queues (or vectors) than CPUs, or an interrupt moved to another
 * CPU, a completion arrives where the submitter is not: its cache lines, the
 * submitter's wake-up and the slab frees then bounce between CPUs. Modes:
 *   off  complete on the CPU that took the interrupt
 *   ipi  ssdq steers: a request for another CPU goes on that CPU's lock-free
 *        list, and once the reap is over each such CPU gets one IPI
 *        (smp_call_function_single_async) that completes its whole list
 *   blk  blk_mq_complete_request(): the block layer's own steering, driven
 *        by /sys/block/ssdqN/queue/rq_affinity, for comparison
 * A request already on its submitting CPU is completed in place in every
 * mode. Polled requests are completed by their poller.
 *
 * The I/O path (io.c) asks ssdq_steer_away() for each completion whether
 * it leaves this CPU; what stays is completed by the caller, who counts
 * where it ended (ssdq_steer_account()). Both are inline, in ssdq.h: they
 * run for every request, and their common answers (off, or already on the
 * submitting CPU; a local completion) take a few instructions, less than
 * a call into this file. The IPI ends its requests through blk-mq's
 * ->complete, as blk-mq's own IPI does.
 *
 * Switch:   /sys/block/ssdqN/steering/mode
 * Counters: /sys/kernel/debug/ssdq/ssdqN/steering
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/smp.h>

#include <ssdq/ssdq.h>
#include "trace.h"

static const char * const ssdq_steer_names[] = {
	[SSDQ_STEER_OFF]	= "off",
	[SSDQ_STEER_IPI]	= "ipi",
	[SSDQ_STEER_BLK]	= "blk",
	NULL
};

/* IPI handler: complete everything steered to this CPU so far. */
static void ssdq_steer_ipi(void *data)
{
	struct ssdq_steer_cpu *sc = data;
	struct llist_node *list = llist_del_all(&sc->list);
	struct ssdq_iod *iod, *next;
	unsigned int n = 0;

	llist_for_each_entry_safe(iod, next, list, steer_node) {
		struct request *req = blk_mq_rq_from_pdu(iod);

		req->q->mq_ops->complete(req);
		n++;
	}
	trace_ssdq_steer_ipi(n);
}

int ssdq_steer_init(struct ssdq_dev *dev)
{
	int cpu;

	dev->steer = alloc_percpu(struct ssdq_steer_cpu);
	if (!dev->steer)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct ssdq_steer_cpu *sc = per_cpu_ptr(dev->steer, cpu);

		init_llist_head(&sc->list);
		INIT_CSD(&sc->csd, ssdq_steer_ipi, sc);
	}
	dev->steer_mode = SSDQ_STEER_IPI;
	return 0;
}

void ssdq_steer_free(struct ssdq_dev *dev)
{
	int cpu;

	/* An IPI may still be queued (on an empty list): let it run... */
	for_each_possible_cpu(cpu) {
		struct ssdq_steer_cpu *sc = per_cpu_ptr(dev->steer, cpu);

		while (READ_ONCE(sc->csd.node.u_flags) & CSD_FLAG_LOCK)
			cpu_relax();
	}
	/* ... and leave: handlers run with interrupts off, an RCU read side. */
	synchronize_rcu();
	free_percpu(dev->steer);
	dev->steer = NULL;
}

/* Each I/O queue's reaper notes which CPUs it owes an IPI. */
int ssdq_steer_init_queue(struct ssdq_queue *q)
{
	return zalloc_cpumask_var(&q->steer_pending, GFP_KERNEL) ? 0 : -ENOMEM;
}

void ssdq_steer_free_queue(struct ssdq_queue *q)
{
	free_cpumask_var(q->steer_pending);
}

/*
 * ssdq_steer_away()'s answer (ssdq.h) when the request may leave this CPU:
 * @mode (the one it read) blk, or ipi for a request submitted elsewhere.
 * True if it was sent on (an IPI list, or blk-mq's own steering); false if
 * the caller is to complete it here. ssdq_steer_send_ipis() ends the reap.
 */
bool ssdq_steer_elsewhere(struct ssdq_queue *q, struct request *req,
			  unsigned int mode)
{
	struct ssdq_dev *dev = q->dev;
	int cpu = blk_mq_rq_cpu(req);

	if (mode == SSDQ_STEER_BLK) {
		blk_mq_complete_request(req);
		return true;
	}
	if (cpu == raw_smp_processor_id() || !cpu_online(cpu))
		return false;
	/* Marked complete by the reaper: a reset leaves it to the IPI. */
	trace_ssdq_steer(q, req, cpu);
	llist_add(&ssdq_iod(req)->steer_node,
		  &per_cpu_ptr(dev->steer, cpu)->list);
	cpumask_set_cpu(cpu, q->steer_pending);
	this_cpu_inc(dev->steer->steered);
	return true;
}

/*
 * One IPI per CPU that got requests in this reap. -EBUSY means that CPU's
 * IPI is still pending and will find the new ones on its list; a CPU that
 * went offline meanwhile has its list completed here instead.
 */
void ssdq_steer_send_ipis(struct ssdq_queue *q)
{
	struct ssdq_dev *dev = q->dev;
	int cpu, ret;

	for_each_cpu(cpu, q->steer_pending) {
		struct ssdq_steer_cpu *sc = per_cpu_ptr(dev->steer, cpu);

		cpumask_clear_cpu(cpu, q->steer_pending);
		ret = smp_call_function_single_async(cpu, &sc->csd);
		if (!ret)
			this_cpu_inc(dev->steer->ipis);
		else if (ret != -EBUSY)
			ssdq_steer_ipi(sc);
	}
}

static struct ssdq_attr ssdq_steer_mode =
	SSDQ_ATTR_CHOICE(mode, "steering", steer_mode, ssdq_steer_names);

SSDQ_ATTR_GROUP(ssdq_steer_attr_group, "steering",
		&ssdq_steer_mode.dattr.attr);

static int ssdq_steer_stats_show(struct seq_file *m, void *unused)
{
	struct ssdq_dev *dev = m->private;
	u64 local = 0, remote = 0, ipis = 0, steered = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct ssdq_steer_cpu *sc = per_cpu_ptr(dev->steer, cpu);

		local += READ_ONCE(sc->local);
		remote += READ_ONCE(sc->remote);
		ipis += READ_ONCE(sc->ipis);
		steered += READ_ONCE(sc->steered);
	}
	seq_printf(m, "local %llu\nremote %llu\nipis %llu\nipi_requests %llu\n",
		   local, remote, ipis, steered);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_steer_stats);

void ssdq_steer_debugfs_init(struct ssdq_dev *dev)
{
	debugfs_create_file("steering", 0400, dev->debugfs, dev,
			    &ssdq_steer_stats_fops);
}
