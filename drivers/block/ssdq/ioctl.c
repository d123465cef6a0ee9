// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq ioctls on a namespace's disk: the kernel's nvme user ABI
 * (<uapi/linux/nvme_ioctl.h>, which nvme-cli speaks), as nvme has it on its
 * namespaces' block devices:
 *
 *   NVME_IOCTL_ID          the disk's nsid
 *   NVME_IOCTL_ADMIN_CMD   one admin command, run as ssdq's own are (one at
 *   NVME_IOCTL_ADMIN64_CMD a time, up to admin_timeout seconds, never beside
 *                          a reset: ssdq_admin_exec_guarded()); the data
 *                          through a page of ssdq's own, at most 4 KiB
 *   NVME_IOCTL_IO_CMD      one I/O command, as a blk-mq passthrough request
 *   NVME_IOCTL_IO64_CMD    (REQ_OP_DRV_IN/OUT) on the disk's queue: the
 *   NVME_IOCTL_SUBMIT_IO   user's buffer mapped (blk_rq_map_user()), the
 *                          command run through the same queues, plugging,
 *                          steering, interrupts, timeout and recovery as the
 *                          disk's own I/O; not retried (REQ_FAILFAST_DRIVER,
 *                          as nvme's): a reset ends it with Host Aborted
 *
 * Each returns the NVMe status (0, or > 0) and stores dword 0 of the answer
 * in result, as nvme's do. Who may send what is nvme's rule
 * (nvme_cmd_allowed() in its ioctl.c), so that one opener gets EACCES under
 * either driver alike: CAP_SYS_ADMIN may send anything; others no command
 * through a partition, no vendor-specific or fabrics command, of the admin
 * commands only the Identify of a namespace or controller, and of the I/O
 * commands only those the controller's Commands Supported and Effects log
 * says are supported and change no more than logical blocks, those that
 * write only through a file opened for writing.
 *
 * Refused with -EINVAL and one line: flags, metadata (ssdq drives no
 * namespace with metadata), an admin data_len above 4 KiB, an I/O command
 * naming another namespace, the admin commands whose resources ssdq owns
 * (queue creation and deletion, Abort, Asynchronous Event Request, Doorbell
 * Buffer Config). A command that can change the namespaces (Namespace
 * Management and Attachment, Format NVM) is followed by a rescan (ns.c), as
 * nvme follows it by one.
 *
 * An opener keeps the disk, not the controller: removal first waits for the
 * admin commands in flight (passthru_rwsem, admin_timeout at most) and turns
 * later ones away with -ENODEV; an I/O command is a request of the disk,
 * which del_gendisk() waits for.
 */
#include <linux/blk-mq.h>
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/nvme_ioctl.h>
#include <linux/uaccess.h>

#include <ssdq/ssdq.h>

/* Admin data moves through one page of ssdq's: no user page is mapped. */
#define SSDQ_PASSTHRU_MAX	SSDQ_CTRL_PAGE_SIZE

/* I/O opcodes from here on are vendor specific (nvme_cmd_vendor_start). */
#define SSDQ_CMD_VENDOR_START	0x80

/* ---- who may send what */

/*
 * The Commands Supported and Effects log (NVMe 1.2), read at probe where
 * Identify's LPA lists it; else what nvme assumes of an NVM controller
 * without one (nvme_init_known_nvm_effects()).
 */
