// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq blk-mq glue: the ops blk-mq calls (the I/O path is io.c's), the tag
 * set with one hardware context per NVMe I/O queue and the map from CPUs to
 * them, each technique's counters (debugfs), and a namespace's gendisk
 * (ns.c says which exist) with its queue limits and each technique's
 * switches (sysfs). Every namespace's queue shares the one tag set, as
 * nvme's do: the hardware queues and their tags are the controller's.
 */
#include <linux/debugfs.h>
#include <linux/dmapool.h>

#include <ssdq/ssdq.h>

struct dentry *ssdq_debugfs_root;

/* Called for each namespace's queue: all name the same NVMe queue. */
static int ssdq_init_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			  unsigned int hctx_idx)
{
	struct ssdq_dev *dev = data;
	struct ssdq_queue *q = &dev->queues[hctx_idx + 1];

	q->tags = hctx->tags;
	hctx->driver_data = q;
	return 0;
}

/*
 * Each CPU submits to the queue whose interrupt vector is affine to it.
 * Poll queues, if any, have their own map (poll.c).
 */
static void ssdq_map_queues(struct blk_mq_tag_set *set)
{
	struct ssdq_dev *dev = set->driver_data;
	struct blk_mq_queue_map *map = &set->map[HCTX_TYPE_DEFAULT];

	map->nr_queues = ssdq_nr_irq_queues(dev);
	map->queue_offset = 0;
	ssdq_map_hw_queues(map, dev->pdev, 1);
	ssdq_poll_map_queues(set);
}

/* From submission (io.c) to completion (io.c), timeout and polling. */
static const struct blk_mq_ops ssdq_mq_ops = {
	.queue_rq	= ssdq_queue_rq,
	.queue_rqs	= ssdq_queue_rqs,
	.commit_rqs	= ssdq_commit_rqs,
	.complete	= ssdq_complete_rq,
	.timeout	= ssdq_timeout,
	.poll		= ssdq_poll,
	.init_hctx	= ssdq_init_hctx,
	.map_queues	= ssdq_map_queues,
};

/*
 * The device structure outlives removal while a disk of it is held open:
 * its ioctls may still be called (they find the controller stopped).
 */
static void ssdq_dev_release(struct kref *ref)
{
	struct ssdq_dev *dev = container_of(ref, struct ssdq_dev, ref);

	pci_dev_put(dev->pdev);
	kfree(dev);
}

void ssdq_dev_put(struct ssdq_dev *dev)
{
	kref_put(&dev->ref, ssdq_dev_release);
}

/* The last reference to an added disk: its namespace goes with it. */
static void ssdq_free_disk(struct gendisk *disk)
{
	struct ssdq_ns *ns = disk->private_data;
	struct ssdq_dev *dev = ns->dev;

	kfree(ns);
	ssdq_dev_put(dev);
}

/* nvme's ioctls (ioctl.c). */
static const struct block_device_operations ssdq_fops = {
	.owner		= THIS_MODULE,
	.ioctl		= ssdq_ioctl,
	.compat_ioctl	= blkdev_compat_ptr_ioctl,
	.free_disk	= ssdq_free_disk,
};

/*
 * The namespace's identity (ident.c), then each technique's switches, as
 * /sys/block/ssdqN/<technique>/.
 */
static const struct attribute_group *ssdq_disk_groups[] = {
	&ssdq_ident_disk_group,
	&ssdq_plug_attr_group,
	&ssdq_recovery_attr_group,
	&ssdq_steer_attr_group,
	&ssdq_irq_attr_group,
	NULL,
};

/*
 * Each technique's counters, in /sys/kernel/debug/ssdq/ssdqN/: the
 * controller's, named as its first namespace's disk.
 */
static void ssdq_debugfs_init(struct ssdq_dev *dev)
{
	char name[16];

	snprintf(name, sizeof(name), "ssdq%d", dev->instance);
	dev->debugfs = debugfs_create_dir(name, ssdq_debugfs_root);
	ssdq_debugfs_queue_stats(dev, &ssdq_plug_stats);
	ssdq_recovery_debugfs_init(dev);
	ssdq_aen_debugfs_init(dev);
	ssdq_fault_debugfs_init(dev);
	ssdq_steer_debugfs_init(dev);
	ssdq_debugfs_queue_stats(dev, &ssdq_irq_stats);
}

