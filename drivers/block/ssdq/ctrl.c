// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq controller bring-up and shutdown: the registers in BAR0, the admin
 * queue and the admin commands that identify the controller, hand it the
 * shadow doorbell buffer and create its I/O queues, one per interrupt
 * vector. Nothing here knows about requests: the I/O queues' reaper comes
 * from the I/O path (io.c) through probe.
 */
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/overflow.h>

#include <ssdq/ssdq.h>

#define SSDQ_SHUTDOWN_TIMEOUT	(10 * HZ)

/* All ones: the controller is gone (or fault.c says it is). */
static u32 ssdq_csts(struct ssdq_dev *dev)
{
	if (ssdq_fault_gone(dev))
		return ~0U;
	return readl(dev->bar + NVME_REG_CSTS);
}

/* CAP.TO is how long (in 500 ms units) CSTS.RDY may take to follow CC.EN. */
static int ssdq_wait_ready(struct ssdq_dev *dev, bool ready)
{
	unsigned int to_ms = (NVME_CAP_TIMEOUT(dev->cap) + 1) * 500;
	unsigned long deadline = jiffies + msecs_to_jiffies(to_ms);
	/* fault.c's slow_enable_ms: a controller slow to become ready. */
	unsigned long not_before = jiffies +
				   (ready ? ssdq_fault_slow_enable(dev) : 0);
	u32 want = ready ? NVME_CSTS_RDY : 0;
	u32 csts;

	for (;;) {
		/*
		 * A link in error reads as all ones, or as whatever it read
		 * last: PCI error recovery (slot_reset) takes over from here.
		 */
		if (pci_channel_offline(dev->pdev)) {
			dev_err(&dev->pdev->dev, "PCI link offline\n");
			return -ENOLINK;
		}
		csts = ssdq_csts(dev);
		if (csts == ~0U) {
			dev_err(&dev->pdev->dev, "controller stopped responding\n");
			return -ENODEV;
		}
		if ((csts & NVME_CSTS_RDY) == want &&
		    !time_before(jiffies, not_before))
			return 0;
		if (ready && (csts & NVME_CSTS_CFS)) {
			dev_err(&dev->pdev->dev,
				"controller fatal status while enabling\n");
			return -EIO;
		}
		if (time_after(jiffies, deadline)) {
			dev_err(&dev->pdev->dev,
				"controller not %s after %u ms (CAP.TO)\n",
				ready ? "ready" : "disabled", to_ms);
			return -ENODEV;
		}
		if (fatal_signal_pending(current))
			return -EINTR;
		usleep_range(1000, 2000);
	}
}

static int ssdq_wait_shutdown(struct ssdq_dev *dev)
{
	unsigned long deadline = jiffies + SSDQ_SHUTDOWN_TIMEOUT;
	u32 csts;

	for (;;) {
		csts = ssdq_csts(dev);
		if (csts == ~0U)
			return -ENODEV;
		if ((csts & NVME_CSTS_SHST_MASK) == NVME_CSTS_SHST_CMPLT)
			return 0;
		if (time_after(jiffies, deadline)) {
			dev_warn(&dev->pdev->dev,
				 "controller shutdown did not complete\n");
			return -ETIMEDOUT;
		}
		usleep_range(1000, 2000);
	}
}

/*
 * Stop the controller. A normal shutdown (CC.SHN) lets it flush its volatile
 * cache first; a plain disable (CC.EN = 0) is immediate and is also the
 * fallback when the shutdown does not finish.
 */
static int ssdq_ctrl_disable(struct ssdq_dev *dev, bool shutdown)
{
	if (ssdq_fault_take(dev, SSDQ_FAULT_FAIL_DISABLE)) {
		dev_err(&dev->pdev->dev,
			"controller not disabled (fault injected)\n");
		return -ETIMEDOUT;
	}
	if (shutdown && !ssdq_dead(dev)) {
		dev->ctrl_config &= ~NVME_CC_SHN_MASK;
		dev->ctrl_config |= NVME_CC_SHN_NORMAL;
		writel(dev->ctrl_config, dev->bar + NVME_REG_CC);
		if (!ssdq_wait_shutdown(dev))
			return 0;
	}
	dev->ctrl_config &= ~(NVME_CC_SHN_MASK | NVME_CC_ENABLE);
	writel(dev->ctrl_config, dev->bar + NVME_REG_CC);
	return ssdq_wait_ready(dev, false);
}

/* Has the controller given up on itself (CSTS.CFS), or gone (all ones)? */
bool ssdq_ctrl_fatal(struct ssdq_dev *dev)
{
	u32 csts = ssdq_csts(dev);

	if (ssdq_fault_take(dev, SSDQ_FAULT_FATAL_STATUS))
		csts |= NVME_CSTS_CFS;
	return csts == ~0U || (csts & NVME_CSTS_CFS);
}

