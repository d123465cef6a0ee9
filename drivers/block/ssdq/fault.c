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
 *   bad_cids          make the next N CQEs name a command id that is out of
 *                     range or of a stale generation (alternately)
 *   abort_completions the next N CQEs say "Command Abort Requested": what a
 *                     controller that honours an Abort answers (QEMU 7.2
 *                     never does)
 *   retry_completions the next N CQEs say "Namespace Not Ready", without
 *                     DNR: an error worth retrying
 *   drop_admin_completions  the next N admin CQEs are never handed up: the
 *                     admin command times out
 *   fail_disable      the next N controller disables do not take: CC.EN = 0
 *                     is not written, the controller keeps running (and may
 *                     DMA) while the driver gives up on it
 *   fatal_status      the next N timeouts read CSTS with CFS set
 *   refuse_dbbuf      the next N Doorbell Buffer Configs are refused
 *   media_errors      the next N CQEs say "Unrecovered Read Error" (reads)
 *                     or "Write Fault" (writes), with DNR: a final error
 * and three settings:
 *   delay_ms          how long delayed completions are held (0-60000)
 *   slow_enable_ms    how long each controller enable takes at least, as
 *                     far as the driver can tell from CSTS.RDY (0-60000)
 *   gone              1: the controller is gone, as after a surprise
 *                     removal: CSTS reads all ones, and removal finds the
 *                     device absent (0-1)
 * Counters: fault/injected, one line per kind, of what was really done.
 *
 * Two faults act at probe, so they are module parameters:
 *   fault_bar0_doorbells  BAR0 ends after N doorbell registers (two per
 *                     queue pair), as with a CAP.DSTRD that spreads the
 *                     doorbells past its end (QEMU's stride is always 4)
 *   fault_admin_status    the Nth admin command of each probe is refused
 *                     with Internal Error, DNR, before it reaches the
 *                     controller: walked from 1 up, every command failure
 *                     the probe must unwind
 *
 * The block layer's own timeout injection works too (blk_should_fake_timeout
 * in io.c) on kernels built with CONFIG_FAIL_IO_TIMEOUT.
 *
 * The I/O path (io.c), the interrupt handler (irq.c) and the controller
 * code (ctrl.c) ask here, at each point where a device could misbehave,
 * what it "did"; this file calls nothing of theirs.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include <ssdq/ssdq.h>

#define SSDQ_FAULT_MAX_COUNT	1000000
#define SSDQ_FAULT_MAX_MS	60000

/* Take one armed event of a kind: true if this event is to be faulted. */
bool ssdq_fault_take(struct ssdq_dev *dev, enum ssdq_fault_kind kind)
{
	struct ssdq_fault *f = &dev->fault;

	if (!READ_ONCE(f->armed) || atomic_dec_if_positive(&f->left[kind]) < 0)
		return false;
	atomic64_inc(&f->done[kind]);
	return true;
}

/*
 * Drop this I/O queue interrupt? Only if it announces a CQE to strand.
 * The handler asks only while a fault is armed (ssdq_fault_armed()).
 */
bool ssdq_fault_drop_irq(struct ssdq_queue *q)
{
	return q->qid && ssdq_cq_pending(q) &&
	       ssdq_fault_take(q->dev, SSDQ_FAULT_DROP_IRQ);
}

/* The command id the driver will believe this CQE carries. */
u16 ssdq_fault_cqe_cid(struct ssdq_queue *q, u16 cid)
{
	struct ssdq_fault *f = &q->dev->fault;

	if (!ssdq_fault_take(q->dev, SSDQ_FAULT_BAD_CID))
		return cid;
	/* Out of range, or its own tag with a stale generation. */
	return atomic64_read(&f->done[SSDQ_FAULT_BAD_CID]) & 1 ?
		U16_MAX : cid ^ BIT(SSDQ_CID_TAG_BITS);
}

