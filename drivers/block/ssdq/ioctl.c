// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq ioctls on a namespace's disk: the part of the kernel's nvme user ABI
 * (<uapi/linux/nvme_ioctl.h>, which nvme-cli speaks) that identifies a
 * namespace and passes admin commands through:
 *
 *   NVME_IOCTL_ID          the disk's nsid
 *   NVME_IOCTL_ADMIN_CMD   struct nvme_admin_cmd: one admin command, run as
 *   NVME_IOCTL_ADMIN64_CMD ssdq's own are (ctrl.c: one at a time, for up to
 *                          admin_timeout seconds; never beside a reset,
 *                          recovery.c); the ioctl returns the
 *                          NVMe status (0, or > 0) and stores dword 0 of
 *                          the answer in result, as nvme's do
 *
 * Every admin command needs CAP_SYS_ADMIN (nvme lets others read some
 * Identify and log pages; ssdq does not yet). The data moves through a
 * page of ssdq's own, copied from and to the user's buffer by the
 * opcode's direction (bits 1:0), so data_len is at most 4096; metadata,
 * flags and the commands that would take the driver's own resources (queue
 * creation and deletion, Abort, Asynchronous Event Request, Doorbell
 * Buffer Config) are refused with -EINVAL and a line saying why.
 * timeout_ms is not used: admin_timeout applies. A command that can change
 * the namespaces (Namespace Management and Attachment, Format NVM) is
 * followed by a rescan (ns.c), as nvme follows it by one.
 *
 * An opener keeps the disk, not the controller: removal first waits for
 * the commands in flight (passthru_rwsem, a while at most: admin_timeout)
 * and turns later ones away with -ENODEV.
 */
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/nvme_ioctl.h>
#include <linux/uaccess.h>

#include <ssdq/ssdq.h>

/* One page of data, moved by ssdq: no user page is ever DMA-mapped. */
#define SSDQ_PASSTHRU_MAX	SSDQ_CTRL_PAGE_SIZE

/* Commands whose queues, slots or pages ssdq itself owns. */
static bool ssdq_admin_opcode_owned(u8 opcode)
{
	switch (opcode) {
	case nvme_admin_delete_sq:
	case nvme_admin_create_sq:
	case nvme_admin_delete_cq:
	case nvme_admin_create_cq:
	case nvme_admin_abort_cmd:
	case nvme_admin_async_event:
	case nvme_admin_dbbuf:
		return true;
	default:
		return false;
	}
}

static bool ssdq_admin_opcode_changes_ns(u8 opcode)
{
	return opcode == nvme_admin_ns_mgmt || opcode == nvme_admin_ns_attach ||
	       opcode == nvme_admin_format_nvm;
}

static int ssdq_passthru_check(struct ssdq_dev *dev,
			       const struct nvme_passthru_cmd *uc)
{
	struct device *d = &dev->pdev->dev;

	if (ssdq_admin_opcode_owned(uc->opcode)) {
		dev_err_ratelimited(d, "admin passthrough: opcode %#x is ssdq's own, not passed through\n",
				    uc->opcode);
		return -EINVAL;
	}
	if (uc->flags || uc->metadata || uc->metadata_len) {
		dev_err_ratelimited(d, "admin passthrough: flags and metadata take 0 only\n");
		return -EINVAL;
	}
	if (uc->data_len > SSDQ_PASSTHRU_MAX) {
		dev_err_ratelimited(d, "admin passthrough: data_len %u, at most %lu\n",
				    uc->data_len, SSDQ_PASSTHRU_MAX);
		return -EINVAL;
	}
	return 0;
}

/* Run @uc with its data in a page of ssdq's; -errno, or the NVMe status. */
static int ssdq_passthru_run(struct ssdq_dev *dev,
			     struct nvme_passthru_cmd *uc, u32 *result)
{
	struct device *dmadev = &dev->pdev->dev;
	void __user *ubuf = u64_to_user_ptr(uc->addr);
	struct nvme_command c = { };
	dma_addr_t dma = 0;
	void *buf = NULL;
	int ret;