static int ssdq_ctrl_enable(struct ssdq_dev *dev)
{
	dev->ctrl_config = NVME_CC_CSS_NVM | NVME_CC_AMS_RR | NVME_CC_SHN_NONE |
			   (SSDQ_CTRL_PAGE_SHIFT - 12) << NVME_CC_MPS_SHIFT |
			   NVME_CC_IOSQES | NVME_CC_IOCQES | NVME_CC_ENABLE;
	writel(dev->ctrl_config, dev->bar + NVME_REG_CC);
	return ssdq_wait_ready(dev, true);
}

/* How many queue pairs' doorbells fit in BAR0. */
static unsigned int ssdq_bar_max_queues(struct ssdq_dev *dev)
{
	resource_size_t db_bytes = dev->bar_len - NVME_REG_DBS;

	return db_bytes / (2 * 4 * dev->db_stride);
}

/* Map BAR0 and read what the controller can do before touching it. */
int ssdq_ctrl_map(struct ssdq_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	/*
	 * A bounce buffer (swiotlb) keeps the data's offset in its controller
	 * page: PRPs describe pages, so a request's segments must meet at
	 * page boundaries in the DMA addresses as they do in memory.
	 */
	dma_set_min_align_mask(&pdev->dev, SSDQ_CTRL_PAGE_SIZE - 1);

	dev->bar = ssdq_pcim_iomap_bar0(pdev, "ssdq");
	if (IS_ERR(dev->bar))
		return PTR_ERR(dev->bar);
	dev->bar_len = pci_resource_len(pdev, 0);
	if (dev->bar_len < NVME_REG_DBS + SSDQ_CTRL_PAGE_SIZE) {
		dev_err(&pdev->dev, "BAR0 is %llu bytes, too small for NVMe\n",
			(unsigned long long)dev->bar_len);
		return -ENODEV;
	}
	if (ssdq_csts(dev) == ~0U) {
		dev_err(&pdev->dev, "controller does not respond\n");
		return -ENODEV;
	}
	dev->cap = lo_hi_readq(dev->bar + NVME_REG_CAP);
	dev->db_stride = 1U << NVME_CAP_STRIDE(dev->cap);
	dev->dbs = dev->bar + NVME_REG_DBS;
	dev->bar_len = ssdq_fault_bar_len(dev, dev->bar_len);
	/* A large CAP.DSTRD spreads the doorbells out, maybe past BAR0. */
	if (ssdq_bar_max_queues(dev) < 2) {
		dev_err(&pdev->dev,
			"BAR0 is %llu bytes, no room for I/O queue doorbells %u bytes apart\n",
			(unsigned long long)dev->bar_len, 4 * dev->db_stride);
		return -ENODEV;
	}

	if (!(NVME_CAP_CSS(dev->cap) & NVME_CAP_CSS_NVM)) {
		dev_err(&pdev->dev, "controller lacks the NVM command set\n");
		return -ENODEV;
	}
	if (NVME_CAP_MPSMIN(dev->cap) > SSDQ_CTRL_PAGE_SHIFT - 12) {
		dev_err(&pdev->dev, "controller does not support 4 KiB pages\n");
		return -ENODEV;
	}
	return 0;
}

/*
 * The answer to a command nobody waits for, to whoever sent it. The slot
 * is freed only after @done ran, so the next sender sees what it did; or
 * kept, if @done says so, until ssdq_admin_nowait_release() or a reset.
 */
static void ssdq_admin_nowait_cqe(struct ssdq_dev *dev,
				  enum ssdq_admin_slot slot,
				  struct nvme_completion *cqe)
{
	ssdq_admin_done_fn done;

	/* Dropped, it stays out, as one the controller never answers. */
	if (ssdq_fault_take(dev, SSDQ_FAULT_DROP_ADMIN))
		return;
	done = READ_ONCE(dev->nowait_done[slot]);
	if (!done || done(dev, cqe))
		return;
	/* Release: @done's stores before the slot is seen free (cmpxchg). */
	smp_store_release(&dev->nowait_done[slot], NULL);
}

/*
 * The admin queue's CQE handler: wake the one command waiting, or hand the
 * answer to one nobody waits for (an Abort, an Asynchronous Event Request)
 * to its sender.
 */
static void ssdq_admin_handle_cqe(struct ssdq_queue *q,
				  struct nvme_completion *cqe,
				  struct io_comp_batch *iob)
{
	struct ssdq_dev *dev = q->dev;
	u16 slot = cqe->command_id - SSDQ_NOWAIT_CID;