/* The status (SCT/SC and flags) the driver will believe this CQE carries. */
u16 ssdq_fault_cqe_status(struct ssdq_dev *dev, struct request *req,
			  u16 status)
{
	if (ssdq_fault_take(dev, SSDQ_FAULT_ABORT_COMPLETION))
		return NVME_SC_ABORT_REQ;
	if (ssdq_fault_take(dev, SSDQ_FAULT_RETRY_COMPLETION))
		return NVME_SC_NS_NOT_READY;
	/* What a worn flash block answers: final, nothing to retry. */
	if (ssdq_fault_take(dev, SSDQ_FAULT_MEDIA_ERROR))
		return (op_is_write(req_op(req)) ? NVME_SC_WRITE_FAULT :
			NVME_SC_READ_ERROR) | NVME_STATUS_DNR;
	return status;
}

/*
 * At probe (until its namespace scan is done), the fault_admin_status'th
 * admin command is refused with Internal Error before it reaches the
 * controller, which so never runs it: the status it returns, or 0 to send
 * the command.
 */
u16 ssdq_fault_admin_refused(struct ssdq_dev *dev)
{
	unsigned int n = ssdq_params.fault_admin_status;

	if (!n || dev->probed || ++dev->fault.probe_admin_cmds != n)
		return 0;
	atomic64_inc(&dev->fault.done[SSDQ_FAULT_PROBE_ADMIN]);
	return NVME_SC_INTERNAL | NVME_STATUS_DNR;
}

/* BAR0's length as the probe is to believe it (db_stride already read). */
resource_size_t ssdq_fault_bar_len(struct ssdq_dev *dev, resource_size_t len)
{
	unsigned int n = ssdq_params.fault_bar0_doorbells;

	if (!n)
		return len;
	return min_t(resource_size_t, len,
		     NVME_REG_DBS + (resource_size_t)n * 4 * dev->db_stride);
}

/* How long CSTS.RDY is to be disbelieved after an enable, in jiffies. */
unsigned long ssdq_fault_slow_enable(struct ssdq_dev *dev)
{
	return msecs_to_jiffies(atomic_read(&dev->fault.slow_enable_ms));
}

/* Does the driver believe the controller is gone? */
bool ssdq_fault_gone(struct ssdq_dev *dev)
{
	return ssdq_fault_armed(dev) && atomic_read(&dev->fault.gone);
}

/*
 * The kernel's fail-nth (/proc/<pid>/fail-nth, CONFIG_FAULT_INJECTION)
 * fails the Nth allocation of one task. A sysfs reset and an FLR run their
 * work on a worker, so the countdown travels with it: the writer swaps its
 * own for the device's (none) before it queues the work, the work swaps it
 * in as it starts and out as it ends, the writer swaps back what is left.
 * A walk of the writer's allocations then covers the work's.
 */
void ssdq_fault_nth_swap(struct ssdq_dev *dev)
{
#ifdef CONFIG_FAULT_INJECTION
	swap(current->fail_nth, dev->fault.fail_nth);
#endif
}

