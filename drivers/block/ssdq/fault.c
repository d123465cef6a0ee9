// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq fault injection, in the device-facing layer: it changes what the
 * driver sees of the controller, so recovery (recovery.c) can be tried on a
 * device that never misbehaves by itself.
 *
 * Knobs, in /sys/kernel/debug/ssdq/ssdqN/fault/ (root only); each arms the
 * next N events and reads back how many are still armed:
 *   drop_completions  reap the next N CQEs but never hand them up
 *   drop_irqs         ignore the next N I/O queue interrupts
 *   delay_completions hold the next N completions back by delay_ms
 *   delay_ms          how long (0-60000)
 *   bad_cids          make the next N CQEs name a command id that is out of
 *                     range or of a stale generation (alternately)
 * Counters: fault/injected, one line per kind, of what was really done.
 *
 * The block layer's own timeout injection works too (blk_should_fake_timeout
 * in blk.c) on kernels built with CONFIG_FAIL_IO_TIMEOUT.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <ssdq/ssdq.h>

#define SSDQ_FAULT_MAX_COUNT	1000000
#define SSDQ_FAULT_MAX_DELAY_MS	60000

static bool ssdq_fault_take(struct ssdq_dev *dev, atomic_t *left)
{
	return READ_ONCE(dev->fault.armed) && atomic_dec_if_positive(left) >= 0;
}

bool ssdq_fault_drop_irq(struct ssdq_queue *q)
{
	struct ssdq_fault *f = &q->dev->fault;

	if (!q->qid || !ssdq_fault_take(q->dev, &f->drop_irqs))
		return false;
	atomic64_inc(&f->dropped_irqs);
	return true;
}

bool ssdq_fault_drop_completion(struct ssdq_dev *dev)
{
	struct ssdq_fault *f = &dev->fault;

	if (!ssdq_fault_take(dev, &f->drop_completions))
		return false;
	atomic64_inc(&f->dropped_completions);
	return true;
}

/* The command id the driver will believe this CQE carries. */
u16 ssdq_fault_cqe_cid(struct ssdq_queue *q, u16 cid)
{
	struct ssdq_fault *f = &q->dev->fault;
	s64 n;

	if (!ssdq_fault_take(q->dev, &f->bad_cids))
		return cid;
	n = atomic64_inc_return(&f->bad_cids_sent);
	/* Out of range, or its own tag with a stale generation. */
	return n & 1 ? U16_MAX : cid ^ BIT(SSDQ_CID_TAG_BITS);
}

/* Hold a completion back; the request stays in flight meanwhile. */
bool ssdq_fault_delay(struct ssdq_dev *dev, struct request *req)
{
	struct ssdq_fault *f = &dev->fault;
	unsigned long delay;

	if (!ssdq_fault_take(dev, &f->delay_completions))
		return false;
	delay = msecs_to_jiffies(atomic_read(&f->delay_ms));
	ssdq_iod(req)->fault_due = jiffies + delay;
	llist_add(&ssdq_iod(req)->fault_node, &f->delayed);
	atomic64_inc(&f->delayed_completions);
	schedule_delayed_work(&f->delay_work, delay);
	return true;
}

static void ssdq_fault_delay_work(struct work_struct *work)
{
	struct ssdq_fault *f = container_of(to_delayed_work(work),
					    struct ssdq_fault, delay_work);
	struct llist_node *list = llist_del_all(&f->delayed);
	unsigned long next = 0;
	struct ssdq_iod *iod, *tmp;

	llist_for_each_entry_safe(iod, tmp, list, fault_node) {
		if (time_after_eq(jiffies, iod->fault_due)) {
			blk_mq_complete_request(blk_mq_rq_from_pdu(iod));
			continue;
		}
		if (!next || time_before(iod->fault_due, next))
			next = iod->fault_due;
		llist_add(&iod->fault_node, &f->delayed);
	}
	if (next)
		schedule_delayed_work(&f->delay_work, next - jiffies);
}

/* A reset hands delayed completions up at once: they are real ones. */
void ssdq_fault_flush(struct ssdq_dev *dev)
{
	struct ssdq_fault *f = &dev->fault;
	struct ssdq_iod *iod, *tmp;

	cancel_delayed_work_sync(&f->delay_work);
	llist_for_each_entry_safe(iod, tmp, llist_del_all(&f->delayed),
				  fault_node)
		blk_mq_complete_request(blk_mq_rq_from_pdu(iod));
}