	if (slot < SSDQ_NR_ADMIN_SLOTS) {
		ssdq_admin_nowait_cqe(dev, slot, cqe);
		return;
	}
	if (cqe->command_id != READ_ONCE(dev->admin_cid)) {
		dev_warn_ratelimited(&dev->pdev->dev,
				     "ignoring admin completion for stale id %u\n",
				     cqe->command_id);
		return;
	}
	if (ssdq_fault_take(dev, SSDQ_FAULT_DROP_ADMIN))
		return;
	dev->admin_status = le16_to_cpu(cqe->status) >> 1;
	dev->admin_result = le32_to_cpu(cqe->result.u32);
	complete(&dev->admin_done);
}

/* The admin queue's reaper, run by its interrupt handler (irq.c). */
static int ssdq_admin_reap(struct ssdq_queue *q, int budget,
			   struct io_comp_batch *iob)
{
	return ssdq_cq_reap(q, budget, ssdq_admin_handle_cqe, NULL);
}

/* Describe the admin rings in AQA/ASQ/ACQ and enable the controller. */
static int ssdq_ctrl_start(struct ssdq_dev *dev)
{
	struct ssdq_queue *aq = &dev->queues[0];
	u32 aqa = (aq->depth - 1) | (aq->depth - 1) << 16;

	writel(aqa, dev->bar + NVME_REG_AQA);
	lo_hi_writeq(aq->sq_dma, dev->bar + NVME_REG_ASQ);
	lo_hi_writeq(aq->cq_dma, dev->bar + NVME_REG_ACQ);
	/* From here on the controller may use the rings: teardown disables it. */
	aq->created = true;
	/* Bus mastering may have been taken from a controller that hung. */
	pci_set_master(dev->pdev);
	return ssdq_ctrl_enable(dev);
}

/*
 * Bring the controller to life with only the admin queue: disable it,
 * describe the admin rings in AQA/ASQ/ACQ, enable it, and take one interrupt
 * vector for admin completions until the I/O queues are known.
 */
int ssdq_ctrl_init_admin(struct ssdq_dev *dev)
{
	struct ssdq_queue *aq = &dev->queues[0];
	int ret;

	ret = ssdq_ctrl_stop_dma(dev, false);
	if (ret)
		return ret;
	ret = ssdq_queue_alloc(dev, 0, SSDQ_ADMIN_DEPTH, ssdq_admin_reap);
	if (ret)
		return ret;

	ret = pci_alloc_irq_vectors(dev->pdev, 1, 1, PCI_IRQ_ALL_TYPES);
	if (ret < 0)
		return ret;
	aq->vector = 0;
	ret = ssdq_irq_request(aq);
	if (ret)
		return ret;
	return ssdq_ctrl_start(dev);
}

/*
 * An admin command never completed, not even by a look at the CQ. The
 * controller still owns it and whatever buffer it names (Identify data,
 * shadow doorbell pages), so stop the controller before the caller frees
 * them, and keep further admin commands off it until it is started again
 * (a reset, or nothing: teardown has nothing more to ask).
 *
 * I/O submission pauses while it stops, as in every reset (and in
 * nvme-pci's disable): no SQ doorbell races the CC.EN write. QEMU 7.2
 * needs that: a fetch a doorbell started runs during the disable's drain,
 * and the I/O it submits completes after the disable freed its queue (a
 * use after free that crashes QEMU). The requests sent afterwards go to a
 * stopped controller and time out into a reset.
 */
static void ssdq_admin_timed_out(struct ssdq_dev *dev, u8 opcode)
{
	dev_err(&dev->pdev->dev,
		"admin command %#x timed out after %u s, stopping the controller\n",
		opcode, ssdq_params.admin_timeout);
	atomic64_inc(&dev->recovery.admin_timeouts);
	/* The tag set exists from the probe's ssdq_tag_set_init() on. */
	if (dev->tag_set.tags)
		ssdq_quiesce_tagset(&dev->tag_set);
	ssdq_ctrl_stop_dma(dev, false);
	if (dev->tag_set.tags)
		ssdq_unquiesce_tagset(&dev->tag_set);
	dev->queues[0].created = false;
}

/*
 * Run one admin command and wait for it. Returns 0, a negative errno when it
 * could not run, or the positive NVMe status (SCT/SC) it failed with.
 */