void ssdq_ioctl_read_effects(struct ssdq_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;
	struct nvme_command c = { };
	struct nvme_effects_log *log;
	u32 numd = sizeof(*log) / 4 - 1;
	struct ssdq_msg m;
	dma_addr_t dma;
	int ret, i;

	dev->io_effects[nvme_cmd_read] = NVME_CMD_EFFECTS_CSUPP;
	dev->io_effects[nvme_cmd_flush] = NVME_CMD_EFFECTS_CSUPP;
	dev->io_effects[nvme_cmd_dsm] = NVME_CMD_EFFECTS_CSUPP;
	dev->io_effects[nvme_cmd_write] = NVME_CMD_EFFECTS_CSUPP |
					  NVME_CMD_EFFECTS_LBCC;
	dev->io_effects[nvme_cmd_write_zeroes] = NVME_CMD_EFFECTS_CSUPP |
						 NVME_CMD_EFFECTS_LBCC;
	if (!(dev->lpa & NVME_CTRL_LPA_CMD_EFFECTS_LOG))
		return;
	log = dma_alloc_coherent(dmadev, sizeof(*log), &dma, GFP_KERNEL);
	if (!log) {
		ret = -ENOMEM;
		goto failed;
	}
	c.get_log_page.opcode = nvme_admin_get_log_page;
	c.get_log_page.lid = NVME_LOG_CMD_EFFECTS;
	c.get_log_page.dptr.prp1 = cpu_to_le64(dma);
	c.get_log_page.numdl = cpu_to_le16(numd & 0xffff);
	c.get_log_page.numdu = cpu_to_le16(numd >> 16);
	ret = ssdq_admin_exec(dev, &c, NULL);
	if (!ret)
		for (i = 0; i < ARRAY_SIZE(dev->io_effects); i++)
			dev->io_effects[i] = le32_to_cpu(log->iocs[i]);
	dma_free_coherent(dmadev, sizeof(*log), log, dma);
	if (!ret)
		return;
failed:
	dev_warn(dmadev, "Commands Supported and Effects log failed: %s; unprivileged passthrough by nvme's defaults\n",
		 ssdq_result_str(&m, ret));
}

/* nvme's Identify subset: what user space needs to form I/O commands. */
static bool ssdq_admin_cmd_unprivileged(const struct nvme_command *c)
{
	if (c->common.opcode != nvme_admin_identify)
		return false;
	switch (c->identify.cns) {
	case NVME_ID_CNS_NS:
	case NVME_ID_CNS_CS_NS:
	case NVME_ID_CNS_NS_CS_INDEP:
	case NVME_ID_CNS_CS_CTRL:
	case NVME_ID_CNS_CTRL:
		return true;
	default:
		return false;
	}
}

static bool ssdq_io_cmd_unprivileged(struct ssdq_dev *dev,
				     const struct nvme_command *c,
				     bool open_for_write)
{
	u32 effects = dev->io_effects[c->common.opcode];

	if (c->common.opcode >= SSDQ_CMD_VENDOR_START ||
	    c->common.opcode == nvme_fabrics_command)
		return false;
	if (!(effects & NVME_CMD_EFFECTS_CSUPP))
		return false;
	if (effects & ~(NVME_CMD_EFFECTS_CSUPP | NVME_CMD_EFFECTS_LBCC))
		return false;
	/* Data to the controller, or blocks changed: a writer's only. */
	if (((c->common.opcode & 1) || (effects & NVME_CMD_EFFECTS_LBCC)) &&
	    !open_for_write)
		return false;
	return true;
}

/*
 * nvme_cmd_allowed(): @io, an I/O command (else admin), sent through a
 * partition (@partition) or a file opened for writing (@writer).
 */
bool ssdq_passthru_allowed(struct ssdq_dev *dev, bool partition, bool writer,
			   const struct nvme_command *c, bool io)
{
	/*
	 * A partition's opener must not reach the rest of the namespace; on
	 * a kernel whose nvme lets no one else, ssdq does not either.
	 */
	if (!SSDQ_UNPRIVILEGED_PASSTHRU || partition)
		goto admin;
	if (io ? ssdq_io_cmd_unprivileged(dev, c, writer) :
		 ssdq_admin_cmd_unprivileged(c))
		return true;
admin:
	return capable(CAP_SYS_ADMIN);
}

/* ---- checking and building a command from user space */

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

/*
 * The 32- and 64-bit structs differ from result on: read either into @uc,
 * a 32-bit one up to its result.
 */
static int ssdq_passthru_copy_in(struct nvme_passthru_cmd64 *uc,
				 void __user *arg, bool result64)
{
	size_t len = result64 ? sizeof(*uc) :
			       offsetof(struct nvme_passthru_cmd, result);

	memset(uc, 0, sizeof(*uc));
	if (copy_from_user(uc, arg, len))
		return -EFAULT;
	return 0;
}

