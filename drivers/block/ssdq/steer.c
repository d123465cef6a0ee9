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
 * Switch:   /sys/block/ssdqN/steering/mode
 * Counters: /sys/kernel/debug/ssdq/ssdqN/steering
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/smp.h>

#include <ssdq/ssdq.h>

static const char * const ssdq_steer_names[] = {
	[SSDQ_STEER_OFF]	= "off",
	[SSDQ_STEER_IPI]	= "ipi",
	[SSDQ_STEER_BLK]	= "blk",
};

/* IPI handler: complete everything steered to this CPU so far. */
static void ssdq_steer_ipi(void *data)
{
	struct ssdq_steer_cpu *sc = data;
	struct llist_node *list = llist_del_all(&sc->list);
	struct ssdq_iod *iod, *next;

	llist_for_each_entry_safe(iod, next, list, steer_node)
		ssdq_complete_rq(blk_mq_rq_from_pdu(iod));
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

/*
 * Hand a completed request up, on the right CPU. Called by a queue's reaper
 * once per CQE, with the request already marked complete;
 * ssdq_steer_flush() ends the reap.
 */
void ssdq_steer_complete(struct ssdq_queue *q, struct request *req)
{
	struct ssdq_dev *dev = q->dev;
	int cpu = blk_mq_rq_cpu(req);

	switch (READ_ONCE(dev->steer_mode)) {
	case SSDQ_STEER_BLK:
		blk_mq_complete_request(req);
		return;
	case SSDQ_STEER_IPI:
		if (cpu == raw_smp_processor_id() || !cpu_online(cpu))
			break;
		/* Marked complete by the reaper: a reset leaves it to the IPI. */
		llist_add(&ssdq_iod(req)->steer_node,
			  &per_cpu_ptr(dev->steer, cpu)->list);
		cpumask_set_cpu(cpu, q->steer_pending);
		this_cpu_inc(dev->steer->steered);
		return;
	default:
		break;
	}
	ssdq_complete_rq(req);
}

/*
 * One IPI per CPU that got requests in this reap. -EBUSY means that CPU's
 * IPI is still pending and will find the new ones on its list; a CPU that
 * went offline meanwhile has its list completed here instead.
 */
void ssdq_steer_flush(struct ssdq_queue *q)
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

/* Where did completions end up? Counted where every request ends. */
void ssdq_steer_account(struct ssdq_dev *dev, struct request *req)
{
	if (blk_mq_rq_cpu(req) == raw_smp_processor_id())
		this_cpu_inc(dev->steer->local);
	else
		this_cpu_inc(dev->steer->remote);
}

static ssize_t mode_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	struct ssdq_dev *dev = dev_to_disk(d)->private_data;

	return ssdq_sysfs_emit_choice(buf, ssdq_steer_names,
				      ARRAY_SIZE(ssdq_steer_names),
				      READ_ONCE(dev->steer_mode));
}

static ssize_t mode_store(struct device *d, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	struct ssdq_dev *dev = dev_to_disk(d)->private_data;
	int mode = sysfs_match_string(ssdq_steer_names, buf);

	if (mode < 0) {
		dev_err(d, "steering/mode takes off, ipi or blk\n");
		return -EINVAL;
	}
	WRITE_ONCE(dev->steer_mode, mode);
	return count;
}
static DEVICE_ATTR_RW(mode);

static struct attribute *ssdq_steer_attrs[] = {
	&dev_attr_mode.attr,
	NULL,
};

const struct attribute_group ssdq_steer_attr_group = {
	.name	= "steering",
	.attrs	= ssdq_steer_attrs,
};

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
