// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq timeouts and recovery.
 *
 * blk-mq keeps one timer per request queue, not one per request, and calls
 * ->timeout for each request that outlived the queue's io_timeout
 * (/sys/block/ssdqN/queue/io_timeout, default: the io_timeout parameter).
 * ssdq then escalates, one step at a time:
 *
 *   0. If the controller reports a fatal status (CSTS.CFS) or is gone, no
 *      Abort can help: go to 3.
 *   1. Reap the request's CQ with its interrupt held off. If the command
 *      had completed, only the interrupt was lost: it completes now.
 *   2. Send an NVMe Abort for it, once. If the controller aborts it, the
 *      command completes with "Command Abort Requested" and runs again
 *      (ssdq_retry_rq()); its timer is re-armed meanwhile.
 *   3. Reset the controller: quiesce the queues, disable the controller (so
 *      it can no longer DMA), reap what had completed, requeue everything
 *      else, re-enable it, re-create the I/O queues, resume. Requeued
 *      requests run again; one that is requeued too often fails instead.
 *   4. If the controller does not come back, it is dead: every request, now
 *      and later, fails with an error its submitter sees.
 *
 * Every step runs under dev->recovery_lock, so a timeout, a second timeout,
 * a reset asked for through sysfs (run by a work item, so that no signal to
 * the writer can cut it short), a reset by the PCI core (FLR: reset_prepare
 * takes the requests back, reset_done's work item restarts the controller;
 * in between, pci_reset_stopped keeps other resets off) and PCI error
 * recovery (AER, DPC) never overlap. Removal waits in del_gendisk() for
 * in-flight I/O, which recovery keeps completing.
 *
 * Giving up on a controller fails every request first, lets the queues run
 * so that what was parked fails too, and only then marks the disk dead: a
 * filesystem on it then evicts its inodes, which waits for their writeback
 * to end (Documentation/recovery.rst, "The dead controller").
 *
 * Who may complete a request (Documentation/recovery.rst has the rules):
 * the reaper that finds its CQE marks it complete before handing it on; a
 * reset cancels only what is still in flight, and only after the
 * controller can no longer DMA: disabled, or without bus mastering.
 *
 * Switch:   /sys/block/ssdqN/recovery/reset (write 1)
 * Counters: /sys/kernel/debug/ssdq/ssdqN/recovery
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <ssdq/ssdq.h>
#include "trace.h"

#define SSDQ_MAX_RETRIES	5

/* Start or stop every interrupt-driven reaper: handlers and irq_poll. */
static void ssdq_set_irqs(struct ssdq_dev *dev, bool on)
{
	unsigned int qid;

	for (qid = 0; qid <= ssdq_nr_irq_queues(dev); qid++) {
		if (on)
			ssdq_irq_unquiesce(&dev->queues[qid]);
		else
			ssdq_irq_quiesce(&dev->queues[qid]);
	}
}

/*
 * Take back a request the controller will never complete (it is disabled):
 * ->complete requeues it (ssdq_retry_rq()), or fails it if the controller
 * is dead.
 *
 * Only a request still in flight is ours to take. One marked complete
 * belongs to its completer; and the tag iterator may hand us one that its
 * completer has just ended (MQ_RQ_IDLE, kept alive only by the iterator's
 * reference): completing that again would requeue a request about to be
 * freed.
 */
static bool ssdq_cancel_rq(struct request *req, void *data)
{
	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT)
		return true;
	ssdq_iod(req)->nvme_status = NVME_SC_HOST_ABORTED_CMD;
	ssdq_iod(req)->cancelled = true;
	blk_mq_complete_request(req);
	return true;
}

/* How ssdq_take_back() stops the controller, and what a failure means. */
enum ssdq_stop {
	SSDQ_STOP_RESET,	/* CC.EN = 0; one that will not disable is dead */
	SSDQ_STOP_PCI_RESET,	/* ... but an FLR, next, resets it anyway */
	SSDQ_STOP_SHUTDOWN,	/* CC.SHN, then dead: nothing runs again */
	SSDQ_STOP_SUSPEND,	/* CC.SHN; resume disables and restarts it */
};

/*
 * Take every request back from the controller: stop submissions, stop its
 * DMA, let what it did complete finish normally, and cancel the rest. Leaves
 * the controller stopped: queues quiesced, interrupts off, nothing in
 * flight. Before the caller drops recovery_lock, it restarts the
 * controller (ssdq_restart_locked()), gives up on it (ssdq_give_up()), or
 * leaves it to the PCI core's reset (pci_reset_stopped, pci_error_stopped).
 * A controller that would not disable, or was shut down, is dead: what is
 * taken back fails. Returns 0 if the controller stopped as asked.
 */
