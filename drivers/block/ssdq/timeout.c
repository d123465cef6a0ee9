// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq timeouts. blk-mq keeps one timer per request queue, not one per
 * request, and calls ->timeout for each request that outlived io_timeout.
 *
 * What ssdq does then:
 *  1. Reap the request's CQ with its interrupt held off: if the command had
 *     completed, only the interrupt was lost, and the request completes now.
 *  2. Otherwise the controller is taken as failed: it is disabled, so it can
 *     no longer DMA into the request's pages, and every request in flight
 *     fails with an error its submitter sees. Nothing is left hanging.
 */
#include <ssdq/ssdq.h>

static void ssdq_reap_io_queues(struct ssdq_dev *dev)
{
	unsigned int qid;

	for (qid = 1; qid <= dev->nr_io_queues; qid++)
		ssdq_cq_poll_irqdisable(&dev->queues[qid]);
}

/*
 * Disable the controller for good and fail whatever it still owes. Safe to
 * call more than once and from the timeout handler; only the first call acts.
 */
void ssdq_dev_fail(struct ssdq_dev *dev, const char *why)
{
	if (test_and_set_bit(SSDQ_DEAD, &dev->flags))
		return;
	dev_err(&dev->pdev->dev, "disabling the controller: %s\n", why);

	/* No new command reaches a ring while it is being torn away. */
	blk_mq_quiesce_tagset(&dev->tag_set);
	ssdq_ctrl_disable(dev, false);
	/* What the controller did complete, completes normally. */
	ssdq_reap_io_queues(dev);
	blk_mq_tagset_busy_iter(&dev->tag_set, ssdq_cancel_rq, dev);
	blk_mq_tagset_wait_completed_request(&dev->tag_set);
	blk_mark_disk_dead(dev->disk);
	/* Anything still queued now fails fast in ->queue_rq. */
	blk_mq_unquiesce_tagset(&dev->tag_set);
}

enum blk_eh_timer_return ssdq_timeout(struct request *req)
{
	struct ssdq_queue *q = req->mq_hctx->driver_data;
	struct ssdq_dev *dev = q->dev;

	/* Submitted as the controller died: nobody will complete it. */
	if (ssdq_dead(dev)) {
		ssdq_cancel_rq(req, NULL);
		return BLK_EH_DONE;
	}

	ssdq_cq_poll_irqdisable(q);
	if (blk_mq_rq_state(req) != MQ_RQ_IN_FLIGHT) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "queue %u: command %d completed without an interrupt\n",
				     q->qid, req->tag);
		return BLK_EH_DONE;
	}

	dev_err(&dev->pdev->dev, "queue %u: command %d (%s) timed out\n",
		q->qid, req->tag, blk_op_str(req_op(req)));
	ssdq_dev_fail(dev, "command timeout");
	return BLK_EH_DONE;
}
