// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq asynchronous events: what the controller tells the host unasked.
 *
 * One Asynchronous Event Request is kept outstanding on the admin queue, in
 * its own slot (ctrl.c), as nvme keeps one: every controller takes at least
 * one (AERL is 0-based), and it queues what happens while none is out. Its
 * answer names an event type, the event and the log page with the details.
 * The controller masks further events of that type until the host reads
 * that page, so the answer goes from the admin reaper (interrupt context)
 * to a work item, which reads the page, tells the user (one rate-limited
 * line, a counter, a KOBJ_CHANGE uevent on the controller's PCI device with
 * SSDQ_AEN=<the answer's dword 0>, as nvme's NVME_AEN on its controller),
 * and sends the next request:
 *
 *   SMART / health    the critical warning bits of the SMART log (spare
 *                     below threshold, temperature, reliability, read-only,
 *                     volatile memory backup): SSDQ_CRITICAL_WARNING=<bits>
 *   notice            namespace attribute changed (the changed namespace
 *                     list), firmware activation starting (the firmware
 *                     slot log): counted and said; a namespace change
 *                     rescans the namespaces (ns.c's scan_work, which
 *                     adds and removes their disks)
 *   error, other      the page the answer names, counted
 *
 * Which events the controller sends is set with Set Features (Asynchronous
 * Event Configuration): every SMART critical warning, and the notices above
 * where Identify's OAES lists them. A controller that refuses keeps its
 * defaults.
 *
 * A reset forgets the outstanding request, as a disabled controller does
 * (ssdq_ctrl_reset_rings() frees its slot). Every restart (recovery.c)
 * configures the events again and sends a new one, under recovery_lock,
 * which the work holds too: the work never talks to a controller that is
 * being reset, suspended or given up on, and one of the two sends. A
 * request the controller fails is not sent again until the next reset.
 *
 * Counters: /sys/kernel/debug/ssdq/ssdqN/aen
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include <ssdq/ssdq.h>

#define SSDQ_AEN_SMART_ALL	(NVME_SMART_CRIT_SPARE |		\
				 NVME_SMART_CRIT_TEMPERATURE |		\
				 NVME_SMART_CRIT_RELIABILITY |		\
				 NVME_SMART_CRIT_MEDIA |		\
				 NVME_SMART_CRIT_VOLATILE_MEMORY)
#define SSDQ_AEN_NOTICES	(NVME_AEN_CFG_NS_ATTR | NVME_AEN_CFG_FW_ACT)

/* The work runs here: unbound, as it waits on the admin queue. */
static struct workqueue_struct *ssdq_aen_wq;

/* The answer's dword 0: type (bits 2:0), information (15:8), page (23:16). */
static u8 ssdq_aen_type(u32 result)
{
	return result & 0x7;
}

static u8 ssdq_aen_info(u32 result)
{
	return (result >> 8) & 0xff;
}

static u8 ssdq_aen_log(u32 result)
{
	return (result >> 16) & 0xff;
}

/* Whether the controller may be spoken to: running, ours, not stopped. */
static bool ssdq_aen_live(struct ssdq_dev *dev)
{
	lockdep_assert_held(&dev->recovery_lock);
	return !ssdq_dead(dev) && !dev->aen.stopped && !dev->pm_stopped &&
	       !dev->pci_reset_stopped && !dev->pci_error_stopped &&
	       READ_ONCE(dev->queues[0].created);
}

/*
 * The request's answer, from the admin reaper: keep it for the work and
 * free the slot. Only the work sends the next one (ssdq_aen_send() waits
 * while an answer is kept): a restart in between leaves it to the work.
 */
static bool ssdq_aen_done(struct ssdq_dev *dev, struct nvme_completion *cqe)
{
	struct ssdq_aen *aen = &dev->aen;

	aen->status = le16_to_cpu(cqe->status) >> 1;
	aen->result = le32_to_cpu(cqe->result.u32);
	/* Release: the answer before the flag that hands it to the work. */
	smp_store_release(&aen->answered, true);
	queue_work(ssdq_aen_wq, &aen->work);
	return false;
}

/* Keep one request out, unless the last answer still waits for the work. */
static void ssdq_aen_send(struct ssdq_dev *dev)
{
	struct nvme_command c = { };

	if (!ssdq_aen_live(dev) || READ_ONCE(dev->aen.answered) ||
	    dev->aen.refused)
		return;
	c.common.opcode = nvme_admin_async_event;
	if (!ssdq_admin_submit_nowait(dev, SSDQ_SLOT_AEN, &c, ssdq_aen_done))
		atomic64_inc(&dev->aen.sent);
}

/*
 * Which events to be told of: Asynchronous Event Configuration. A reset
 * sets it back to the controller's default, so every start sets it again:
 * probe, before the disk (fault_admin_status reaches it), and each restart.
 */