/* Hold a completion back; the request stays in flight meanwhile. */
bool ssdq_fault_delay(struct ssdq_dev *dev, struct request *req)
{
	struct ssdq_fault *f = &dev->fault;
	unsigned long delay;

	if (!ssdq_fault_take(dev, SSDQ_FAULT_DELAY_COMPLETION))
		return false;
	delay = msecs_to_jiffies(atomic_read(&f->delay_ms));
	ssdq_iod(req)->fault_due = jiffies + delay;
	llist_add(&ssdq_iod(req)->fault_node, &f->delayed);
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
void ssdq_fault_release_delayed(struct ssdq_dev *dev)
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

#define SSDQ_FAULT_COUNT(_name, _kind) \
	{ _name, offsetof(struct ssdq_fault, left[_kind]), SSDQ_FAULT_MAX_COUNT }
#define SSDQ_FAULT_SETTING(_field, _max) \
	{ #_field, offsetof(struct ssdq_fault, _field), _max }

static const struct ssdq_fault_knob ssdq_fault_knobs[] = {
	SSDQ_FAULT_COUNT("drop_completions", SSDQ_FAULT_DROP_COMPLETION),
	SSDQ_FAULT_COUNT("drop_irqs", SSDQ_FAULT_DROP_IRQ),
	SSDQ_FAULT_COUNT("delay_completions", SSDQ_FAULT_DELAY_COMPLETION),
	SSDQ_FAULT_COUNT("bad_cids", SSDQ_FAULT_BAD_CID),
	SSDQ_FAULT_COUNT("abort_completions", SSDQ_FAULT_ABORT_COMPLETION),
	SSDQ_FAULT_COUNT("retry_completions", SSDQ_FAULT_RETRY_COMPLETION),
	SSDQ_FAULT_COUNT("drop_admin_completions", SSDQ_FAULT_DROP_ADMIN),
	SSDQ_FAULT_COUNT("fail_disable", SSDQ_FAULT_FAIL_DISABLE),
	SSDQ_FAULT_COUNT("fatal_status", SSDQ_FAULT_FATAL_STATUS),
	SSDQ_FAULT_COUNT("refuse_dbbuf", SSDQ_FAULT_REFUSE_DBBUF),
	SSDQ_FAULT_COUNT("media_errors", SSDQ_FAULT_MEDIA_ERROR),
	SSDQ_FAULT_SETTING(delay_ms, SSDQ_FAULT_MAX_MS),
	SSDQ_FAULT_SETTING(slow_enable_ms, SSDQ_FAULT_MAX_MS),
	SSDQ_FAULT_SETTING(gone, 1),
};

/* fault/injected: what each kind really did, in enum order. */
static const char * const ssdq_fault_done_names[SSDQ_FAULT_NR_KINDS] = {
	[SSDQ_FAULT_DROP_COMPLETION]	= "dropped_completions",
	[SSDQ_FAULT_DROP_IRQ]		= "dropped_irqs",
	[SSDQ_FAULT_DELAY_COMPLETION]	= "delayed_completions",
	[SSDQ_FAULT_BAD_CID]		= "bad_cids",
	[SSDQ_FAULT_ABORT_COMPLETION]	= "aborted_completions",
	[SSDQ_FAULT_RETRY_COMPLETION]	= "retry_completions",
	[SSDQ_FAULT_DROP_ADMIN]		= "dropped_admin_completions",
	[SSDQ_FAULT_FAIL_DISABLE]	= "failed_disables",
	[SSDQ_FAULT_FATAL_STATUS]	= "fatal_status",
	[SSDQ_FAULT_REFUSE_DBBUF]	= "refused_dbbufs",
	[SSDQ_FAULT_MEDIA_ERROR]	= "media_errors",
	[SSDQ_FAULT_PROBE_ADMIN]	= "failed_probe_admin_commands",
};

/*
 * Each knob file's inode holds the device (debugfs's i_private); the knob
 * is found by file name.
 */
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
	struct ssdq_dev *dev = file_inode(file)->i_private;
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
	struct ssdq_dev *dev = file_inode(file)->i_private;
	char buf[35], name[40];
	unsigned int val;
	size_t len;
	int ret;

	if (!k)
		return -ENOENT;
	/* As kstrtouint_from_user() reads it: the first 34 bytes. */
	len = min(count, sizeof(buf) - 1);
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	snprintf(name, sizeof(name), "fault/%s", k->name);
	ret = ssdq_parse_uint(&dev->pdev->dev, name, buf, 0, k->max, &val);
	if (ret)
		return ret;
	atomic_set(ssdq_knob_val(dev, k), val);
	/* Stays armed: the hot path then pays one atomic per event. */
	if (val)
		WRITE_ONCE(dev->fault.armed, true);
	return count;
}

static const struct file_operations ssdq_knob_fops = {
	.owner	= THIS_MODULE,
	.read	= ssdq_knob_read,
	.write	= ssdq_knob_write,
	.llseek	= default_llseek,
};

static int ssdq_fault_injected_show(struct seq_file *m, void *unused)
{
	struct ssdq_fault *f = &((struct ssdq_dev *)m->private)->fault;
	unsigned int i;

	for (i = 0; i < SSDQ_FAULT_NR_KINDS; i++)
		seq_printf(m, "%s %lld\n", ssdq_fault_done_names[i],
			   atomic64_read(&f->done[i]));
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
