// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq namespaces: which exist, and a disk for each.
 *
 * A scan asks the controller for its active namespace list (Identify CNS
 * 02h; one Identify Namespace per nsid up to NN where the controller is
 * older than NVMe 1.1), identifies each namespace, and adds a disk for
 * each new one, resizes one whose size changed, and removes one that is no
 * longer active or whose block size changed (added again by the same scan).
 * A namespace whose blocks ssdq cannot serve through the block layer
 * (per-block metadata, a block size above the page size) gets a disk of
 * zero capacity, as under nvme, so that its generic char device (chrdev.c)
 * carries passthrough commands to it (ioctl.c and uring.c know its format);
 * one whose block size is smaller than a sector or above 64 KiB gets a line
 * and nothing else.
 * The probe scans once, before it returns; afterwards scan_work does, when
 * the controller reports a Namespace Attribute Changed event (aen.c) or
 * user space writes 1 to rescan_namespaces on the PCI device.
 *
 * Names: the first namespace the controller shows ssdq (the lowest active
 * nsid at probe) is /dev/ssdqN, N the controller's instance, so a
 * one-namespace controller's disk is named as it always was; every other
 * namespace M is /dev/ssdqNnM. Partitions add "p1", "p2", ...
 *
 * All disks share the controller's tag set and queues; each disk's queue
 * and private_data point to its struct ssdq_ns, for the nsid and block
 * size of its commands (io.c). The list changes only here, under ns_lock;
 * recovery takes ns_lock (inside recovery_lock) to reach every disk's
 * queue. A disk is added with its namespace on the list already, and stays
 * on it until del_gendisk() has waited for its requests, so a reset in
 * between still runs them. Nothing here holds ns_lock across I/O.
 */
#include <linux/blkdev.h>
#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/slab.h>

#include <ssdq/ssdq.h>

/* Identify's active namespace list: up to 1024 nsids, in increasing order. */
#define SSDQ_NS_LIST_LEN	(NVME_IDENTIFY_DATA_SIZE / sizeof(__le32))

/* One scan's pages: the list, and each namespace's Identify. */
struct ssdq_scan {
	__le32 *list;
	void *id;
	dma_addr_t list_dma;
	dma_addr_t id_dma;
	u64 gen;			/* this scan: marks what it found */
	int error;			/* the first that stopped a step */
};

/*
 * What ssdq_ns_identify() says of a namespace besides 0, an errno of the
 * admin queue or an NVMe status: not active (allocated elsewhere, or not
 * at all: Identify gives zeroes), or active in a form ssdq cannot drive
 * at all (logged; it gets no disk).
 */
#define SSDQ_NS_INACTIVE	(-ENXIO)
#define SSDQ_NS_UNUSABLE	(-EOPNOTSUPP)

/* The largest block a passthrough command's NLB (16 bits) keeps in 32 bits. */
#define SSDQ_NS_MAX_LBA_SHIFT	16

/*
 * Identify (CNS @cns) into the page at @dma, beside any reset: a scan runs
 * while the disks it added already do I/O (ssdq_admin_exec_guarded()).
 */
static int ssdq_ns_identify_cmd(struct ssdq_dev *dev, u8 cns, u32 nsid,
				dma_addr_t dma)
{
	struct nvme_command c = { };

	c.identify.opcode = nvme_admin_identify;
	c.identify.nsid = cpu_to_le32(nsid);
	c.identify.cns = cns;
	c.identify.dptr.prp1 = cpu_to_le64(dma);
	return ssdq_admin_exec_guarded(dev, &c, NULL);
}