void ssdq_aen_configure(struct ssdq_dev *dev)
{
	u32 aec = SSDQ_AEN_SMART_ALL | (dev->oaes & SSDQ_AEN_NOTICES);
	struct nvme_command c = { };
	struct ssdq_msg m;
	int ret;

	c.features.opcode = nvme_admin_set_features;
	c.features.fid = cpu_to_le32(NVME_FEAT_ASYNC_EVENT);
	c.features.dword11 = cpu_to_le32(aec);
	ret = ssdq_admin_exec(dev, &c, NULL);
	if (ret)
		dev_warn(&dev->pdev->dev,
			 "Asynchronous Event Configuration %#x failed: %s; the controller's defaults apply\n",
			 aec, ssdq_result_str(&m, ret));
}

/* Probe, once the disks exist: the first request. */
void ssdq_aen_begin(struct ssdq_dev *dev)
{
	mutex_lock(&dev->recovery_lock);
	ssdq_aen_send(dev);
	mutex_unlock(&dev->recovery_lock);
}

/* A restart, under recovery_lock: configure the events, send a request. */
void ssdq_aen_restart(struct ssdq_dev *dev)
{
	lockdep_assert_held(&dev->recovery_lock);
	dev->aen.refused = false;
	if (!ssdq_aen_live(dev))
		return;
	ssdq_aen_configure(dev);
	ssdq_aen_send(dev);
}

/*
 * Read the log page an event names, with Retain Asynchronous Event clear:
 * that read is what lets the controller report the type again.
 */
static int ssdq_aen_read_log(struct ssdq_dev *dev, u8 lid, dma_addr_t dma,
			     size_t len)
{
	struct nvme_command c = { };
	u32 numd = len / 4 - 1;

	c.get_log_page.opcode = nvme_admin_get_log_page;
	c.get_log_page.nsid = cpu_to_le32(NVME_NSID_ALL);
	c.get_log_page.dptr.prp1 = cpu_to_le64(dma);
	c.get_log_page.lid = lid;
	c.get_log_page.numdl = cpu_to_le16(numd & 0xffff);
	c.get_log_page.numdu = cpu_to_le16(numd >> 16);
	return ssdq_admin_exec(dev, &c, NULL);
}

/* How much of each page to read: what ssdq looks at, or one entry. */
static size_t ssdq_aen_log_len(u8 lid)
{
	switch (lid) {
	case NVME_LOG_ERROR:
		return sizeof(struct nvme_error_slot);
	case NVME_LOG_SMART:
		return sizeof(struct nvme_smart_log);
	case NVME_LOG_FW_SLOT:
		return sizeof(struct nvme_fw_slot_info_log);
	default:
		return NVME_IDENTIFY_DATA_SIZE;
	}
}

static void ssdq_aen_uevent(struct ssdq_dev *dev, u32 result, int warning)
{
	char aen_env[24], warn_env[40];
	char *envp[3] = { aen_env };

	snprintf(aen_env, sizeof(aen_env), "SSDQ_AEN=%#08x", result);
	if (warning >= 0) {
		snprintf(warn_env, sizeof(warn_env),
			 "SSDQ_CRITICAL_WARNING=%#04x", warning);
		envp[1] = warn_env;
	}
	kobject_uevent_env(&dev->pdev->dev.kobj, KOBJ_CHANGE, envp);
}

static const char *ssdq_aen_notice_name(u8 info)
{
	switch (info) {
	case NVME_AER_NOTICE_NS_CHANGED:
		return "namespace attribute changed";
	case NVME_AER_NOTICE_FW_ACT_STARTING:
		return "firmware activation starting";
	default:
		return "notice";
	}
}

/* A page for the log an event names, in the work, outside recovery_lock. */
struct ssdq_aen_page {
	void *buf;
	dma_addr_t dma;
};

/*
 * One event: read its page (if the controller is running: after a reset or
 * in a suspend there is nothing to unmask), count it and say it. Returns
 * the SMART log's critical warning, or -1.
 */
static int ssdq_aen_handle(struct ssdq_dev *dev, u32 result, bool live,
			   struct ssdq_aen_page *page)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ssdq_aen *aen = &dev->aen;
	u8 type = ssdq_aen_type(result), info = ssdq_aen_info(result);
	u8 lid = ssdq_aen_log(result);
	int warning = -1, ret = -ENOMEM;
	struct ssdq_msg m;

	if (live && page->buf)
		ret = ssdq_aen_read_log(dev, lid, page->dma,
					ssdq_aen_log_len(lid));
	if (live && ret) {
		/* Until the page is read, the controller masks the type. */
		atomic64_inc(&aen->log_failures);
		dev_warn_ratelimited(dmadev,
				     "asynchronous event %#08x: reading log page %#x failed: %s\n",
				     result, lid, ssdq_result_str(&m, ret));
	}

	switch (type) {
	case NVME_AER_SMART:
		atomic64_inc(&aen->smart);
		if (!ret && lid == NVME_LOG_SMART) {
			warning = ((struct nvme_smart_log *)page->buf)->critical_warning;
			WRITE_ONCE(aen->critical_warning, warning);
		}
		dev_warn_ratelimited(dmadev,
				     "SMART/health event %#x: critical warning %#04x\n",
				     info, warning < 0 ? 0 : warning);
		break;
	case NVME_AER_NOTICE:
		atomic64_inc(&aen->notices);
		dev_info_ratelimited(dmadev, "%s (event %#08x)\n",
				     ssdq_aen_notice_name(info), result);
		/* The whole list is scanned again (ns.c); the log only unmasks. */
		if (info == NVME_AER_NOTICE_NS_CHANGED)
			queue_work(system_freezable_wq, &dev->scan_work);
		break;
	case NVME_AER_ERROR:
		atomic64_inc(&aen->errors);
		dev_warn_ratelimited(dmadev, "error event %#x (log page %#x)\n",
				     info, lid);
		break;
	default:
		atomic64_inc(&aen->other);
		dev_info_ratelimited(dmadev, "asynchronous event %#08x\n",
				     result);
		break;
	}
	WRITE_ONCE(aen->last, result);
	return warning;
}