static int ssdq_take_back(struct ssdq_dev *dev, enum ssdq_stop how)
{
	bool shn = how == SSDQ_STOP_SHUTDOWN || how == SSDQ_STOP_SUSPEND;
	unsigned int qid;
	int ret;

	ssdq_quiesce_tagset(&dev->tag_set);
	if (pci_channel_offline(dev->pdev)) {
		/*
		 * A frozen or failed link: a register access may go nowhere,
		 * and the PCI core resets the link next, which stops the
		 * controller. Taking bus mastering away is what is left.
		 */
		pci_clear_master(dev->pdev);
		ret = 0;
	} else {
		ret = ssdq_ctrl_stop_dma(dev, shn);
	}
	/* It may still be running (without bus mastering): never reuse it. */
	if (ret && how != SSDQ_STOP_PCI_RESET && how != SSDQ_STOP_SUSPEND &&
	    !test_and_set_bit(SSDQ_DEAD, &dev->flags))
		dev_err(&dev->pdev->dev,
			"controller does not disable, failing it for good\n");
	if (how == SSDQ_STOP_SHUTDOWN)
		set_bit(SSDQ_DEAD, &dev->flags);
	ssdq_set_irqs(dev, false);
	for (qid = 1; qid <= dev->nr_io_queues; qid++) {
		struct ssdq_queue *q = &dev->queues[qid];

		if (q->poll_queue) {
			ssdq_poll_reap_alone(q);
		} else {
			q->reaper = SSDQ_REAPER_RECOVERY;
			ssdq_queue_reap(q, INT_MAX, NULL);
		}
	}
	ssdq_fault_release_delayed(dev);
	blk_mq_tagset_busy_iter(&dev->tag_set, ssdq_cancel_rq, dev);
	blk_mq_tagset_wait_completed_request(&dev->tag_set);
	return ret;
}

/* What a reset requeued runs again: on every namespace's queue. */
static void ssdq_kick_requeue_lists(struct ssdq_dev *dev)
{
	struct ssdq_ns *ns;

	mutex_lock(&dev->ns_lock);
	ssdq_for_each_ns(dev, ns)
		blk_mq_kick_requeue_list(ns->disk->queue);
	mutex_unlock(&dev->ns_lock);
}

/* The other way: interrupts on, the queues running, the requeued run. */
static void ssdq_resume_io(struct ssdq_dev *dev)
{
	ssdq_set_irqs(dev, true);
	ssdq_unquiesce_tagset(&dev->tag_set);
	ssdq_kick_requeue_lists(dev);
}

/* Every disk, for a controller given up on: its users see it gone. */
static void ssdq_mark_disks_dead(struct ssdq_dev *dev)
{
	struct ssdq_ns *ns;

	mutex_lock(&dev->ns_lock);
	ssdq_for_each_ns(dev, ns)
		ssdq_mark_disk_dead(ns->disk);
	mutex_unlock(&dev->ns_lock);
}

/*
 * Give up on a stopped controller for good. Dead, it fails what the queues
 * hold as soon as they run again; only then is the disk marked dead, which
 * makes a filesystem on it evict its inodes and wait for their writeback.
 * The other way round, that wait would be for requests parked in a
 * quiesced queue: forever, under recovery_lock. (nvme does the same: fail
 * and unquiesce, then mark the namespaces dead.)
 */
static void ssdq_give_up(struct ssdq_dev *dev, const char *why)
{
	if (!test_and_set_bit(SSDQ_DEAD, &dev->flags))
		dev_err(&dev->pdev->dev,
			"disabling the controller for good: %s\n", why);
	ssdq_resume_io(dev);
	ssdq_mark_disks_dead(dev);
}

/*
 * Disable the controller for good and fail whatever it still owes: from a
 * running controller, or one stopped for PCI error recovery. A dead one
 * was given up on already (dead never outlives recovery_lock stopped).
 */
static void ssdq_fail_locked(struct ssdq_dev *dev, const char *why)
{
	lockdep_assert_held(&dev->recovery_lock);
	if (ssdq_dead(dev))
		return;
	if (!dev->pci_error_stopped)
		ssdq_take_back(dev, SSDQ_STOP_RESET);
	dev->pci_error_stopped = false;
	ssdq_give_up(dev, why);
}

void ssdq_dev_fail(struct ssdq_dev *dev, const char *why)
{
	mutex_lock(&dev->recovery_lock);
	ssdq_fail_locked(dev, why);
	mutex_unlock(&dev->recovery_lock);
}

/*
 * The second half of every reset, after ssdq_take_back(): bring the
 * controller back with the same queues and run the requests it took back.
 * One that does not come back is given up on; unless its link went down
 * meanwhile: then PCI error recovery, which has begun, restarts it after
 * the link reset (slot_reset) or gives up on it.
 */