static int ssdq_ns_parse(struct ssdq_dev *dev, struct ssdq_ns *ns,
			 const struct nvme_id_ns *id)
{
	unsigned int format = nvme_lbaf_index(id->flbas);
	u64 nsze = le64_to_cpu(id->nsze);
	const struct nvme_lbaf *lbaf;

	if (!nsze)
		return SSDQ_NS_INACTIVE;
	/* NLBAF is 0-based: formats 0 to NLBAF exist. */
	if (format > id->nlbaf) {
		dev_err(&dev->pdev->dev,
			"namespace %u is in LBA format %u, but has formats 0-%u only\n",
			ns->nsid, format, id->nlbaf);
		return SSDQ_NS_UNUSABLE;
	}
	lbaf = &id->lbaf[format];
	if (lbaf->ds < SECTOR_SHIFT || lbaf->ds > SSDQ_NS_MAX_LBA_SHIFT) {
		dev_err(&dev->pdev->dev,
			"namespace %u block size 2^%u not supported\n",
			ns->nsid, lbaf->ds);
		return SSDQ_NS_UNUSABLE;
	}
	ns->lba_shift = lbaf->ds;
	ns->ms = le16_to_cpu(lbaf->ms);
	ns->ext = ns->ms && (id->flbas & NVME_NS_FLBAS_META_EXT);
	ns->capacity = 0;
	if (ssdq_ns_blockless(ns))
		return 0;
	if (check_shl_overflow(nsze, lbaf->ds - SECTOR_SHIFT, &ns->capacity)) {
		dev_err(&dev->pdev->dev,
			"namespace %u: %llu blocks of 2^%u bytes overflow a sector count\n",
			ns->nsid, nsze, lbaf->ds);
		return SSDQ_NS_UNUSABLE;
	}
	return 0;
}

/*
 * Identify one namespace into @ns: its ids (descriptor list, NVMe 1.3; a
 * controller that fails it has none to give), then its format and size.
 * Returns 0, SSDQ_NS_INACTIVE, SSDQ_NS_UNUSABLE, an errno or the NVMe
 * status that stopped it.
 */
static int ssdq_ns_identify(struct ssdq_dev *dev, struct ssdq_ns *ns,
			    struct ssdq_scan *scan)
{
	int ret;

	memset(&ns->ids, 0, sizeof(ns->ids));
	if (readl(dev->bar + NVME_REG_VS) >= NVME_VS(1, 3, 0)) {
		memset(scan->id, 0, NVME_IDENTIFY_DATA_SIZE);
		ret = ssdq_ns_identify_cmd(dev, NVME_ID_CNS_NS_DESC_LIST,
					   ns->nsid, scan->id_dma);
		if (ret < 0)
			return ret;
		if (!ret)
			ssdq_ident_ns_descs(ns, scan->id);
	}
	ret = ssdq_ns_identify_cmd(dev, NVME_ID_CNS_NS, ns->nsid, scan->id_dma);
	/* A namespace the controller does not have (any more). */
	if (ret > 0 && (ret & NVME_SCT_SC_MASK) == NVME_SC_INVALID_NS)
		return SSDQ_NS_INACTIVE;
	if (ret)
		return ret;
	ret = ssdq_ns_parse(dev, ns, scan->id);
	if (!ret)
		ssdq_ident_ns(ns, scan->id);
	return ret;
}

static struct ssdq_ns *ssdq_ns_find(struct ssdq_dev *dev, u32 nsid)
{
	struct ssdq_ns *ns;

	ssdq_for_each_ns(dev, ns)
		if (ns->nsid == nsid)
			return ns;
	return NULL;
}

/* Keep the list in nsid order: recovery and debugfs walk it so. */
static void ssdq_ns_link(struct ssdq_dev *dev, struct ssdq_ns *ns)
{
	struct list_head *before = &dev->namespaces;
	struct ssdq_ns *pos;

	ssdq_for_each_ns(dev, pos) {
		if (pos->nsid > ns->nsid) {
			before = &pos->entry;
			break;
		}
	}
	mutex_lock(&dev->ns_lock);
	list_add_tail(&ns->entry, before);
	mutex_unlock(&dev->ns_lock);
}

/*
 * Off the list, and the disk dropped: an added one frees the namespace
 * when its last opener closes it (disk.c's ->free_disk).
 */
static void ssdq_ns_unlink_free(struct ssdq_dev *dev, struct ssdq_ns *ns)
{
	bool added = ns->added;

	mutex_lock(&dev->ns_lock);
	list_del(&ns->entry);
	mutex_unlock(&dev->ns_lock);
	/* Read before: the put may free an added namespace. */
	put_disk(ns->disk);
	if (!added)
		kfree(ns);
}