static int ssdq_passthru_copy_out(void __user *arg, bool result64, u64 result)
{
	struct nvme_passthru_cmd64 __user *u64p = arg;
	struct nvme_passthru_cmd __user *u32p = arg;

	if (result64)
		return put_user(result, &u64p->result) ? -EFAULT : 0;
	return put_user((u32)result, &u32p->result) ? -EFAULT : 0;
}

/*
 * A Get Log Page moves NUMD dwords whatever data_len says; past ssdq's one
 * page (PRP2 is 0) the controller would write to address 0. Identify and
 * the features move at most a page; the commands whose length ssdq does
 * not read (Security Receive, vendor-specific ones) are root's alone, and
 * trusted as under nvme.
 */
static int ssdq_passthru_check_log_len(struct device *d,
				       const struct nvme_passthru_cmd64 *uc)
{
	u64 len;

	if (uc->opcode != nvme_admin_get_log_page)
		return 0;
	/* NUMDL: dword 10 bits 31:16, NUMDU: dword 11 bits 15:0; 0-based. */
	len = (((u64)(uc->cdw11 & 0xffff) << 16 | uc->cdw10 >> 16) + 1) * 4;
	if (len <= uc->data_len)
		return 0;
	dev_err_ratelimited(d, "admin passthrough: Get Log Page of %llu bytes, data_len %u\n",
			    len, uc->data_len);
	return -EINVAL;
}

int ssdq_passthru_check(struct ssdq_dev *dev,
			const struct nvme_passthru_cmd64 *uc, bool io, bool vec,
			u32 nsid)
{
	struct device *d = &dev->pdev->dev;

	/* Where nvme lets no one else through, it says so before all else. */
	if (!SSDQ_UNPRIVILEGED_PASSTHRU && !capable(CAP_SYS_ADMIN))
		return -EACCES;
	if (uc->flags || uc->metadata || uc->metadata_len) {
		dev_err_ratelimited(d, "passthrough: flags and metadata take 0 only\n");
		return -EINVAL;
	}
	if (io && uc->nsid != nsid) {
		dev_err_ratelimited(d, "passthrough: nsid %u is not the device's, %u\n",
				    uc->nsid, nsid);
		return -EINVAL;
	}
	if (io && !vec && uc->data_len > dev->max_transfer) {
		dev_err_ratelimited(d, "passthrough: data_len %u, at most %u (the controller's MDTS)\n",
				    uc->data_len, dev->max_transfer);
		return -EINVAL;
	}
	if (io)
		return 0;
	if (ssdq_admin_opcode_owned(uc->opcode)) {
		dev_err_ratelimited(d, "admin passthrough: opcode %#x is ssdq's own, not passed through\n",
				    uc->opcode);
		return -EINVAL;
	}
	if (uc->data_len > SSDQ_PASSTHRU_MAX) {
		dev_err_ratelimited(d, "admin passthrough: data_len %u, at most %lu\n",
				    uc->data_len, SSDQ_PASSTHRU_MAX);
		return -EINVAL;
	}
	return ssdq_passthru_check_log_len(d, uc);
}

void ssdq_passthru_build(struct nvme_command *c,
			 const struct nvme_passthru_cmd64 *uc)
{
	c->common.opcode = uc->opcode;
	c->common.nsid = cpu_to_le32(uc->nsid);
	c->common.cdw2[0] = cpu_to_le32(uc->cdw2);
	c->common.cdw2[1] = cpu_to_le32(uc->cdw3);
	c->common.cdw10 = cpu_to_le32(uc->cdw10);
	c->common.cdw11 = cpu_to_le32(uc->cdw11);
	c->common.cdw12 = cpu_to_le32(uc->cdw12);
	c->common.cdw13 = cpu_to_le32(uc->cdw13);
	c->common.cdw14 = cpu_to_le32(uc->cdw14);
	c->common.cdw15 = cpu_to_le32(uc->cdw15);
}

/* ---- running it */