static int ssdq_restart_locked(struct ssdq_dev *dev, ktime_t start,
			       const char *why)
{
	struct ssdq_msg m, failed;
	int ret = -ENODEV;
	s64 ms;

	lockdep_assert_held(&dev->recovery_lock);
	/* An Abort refused before the disable: its slot goes with the rings. */
	clear_bit(SSDQ_ABORT_REFUSED, &dev->flags);
	if (!ssdq_dead(dev)) {
		ssdq_ctrl_reset_rings(dev);
		ssdq_set_irqs(dev, true);
		ret = ssdq_ctrl_restart(dev);
		if (ret)
			ssdq_set_irqs(dev, false);
	}
	if (!ret) {
		ssdq_unquiesce_tagset(&dev->tag_set);
		ssdq_kick_requeue_lists(dev);
		/* The disable forgot the event configuration and request. */
		ssdq_aen_restart(dev);
	} else if (pci_channel_offline(dev->pdev)) {
		atomic64_inc(&dev->recovery.reset_failures);
		dev_warn(&dev->pdev->dev,
			 "reset failed with the PCI link offline: leaving it to PCI error recovery\n");
		dev->pci_error_start = start;
		dev->pci_error_stopped = true;
	} else {
		atomic64_inc(&dev->recovery.reset_failures);
		snprintf(failed.s, sizeof(failed.s), "reset failed: %s",
			 ssdq_result_str(&m, ret));
		ssdq_give_up(dev, failed.s);
	}
	ms = ktime_ms_delta(ktime_get(), start);
	trace_ssdq_reset(dev, why, ret, ms);
	if (!ret)
		dev_info(&dev->pdev->dev, "reset done in %lld ms\n", ms);
	return ret;
}

/*
 * After the PCI core reset the function or the link, the requests were
 * taken back already. Not every reset reaches the device (and an FLR may
 * have failed): disable it to be sure, then bring it back.
 */
static int ssdq_restart_after_pci_reset(struct ssdq_dev *dev, ktime_t start,
					const char *why)
{
	if (ssdq_ctrl_stop_dma(dev, false)) {
		atomic64_inc(&dev->recovery.reset_failures);
		ssdq_give_up(dev, "controller does not disable after a PCI reset");
		return -ENODEV;
	}
	return ssdq_restart_locked(dev, start, why);
}

static int ssdq_reset_locked(struct ssdq_dev *dev, const char *why)
{
	ktime_t start = ktime_get();

	lockdep_assert_held(&dev->recovery_lock);
	if (ssdq_dead(dev))
		return -ENODEV;
	/*
	 * The PCI core is resetting the function or the link, or the system
	 * sleeps: what stopped the controller restarts it.
	 */
	if (dev->pci_error_stopped || dev->pci_reset_stopped ||
	    dev->pm_stopped)
		return -EBUSY;
	dev_warn(&dev->pdev->dev, "resetting the controller: %s\n", why);
	atomic64_inc(&dev->recovery.resets);
	ssdq_take_back(dev, SSDQ_STOP_RESET);
	return ssdq_restart_locked(dev, start, why);
}

/*
 * Requested resets run on ssdq's own workqueue: unbound, as a reset sleeps
 * for seconds, and with a rescuer (WQ_MEM_RECLAIM), as the writes it
 * brings back may be what frees memory. (The kernel's shared unbound
 * queue has no rescuer, and is deprecated since 7.0.)
 */
static struct workqueue_struct *ssdq_reset_wq;

/*
 * A writer's reset (sysfs, or the restart after an FLR) runs on that
 * workqueue while the writer waits: a fatal signal to the writer would cut
 * ssdq_wait_ready() short and leave the controller dead. The writer's
 * fail-nth countdown goes with the work (fault.c).
 */
static void ssdq_recovery_run(struct ssdq_dev *dev, struct work_struct *work)
{
	ssdq_fault_nth_swap(dev);
	queue_work(ssdq_reset_wq, work);
	flush_work(work);
	ssdq_fault_nth_swap(dev);
}

/*
 * A reset by the PCI core (a function-level reset through sysfs "reset", or
 * one a driver or the hypervisor asks for) wipes the controller's state.
 * Before it, take every request back as a reset does; a disable that fails
 * leaves the controller without bus mastering until the reset. After it,
 * start the controller again from a work item. In between, the controller
 * is stopped (pci_reset_stopped): timeouts find nothing in flight, and a
 * sysfs reset fails with EBUSY.
 */