int ssdq_admin_exec(struct ssdq_dev *dev, struct nvme_command *cmd,
		    u32 *result)
{
	struct ssdq_queue *aq = &dev->queues[0];
	unsigned long timeout = ssdq_params.admin_timeout * HZ;
	int ret;

	mutex_lock(&dev->admin_lock);
	if (ssdq_dead(dev) || !aq->created) {
		ret = -ENODEV;
		goto out;
	}
	ret = ssdq_fault_admin_refused(dev);
	if (ret)
		goto out;
	/*
	 * A fresh id per command, so a CQE of an older one is recognised; set
	 * before the completion is re-armed. (A timed-out command cannot
	 * complete late: its controller was stopped.)
	 */
	WRITE_ONCE(dev->admin_cid, (dev->admin_cid + 1) & (SSDQ_NOWAIT_CID - 1));
	reinit_completion(&dev->admin_done);
	cmd->common.command_id = dev->admin_cid;

	ssdq_submit_cmd(aq, cmd);

	if (!wait_for_completion_timeout(&dev->admin_done, timeout)) {
		/* Perhaps only the interrupt got lost. */
		ssdq_queue_reap_alone(aq);
		if (!try_wait_for_completion(&dev->admin_done)) {
			ssdq_admin_timed_out(dev, cmd->common.opcode);
			ret = -ETIMEDOUT;
			goto out;
		}
	}
	ret = dev->admin_status;
	if (result)
		*result = dev->admin_result;
out:
	mutex_unlock(&dev->admin_lock);
	return ret;
}

/*
 * Send an admin command and return: @done gets its CQE from the admin
 * queue's reaper (interrupt context). One such command may be out in each
 * slot at a time, beside ssdq_admin_exec()'s (the admin queue has room for
 * all); -EBUSY while one is, -ENODEV while the admin queue is stopped. A
 * reset forgets them (ssdq_ctrl_reset_rings()): a disabled controller
 * answers nothing.
 */
int ssdq_admin_submit_nowait(struct ssdq_dev *dev, enum ssdq_admin_slot slot,
			     struct nvme_command *cmd, ssdq_admin_done_fn done)
{
	struct ssdq_queue *aq = &dev->queues[0];

	if (!READ_ONCE(aq->created))
		return -ENODEV;
	if (cmpxchg(&dev->nowait_done[slot], NULL, done))
		return -EBUSY;
	cmd->common.command_id = SSDQ_NOWAIT_CID + slot;
	ssdq_submit_cmd(aq, cmd);
	return 0;
}

/* Free the slot a sender's @done kept after its answer. */
void ssdq_admin_nowait_release(struct ssdq_dev *dev, enum ssdq_admin_slot slot)
{
	/* Release: as in ssdq_admin_nowait_cqe(), pairs with the cmpxchg. */
	smp_store_release(&dev->nowait_done[slot], NULL);
}

static int ssdq_identify(struct ssdq_dev *dev, u8 cns, u32 nsid, u8 csi,
			 dma_addr_t buf)
{
	struct nvme_command c = { };

	c.identify.opcode = nvme_admin_identify;
	c.identify.nsid = cpu_to_le32(nsid);
	c.identify.cns = cns;
	c.identify.csi = csi;
	c.identify.dptr.prp1 = cpu_to_le64(buf);
	return ssdq_admin_exec(dev, &c, NULL);
}

/* An NVMe status is not an errno; callers of bring-up want one. */
static int ssdq_status_errno(int ret)
{
	return ret > 0 ? -EIO : ret;
}

static int ssdq_parse_id_ctrl(struct ssdq_dev *dev, struct nvme_id_ctrl *id)
{
	unsigned int mdts_shift;

	if ((id->sqes & 0xf) > NVME_NVM_IOSQES ||
	    (id->sqes >> 4) < NVME_NVM_IOSQES ||
	    (id->cqes & 0xf) > NVME_NVM_IOCQES ||
	    (id->cqes >> 4) < NVME_NVM_IOCQES) {
		dev_err(&dev->pdev->dev, "unsupported queue entry sizes\n");
		return -EOPNOTSUPP;
	}
	if (!le32_to_cpu(id->nn)) {
		dev_err(&dev->pdev->dev, "controller has no namespaces\n");
		return -ENODEV;
	}
	dev->nn = le32_to_cpu(id->nn);
	dev->lpa = id->lpa;
	dev->oacs = le16_to_cpu(id->oacs);
	dev->oaes = le32_to_cpu(id->oaes);
	dev->oncs = le16_to_cpu(id->oncs);
	dev->vwc = id->vwc;

	/* MDTS is a power of two in units of CAP.MPSMIN pages; 0 = no limit. */
	dev->max_transfer = SSDQ_MAX_TRANSFER;
	mdts_shift = id->mdts + 12 + NVME_CAP_MPSMIN(dev->cap);
	if (id->mdts && mdts_shift < 31)
		dev->max_transfer = min(dev->max_transfer, 1U << mdts_shift);
	/* Nor more than the DMA layer maps at once (swiotlb: 252 KiB). */
	dev->max_transfer = min_t(size_t, dev->max_transfer,
				  round_down(dma_opt_mapping_size(&dev->pdev->dev),
					     SSDQ_CTRL_PAGE_SIZE));
	return 0;
}

