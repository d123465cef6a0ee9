// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq timeouts and recovery.
 *
 * blk-mq keeps one timer per request queue, not one per request, and calls
 * ->timeout for each request that outlived the queue's io_timeout
 * (/sys/block/ssdqN/queue/io_timeout, default: the io_timeout parameter).
 * ssdq then escalates, one step at a time:
 *
 *   1. Reap the request's CQ with its interrupt held off. If the command
 *      had completed, only the interrupt was lost: it completes now.
 *   2. Send an NVMe Abort for it, once. If the controller aborts it, the
 *      abort's own completion finishes the request and its timer is re-armed.
 *   3. Reset the controller: quiesce the queues, disable the controller (so
 *      it can no longer DMA), reap what had completed, requeue everything
 *      else, re-enable it, re-create the I/O queues, resume. Requeued
 *      requests run again; one that is requeued too often fails instead.
 *   4. If the controller does not come back, it is dead: every request, now
 *      and later, fails with an error its submitter sees.
 *
 * Every step runs under dev->recovery_lock, so a timeout, a second timeout
 * and a reset asked for through sysfs never overlap. Removal waits in
 * del_gendisk() for in-flight I/O, which recovery keeps completing.
 *
 * Switch:   /sys/block/ssdqN/recovery/reset (write 1)
 * Counters: /sys/kernel/debug/ssdq/ssdqN/recovery
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <ssdq/ssdq.h>

#define SSDQ_MAX_RETRIES	5

/* Start or stop every interrupt-driven reaper: handlers and irq_poll. */
static void ssdq_set_irqs(struct ssdq_dev *dev, bool on)
{
	unsigned int qid;

	for (qid = 0; qid <= ssdq_nr_irq_queues(dev); qid++) {
		if (on)
			ssdq_queue_resume_reapers(&dev->queues[qid]);
		else
			ssdq_queue_quiesce_reapers(&dev->queues[qid]);
	}
}

/*
 * Take every request back from the controller: stop submissions, disable it,
 * let what it did complete finish normally, and cancel the rest. Leaves the
 * queues quiesced and the interrupts off.
 */
static void ssdq_stop(struct ssdq_dev *dev)
{
	unsigned int qid;

	blk_mq_quiesce_tagset(&dev->tag_set);
	/*
	 * A controller that will not disable may still DMA: never reuse it.
	 * Its requests are failed below, not requeued.
	 */
	if (ssdq_ctrl_disable(dev, false) &&
	    !test_and_set_bit(SSDQ_DEAD, &dev->flags)) {
		dev_err(&dev->pdev->dev,
			"controller does not disable, failing it for good\n");
		blk_mark_disk_dead(dev->disk);
	}
	ssdq_set_irqs(dev, false);
	for (qid = 1; qid <= dev->nr_io_queues; qid++) {
		struct ssdq_queue *q = &dev->queues[qid];

		if (q->polled)
			ssdq_cq_reap_exclusive(q);
		else
			ssdq_cq_reap(q, INT_MAX, NULL);
	}
	ssdq_fault_flush(dev);
	blk_mq_tagset_busy_iter(&dev->tag_set, ssdq_cancel_rq, dev);
	blk_mq_tagset_wait_completed_request(&dev->tag_set);
}

static void ssdq_resume(struct ssdq_dev *dev)
{
	ssdq_set_irqs(dev, true);
	blk_mq_unquiesce_tagset(&dev->tag_set);
	blk_mq_kick_requeue_list(dev->disk->queue);
}

/* Disable the controller for good and fail whatever it still owes. */
static void ssdq_fail_locked(struct ssdq_dev *dev, const char *why)
{
	lockdep_assert_held(&dev->recovery_lock);
	if (test_and_set_bit(SSDQ_DEAD, &dev->flags))
		return;
	dev_err(&dev->pdev->dev, "disabling the controller for good: %s\n",
		why);
	ssdq_stop(dev);
	blk_mark_disk_dead(dev->disk);
	ssdq_resume(dev);
}

void ssdq_dev_fail(struct ssdq_dev *dev, const char *why)
{
	mutex_lock(&dev->recovery_lock);
	ssdq_fail_locked(dev, why);
	mutex_unlock(&dev->recovery_lock);
}

static int ssdq_reset_locked(struct ssdq_dev *dev, const char *why)
{
	ktime_t start = ktime_get();
	int ret = -ENODEV;

	lockdep_assert_held(&dev->recovery_lock);
	if (ssdq_dead(dev))
		return -ENODEV;
	dev_warn(&dev->pdev->dev, "resetting the controller: %s\n", why);
	atomic64_inc(&dev->recovery.resets);

	ssdq_stop(dev);
	if (!ssdq_dead(dev))
		ssdq_ctrl_reset_rings(dev);
	ssdq_set_irqs(dev, true);
	if (!ssdq_dead(dev))
		ret = ssdq_ctrl_restart(dev);
	if (ret) {
		atomic64_inc(&dev->recovery.reset_failures);
		ssdq_fail_locked(dev, "reset failed");
	}
	blk_mq_unquiesce_tagset(&dev->tag_set);
	blk_mq_kick_requeue_list(dev->disk->queue);
	if (!ret)
		dev_info(&dev->pdev->dev, "reset done in %lld ms\n",
			 ktime_ms_delta(ktime_get(), start));
	return ret;
}