void ssdq_pci_reset_prepare(struct ssdq_dev *dev)
{
	mutex_lock(&dev->recovery_lock);
	/* Dead, or stopped for PCI error recovery, whose slot_reset restarts it. */
	if (!ssdq_dead(dev) && !dev->pci_error_stopped) {
		dev_warn(&dev->pdev->dev, "resetting the controller: PCI reset\n");
		atomic64_inc(&dev->recovery.resets);
		atomic64_inc(&dev->recovery.pci_resets);
		dev->pci_reset_start = ktime_get();
		ssdq_take_back(dev, SSDQ_STOP_PCI_RESET);
		dev->pci_reset_stopped = true;
	}
	mutex_unlock(&dev->recovery_lock);
}

static void ssdq_pci_reset_work(struct work_struct *work)
{
	struct ssdq_dev *dev = container_of(work, struct ssdq_dev,
					    pci_reset_work);

	ssdq_fault_nth_swap(dev);
	mutex_lock(&dev->recovery_lock);
	if (dev->pci_reset_stopped) {
		dev->pci_reset_stopped = false;
		ssdq_restart_after_pci_reset(dev, dev->pci_reset_start,
					     "PCI reset");
	}
	mutex_unlock(&dev->recovery_lock);
	ssdq_fault_nth_swap(dev);
}

void ssdq_pci_reset_done(struct ssdq_dev *dev)
{
	ssdq_recovery_run(dev, &dev->pci_reset_work);
}

/*
 * PCI error recovery (AER, DPC): the PCI core saw an error on the link to the
 * controller, and reports how bad it is.
 *
 *  - Non-fatal (pci_channel_io_normal): the link still works and so does
 *    the controller. A completion the error lost is the timeout handler's
 *    business: nothing to do.
 *  - Fatal (pci_channel_io_frozen): the core resets the link next, which
 *    resets the controller. Take every request back first, as a reset
 *    does, but without touching registers (ssdq_take_back()): they are
 *    requeued, not failed, and run again after slot_reset.
 *  - Permanent failure: the controller is gone; fail it.
 *  - Fatal with the controller already given up on: the link reset still
 *    needs its slot_reset, for config space.
 *
 * Until the core reports the link normal again, timeouts only re-arm
 * (ssdq_timeout()), and a requested reset waits for slot_reset.
 */
pci_ers_result_t ssdq_pci_error_detected(struct ssdq_dev *dev,
					 pci_channel_state_t state)
{
	pci_ers_result_t ret = PCI_ERS_RESULT_NEED_RESET;

	atomic64_inc(&dev->recovery.pci_errors);
	switch (state) {
	case pci_channel_io_normal:
		dev_warn(&dev->pdev->dev,
			 "PCI error detected, link still up: carrying on\n");
		return PCI_ERS_RESULT_CAN_RECOVER;
	case pci_channel_io_frozen:
		break;
	default:
		ssdq_dev_fail(dev, "PCI link failed for good");
		return PCI_ERS_RESULT_DISCONNECT;
	}

	mutex_lock(&dev->recovery_lock);
	if (ssdq_dead(dev)) {
		/*
		 * Nothing to bring back, but the link reset comes all the
		 * same and wipes config space. Asking for it gets slot_reset
		 * called, which restores config space (and then gives up
		 * again): with DISCONNECT here the BARs would stay at 0, and
		 * a later rebind would read a controller of all zeros.
		 */
		ret = PCI_ERS_RESULT_NEED_RESET;
	} else if (!dev->pci_error_stopped) {
		dev_warn(&dev->pdev->dev,
			 "resetting the controller: PCI error, link frozen\n");
		dev->pci_error_start = ktime_get();
		atomic64_inc(&dev->recovery.resets);
		ssdq_take_back(dev, SSDQ_STOP_RESET);
		dev->pci_error_stopped = true;
	}
	mutex_unlock(&dev->recovery_lock);
	return ret;
}

/*
 * The PCI core reset the link (or asks a driver that did not stop to reset
 * its device): restore config space, which the link reset wiped, and bring
 * the controller back. The link reset disabled it; disable it anyway, as
 * not every platform's reset reaches the device.
 */
pci_ers_result_t ssdq_pci_slot_reset(struct ssdq_dev *dev)
{
	const char *why = "PCI error recovery";
	int ret;

	pci_restore_state(dev->pdev);
	mutex_lock(&dev->recovery_lock);
	if (!dev->pci_error_stopped) {
		ret = ssdq_reset_locked(dev, why);
	} else {
		dev->pci_error_stopped = false;
		ret = ssdq_restart_after_pci_reset(dev, dev->pci_error_start,
						   why);
	}
	mutex_unlock(&dev->recovery_lock);
	return ret ? PCI_ERS_RESULT_DISCONNECT : PCI_ERS_RESULT_RECOVERED;
}

/*
 * Shutdown and sleep freeze every namespace's queue. No scan changes the
 * list meanwhile: shutdown stops them first (main.c), and system sleep
 * comes after the freezable workqueue that runs them is frozen, with the
 * tasks that could write rescan_namespaces. @owned: ended by the same task
 * (shutdown), or by resume, perhaps in another.
 */