/*
 * The NVM command set's own limits (Identify CNS 06h): DMRSL, the most
 * blocks one Dataset Management range may name, and WZSL, the largest
 * Write Zeroes (a power of two of CAP.MPSMIN pages, 0: none). A controller
 * that does not know this Identify (before NVMe 1.4) has neither.
 */
static int ssdq_identify_nvm_limits(struct ssdq_dev *dev, void *buf,
				    dma_addr_t dma)
{
	unsigned int page_shift = NVME_CAP_MPSMIN(dev->cap) + 12;
	struct nvme_id_ctrl_nvm *id = buf;
	int ret;

	if (!(dev->oncs & (NVME_CTRL_ONCS_DSM | NVME_CTRL_ONCS_WRITE_ZEROES)))
		return 0;
	/* Before NVMe 1.2 CNS was 2 bits wide: 06h could be read as 02h. */
	if (readl(dev->bar + NVME_REG_VS) < NVME_VS(1, 2, 0))
		return 0;
	ret = ssdq_identify(dev, NVME_ID_CNS_CS_CTRL, 0, NVME_CSI_NVM, dma);
	if (ret > 0)
		return 0;
	if (ret)
		return ret;
	dev->dmrsl = le32_to_cpu(id->dmrsl);
	if (id->wzsl &&
	    check_shl_overflow(1U, id->wzsl + page_shift - SECTOR_SHIFT,
			       &dev->max_zeroes_sectors))
		dev->max_zeroes_sectors = UINT_MAX;
	return 0;
}

/* Identify the controller: its limits, features and identity. */
int ssdq_ctrl_identify(struct ssdq_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ssdq_msg m;
	dma_addr_t dma;
	void *buf;
	int ret;

	buf = dma_alloc_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE, &dma,
				 GFP_KERNEL);
	if (!buf)
		return -ENOMEM;

	ret = ssdq_identify(dev, NVME_ID_CNS_CTRL, 0, 0, dma);
	if (ret) {
		dev_err(dmadev, "Identify Controller failed: %s\n",
			ssdq_result_str(&m, ret));
		goto out;
	}
	ret = ssdq_parse_id_ctrl(dev, buf);
	if (ret)
		goto out;
	ssdq_ident_ctrl(dev, buf);
	ret = ssdq_identify_nvm_limits(dev, buf, dma);
	if (ret) {
		dev_err(dmadev, "Identify Controller (NVM) failed: %s\n",
			ssdq_result_str(&m, ret));
	}
out:
	dma_free_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE, buf, dma);
	return ssdq_status_errno(ret);
}

/*
 * Shadow doorbells (Doorbell Buffer Config, OACS bit 8): one page of tails
 * and heads the driver writes, one of event indexes the controller writes,
 * each slot where the MMIO doorbell would be. The ring (queue.c) uses them;
 * plugging/shadow_doorbells switches them.
 */
static size_t ssdq_dbbuf_bytes(struct ssdq_dev *dev, unsigned int nr_queues)
{
	return PAGE_ALIGN(nr_queues * 2 * sizeof(__le32) * dev->db_stride);
}

static void ssdq_dbbuf_free(struct ssdq_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;

	if (dev->dbbuf_dbs)
		dma_free_coherent(dmadev, dev->dbbuf_len, dev->dbbuf_dbs,
				  dev->dbbuf_dbs_dma);
	if (dev->dbbuf_eis)
		dma_free_coherent(dmadev, dev->dbbuf_len, dev->dbbuf_eis,
				  dev->dbbuf_eis_dma);
	dev->dbbuf_dbs = NULL;
	dev->dbbuf_eis = NULL;
}

/*
 * Send Doorbell Buffer Config with zeroed pages: at probe, and again after
 * every reset, which makes the controller forget them along with the queues.
 */
static int ssdq_dbbuf_config(struct ssdq_dev *dev)
{
	struct nvme_command c = { };

	if (!dev->dbbuf_dbs)
		return 0;
	if (ssdq_fault_take(dev, SSDQ_FAULT_REFUSE_DBBUF))
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	memset(dev->dbbuf_dbs, 0, dev->dbbuf_len);
	memset(dev->dbbuf_eis, 0, dev->dbbuf_len);
	c.dbbuf.opcode = nvme_admin_dbbuf;
	c.dbbuf.prp1 = cpu_to_le64(dev->dbbuf_dbs_dma);
	c.dbbuf.prp2 = cpu_to_le64(dev->dbbuf_eis_dma);
	return ssdq_admin_exec(dev, &c, NULL);
}

/*
 * Hand the controller its shadow doorbell and event index pages, before the
 * I/O queues exist so that each is created with its slots. A controller that
 * lacks the feature, or refuses it, simply runs on MMIO doorbells.
 */