/*
 * The answer's work, under recovery_lock as every reset: nothing here runs
 * while the controller is being reset or put to sleep. What allocates (the
 * page, the uevent) stays outside the lock: a reset that memory reclaim
 * waits for may need it.
 */
static void ssdq_aen_work(struct work_struct *work)
{
	struct ssdq_dev *dev = container_of(work, struct ssdq_dev, aen.work);
	struct device *dmadev = &dev->pdev->dev;
	struct ssdq_aen_page page = { };
	struct ssdq_aen *aen = &dev->aen;
	bool event = false;
	int warning = -1;
	struct ssdq_msg m;
	u32 result = 0;

	page.buf = dma_alloc_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE,
				      &page.dma, GFP_KERNEL);
	mutex_lock(&dev->recovery_lock);
	/* Acquire: pairs with ssdq_aen_done()'s release. */
	if (aen->stopped || !smp_load_acquire(&aen->answered))
		goto unlock;
	if (aen->status) {
		/* Not an event: e.g. more requests than AERL allows. */
		aen->refused = true;
		atomic64_inc(&aen->failures);
		dev_warn(dmadev,
			 "Asynchronous Event Request failed: %s; none until the next reset\n",
			 ssdq_status_str(&m, aen->status));
	} else {
		result = aen->result;
		warning = ssdq_aen_handle(dev, result, ssdq_aen_live(dev),
					  &page);
		event = true;
	}
	WRITE_ONCE(aen->answered, false);
	ssdq_aen_send(dev);
unlock:
	mutex_unlock(&dev->recovery_lock);
	if (page.buf)
		dma_free_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE, page.buf,
				  page.dma);
	/* Removal waits for this work before the device goes (stopped). */
	if (event)
		ssdq_aen_uevent(dev, result, warning);
}

void ssdq_aen_init(struct ssdq_dev *dev)
{
	INIT_WORK(&dev->aen.work, ssdq_aen_work);
}

/*
 * Removal: no more requests, and the work done before the disks go. The
 * teardown's reap may still hand an answer to the work: ssdq_aen_flush()
 * after it.
 */
void ssdq_aen_stop(struct ssdq_dev *dev)
{
	mutex_lock(&dev->recovery_lock);
	dev->aen.stopped = true;
	mutex_unlock(&dev->recovery_lock);
	cancel_work_sync(&dev->aen.work);
}

void ssdq_aen_flush(struct ssdq_dev *dev)
{
	cancel_work_sync(&dev->aen.work);
}

int __init ssdq_aen_wq_init(void)
{
	ssdq_aen_wq = alloc_workqueue("ssdq_aen", WQ_UNBOUND, 0);
	return ssdq_aen_wq ? 0 : -ENOMEM;
}

void ssdq_aen_wq_exit(void)
{
	destroy_workqueue(ssdq_aen_wq);
}

static int ssdq_aen_stats_show(struct seq_file *m, void *unused)
{
	struct ssdq_dev *dev = m->private;
	struct ssdq_aen *aen = &dev->aen;

	seq_printf(m, "sent %lld\n", atomic64_read(&aen->sent));
	seq_printf(m, "outstanding %d\n",
		   !!READ_ONCE(dev->nowait_done[SSDQ_SLOT_AEN]));
	seq_printf(m, "smart %lld\n", atomic64_read(&aen->smart));
	seq_printf(m, "notices %lld\n", atomic64_read(&aen->notices));
	seq_printf(m, "errors %lld\n", atomic64_read(&aen->errors));
	seq_printf(m, "other %lld\n", atomic64_read(&aen->other));
	seq_printf(m, "log_failures %lld\n",
		   atomic64_read(&aen->log_failures));
	seq_printf(m, "failures %lld\n", atomic64_read(&aen->failures));
	seq_printf(m, "last %#08x\n", READ_ONCE(aen->last));
	seq_printf(m, "critical_warning %#04x\n",
		   READ_ONCE(aen->critical_warning));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_aen_stats);

void ssdq_aen_debugfs_init(struct ssdq_dev *dev)
{
	debugfs_create_file("aen", 0400, dev->debugfs, dev,
			    &ssdq_aen_stats_fops);
}