static void ssdq_freeze_disks(struct ssdq_dev *dev, bool owned)
{
	struct ssdq_ns *ns;

	ssdq_for_each_ns(dev, ns) {
		if (owned)
			blk_freeze_queue_start(ns->disk->queue);
		else
			ssdq_freeze_start_unowned(ns->disk->queue);
	}
}

static void ssdq_unfreeze_disks(struct ssdq_dev *dev, bool owned)
{
	struct ssdq_ns *ns;

	ssdq_for_each_ns(dev, ns) {
		if (owned)
			ssdq_unfreeze_queue(ns->disk->queue);
		else
			ssdq_unfreeze_unowned(ns->disk->queue);
	}
}

/*
 * With the queues' freeze begun, give the requests already entered up to
 * io_timeout to finish, outside recovery_lock (a timeout among them may
 * need it). A dead controller or an offline link finishes nothing.
 */
static void ssdq_let_entered_finish(struct ssdq_dev *dev)
{
	struct ssdq_ns *ns;

	ssdq_for_each_ns(dev, ns) {
		struct request_queue *q = ns->disk->queue;

		if (ssdq_dead(dev) || pci_channel_offline(dev->pdev))
			return;
		blk_mq_freeze_queue_wait_timeout(q, q->rq_timeout);
	}
}

/*
 * System shutdown: the controller flushes its cache (CC.SHN) and stays off,
 * as nvme's does. First the requests already entered get a while to finish
 * (a freeze, outside recovery_lock: a timeout among them may need it).
 * Then, under the lock: the I/O queues are deleted, CC.SHN written, bus
 * mastering taken away (CC.SHN does not stop the controller), and only then
 * is anything reaped or cancelled. Dead from then on, so no timeout can
 * reset it back to life; what is still queued fails at once.
 */
void ssdq_dev_shutdown(struct ssdq_dev *dev)
{
	ktime_t start = ktime_get();

	ssdq_freeze_disks(dev, true);
	ssdq_let_entered_finish(dev);
	mutex_lock(&dev->recovery_lock);
	if (dev->pci_error_stopped) {
		/* A frozen link: no register access; its requests fail. */
		ssdq_fail_locked(dev, "system shutdown during PCI error recovery");
	} else if (!ssdq_dead(dev)) {
		if (!ssdq_take_back(dev, SSDQ_STOP_SHUTDOWN))
			dev_info(&dev->pdev->dev, "shut down in %lld ms\n",
				 ktime_ms_delta(ktime_get(), start));
		ssdq_resume_io(dev);
	}
	mutex_unlock(&dev->recovery_lock);
	ssdq_unfreeze_disks(dev, true);
}

/*
 * System sleep: suspend to RAM or to idle, and hibernation's freeze (before
 * the image is written) and poweroff. The platform may cut the controller's
 * power or reset it (QEMU resets every device on wake from S3), so it goes
 * down as for a shutdown, CC.SHN included (its volatile write cache reaches
 * the media), and comes back as after an FLR. As in a shutdown, the
 * requests already entered get a while to finish first; what is left is
 * taken back and requeued. The queues stay frozen until resume: nothing new
 * reaches a sleeping controller, and no timeout can fire for it. Switches
 * and counters live in memory and survive; the restart re-creates the same
 * queues, as a reset does. While it sleeps (pm_stopped) a requested reset
 * fails with EBUSY, as during an FLR.
 */
void ssdq_dev_suspend(struct ssdq_dev *dev)
{
	/* Ended by ssdq_dev_resume(), perhaps in another task. */
	ssdq_freeze_disks(dev, false);
	ssdq_let_entered_finish(dev);
	mutex_lock(&dev->recovery_lock);
	/* A frozen link's recovery restarts it (slot_reset), or gives up. */
	if (!ssdq_dead(dev) && !dev->pci_error_stopped) {
		dev->pm_start = ktime_get();
		atomic64_inc(&dev->recovery.suspends);
		/* One that will not shut down loses bus mastering; resume resets it. */
		ssdq_take_back(dev, SSDQ_STOP_SUSPEND);
		dev->pm_stopped = true;
	}
	mutex_unlock(&dev->recovery_lock);
}

/*
 * Wake: whatever the controller went through, disable it and bring it back
 * with the same queues, then run what suspend took back. One that does not
 * come back is given up on, as after a failed reset.
 */
void ssdq_dev_resume(struct ssdq_dev *dev)
{
	mutex_lock(&dev->recovery_lock);
	if (dev->pm_stopped) {
		dev->pm_stopped = false;
		ssdq_restart_after_pci_reset(dev, dev->pm_start, "resume");
	}
	mutex_unlock(&dev->recovery_lock);
	ssdq_unfreeze_disks(dev, false);
}