static int ssdq_dbbuf_setup(struct ssdq_dev *dev, unsigned int nr_queues)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ssdq_msg m;
	int ret;

	if (!(dev->oacs & NVME_CTRL_OACS_DBBUF_SUPP))
		return 0;
	dev->dbbuf_len = ssdq_dbbuf_bytes(dev, nr_queues);
	dev->dbbuf_dbs = dma_alloc_coherent(dmadev, dev->dbbuf_len,
					    &dev->dbbuf_dbs_dma, GFP_KERNEL);
	dev->dbbuf_eis = dma_alloc_coherent(dmadev, dev->dbbuf_len,
					    &dev->dbbuf_eis_dma, GFP_KERNEL);
	if (!dev->dbbuf_dbs || !dev->dbbuf_eis) {
		ssdq_dbbuf_free(dev);
		return -ENOMEM;
	}

	ret = ssdq_dbbuf_config(dev);
	if (ret) {
		dev_warn(dmadev,
			 "Doorbell Buffer Config failed: %s; MMIO doorbells only\n",
			 ssdq_result_str(&m, ret));
		ssdq_dbbuf_free(dev);
		return ret < 0 ? ret : 0;
	}
	ssdq_queue_set_dbbuf(&dev->queues[0], dev->dbbuf_dbs, dev->dbbuf_eis);
	dev->shadow_doorbells = true;
	return 0;
}

/*
 * The controller refused Doorbell Buffer Config after a reset: run on MMIO
 * doorbells from now on. The I/O queues are stopped; the admin queue's
 * reaper, which publishes its CQ head, is held off while its slots go.
 */
static void ssdq_dbbuf_abandon(struct ssdq_dev *dev)
{
	struct ssdq_queue *aq = &dev->queues[0];
	unsigned int qid;

	ssdq_irq_quiesce(aq);
	for (qid = 0; qid <= dev->nr_io_queues; qid++)
		ssdq_queue_set_dbbuf(&dev->queues[qid], NULL, NULL);
	ssdq_irq_unquiesce(aq);
	WRITE_ONCE(dev->shadow_doorbells, false);
	ssdq_dbbuf_free(dev);
}

/* Ask for *count queue pairs; the controller answers how many it grants. */
static int ssdq_set_queue_count(struct ssdq_dev *dev, unsigned int *count)
{
	u32 want = (*count - 1) | (*count - 1) << 16;
	struct nvme_command c = { };
	struct ssdq_msg m;
	u32 result;
	int ret;

	c.features.opcode = nvme_admin_set_features;
	c.features.fid = cpu_to_le32(NVME_FEAT_NUM_QUEUES);
	c.features.dword11 = cpu_to_le32(want);
	ret = ssdq_admin_exec(dev, &c, &result);
	if (ret) {
		dev_err(&dev->pdev->dev, "Set Features (queues) failed: %s\n",
			ssdq_result_str(&m, ret));
		return ssdq_status_errno(ret);
	}
	*count = min(*count, min(result & 0xffff, result >> 16) + 1);
	return 0;
}

static int ssdq_create_cq(struct ssdq_queue *q)
{
	struct nvme_command c = { };

	c.create_cq.opcode = nvme_admin_create_cq;
	c.create_cq.prp1 = cpu_to_le64(q->cq_dma);
	c.create_cq.cqid = cpu_to_le16(q->qid);
	c.create_cq.qsize = cpu_to_le16(q->depth - 1);
	c.create_cq.cq_flags = cpu_to_le16(NVME_QUEUE_PHYS_CONTIG);
	/* A poll queue's CQ raises no interrupt at all. */
	if (!q->poll_queue) {
		c.create_cq.cq_flags |= cpu_to_le16(NVME_CQ_IRQ_ENABLED);
		c.create_cq.irq_vector = cpu_to_le16(q->vector);
	}
	return ssdq_admin_exec(q->dev, &c, NULL);
}

static int ssdq_create_sq(struct ssdq_queue *q)
{
	struct nvme_command c = {
		.create_sq = {
			.opcode		= nvme_admin_create_sq,
			.prp1		= cpu_to_le64(q->sq_dma),
			.sqid		= cpu_to_le16(q->qid),
			.qsize		= cpu_to_le16(q->depth - 1),
			.sq_flags	= cpu_to_le16(NVME_QUEUE_PHYS_CONTIG |
						      NVME_SQ_PRIO_MEDIUM),
			.cqid		= cpu_to_le16(q->qid),
		},
	};

	return ssdq_admin_exec(q->dev, &c, NULL);
}