/* An admin command, its data in a page of ssdq's; -errno or the status. */
int ssdq_passthru_admin(struct ssdq_dev *dev, struct nvme_command *c,
			u64 addr, u32 len, u64 *result)
{
	struct device *dmadev = &dev->pdev->dev;
	void __user *ubuf = u64_to_user_ptr(addr);
	u8 opcode = c->common.opcode;
	dma_addr_t dma = 0;
	void *buf = NULL;
	u32 res = 0;
	int ret = -ENODEV;

	down_read(&dev->passthru_rwsem);
	if (dev->passthru_stopped)
		goto unlock;
	if (len) {
		ret = -ENOMEM;
		buf = dma_alloc_coherent(dmadev, SSDQ_PASSTHRU_MAX, &dma,
					 GFP_KERNEL);
		if (!buf)
			goto unlock;
		/* Host to controller: bit 0 of the opcode. */
		ret = -EFAULT;
		if ((opcode & 1) && copy_from_user(buf, ubuf, len))
			goto free;
		c->common.dptr.prp1 = cpu_to_le64(dma);
	}
	ret = ssdq_admin_exec_guarded(dev, c, &res);
	*result = res;
	/* Removal cancels the rescan after it stops passthrough. */
	if (!ret && ssdq_admin_opcode_changes_ns(opcode))
		queue_work(system_freezable_wq, &dev->scan_work);
	/* Controller to host: bit 1; what a failed command wrote, too. */
	if (ret >= 0 && len && (opcode & 2) && copy_to_user(ubuf, buf, len))
		ret = -EFAULT;
free:
	if (buf)
		dma_free_coherent(dmadev, SSDQ_PASSTHRU_MAX, buf, dma);
unlock:
	up_read(&dev->passthru_rwsem);
	return ret;
}

/*
 * An I/O command as a passthrough request of the namespace's disk, not yet
 * mapped: it runs through the disk's queues like the disk's own I/O.
 * @flags: REQ_NOWAIT, REQ_POLLED (io_uring's), @blk_flags likewise.
 */
struct request *ssdq_passthru_rq_alloc(struct ssdq_ns *ns,
				       const struct nvme_command *c,
				       blk_opf_t flags,
				       blk_mq_req_flags_t blk_flags,
				       u32 timeout_ms)
{
	blk_opf_t op = (c->common.opcode & 1) ? REQ_OP_DRV_OUT : REQ_OP_DRV_IN;
	struct request *req;
	struct ssdq_iod *iod;

	req = blk_mq_alloc_request(ns->disk->queue,
				   op | REQ_FAILFAST_DRIVER | flags, blk_flags);
	if (IS_ERR(req))
		return req;
	/* Its status goes to the caller, not to dmesg. */
	req->rq_flags |= RQF_QUIET;
	if (timeout_ms)
		req->timeout = msecs_to_jiffies(timeout_ms);
	iod = ssdq_iod(req);
	iod->cmd = *c;
	iod->nvme_status = 0;
	iod->result = 0;
	return req;
}

/*
 * The user's buffer into the request: pinned, or copied where it breaks the
 * queue's alignment. @iter: io_uring's fixed buffer, else @addr and @len
 * (@vec: an array of @len iovecs).
 */
int ssdq_passthru_rq_map(struct request *req, u64 addr, u32 len, bool vec,
			 struct iov_iter *iter)
{
	if (iter)
		return blk_rq_map_user_iov(req->q, req, NULL, iter, GFP_KERNEL);
	return blk_rq_map_user_io(req, NULL, u64_to_user_ptr(addr), len,
				  GFP_KERNEL, vec, 0, 0, rq_data_dir(req));
}

/* The NVMe status (> 0), or an errno for one ended before the controller. */
int ssdq_passthru_rq_status(struct request *req, blk_status_t sts)
{
	int ret = ssdq_iod(req)->nvme_status;

	return ret ?: blk_status_to_errno(sts);
}

/*
 * A read, write or compare moves its NLB + 1 blocks whatever data_len says:
 * a shorter buffer would let the controller DMA past it (into whatever a
 * zero PRP entry or the page after a bounce buffer names). nvme does not
 * check this; ssdq refuses, as anyone may send a read.
 */
int ssdq_passthru_check_len(struct ssdq_ns *ns, const struct nvme_command *c,
			    unsigned int bytes)
{
	u32 want;

	switch (c->common.opcode) {
	case nvme_cmd_read:
	case nvme_cmd_write:
	case nvme_cmd_compare:
		break;
	default:
		return 0;
	}
	want = (le16_to_cpu(c->rw.length) + 1U) << ns->lba_shift;
	if (bytes >= want)
		return 0;
	dev_err_ratelimited(&ns->dev->pdev->dev,
			    "passthrough: opcode %#x moves %u bytes, its buffer has %u\n",
			    c->common.opcode, want, bytes);
	return -EINVAL;
}