/* A namespace gone, or changed beyond a resize: its disk goes. */
static void ssdq_ns_remove(struct ssdq_dev *dev, struct ssdq_ns *ns,
			   const char *why)
{
	dev_info(&dev->pdev->dev, "%s: namespace %u %s, removing the disk\n",
		 ns->disk->disk_name, ns->nsid, why);
	ssdq_chrdev_ns_del(ns);
	/* Open files get errors from here on, not hangs. */
	ssdq_mark_disk_dead(ns->disk);
	ssdq_disk_del(ns);
	ssdq_ns_unlink_free(dev, ns);
	atomic64_inc(&dev->ns_removed);
}

static void ssdq_ns_say_added(struct ssdq_dev *dev, struct ssdq_ns *ns,
			      const char *name)
{
	if (!ssdq_ns_blockless(ns)) {
		dev_info(&dev->pdev->dev,
			 "%s: namespace %u, %llu MiB, %u-byte blocks\n", name,
			 ns->nsid,
			 (unsigned long long)(ns->capacity >>
					      (20 - SECTOR_SHIFT)),
			 1U << ns->lba_shift);
		return;
	}
	dev_info(&dev->pdev->dev,
		 "%s: namespace %u, %u-byte blocks, %u bytes of metadata each%s: passthrough only (ssdqg%dn%u), the disk has no capacity\n",
		 name, ns->nsid, 1U << ns->lba_shift, ns->ms,
		 ns->ext ? ", in the block" : ns->ms ? ", apart" : "",
		 dev->instance, ns->nsid);
}

static int ssdq_ns_add(struct ssdq_dev *dev, u32 nsid, struct ssdq_scan *scan)
{
	char name[DISK_NAME_LEN];
	struct ssdq_msg m;
	struct ssdq_ns *ns;
	bool primary;
	int ret;

	ns = kzalloc(sizeof(*ns), GFP_KERNEL);
	if (!ns)
		return -ENOMEM;
	ns->dev = dev;
	ns->nsid = nsid;
	ns->scan_gen = scan->gen;
	ret = ssdq_ns_identify(dev, ns, scan);
	if (ret) {
		kfree(ns);
		return ret;
	}
	/* The first namespace the controller shows is its primary. */
	primary = !dev->primary_nsid || nsid == dev->primary_nsid;
	if (primary)
		snprintf(name, sizeof(name), "ssdq%d", dev->instance);
	else
		snprintf(name, sizeof(name), "ssdq%dn%u", dev->instance, nsid);

	ret = ssdq_disk_alloc(ns, name);
	if (ret) {
		kfree(ns);
		return ret;
	}
	/* On the list before it is seen: a reset from here on reaches it. */
	ssdq_ns_link(dev, ns);
	ret = ssdq_disk_register(ns);
	if (ret) {
		ssdq_ns_unlink_free(dev, ns);
		return ret;
	}
	if (primary)
		dev->primary_nsid = nsid;
	atomic64_inc(&dev->ns_added);
	ret = ssdq_chrdev_ns_add(ns);
	if (ret)
		dev_warn(&dev->pdev->dev, "%s: no generic char device: %s\n",
			 name, ssdq_result_str(&m, ret));
	ssdq_ns_say_added(dev, ns, name);
	return 0;
}

/*
 * A namespace the scan found again: the same block size, perhaps a new
 * size (set_capacity_and_notify() tells user space); else it is removed,
 * and added anew by the caller.
 */
static int ssdq_ns_revalidate(struct ssdq_dev *dev, struct ssdq_ns *ns,
			      struct ssdq_scan *scan)
{
	struct ssdq_ns fresh = { .dev = dev, .nsid = ns->nsid };
	int ret;