static int ssdq_delete_queue(struct ssdq_dev *dev, u8 opcode, u16 qid)
{
	struct nvme_command c = { };

	c.delete_queue.opcode = opcode;
	c.delete_queue.qid = cpu_to_le16(qid);
	return ssdq_admin_exec(dev, &c, NULL);
}

/*
 * Delete the I/O queues the controller has, SQ before CQ: it ends the
 * commands still in them. Before a shutdown, which by itself does not stop
 * command processing, and at teardown.
 */
static void ssdq_ctrl_delete_io_queues(struct ssdq_dev *dev)
{
	unsigned int qid;

	for (qid = dev->nr_io_queues; qid >= 1; qid--) {
		struct ssdq_queue *q = &dev->queues[qid];

		if (q->created && !ssdq_dead(dev) && dev->queues[0].created) {
			ssdq_delete_queue(dev, nvme_admin_delete_sq, qid);
			ssdq_delete_queue(dev, nvme_admin_delete_cq, qid);
		}
		q->created = false;
	}
}

/*
 * Make sure the controller can no longer DMA, as the caller is about to
 * fail requests it may still write into, or free memory it may still use:
 * disable it, and if it will not disable, take its bus mastering away. A
 * shutdown deletes the I/O queues first and always takes bus mastering
 * away: CC.SHN leaves the controller enabled. Returns 0 if it stopped as
 * asked.
 */
int ssdq_ctrl_stop_dma(struct ssdq_dev *dev, bool shutdown)
{
	int ret;

	if (shutdown)
		ssdq_ctrl_delete_io_queues(dev);
	/*
	 * A deletion that timed out disabled the controller already: no
	 * CC.SHN to wait out on a controller that is not enabled.
	 */
	ret = ssdq_ctrl_disable(dev, shutdown && dev->queues[0].created);
	if (ret || shutdown)
		pci_clear_master(dev->pdev);
	return ret;
}

/*
 * Tell the controller about an allocated queue pair: its CQ first, since the
 * SQ names it. At probe and again after every reset.
 */
static int ssdq_create_queue_pair(struct ssdq_queue *q)
{
	struct ssdq_dev *dev = q->dev;
	struct ssdq_msg m;
	int ret;

	ret = ssdq_create_cq(q);
	if (ret)
		goto fail;
	ret = ssdq_create_sq(q);
	if (ret) {
		ssdq_delete_queue(dev, nvme_admin_delete_cq, q->qid);
		goto fail;
	}
	q->created = true;
	return 0;
fail:
	dev_err(&dev->pdev->dev, "creating I/O queue %u failed: %s\n",
		q->qid, ssdq_result_str(&m, ret));
	return ssdq_status_errno(ret);
}

/*
 * Allocate one I/O queue pair with the I/O path's reaper, give it its
 * steering mask and its vector, create it.
 */
static int ssdq_create_io_queue(struct ssdq_dev *dev, u16 qid,
				ssdq_reap_fn io_reap)
{
	struct ssdq_queue *q = &dev->queues[qid];
	int ret;

	ret = ssdq_queue_alloc(dev, qid, dev->io_depth, io_reap);
	if (ret)
		return ret;
	ret = ssdq_steer_init_queue(q);
	if (ret)
		return ret;
	if (!q->poll_queue) {
		q->vector = qid;
		ret = ssdq_irq_request(q);
		if (ret)
			return ret;
	}
	return ssdq_create_queue_pair(q);
}

/*
 * Settle how many I/O queues to run, then give each its own interrupt vector.
 * The vectors are spread over the CPUs by the IRQ core (PCI_IRQ_AFFINITY), and
 * blk-mq later maps each CPU to the queue whose vector is on it. Vector 0
 * stays with the admin queue (pre_vectors), so it is reallocated with them.
 */