/* An I/O command, waited for; -errno or the status. */
static int ssdq_io_run(struct ssdq_ns *ns, const struct nvme_command *c,
		       u64 addr, u32 len, u32 timeout_ms, u64 *result)
{
	struct bio *bio = NULL;
	struct request *req;
	blk_status_t sts;
	int ret;

	req = ssdq_passthru_rq_alloc(ns, c, 0, 0, timeout_ms);
	if (IS_ERR(req))
		return PTR_ERR(req);
	if (len) {
		ret = ssdq_passthru_rq_map(req, addr, len, false, NULL);
		if (ret)
			goto free;
		bio = req->bio;
	}
	ret = ssdq_passthru_check_len(ns, c, blk_rq_bytes(req));
	if (ret)
		goto unmap;
	sts = blk_execute_rq(req, false);
	ret = ssdq_passthru_rq_status(req, sts);
	*result = ssdq_iod(req)->result;
unmap:
	if (bio)
		blk_rq_unmap_user(bio);
free:
	blk_mq_free_request(req);
	return ret;
}

/* ---- the ioctls */

/*
 * NVME_IOCTL_{ADMIN,IO}{,64}_CMD through @ns's block or generic device, or
 * (@ns NULL, admin only) the controller's: through a @partition, by a
 * @writer (a file opened for writing).
 */
static int ssdq_user_cmd(struct ssdq_dev *dev, struct ssdq_ns *ns,
			 bool partition, bool writer, void __user *arg,
			 bool io, bool result64)
{
	struct nvme_passthru_cmd64 uc;
	struct nvme_command c = { };
	u64 result = 0;
	int ret;

	ret = ssdq_passthru_copy_in(&uc, arg, result64);
	if (ret)
		return ret;
	ret = ssdq_passthru_check(dev, &uc, io, false, io ? ns->nsid : 0);
	if (ret)
		return ret;
	ssdq_passthru_build(&c, &uc);
	if (!ssdq_passthru_allowed(dev, partition, writer, &c, io))
		return -EACCES;
	if (io)
		ret = ssdq_io_run(ns, &c, uc.addr, uc.data_len, uc.timeout_ms,
				  &result);
	else
		ret = ssdq_passthru_admin(dev, &c, uc.addr, uc.data_len,
					  &result);
	if (ret < 0)
		return ret;
	return ssdq_passthru_copy_out(arg, result64, result) ?: ret;
}

/* NVME_IOCTL_SUBMIT_IO: a read, write or compare of whole blocks. */
static int ssdq_submit_io(struct ssdq_ns *ns, bool partition, bool writer,
			  struct nvme_user_io __user *arg)
{
	struct nvme_user_io io;
	struct nvme_command c = { };
	u64 result;

	if (copy_from_user(&io, arg, sizeof(io)))
		return -EFAULT;
	if (io.flags || io.metadata) {
		dev_err_ratelimited(&ns->dev->pdev->dev,
				    "submit_io: flags and metadata take 0 only\n");
		return -EINVAL;
	}
	switch (io.opcode) {
	case nvme_cmd_write:
	case nvme_cmd_read:
	case nvme_cmd_compare:
		break;
	default:
		dev_err_ratelimited(&ns->dev->pdev->dev,
				    "submit_io: opcode %#x, only read, write and compare\n",
				    io.opcode);
		return -EINVAL;
	}
	c.rw.opcode = io.opcode;
	c.rw.nsid = cpu_to_le32(ns->nsid);
	c.rw.slba = cpu_to_le64(io.slba);
	c.rw.length = cpu_to_le16(io.nblocks);
	c.rw.control = cpu_to_le16(io.control);
	c.rw.dsmgmt = cpu_to_le32(io.dsmgmt);
	c.rw.reftag = cpu_to_le32(io.reftag);
	/* Dword 15, LBAT and LBATM (named apptag and appmask before 6.9). */
	c.common.cdw15 = cpu_to_le32(io.apptag | (u32)io.appmask << 16);
	if (!ssdq_passthru_allowed(ns->dev, partition, writer, &c, true))
		return -EACCES;
	return ssdq_io_run(ns, &c, io.addr,
			   (io.nblocks + 1) << ns->lba_shift, 0, &result);
}