/*
 * An admin command from outside recovery (a namespace scan, user
 * passthrough), under recovery_lock as the event work's are: no reset then
 * disables the controller under it, which would lose its answer with the
 * rings and end its wait in an admin timeout that stops the controller
 * again. -ENODEV while the controller is stopped (reset by the PCI core,
 * in error recovery, asleep) or dead.
 */
int ssdq_admin_exec_guarded(struct ssdq_dev *dev, struct nvme_command *cmd,
			    u32 *result)
{
	int ret = -ENODEV;

	mutex_lock(&dev->recovery_lock);
	if (!dev->pm_stopped && !dev->pci_reset_stopped &&
	    !dev->pci_error_stopped)
		ret = ssdq_admin_exec(dev, cmd, result);
	mutex_unlock(&dev->recovery_lock);
	return ret;
}

/*
 * The Abort's answer, from the admin queue's reaper. Aborted: the command
 * completes with "Command Abort Requested" and runs again. Not aborted
 * (QEMU 7.2 always says so), or the Abort failed: reset now rather than at
 * the command's next expiry, from the escalation work, and keep the Abort's
 * slot until it is done: requests that time out meanwhile find it busy and
 * wait for the reset instead of sending Aborts that would be refused too.
 */
static bool ssdq_abort_done(struct ssdq_dev *dev, struct nvme_completion *cqe)
{
	bool refused = le32_to_cpu(cqe->result.u32) & 1;

	if (refused)
		atomic64_inc(&dev->recovery.aborts_refused);
	if (!refused && !(le16_to_cpu(cqe->status) >> 1))
		return false;
	set_bit(SSDQ_ABORT_REFUSED, &dev->flags);
	queue_work(ssdq_reset_wq, &dev->escalate_work);
	return true;
}

/*
 * 2. Send an Abort for @req and do not wait for it: its answer comes to
 * ssdq_abort_done(). One at a time per controller (nvme-pci's abort limit
 * at its smallest). Returns 0 if sent, -EBUSY if another is out, -ENODEV if
 * the admin queue is stopped.
 */
static int ssdq_abort_send(struct ssdq_queue *q, struct request *req)
{
	struct ssdq_dev *dev = q->dev;
	struct nvme_command c = { };
	u16 cid = ssdq_cid(req);
	int ret;

	lockdep_assert_held(&dev->recovery_lock);
	c.abort.opcode = nvme_admin_abort_cmd;
	c.abort.sqid = cpu_to_le16(q->qid);
	c.abort.cid = cid;
	ret = ssdq_admin_submit_nowait(dev, SSDQ_SLOT_ABORT, &c,
				       ssdq_abort_done);
	if (ret)
		return ret;
	/* Read by the escalation work, under recovery_lock as here. */
	dev->abort_qid = q->qid;
	dev->abort_cid = cid;
	atomic64_inc(&dev->recovery.aborts);
	return 0;
}

/* 3. Have the escalation work reset the controller for @req. */
static enum blk_eh_timer_return ssdq_escalate(struct ssdq_dev *dev,
					      struct request *req)
{
	ssdq_iod(req)->escalated = true;
	WRITE_ONCE(dev->escalation_pending, true);
	queue_work(ssdq_reset_wq, &dev->escalate_work);
	/* The reset takes the request back; until then it is in flight. */
	return BLK_EH_RESET_TIMER;
}

/* From the timed-out request's issue to now. */
static void ssdq_note_recovery(struct ssdq_dev *dev, unsigned long issued)
{
	atomic64_set(&dev->recovery.last_recovery_ms,
		     jiffies_to_msecs(jiffies - issued));
}

/*
 * ->timeout never sleeps on the device: it looks at the CQ, sends an Abort
 * without waiting, and leaves resets to the escalation work. Nor does it
 * wait for recovery_lock: whoever holds it (a reset, an FLR, PCI error
 * recovery, the escalation work) takes every request back itself, and
 * blk-mq's timeout work, which serves every request of the disk, would
 * otherwise sleep behind a reset of seconds. The request is then looked at
 * again after another io_timeout.
 */
enum blk_eh_timer_return ssdq_timeout(struct request *req)
{
	struct ssdq_queue *q = req->mq_hctx->driver_data;
	struct ssdq_iod *iod = ssdq_iod(req);
	struct ssdq_dev *dev = q->dev;
	enum blk_eh_timer_return ret = BLK_EH_DONE;
	unsigned long issued;
	int err;