/* Returns 0 if the controller aborted the command, else why not. */
static int ssdq_abort(struct ssdq_queue *q, struct request *req)
{
	struct ssdq_dev *dev = q->dev;
	struct nvme_command c = { };
	u32 result = 0;
	int ret;

	c.abort.opcode = nvme_admin_abort_cmd;
	c.abort.sqid = cpu_to_le16(q->qid);
	c.abort.cid = ssdq_cid(req);
	atomic64_inc(&dev->recovery.aborts);
	ret = ssdq_admin_exec(dev, &c, &result);
	if (ret)
		return ret < 0 ? ret : -EIO;
	/* Dword 0 bit 0 set: "command not aborted". */
	if (result & 1) {
		atomic64_inc(&dev->recovery.aborts_refused);
		return -EBUSY;
	}
	return 0;
}

/* From the timed-out request's issue to now. */
static void ssdq_note_recovery(struct ssdq_dev *dev, unsigned long issued)
{
	atomic64_set(&dev->recovery.last_recovery_ms,
		     jiffies_to_msecs(jiffies - issued));
}

enum blk_eh_timer_return ssdq_timeout(struct request *req)
{
	struct ssdq_queue *q = req->mq_hctx->driver_data;
	struct ssdq_iod *iod = ssdq_iod(req);
	struct ssdq_dev *dev = q->dev;
	enum blk_eh_timer_return ret = BLK_EH_DONE;
	unsigned long issued;

	atomic64_inc(&dev->recovery.timeouts);
	mutex_lock(&dev->recovery_lock);
	if (ssdq_dead(dev)) {
		ssdq_cancel_rq(req, NULL);
		goto out;
	}
	/* While we waited for the lock, a reset may have dealt with it. */
	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT)
		goto out;
	if (time_before(jiffies, READ_ONCE(req->deadline))) {
		ret = BLK_EH_RESET_TIMER;
		goto out;
	}
	/* Read now: once completed, the request may be reused. */
	issued = iod->start;

	/* 1. Lost interrupt? */
	ssdq_cq_reap_exclusive(q);
	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT) {
		atomic64_inc(&dev->recovery.lost_interrupts);
		ssdq_note_recovery(dev, issued);
		dev_warn_ratelimited(&dev->pdev->dev,
				     "queue %u: command %d completed without an interrupt\n",
				     q->qid, req->tag);
		goto out;
	}

	/* 2. Abort, once per request. */
	dev_warn(&dev->pdev->dev, "queue %u: command %d (%s) timed out\n",
		 q->qid, req->tag, blk_op_str(req_op(req)));
	if (!iod->aborted) {
		iod->aborted = true;
		if (!ssdq_abort(q, req)) {
			ret = BLK_EH_RESET_TIMER;
			goto out;
		}
	}

	/* 3. Reset: the request is requeued (or failed) by it. */
	ssdq_reset_locked(dev, "command timeout");
	ssdq_note_recovery(dev, issued);
out:
	mutex_unlock(&dev->recovery_lock);
	return ret;
}

static ssize_t reset_store(struct device *d, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	struct ssdq_dev *dev = dev_to_disk(d)->private_data;
	bool on;
	int ret;

	if (kstrtobool(buf, &on) || !on) {
		dev_err(d, "recovery/reset takes 1\n");
		return -EINVAL;
	}
	mutex_lock(&dev->recovery_lock);
	ret = ssdq_reset_locked(dev, "requested through sysfs");
	mutex_unlock(&dev->recovery_lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_WO(reset);

static struct attribute *ssdq_recovery_attrs[] = {
	&dev_attr_reset.attr,
	NULL,
};

const struct attribute_group ssdq_recovery_attr_group = {
	.name	= "recovery",
	.attrs	= ssdq_recovery_attrs,
};

static int ssdq_recovery_stats_show(struct seq_file *m, void *unused)
{
	struct ssdq_dev *dev = m->private;
	struct ssdq_recovery_stats *s = &dev->recovery;

	seq_printf(m, "timeouts %lld\n", atomic64_read(&s->timeouts));
	seq_printf(m, "lost_interrupts %lld\n",
		   atomic64_read(&s->lost_interrupts));
	seq_printf(m, "aborts %lld\n", atomic64_read(&s->aborts));
	seq_printf(m, "aborts_refused %lld\n",
		   atomic64_read(&s->aborts_refused));
	seq_printf(m, "resets %lld\n", atomic64_read(&s->resets));
	seq_printf(m, "reset_failures %lld\n",
		   atomic64_read(&s->reset_failures));
	seq_printf(m, "requeued %lld\n", atomic64_read(&s->requeued));
	seq_printf(m, "bad_cqes %lld\n", atomic64_read(&s->bad_cqes));
	seq_printf(m, "last_recovery_ms %lld\n",
		   atomic64_read(&s->last_recovery_ms));
	seq_printf(m, "dead %d\n", ssdq_dead(dev));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_recovery_stats);

void ssdq_recovery_debugfs_init(struct ssdq_dev *dev)
{
	debugfs_create_file("recovery", 0400, dev->debugfs, dev,
			    &ssdq_recovery_stats_fops);
}

/*
 * ->complete for a request a reset took back, or the controller aborted:
 * run it again unless the controller is dead or it was retried too often.
 */
bool ssdq_requeue_cancelled(struct ssdq_dev *dev, struct request *req)
{
	struct ssdq_iod *iod = ssdq_iod(req);

	if (ssdq_dead(dev) || iod->retries >= SSDQ_MAX_RETRIES)
		return false;
	iod->retries++;
	atomic64_inc(&dev->recovery.requeued);
	blk_mq_requeue_request(req, false);
	return true;
}