static void ssdq_set_limits(struct ssdq_ns *ns, struct queue_limits *lim)
{
	struct ssdq_dev *dev = ns->dev;
	u32 block = 1U << ns->lba_shift;

	/* A block above a page: the block layer's smallest, as nvme's. */
	if (ns->lba_shift > PAGE_SHIFT)
		block = SECTOR_SIZE;
	lim->logical_block_size = block;
	lim->physical_block_size = block;
	lim->io_min = block;
	/* What passthrough commands map, for every namespace. */
	lim->max_hw_sectors = dev->max_transfer >> SECTOR_SHIFT;
	lim->max_segments = SSDQ_MAX_SEGMENTS;
	/* PRPs can only describe whole pages between the first and last. */
	lim->virt_boundary_mask = SSDQ_CTRL_PAGE_SIZE - 1;
	lim->dma_alignment = 3;		/* PRP entries are dword aligned */
	if (ssdq_ns_blockless(ns))
		return;

	if (dev->oncs & NVME_CTRL_ONCS_DSM) {
		/* One range per command, at most DMRSL blocks long. */
		lim->max_hw_discard_sectors = UINT_MAX;
		if (dev->dmrsl &&
		    dev->dmrsl <= UINT_MAX >> (ns->lba_shift - SECTOR_SHIFT))
			lim->max_hw_discard_sectors =
				dev->dmrsl << (ns->lba_shift - SECTOR_SHIFT);
		lim->max_discard_segments = 1;
		lim->discard_granularity = block;
	}
	/* The NLB field of Write Zeroes is 16 bits; WZSL may say less. */
	if (dev->oncs & NVME_CTRL_ONCS_WRITE_ZEROES) {
		lim->max_write_zeroes_sectors =
			(U16_MAX + 1) << (ns->lba_shift - SECTOR_SHIFT);
		if (dev->max_zeroes_sectors)
			lim->max_write_zeroes_sectors =
				min(lim->max_write_zeroes_sectors,
				    dev->max_zeroes_sectors);
	}
}

static blk_features_t ssdq_disk_features(struct ssdq_dev *dev)
{
	blk_features_t features = 0;

	if (dev->vwc & NVME_CTRL_VWC_PRESENT)
		features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA;
	/* An SSD needs no seek-avoiding elevator and gives no entropy. */
	if (ssdq_params.rotational)
		features |= BLK_FEAT_ROTATIONAL;
	if (ssdq_params.add_random)
		features |= BLK_FEAT_ADD_RANDOM;
	return features;
}

static int ssdq_alloc_tag_set(struct ssdq_dev *dev)
{
	struct blk_mq_tag_set *set = &dev->tag_set;

	set->ops = &ssdq_mq_ops;
	set->nr_hw_queues = dev->nr_io_queues;
	/* A poll map (and so BLK_FEAT_POLL) only when there are poll queues. */
	set->nr_maps = dev->nr_poll_queues ? HCTX_MAX_TYPES : 1;
	/* One SQ slot stays empty: a full ring would look empty. */
	set->queue_depth = dev->io_depth - 1;
	set->numa_node = dev_to_node(&dev->pdev->dev);
	set->cmd_size = sizeof(struct ssdq_iod);
	set->flags = SSDQ_TAG_SET_FLAGS;
	set->timeout = ssdq_params.io_timeout * HZ;
	set->driver_data = dev;
	return blk_mq_alloc_tag_set(set);
}

/*
 * The controller's half, before any disk: the PRP list pool, the tag set
 * and the counters' directory.
 */
int ssdq_tag_set_init(struct ssdq_dev *dev)
{
	int ret;

	dev->prp_pool = dma_pool_create("ssdq prp list", &dev->pdev->dev,
					SSDQ_CTRL_PAGE_SIZE,
					SSDQ_CTRL_PAGE_SIZE, 0);
	if (!dev->prp_pool)
		return -ENOMEM;
	ret = ssdq_alloc_tag_set(dev);
	if (ret) {
		dma_pool_destroy(dev->prp_pool);
		return ret;
	}
	ssdq_debugfs_init(dev);
	return 0;
}

/* Free the tag set and the rest, once the controller can post no CQE. */
void ssdq_tag_set_free(struct ssdq_dev *dev)
{
	debugfs_remove_recursive(dev->debugfs);
	blk_mq_free_tag_set(&dev->tag_set);
	dma_pool_destroy(dev->prp_pool);
}

/* A namespace's disk, /dev/@name, on the controller's queues: not yet seen. */
int ssdq_disk_alloc(struct ssdq_ns *ns, const char *name)
{
	struct ssdq_dev *dev = ns->dev;
	struct queue_limits lim = { };
	struct gendisk *disk;

	ssdq_set_limits(ns, &lim);
	disk = ssdq_alloc_disk(&dev->tag_set, &lim, ssdq_disk_features(dev),
			       ns);
	if (IS_ERR(disk))
		return PTR_ERR(disk);
	disk->fops = &ssdq_fops;
	disk->private_data = ns;
	strscpy(disk->disk_name, name, DISK_NAME_LEN);
	set_capacity(disk, ns->capacity);
	ns->disk = disk;
	return 0;
}

/* Show it: udev's add event, the partition scan (whose I/O may time out). */
int ssdq_disk_register(struct ssdq_ns *ns)
{
	int ret;

	ret = device_add_disk(&ns->dev->pdev->dev, ns->disk, ssdq_disk_groups);
	if (!ret) {
		ns->added = true;
		kref_get(&ns->dev->ref);
	}
	return ret;
}

/*
 * Unregister the disk. del_gendisk() writes back dirty pages and waits for
 * every request of the disk in flight; the caller keeps the namespace on
 * the list until then, so that recovery still reaches them, and drops the
 * disk (put_disk()) after.
 */
void ssdq_disk_del(struct ssdq_ns *ns)
{
	del_gendisk(ns->disk);
}