	/*
	 * A link in error: PCI error recovery takes the request back and
	 * runs it again; nothing here can reach the controller meanwhile.
	 */
	if (pci_channel_offline(dev->pdev))
		return BLK_EH_RESET_TIMER;
	atomic64_inc(&dev->recovery.timeouts);
	if (!mutex_trylock(&dev->recovery_lock))
		return BLK_EH_RESET_TIMER;
	if (ssdq_dead(dev)) {
		trace_ssdq_timeout_step(q, req, SSDQ_STEP_DEAD);
		ssdq_cancel_rq(req, NULL);
		goto out;
	}
	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT)
		goto out;
	if (time_before(jiffies, READ_ONCE(req->deadline))) {
		ret = BLK_EH_RESET_TIMER;
		goto out;
	}
	/* Its reset is on the way. */
	if (iod->escalated) {
		ret = BLK_EH_RESET_TIMER;
		goto out;
	}
	/* Read now: once completed, the request may be reused. */
	issued = iod->start;

	/* 0. Nothing but a reset helps a controller in fatal status. */
	if (ssdq_ctrl_fatal(dev)) {
		trace_ssdq_timeout_step(q, req, SSDQ_STEP_FATAL);
		atomic64_inc(&dev->recovery.fatal_status);
		ret = ssdq_escalate(dev, req);
		goto out;
	}

	/* 1. Lost interrupt? */
	ssdq_queue_reap_alone(q);
	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT) {
		trace_ssdq_timeout_step(q, req, SSDQ_STEP_LOST_IRQ);
		atomic64_inc(&dev->recovery.lost_interrupts);
		ssdq_note_recovery(dev, issued);
		dev_warn_ratelimited(&dev->pdev->dev,
				     "queue %u: command %d completed without an interrupt\n",
				     q->qid, req->tag);
		goto out;
	}

	/*
	 * Its reset is on its way for another request: it takes this one
	 * back too. (After a refused Abort the slot stays busy instead.)
	 */
	if (READ_ONCE(dev->escalation_pending)) {
		ret = BLK_EH_RESET_TIMER;
		goto out;
	}

	/*
	 * 2. Abort, once per request; its timer runs again meanwhile. With
	 * another Abort out, the request waits one more io_timeout instead.
	 */
	dev_warn(&dev->pdev->dev, "queue %u: command %d (%s) timed out\n",
		 q->qid, req->tag, blk_op_str(req_op(req)));
	if (!iod->aborted) {
		iod->aborted = true;
		err = ssdq_abort_send(q, req);
		if (!err)
			trace_ssdq_timeout_step(q, req, SSDQ_STEP_ABORT);
		if (err != -ENODEV) {
			ret = BLK_EH_RESET_TIMER;
			goto out;
		}
	}

	/* 3. Reset: the request is requeued (or failed) by it. */
	ret = ssdq_escalate(dev, req);
out:
	mutex_unlock(&dev->recovery_lock);
	return ret;
}

/* What the escalation work looks for: a request to reset for. */
struct ssdq_escalation {
	bool refused;			/* SSDQ_ABORT_REFUSED, and its command */
	u16 qid;
	u16 cid;
	unsigned long issued;		/* the request found */
	bool found;
};

static bool ssdq_find_escalated(struct request *req, void *data)
{
	struct ssdq_escalation *e = data;
	struct ssdq_queue *q = req->mq_hctx->driver_data;
	struct ssdq_iod *iod = ssdq_iod(req);

	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT)
		return true;
	if (!iod->escalated &&
	    !(e->refused && q->qid == e->qid && ssdq_cid(req) == e->cid))
		return true;
	trace_ssdq_timeout_step(q, req, SSDQ_STEP_RESET);
	e->issued = iod->start;
	e->found = true;
	return false;
}

/*
 * 3. Reset for a timeout, on ssdq's reset workqueue: asked for by ->timeout
 * or by an Abort's refusal. Only if a request it was asked for is still in
 * flight: a reset since (sysfs, FLR, another timeout's) ran it again, and an
 * Abort refused for a command that then completed needs none. (The command
 * id carries a generation: a tag reused since does not match.)
 */
static void ssdq_escalate_work(struct work_struct *work)
{
	struct ssdq_dev *dev = container_of(work, struct ssdq_dev,
					    escalate_work);
	struct ssdq_escalation e = { };

	mutex_lock(&dev->recovery_lock);
	e.refused = test_and_clear_bit(SSDQ_ABORT_REFUSED, &dev->flags);
	e.qid = dev->abort_qid;
	e.cid = dev->abort_cid;
	if (!test_bit(SSDQ_REMOVED, &dev->flags) && !ssdq_dead(dev))
		blk_mq_tagset_busy_iter(&dev->tag_set, ssdq_find_escalated, &e);
	if (e.found) {
		ssdq_reset_locked(dev, "command timeout");
		ssdq_note_recovery(dev, e.issued);
	}
	/*
	 * The refused Abort's slot, kept since its answer: no other Abort was
	 * sent meanwhile, and a reset, which frees it, clears e.refused's bit.
	 */
	if (e.refused && !e.found)
		ssdq_admin_nowait_release(dev, SSDQ_SLOT_ABORT);
	/* Under the lock: ->timeout reads it holding the lock too. */
	WRITE_ONCE(dev->escalation_pending, false);
	mutex_unlock(&dev->recovery_lock);
}