	c.common.opcode = uc->opcode;
	c.common.nsid = cpu_to_le32(uc->nsid);
	c.common.cdw2[0] = cpu_to_le32(uc->cdw2);
	c.common.cdw2[1] = cpu_to_le32(uc->cdw3);
	c.common.cdw10 = cpu_to_le32(uc->cdw10);
	c.common.cdw11 = cpu_to_le32(uc->cdw11);
	c.common.cdw12 = cpu_to_le32(uc->cdw12);
	c.common.cdw13 = cpu_to_le32(uc->cdw13);
	c.common.cdw14 = cpu_to_le32(uc->cdw14);
	c.common.cdw15 = cpu_to_le32(uc->cdw15);
	if (uc->data_len) {
		buf = dma_alloc_coherent(dmadev, SSDQ_PASSTHRU_MAX, &dma,
					 GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
		/* Host to controller: bit 0 of the opcode. */
		if ((uc->opcode & 1) &&
		    copy_from_user(buf, ubuf, uc->data_len)) {
			ret = -EFAULT;
			goto free;
		}
		c.common.dptr.prp1 = cpu_to_le64(dma);
	}
	ret = ssdq_admin_exec_guarded(dev, &c, result);
	/* Controller to host: bit 1; what a failed command wrote, too. */
	if (ret >= 0 && uc->data_len && (uc->opcode & 2) &&
	    copy_to_user(ubuf, buf, uc->data_len))
		ret = -EFAULT;
free:
	if (buf)
		dma_free_coherent(dmadev, SSDQ_PASSTHRU_MAX, buf, dma);
	return ret;
}

/*
 * NVME_IOCTL_ADMIN_CMD and NVME_IOCTL_ADMIN64_CMD: the same command, with
 * a 32- or a 64-bit result (the structs differ from result on).
 */
static int ssdq_admin_passthru(struct ssdq_dev *dev, void __user *arg,
			       bool result64)
{
	struct nvme_passthru_cmd64 uc64;
	struct nvme_passthru_cmd uc;
	u32 result = 0;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EACCES;
	if (result64) {
		if (copy_from_user(&uc64, arg, sizeof(uc64)))
			return -EFAULT;
		/* The fields before result are the same in both. */
		memcpy(&uc, &uc64, offsetof(struct nvme_passthru_cmd, result));
	} else if (copy_from_user(&uc, arg, sizeof(uc))) {
		return -EFAULT;
	}
	ret = ssdq_passthru_check(dev, &uc);
	if (ret)
		return ret;
	down_read(&dev->passthru_rwsem);
	if (dev->passthru_stopped) {
		up_read(&dev->passthru_rwsem);
		return -ENODEV;
	}
	ret = ssdq_passthru_run(dev, &uc, &result);
	/* Removal cancels the rescan after it stops passthrough. */
	if (!ret && ssdq_admin_opcode_changes_ns(uc.opcode))
		queue_work(system_freezable_wq, &dev->scan_work);
	up_read(&dev->passthru_rwsem);
	if (ret < 0)
		return ret;
	if (result64) {
		struct nvme_passthru_cmd64 __user *u = arg;

		if (put_user((u64)result, &u->result))
			return -EFAULT;
	} else {
		struct nvme_passthru_cmd __user *u = arg;

		if (put_user(result, &u->result))
			return -EFAULT;
	}
	return ret;
}

int ssdq_ioctl(struct block_device *bdev, ssdq_blk_mode_t mode,
	       unsigned int cmd, unsigned long arg)
{
	struct ssdq_ns *ns = bdev->bd_disk->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case NVME_IOCTL_ID:
		return ns->nsid;
	case NVME_IOCTL_ADMIN_CMD:
		return ssdq_admin_passthru(ns->dev, argp, false);
	case NVME_IOCTL_ADMIN64_CMD:
		return ssdq_admin_passthru(ns->dev, argp, true);
	default:
		return -ENOTTY;
	}
}

void ssdq_ioctl_init(struct ssdq_dev *dev)
{
	init_rwsem(&dev->passthru_rwsem);
}

/* Removal: wait for the commands users sent, and take no more. */
void ssdq_ioctl_stop(struct ssdq_dev *dev)
{
	down_write(&dev->passthru_rwsem);
	dev->passthru_stopped = true;
	up_write(&dev->passthru_rwsem);
}