	ns->scan_gen = scan->gen;
	ret = ssdq_ns_identify(dev, &fresh, scan);
	if (ret == SSDQ_NS_INACTIVE || ret == SSDQ_NS_UNUSABLE ||
	    (!ret && (fresh.lba_shift != ns->lba_shift ||
		      fresh.ms != ns->ms || fresh.ext != ns->ext))) {
		ssdq_ns_remove(dev, ns, ret == SSDQ_NS_INACTIVE ?
			       "is not active any more" :
			       "changed its format");
		return ret ? 0 : -EAGAIN;
	}
	if (ret)
		return ret;
	if (fresh.capacity != ns->capacity) {
		ns->capacity = fresh.capacity;
		set_capacity_and_notify(ns->disk, ns->capacity);
	}
	return 0;
}

/* One nsid of the active list: known, or new. */
static int ssdq_ns_scan_one(struct ssdq_dev *dev, u32 nsid,
			    struct ssdq_scan *scan)
{
	struct ssdq_ns *ns = ssdq_ns_find(dev, nsid);
	int ret;

	if (ns) {
		ret = ssdq_ns_revalidate(dev, ns, scan);
		if (ret != -EAGAIN)
			return ret;
	}
	ret = ssdq_ns_add(dev, nsid, scan);
	/* Listed but not active (a race), or said why it gets no disk. */
	if (ret == SSDQ_NS_INACTIVE || ret == SSDQ_NS_UNUSABLE)
		return 0;
	return ret;
}

/*
 * Walk the active list, 1024 nsids per Identify, each above the last. A
 * step that fails stops the walk: what it did not reach is left as it was.
 */
static int ssdq_ns_walk_list(struct ssdq_dev *dev, struct ssdq_scan *scan)
{
	u32 prev = 0, nsid;
	unsigned int i;
	int ret;

	for (;;) {
		ret = ssdq_ns_identify_cmd(dev, NVME_ID_CNS_NS_ACTIVE_LIST, prev,
					   scan->list_dma);
		if (ret)
			return ret;
		for (i = 0; i < SSDQ_NS_LIST_LEN; i++) {
			nsid = le32_to_cpu(scan->list[i]);
			if (!nsid)
				return 0;
			/* The list ascends: anything else would never end. */
			if (nsid <= prev)
				return -EPROTO;
			ret = ssdq_ns_scan_one(dev, nsid, scan);
			if (ret)
				return ret;
			prev = nsid;
		}
	}
}

/* Before NVMe 1.1 there is no list: every nsid up to NN, one by one. */
static int ssdq_ns_walk_all(struct ssdq_dev *dev, struct ssdq_scan *scan)
{
	u32 nsid;
	int ret;

	for (nsid = 1; nsid <= dev->nn; nsid++) {
		ret = ssdq_ns_scan_one(dev, nsid, scan);
		if (ret)
			return ret;
	}
	return 0;
}

static int ssdq_ns_alloc_scan(struct ssdq_dev *dev, struct ssdq_scan *scan)
{
	struct device *dmadev = &dev->pdev->dev;

	scan->list = dma_alloc_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE,
					&scan->list_dma, GFP_KERNEL);
	if (!scan->list)
		return -ENOMEM;
	scan->id = dma_alloc_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE,
				      &scan->id_dma, GFP_KERNEL);
	if (!scan->id) {
		dma_free_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE, scan->list,
				  scan->list_dma);
		return -ENOMEM;
	}
	return 0;
}

static void ssdq_ns_free_scan(struct ssdq_dev *dev, struct ssdq_scan *scan)
{
	struct device *dmadev = &dev->pdev->dev;

	dma_free_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE, scan->id,
			  scan->id_dma);
	dma_free_coherent(dmadev, NVME_IDENTIFY_DATA_SIZE, scan->list,
			  scan->list_dma);
}

/*
 * Scan the controller's namespaces: the probe's (whose caller fails the
 * bind on an error) and every rescan (which logs it and keeps what it
 * had). Only a walk that completed removes the namespaces it did not find.
 * Returns 0, an errno, or the NVMe status of the Identify that failed.
 */