/*
 * Removal, before the teardown: after the disk is gone no request needs a
 * reset, and none may start on a controller being torn down (one under way
 * ends first). The caller cancels the work again once the admin interrupt,
 * which may queue it, is freed.
 */
void ssdq_recovery_remove(struct ssdq_dev *dev)
{
	mutex_lock(&dev->recovery_lock);
	set_bit(SSDQ_REMOVED, &dev->flags);
	mutex_unlock(&dev->recovery_lock);
	cancel_work_sync(&dev->escalate_work);
}

static void ssdq_reset_work(struct work_struct *work)
{
	struct ssdq_dev *dev = container_of(work, struct ssdq_dev, reset_work);

	ssdq_fault_nth_swap(dev);
	mutex_lock(&dev->recovery_lock);
	dev->reset_result = ssdq_reset_locked(dev, READ_ONCE(dev->reset_why));
	mutex_unlock(&dev->recovery_lock);
	ssdq_fault_nth_swap(dev);
}

void ssdq_recovery_init(struct ssdq_dev *dev)
{
	mutex_init(&dev->recovery_lock);
	INIT_WORK(&dev->reset_work, ssdq_reset_work);
	INIT_WORK(&dev->escalate_work, ssdq_escalate_work);
	INIT_WORK(&dev->pci_reset_work, ssdq_pci_reset_work);
}

int __init ssdq_recovery_wq_init(void)
{
	ssdq_reset_wq = alloc_workqueue("ssdq_reset",
					WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return ssdq_reset_wq ? 0 : -ENOMEM;
}

void ssdq_recovery_wq_exit(void)
{
	destroy_workqueue(ssdq_reset_wq);
}

/*
 * A reset a user asked for, run by a work item and waited for; @why, for
 * dmesg and the trace. Two at once may both see the first's reason.
 */
int ssdq_reset_request(struct ssdq_dev *dev, const char *why)
{
	WRITE_ONCE(dev->reset_why, why);
	ssdq_recovery_run(dev, &dev->reset_work);
	return READ_ONCE(dev->reset_result);
}

/* recovery/reset: the writer waits for the reset. */
static int ssdq_recovery_reset(struct ssdq_dev *dev, unsigned int val)
{
	return ssdq_reset_request(dev, "requested through sysfs");
}

static struct ssdq_attr ssdq_recovery_reset_attr =
	SSDQ_ATTR_ACTION(reset, "recovery", ssdq_recovery_reset);

SSDQ_ATTR_GROUP(ssdq_recovery_attr_group, "recovery",
		&ssdq_recovery_reset_attr.dattr.attr);

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
	seq_printf(m, "pci_resets %lld\n", atomic64_read(&s->pci_resets));
	seq_printf(m, "pci_errors %lld\n", atomic64_read(&s->pci_errors));
	seq_printf(m, "fatal_status %lld\n", atomic64_read(&s->fatal_status));
	seq_printf(m, "admin_timeouts %lld\n",
		   atomic64_read(&s->admin_timeouts));
	seq_printf(m, "requeued %lld\n", atomic64_read(&s->requeued));
	seq_printf(m, "retried %lld\n", atomic64_read(&s->retried));
	seq_printf(m, "bad_cqes %lld\n", atomic64_read(&s->bad_cqes));
	seq_printf(m, "suspends %lld\n", atomic64_read(&s->suspends));
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
 * ->complete of a request that did not succeed: may it run again? One a
 * reset took back (host aborted) may, and so may one the device failed
 * without Do Not Retry, e.g. "Command Abort Requested" after an Abort it
 * honoured, or "Namespace Not Ready"; unless the controller is dead, the
 * submitter asked for no retries, or it was retried too often. The requeue
 * list is kicked here: outside a reset nothing else would run it.
 */
bool ssdq_retry_rq(struct ssdq_dev *dev, struct request *req, u16 status)
{
	struct ssdq_iod *iod = ssdq_iod(req);

	if (ssdq_dead(dev) || iod->retries >= SSDQ_MAX_RETRIES ||
	    blk_noretry_request(req))
		return false;
	if ((status & NVME_SCT_SC_MASK) == NVME_SC_HOST_ABORTED_CMD) {
		atomic64_inc(&dev->recovery.requeued);
	} else {
		if (status & NVME_STATUS_DNR)
			return false;
		atomic64_inc(&dev->recovery.retried);
	}
	iod->retries++;
	blk_mq_requeue_request(req, true);
	return true;
}