int ssdq_ctrl_setup_io_queues(struct ssdq_dev *dev, unsigned int nr_irq,
			      unsigned int nr_poll, ssdq_reap_fn io_reap)
{
	struct irq_affinity affd = { .pre_vectors = 1 };
	struct ssdq_queue *aq = &dev->queues[0];
	unsigned int nr = nr_irq + nr_poll;
	int ret;
	u16 qid;

	ret = ssdq_set_queue_count(dev, &nr);
	if (ret)
		return ret;
	if (nr > ssdq_bar_max_queues(dev) - 1) {
		nr = ssdq_bar_max_queues(dev) - 1;
		dev_info(&dev->pdev->dev,
			 "BAR0 holds doorbells for %u I/O queues only\n", nr);
	}
	/* Short of queues, keep at least one interrupt-driven one. */
	nr_poll = min(nr_poll, nr - 1);
	nr_irq = min(nr_irq, nr - nr_poll);
	ret = ssdq_dbbuf_setup(dev, nr_irq + nr_poll + 1);
	if (ret)
		return ret;

	ssdq_irq_free(aq);
	pci_free_irq_vectors(dev->pdev);
	ret = pci_alloc_irq_vectors_affinity(dev->pdev, 2, nr_irq + 1,
					     PCI_IRQ_MSIX | PCI_IRQ_MSI |
					     PCI_IRQ_AFFINITY, &affd);
	if (ret < 0) {
		dev_err(&dev->pdev->dev,
			"needs at least 2 MSI-X/MSI vectors: %pe\n",
			ERR_PTR(ret));
		return ret;
	}
	nr_irq = ret - 1;
	ret = ssdq_irq_request(aq);
	if (ret)
		return ret;

	dev->io_depth = min_t(u32, ssdq_params.io_queue_depth,
			      NVME_CAP_MQES(dev->cap) + 1);
	dev->nr_io_queues = 0;
	for (qid = 1; qid <= nr_irq + nr_poll; qid++) {
		dev->queues[qid].poll_queue = qid > nr_irq;
		ret = ssdq_create_io_queue(dev, qid, io_reap);
		dev->nr_io_queues = qid;	/* so teardown sees it */
		dev->nr_poll_queues = qid > nr_irq ? qid - nr_irq : 0;
		if (ret)
			return ret;
	}
	ret = ssdq_irq_watch_cpus(dev);
	if (ret)
		return ret;
	dev_info(&dev->pdev->dev,
		 "%u I/O queues (%u polled) of depth %u\n",
		 dev->nr_io_queues, dev->nr_poll_queues, dev->io_depth);
	return 0;
}

/*
 * Stop the controller and release everything ssdq_ctrl_init_admin() and
 * ssdq_ctrl_setup_io_queues() set up. The rings, the shadow doorbell pages
 * and the vectors are freed only after the controller is shut down or
 * disabled and has lost bus mastering, so it can no longer DMA into them.
 */
void ssdq_ctrl_teardown(struct ssdq_dev *dev)
{
	unsigned int qid;

	ssdq_ctrl_delete_io_queues(dev);
	if (dev->queues[0].created)
		ssdq_ctrl_disable(dev, true);
	dev->queues[0].created = false;
	pci_clear_master(dev->pdev);

	ssdq_irq_unwatch_cpus(dev);
	for (qid = 0; qid <= dev->nr_io_queues; qid++)
		ssdq_irq_free(&dev->queues[qid]);
	pci_free_irq_vectors(dev->pdev);
	for (qid = 0; qid <= dev->nr_io_queues; qid++) {
		if (qid)
			ssdq_steer_free_queue(&dev->queues[qid]);
		ssdq_queue_free(&dev->queues[qid]);
	}
	ssdq_dbbuf_free(dev);
}

/*
 * After a disable the controller has forgotten every queue: start the rings
 * over. Called with the queues' interrupts off.
 */
void ssdq_ctrl_reset_rings(struct ssdq_dev *dev)
{
	unsigned int qid, slot;

	for (qid = 0; qid <= dev->nr_io_queues; qid++) {
		ssdq_queue_reset_rings(&dev->queues[qid]);
		dev->queues[qid].created = false;
	}
	/* A command out before the disable is never answered now. */
	for (slot = 0; slot < SSDQ_NR_ADMIN_SLOTS; slot++)
		WRITE_ONCE(dev->nowait_done[slot], NULL);
}

/*
 * Bring a reset controller back with the same queues: enable it, hand it
 * the shadow doorbells again, ask for the same number of queues, re-create
 * them. blk-mq's view (the tag set) stays as it is.
 */
int ssdq_ctrl_restart(struct ssdq_dev *dev)
{
	unsigned int nr = dev->nr_io_queues;
	struct ssdq_msg m;
	int ret;
	u16 qid;

	ret = ssdq_ctrl_start(dev);
	if (ret)
		return ret;
	ret = ssdq_dbbuf_config(dev);
	if (ret < 0)
		return ret;
	if (ret) {
		dev_warn(&dev->pdev->dev,
			 "Doorbell Buffer Config refused after reset: %s; MMIO doorbells only\n",
			 ssdq_result_str(&m, ret));
		ssdq_dbbuf_abandon(dev);
	}
	ret = ssdq_set_queue_count(dev, &nr);
	if (ret)
		return ret;
	if (nr < dev->nr_io_queues) {
		dev_err(&dev->pdev->dev,
			"controller now grants %u I/O queues, had %u\n", nr,
			dev->nr_io_queues);
		return -ENODEV;
	}
	for (qid = 1; qid <= dev->nr_io_queues; qid++) {
		ret = ssdq_create_queue_pair(&dev->queues[qid]);
		if (ret)
			return ret;
	}
	return 0;
}