/* A namespace's ioctls: on its block device, or its generic one (chrdev.c). */
int ssdq_ns_ioctl(struct ssdq_ns *ns, bool partition, bool writer,
		  unsigned int cmd, void __user *argp)
{
	struct ssdq_dev *dev = ns->dev;

	switch (cmd) {
	case NVME_IOCTL_ID:
		return ns->nsid;
	case NVME_IOCTL_ADMIN_CMD:
		return ssdq_user_cmd(dev, ns, partition, writer, argp, false,
				     false);
	case NVME_IOCTL_ADMIN64_CMD:
		return ssdq_user_cmd(dev, ns, partition, writer, argp, false,
				     true);
	case NVME_IOCTL_IO_CMD:
		return ssdq_user_cmd(dev, ns, partition, writer, argp, true,
				     false);
	case NVME_IOCTL_IO64_CMD:
		return ssdq_user_cmd(dev, ns, partition, writer, argp, true,
				     true);
	case NVME_IOCTL_SUBMIT_IO:
		return ssdq_submit_io(ns, partition, writer, argp);
	default:
		return -ENOTTY;
	}
}

int ssdq_ioctl(struct block_device *bdev, ssdq_blk_mode_t mode,
	       unsigned int cmd, unsigned long arg)
{
	return ssdq_ns_ioctl(bdev->bd_disk->private_data,
			     bdev_is_partition(bdev), mode & SSDQ_OPEN_WRITE,
			     cmd, (void __user *)arg);
}

/*
 * The controller's own: a reset, waited for (recovery.c's, as sysfs asks
 * for one), or a rescan of the namespaces (ns.c's, not waited for, as
 * nvme's). Not after removal has stopped passthrough.
 */
static int ssdq_ctrl_reset_or_rescan(struct ssdq_dev *dev, bool reset)
{
	int ret = -ENODEV;

	if (!capable(CAP_SYS_ADMIN))
		return -EACCES;
	down_read(&dev->passthru_rwsem);
	if (dev->passthru_stopped)
		goto unlock;
	if (reset) {
		dev_warn(&dev->pdev->dev, "reset asked for through ioctl\n");
		ret = ssdq_reset_request(dev, "requested through ioctl");
	} else {
		queue_work(system_freezable_wq, &dev->scan_work);
		ret = 0;
	}
unlock:
	up_read(&dev->passthru_rwsem);
	return ret;
}

/*
 * The controller's char device (chrdev.c): admin commands, a reset and a
 * rescan, as nvme's /dev/nvmeN. No I/O command: that is the namespaces'
 * devices' business (nvme takes one here only from a one-namespace
 * controller, and warns that it is deprecated). No NVM Subsystem Reset:
 * ssdq does not do it, and nvme answers ENOTTY where the controller lacks
 * it too.
 */
int ssdq_ctrl_ioctl(struct ssdq_dev *dev, unsigned int cmd, void __user *argp)
{
	switch (cmd) {
	case NVME_IOCTL_ADMIN_CMD:
		return ssdq_user_cmd(dev, NULL, false, false, argp, false,
				     false);
	case NVME_IOCTL_ADMIN64_CMD:
		return ssdq_user_cmd(dev, NULL, false, false, argp, false,
				     true);
	case NVME_IOCTL_RESET:
		return ssdq_ctrl_reset_or_rescan(dev, true);
	case NVME_IOCTL_RESCAN:
		return ssdq_ctrl_reset_or_rescan(dev, false);
	default:
		return -ENOTTY;
	}
}

void ssdq_ioctl_init(struct ssdq_dev *dev)
{
	init_rwsem(&dev->passthru_rwsem);
}

/* Removal: wait for the admin commands users sent, and take no more. */
void ssdq_ioctl_stop(struct ssdq_dev *dev)
{
	down_write(&dev->passthru_rwsem);
	dev->passthru_stopped = true;
	up_write(&dev->passthru_rwsem);
}