int ssdq_ns_scan(struct ssdq_dev *dev)
{
	struct ssdq_scan scan = { };
	struct ssdq_ns *ns, *next;
	int ret;

	ret = ssdq_ns_alloc_scan(dev, &scan);
	if (ret)
		return ret;
	scan.gen = atomic64_inc_return(&dev->scans);
	if (readl(dev->bar + NVME_REG_VS) >= NVME_VS(1, 1, 0))
		ret = ssdq_ns_walk_list(dev, &scan);
	else
		ret = ssdq_ns_walk_all(dev, &scan);
	if (!ret) {
		list_for_each_entry_safe(ns, next, &dev->namespaces, entry)
			if (ns->scan_gen != scan.gen)
				ssdq_ns_remove(dev, ns,
					       "is not active any more");
	}
	ssdq_ns_free_scan(dev, &scan);
	return ret;
}

static void ssdq_ns_scan_work(struct work_struct *work)
{
	struct ssdq_dev *dev = container_of(work, struct ssdq_dev, scan_work);
	struct ssdq_msg m;
	int ret;

	ret = ssdq_ns_scan(dev);
	if (ret) {
		atomic64_inc(&dev->scan_failures);
		dev_warn(&dev->pdev->dev, "namespace rescan failed: %s\n",
			 ssdq_result_str(&m, ret));
	}
}

void ssdq_ns_init(struct ssdq_dev *dev)
{
	mutex_init(&dev->ns_lock);
	INIT_LIST_HEAD(&dev->namespaces);
	INIT_WORK(&dev->scan_work, ssdq_ns_scan_work);
}

/*
 * /sys/bus/pci/devices/<bdf>/rescan_namespaces: 1 scans now and returns
 * when the disks are added and removed.
 */
static ssize_t rescan_namespaces_store(struct device *d,
				       struct device_attribute *attr,
				       const char *buf, size_t count)
{
	struct ssdq_dev *dev = pci_get_drvdata(to_pci_dev(d));
	unsigned int val;
	int ret;

	ret = ssdq_parse_uint(d, "rescan_namespaces", buf, 1, 1, &val);
	if (ret)
		return ret;
	queue_work(system_freezable_wq, &dev->scan_work);
	flush_work(&dev->scan_work);
	return count;
}
static DEVICE_ATTR_WO(rescan_namespaces);

static int ssdq_ns_stats_show(struct seq_file *m, void *unused)
{
	struct ssdq_dev *dev = m->private;
	struct ssdq_ns *ns;

	seq_printf(m, "scans %lld\n", atomic64_read(&dev->scans));
	seq_printf(m, "scan_failures %lld\n",
		   atomic64_read(&dev->scan_failures));
	seq_printf(m, "added %lld\n", atomic64_read(&dev->ns_added));
	seq_printf(m, "removed %lld\n", atomic64_read(&dev->ns_removed));
	mutex_lock(&dev->ns_lock);
	ssdq_for_each_ns(dev, ns)
		seq_printf(m, "nsid %u %s %llu %u\n", ns->nsid,
			   ns->disk->disk_name,
			   (unsigned long long)ns->capacity, 1U << ns->lba_shift);
	mutex_unlock(&dev->ns_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_ns_stats);

/* After the probe's scan: rescans from sysfs and events may begin. */
int ssdq_ns_start_rescans(struct ssdq_dev *dev)
{
	debugfs_create_file("namespaces", 0400, dev->debugfs, dev,
			    &ssdq_ns_stats_fops);
	return device_create_file(&dev->pdev->dev, &dev_attr_rescan_namespaces);
}

/* Removal: after the events stop, no scan runs or starts again. */
void ssdq_ns_stop_scans(struct ssdq_dev *dev)
{
	device_remove_file(&dev->pdev->dev, &dev_attr_rescan_namespaces);
	cancel_work_sync(&dev->scan_work);
}

/* Removal: every disk goes, waiting for its requests; the list stays. */
void ssdq_ns_remove_all(struct ssdq_dev *dev)
{
	struct ssdq_ns *ns;

	ssdq_for_each_ns(dev, ns) {
		ssdq_chrdev_ns_del(ns);
		ssdq_disk_del(ns);
	}
}

/* ... and once the controller can post no CQE, the namespaces are freed. */
void ssdq_ns_free_all(struct ssdq_dev *dev)
{
	struct ssdq_ns *ns, *next;

	list_for_each_entry_safe(ns, next, &dev->namespaces, entry)
		ssdq_ns_unlink_free(dev, ns);
}