void ssdq_fault_init(struct ssdq_dev *dev)
{
	init_llist_head(&dev->fault.delayed);
	INIT_DELAYED_WORK(&dev->fault.delay_work, ssdq_fault_delay_work);
}

struct ssdq_fault_knob {
	const char *name;
	size_t offset;		/* of the atomic_t in struct ssdq_fault */
	unsigned int max;
};

static const struct ssdq_fault_knob ssdq_fault_knobs[] = {
	{ "drop_completions", offsetof(struct ssdq_fault, drop_completions),
	  SSDQ_FAULT_MAX_COUNT },
	{ "drop_irqs", offsetof(struct ssdq_fault, drop_irqs),
	  SSDQ_FAULT_MAX_COUNT },
	{ "delay_completions", offsetof(struct ssdq_fault, delay_completions),
	  SSDQ_FAULT_MAX_COUNT },
	{ "delay_ms", offsetof(struct ssdq_fault, delay_ms),
	  SSDQ_FAULT_MAX_DELAY_MS },
	{ "bad_cids", offsetof(struct ssdq_fault, bad_cids),
	  SSDQ_FAULT_MAX_COUNT },
};

/* debugfs hands each file the device; the knob is found by file name. */
static const struct ssdq_fault_knob *ssdq_knob_of(struct file *file)
{
	const char *name = file->f_path.dentry->d_name.name;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ssdq_fault_knobs); i++)
		if (!strcmp(name, ssdq_fault_knobs[i].name))
			return &ssdq_fault_knobs[i];
	return NULL;
}

static atomic_t *ssdq_knob_val(struct ssdq_dev *dev,
			       const struct ssdq_fault_knob *k)
{
	return (atomic_t *)((char *)&dev->fault + k->offset);
}

static ssize_t ssdq_knob_read(struct file *file, char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	const struct ssdq_fault_knob *k = ssdq_knob_of(file);
	struct ssdq_dev *dev = file->private_data;
	char buf[16];
	int len;

	if (!k)
		return -ENOENT;
	len = scnprintf(buf, sizeof(buf), "%d\n",
			atomic_read(ssdq_knob_val(dev, k)));
	return simple_read_from_buffer(ubuf, count, ppos, buf, len);
}

static ssize_t ssdq_knob_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	const struct ssdq_fault_knob *k = ssdq_knob_of(file);
	struct ssdq_dev *dev = file->private_data;
	unsigned int val;

	if (!k)
		return -ENOENT;
	if (kstrtouint_from_user(ubuf, count, 0, &val) || val > k->max) {
		dev_err(&dev->pdev->dev, "fault/%s takes 0-%u\n", k->name,
			k->max);
		return -EINVAL;
	}
	atomic_set(ssdq_knob_val(dev, k), val);
	/* Stays armed: the hot path then pays one atomic per event. */
	if (val)
		WRITE_ONCE(dev->fault.armed, true);
	return count;
}

static const struct file_operations ssdq_knob_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.read	= ssdq_knob_read,
	.write	= ssdq_knob_write,
	.llseek	= default_llseek,
};

static int ssdq_fault_injected_show(struct seq_file *m, void *unused)
{
	struct ssdq_fault *f = &((struct ssdq_dev *)m->private)->fault;

	seq_printf(m, "dropped_completions %lld\n",
		   atomic64_read(&f->dropped_completions));
	seq_printf(m, "dropped_irqs %lld\n", atomic64_read(&f->dropped_irqs));
	seq_printf(m, "delayed_completions %lld\n",
		   atomic64_read(&f->delayed_completions));
	seq_printf(m, "bad_cids %lld\n", atomic64_read(&f->bad_cids_sent));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_fault_injected);

void ssdq_fault_debugfs_init(struct ssdq_dev *dev)
{
	struct dentry *dir = debugfs_create_dir("fault", dev->debugfs);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ssdq_fault_knobs); i++)
		debugfs_create_file(ssdq_fault_knobs[i].name, 0600, dir, dev,
				    &ssdq_knob_fops);
	debugfs_create_file("injected", 0400, dir, dev,
			    &ssdq_fault_injected_fops);
}
