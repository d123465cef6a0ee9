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
 *                          copied through a buffer of ssdq's, up to the
 *                          controller's transfer size (max_transfer)
 *   NVME_IOCTL_IO_CMD      one I/O command, as a blk-mq passthrough request
 *   NVME_IOCTL_IO64_CMD    (REQ_OP_DRV_IN/OUT) on the disk's queue: the
 *   NVME_IOCTL_IO64_CMD_VEC user's buffer (or iovec array) mapped
 *   NVME_IOCTL_SUBMIT_IO   (blk_rq_map_user_io()), the command run through
 *                          the same queues, plugging, steering, interrupts,
 *                          timeout and recovery as the disk's own I/O; not
 *                          retried (REQ_FAILFAST_DRIVER, as nvme's): one a
 *                          reset takes back ends with -EINTR, as nvme's
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
 * Metadata: where a namespace keeps each block's metadata apart, an I/O
 * command's metadata buffer is copied through one of ssdq's (nvme's rules:
 * metadata and metadata_len, NVME_IOCTL_SUBMIT_IO's metadata for NLB + 1
 * blocks); where it keeps it in the block, the data buffer holds both.
 *
 * Refused with -EINVAL and one line: flags, data or metadata above
 * max_transfer, a metadata buffer where the namespace keeps none apart or
 * for an admin command, a read, write or compare whose buffers are shorter
 * than its blocks (data, and metadata kept apart), an I/O command
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

int ssdq_passthru_check(struct ssdq_dev *dev,
			const struct nvme_passthru_cmd64 *uc, bool io, bool vec,
			u32 nsid)
{
	struct device *d = &dev->pdev->dev;

	/* Where nvme lets no one else through, it says so before all else. */
	if (!SSDQ_UNPRIVILEGED_PASSTHRU && !capable(CAP_SYS_ADMIN))
		return -EACCES;
	if (uc->flags) {
		dev_err_ratelimited(d, "passthrough: flags take 0 only\n");
		return -EINVAL;
	}
	if (!io && uc->metadata_len) {
		dev_err_ratelimited(d, "admin passthrough: no metadata, metadata_len takes 0 only\n");
		return -EINVAL;
	}
	if (io && uc->nsid != nsid) {
		dev_err_ratelimited(d, "passthrough: nsid %u is not the device's, %u\n",
				    uc->nsid, nsid);
		return -EINVAL;
	}
	/* A vectored command's data_len counts iovecs: checked once mapped. */
	if (!vec && uc->data_len > dev->max_transfer) {
		dev_err_ratelimited(d, "passthrough: data_len %u, at most %u (the controller's MDTS)\n",
				    uc->data_len, dev->max_transfer);
		return -EINVAL;
	}
	if (!io && ssdq_admin_opcode_owned(uc->opcode)) {
		dev_err_ratelimited(d, "admin passthrough: opcode %#x is ssdq's own, not passed through\n",
				    uc->opcode);
		return -EINVAL;
	}
	return 0;
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

/*
 * Admin data moves through a buffer of ssdq's, not the user's pages (as
 * ssdq's own admin commands do): one coherent allocation, its pages named by
 * PRP1 and PRP2, or by a PRP list in a page after them.
 */
struct ssdq_admin_data {
	void *buf;
	dma_addr_t dma;
	size_t size;
};

static int ssdq_admin_data_alloc(struct ssdq_dev *dev, struct nvme_command *c,
				 struct ssdq_admin_data *ad, size_t len)
{
	unsigned int pages = DIV_ROUND_UP(len, SSDQ_CTRL_PAGE_SIZE), i;
	dma_addr_t prp2 = 0;
	__le64 *list;

	/* max_transfer bounds @len: the list's one page names every page. */
	ad->size = (pages + (pages > 2)) * SSDQ_CTRL_PAGE_SIZE;
	ad->buf = dma_alloc_coherent(&dev->pdev->dev, ad->size, &ad->dma,
				     GFP_KERNEL);
	if (!ad->buf)
		return -ENOMEM;
	if (pages == 2) {
		prp2 = ad->dma + SSDQ_CTRL_PAGE_SIZE;
	} else if (pages > 2) {
		list = ad->buf + pages * SSDQ_CTRL_PAGE_SIZE;
		for (i = 1; i < pages; i++)
			list[i - 1] = cpu_to_le64(ad->dma +
						  i * SSDQ_CTRL_PAGE_SIZE);
		prp2 = ad->dma + pages * SSDQ_CTRL_PAGE_SIZE;
	}
	c->common.dptr.prp1 = cpu_to_le64(ad->dma);
	c->common.dptr.prp2 = cpu_to_le64(prp2);
	return 0;
}

static void ssdq_admin_data_free(struct ssdq_dev *dev,
				 struct ssdq_admin_data *ad)
{
	dma_free_coherent(&dev->pdev->dev, ad->size, ad->buf, ad->dma);
}

/*
 * The data's length, known once the user's buffer is: at most max_transfer;
 * and a Get Log Page moves NUMD dwords whatever the buffer says: past it the
 * controller would follow PRP entries of 0. Identify and the features move
 * at most a page; the commands whose length ssdq does not read (Security
 * Receive, vendor-specific ones) are root's alone, and trusted as under
 * nvme.
 */
static int ssdq_admin_check_len(struct ssdq_dev *dev,
				const struct nvme_command *c, size_t len)
{
	struct device *d = &dev->pdev->dev;
	u32 cdw10 = le32_to_cpu(c->common.cdw10);
	u32 cdw11 = le32_to_cpu(c->common.cdw11);
	u64 want;

	if (len > dev->max_transfer) {
		dev_err_ratelimited(d, "admin passthrough: %zu bytes of data, at most %u (the controller's MDTS)\n",
				    len, dev->max_transfer);
		return -EINVAL;
	}
	if (c->common.opcode != nvme_admin_get_log_page)
		return 0;
	/* NUMDL: dword 10 bits 31:16, NUMDU: dword 11 bits 15:0; 0-based. */
	want = (((u64)(cdw11 & 0xffff) << 16 | cdw10 >> 16) + 1) * 4;
	if (want <= len)
		return 0;
	dev_err_ratelimited(d, "admin passthrough: Get Log Page of %llu bytes, buffer of %zu\n",
			    want, len);
	return -EINVAL;
}

/* Which way an admin command's data goes, for its iterator. */
int ssdq_admin_data_dir(u8 opcode)
{
	return (opcode & 1) ? ITER_SOURCE : ITER_DEST;
}

/*
 * An admin command, its data (@iter, or none) copied through ssdq's buffer:
 * to the controller where bit 0 of the opcode says so, else back where bit
 * 1 does (what a failed command wrote, too), as nvme maps a command's data
 * one way, by bit 0; -errno or the NVMe status.
 */
int ssdq_passthru_admin(struct ssdq_dev *dev, struct nvme_command *c,
			struct iov_iter *iter, u64 *result)
{
	size_t len = iter ? iov_iter_count(iter) : 0;
	u8 opcode = c->common.opcode;
	struct ssdq_admin_data ad;
	u32 res = 0;
	int ret;

	ret = ssdq_admin_check_len(dev, c, len);
	if (ret)
		return ret;
	down_read(&dev->passthru_rwsem);
	ret = -ENODEV;
	if (dev->passthru_stopped)
		goto unlock;
	if (len) {
		ret = ssdq_admin_data_alloc(dev, c, &ad, len);
		if (ret)
			goto unlock;
		ret = -EFAULT;
		if ((opcode & 1) && copy_from_iter(ad.buf, len, iter) != len)
			goto free;
	}
	ret = ssdq_admin_exec_guarded(dev, c, &res);
	*result = res;
	/* Removal cancels the rescan after it stops passthrough. */
	if (!ret && ssdq_admin_opcode_changes_ns(opcode))
		queue_work(system_freezable_wq, &dev->scan_work);
	if (ret >= 0 && len && !(opcode & 1) && (opcode & 2) &&
	    copy_to_iter(ad.buf, len, iter) != len)
		ret = -EFAULT;
free:
	if (len)
		ssdq_admin_data_free(dev, &ad);
unlock:
	up_read(&dev->passthru_rwsem);
	return ret;
}

/*
 * ... its data in the user's buffer at @addr, @len bytes, or (@vec) in an
 * array of @len iovecs.
 */
int ssdq_passthru_admin_user(struct ssdq_dev *dev, struct nvme_command *c,
			     u64 addr, u32 len, bool vec, u64 *result)
{
	int dir = ssdq_admin_data_dir(c->common.opcode);
	struct iovec fast_iov[UIO_FASTIOV], *iov = fast_iov;
	struct iov_iter iter;
	ssize_t ret;

	if (!len)
		return ssdq_passthru_admin(dev, c, NULL, result);
	if (!vec) {
		iov_iter_ubuf(&iter, dir, u64_to_user_ptr(addr), len);
		return ssdq_passthru_admin(dev, c, &iter, result);
	}
	/* One iovec, or up to UIO_FASTIOV, lands in fast_iov: iov is NULL. */
	ret = import_iovec(dir, u64_to_user_ptr(addr), len, UIO_FASTIOV, &iov,
			   &iter);
	if (ret < 0)
		return ret;
	ret = ssdq_passthru_admin(dev, c, &iter, result);
	kfree(iov);
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
	iod->cancelled = false;
	iod->result = 0;
	iod->meta = NULL;
	return req;
}

/*
 * Metadata a namespace keeps apart from its blocks moves to and from the
 * command's metadata pointer (MPTR): through a buffer of ssdq's, copied
 * from the user's for a command to the controller and back for one from
 * it. (nvme maps it through the block layer's integrity data, which ssdq's
 * disks do not have.)
 */
struct ssdq_pt_meta {
	struct device *dev;		/* the controller's, for the DMA buffer */
	void *buf;
	dma_addr_t dma;
	u32 len;
	bool from_dev;			/* goes back to the user (a read) */
	void __user *ubuf;
};

static int ssdq_passthru_meta_map(struct ssdq_ns *ns, struct request *req,
				  u64 addr, u32 len)
{
	struct device *d = &ns->dev->pdev->dev;
	struct ssdq_iod *iod = ssdq_iod(req);
	struct ssdq_pt_meta *meta;

	if (!ssdq_ns_meta_apart(ns)) {
		dev_err_ratelimited(d, "passthrough: namespace %u keeps no metadata apart: metadata_len takes 0 only\n",
				    ns->nsid);
		return -EINVAL;
	}
	if (len > ns->dev->max_transfer) {
		dev_err_ratelimited(d, "passthrough: metadata_len %u, at most %u\n",
				    len, ns->dev->max_transfer);
		return -EINVAL;
	}
	meta = kmalloc(sizeof(*meta), GFP_KERNEL);
	if (!meta)
		return -ENOMEM;
	meta->buf = dma_alloc_coherent(d, len, &meta->dma, GFP_KERNEL);
	if (!meta->buf) {
		kfree(meta);
		return -ENOMEM;
	}
	meta->dev = d;
	meta->len = len;
	meta->from_dev = req_op(req) == REQ_OP_DRV_IN;
	meta->ubuf = u64_to_user_ptr(addr);
	if (!meta->from_dev &&
	    copy_from_user(meta->buf, meta->ubuf, len)) {
		dma_free_coherent(d, len, meta->buf, meta->dma);
		kfree(meta);
		return -EFAULT;
	}
	iod->meta = meta;
	iod->cmd.common.metadata = cpu_to_le64(meta->dma);
	return 0;
}

/*
 * After the request ended, in the submitter's context: what the controller
 * wrote goes back (@copy: the command reached it), the buffer is freed.
 */
int ssdq_passthru_meta_end(struct ssdq_pt_meta *meta, bool copy)
{
	int ret = 0;

	if (!meta)
		return 0;
	if (copy && meta->from_dev &&
	    copy_to_user(meta->ubuf, meta->buf, meta->len))
		ret = -EFAULT;
	dma_free_coherent(meta->dev, meta->len, meta->buf, meta->dma);
	kfree(meta);
	return ret;
}

int ssdq_passthru_meta_unmap(struct request *req, bool copy)
{
	return ssdq_passthru_meta_end(ssdq_passthru_meta_take(req), copy);
}

/*
 * A read, write or compare moves its NLB + 1 blocks whatever data_len says:
 * a shorter buffer would let the controller DMA past it (into whatever a
 * zero PRP entry or the page after a bounce buffer names); where the
 * namespace keeps metadata apart, their metadata too, which without a
 * buffer would go to address 0. nvme does not check this; ssdq refuses, as
 * anyone may send a read.
 */
static int ssdq_passthru_check_len(struct ssdq_ns *ns, struct request *req)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	struct device *d = &ns->dev->pdev->dev;
	const struct nvme_command *c = &iod->cmd;
	u32 meta_len = iod->meta ? iod->meta->len : 0;
	u64 blocks, want;

	switch (c->common.opcode) {
	case nvme_cmd_read:
	case nvme_cmd_write:
	case nvme_cmd_compare:
		break;
	default:
		return 0;
	}
	blocks = le16_to_cpu(c->rw.length) + 1ULL;
	want = blocks * ssdq_ns_lba_bytes(ns);
	if (blk_rq_bytes(req) < want) {
		dev_err_ratelimited(d, "passthrough: opcode %#x moves %llu bytes, its buffer has %u\n",
				    c->common.opcode, want, blk_rq_bytes(req));
		return -EINVAL;
	}
	want = blocks * ssdq_ns_meta_apart(ns);
	if (meta_len < want) {
		dev_err_ratelimited(d, "passthrough: opcode %#x moves %llu bytes of metadata, its metadata buffer has %u\n",
				    c->common.opcode, want, meta_len);
		return -EINVAL;
	}
	return 0;
}

/*
 * The user's buffers into the request, then their lengths checked: the
 * data (@iter: io_uring's registered buffer, else @uc's addr and data_len;
 * @vec: an array of data_len iovecs), pinned or copied where it breaks the
 * queue's alignment, and the metadata. Undone by ssdq_passthru_meta_unmap()
 * and blk_rq_unmap_user() with the request's first bio, kept before it
 * ran.
 */
int ssdq_passthru_rq_map(struct ssdq_ns *ns, struct request *req,
			 const struct nvme_passthru_cmd64 *uc, bool vec,
			 struct iov_iter *iter)
{
	int ret = 0;

	if (iter)
		ret = blk_rq_map_user_iov(req->q, req, NULL, iter, GFP_KERNEL);
	else if (uc->data_len)
		ret = blk_rq_map_user_io(req, NULL, u64_to_user_ptr(uc->addr),
					 uc->data_len, GFP_KERNEL, vec, 0, 0,
					 rq_data_dir(req));
	if (ret)
		return ret;
	if (uc->metadata_len) {
		ret = ssdq_passthru_meta_map(ns, req, uc->metadata,
					     uc->metadata_len);
		if (ret)
			goto unmap;
	}
	ret = ssdq_passthru_check_len(ns, req);
	if (!ret)
		return 0;
	ssdq_passthru_meta_unmap(req, false);
unmap:
	if (req->bio)
		blk_rq_unmap_user(req->bio);
	return ret;
}

/*
 * The NVMe status (> 0), or an errno for one ended before the controller
 * answered: -EINTR for one a reset took back (nvme's NVME_REQ_CANCELLED),
 * whatever status the cancel left in it.
 */
int ssdq_passthru_rq_status(struct request *req, blk_status_t sts)
{
	struct ssdq_iod *iod = ssdq_iod(req);

	if (iod->cancelled)
		return -EINTR;
	return iod->nvme_status ?: blk_status_to_errno(sts);
}

/* An I/O command from @uc, waited for; -errno or the status. */
static int ssdq_io_run(struct ssdq_ns *ns, const struct nvme_command *c,
		       const struct nvme_passthru_cmd64 *uc, bool vec,
		       u64 *result)
{
	struct request *req;
	blk_status_t sts;
	struct bio *bio;
	int ret;

	req = ssdq_passthru_rq_alloc(ns, c, 0, 0, uc->timeout_ms);
	if (IS_ERR(req))
		return PTR_ERR(req);
	ret = ssdq_passthru_rq_map(ns, req, uc, vec, NULL);
	if (ret)
		goto free;
	bio = req->bio;
	sts = blk_execute_rq(req, false);
	ret = ssdq_passthru_rq_status(req, sts);
	*result = ssdq_iod(req)->result;
	if (ssdq_passthru_meta_unmap(req, ret >= 0))
		ret = -EFAULT;
	if (bio)
		blk_rq_unmap_user(bio);
free:
	blk_mq_free_request(req);
	return ret;
}

/* ---- the ioctls */

/* What a passthrough ioctl is: an I/O command, a 64-bit result, vectored. */
#define SSDQ_UCMD_IO		BIT(0)
#define SSDQ_UCMD_RESULT64	BIT(1)
#define SSDQ_UCMD_VEC		BIT(2)

/*
 * NVME_IOCTL_{ADMIN,IO}{,64}_CMD and IO64_CMD_VEC (@kind) through @ns's
 * block or generic device, or (@ns NULL, admin only) the controller's:
 * through a @partition, by a @writer (a file opened for writing).
 */
static int ssdq_user_cmd(struct ssdq_dev *dev, struct ssdq_ns *ns,
			 bool partition, bool writer, void __user *arg,
			 unsigned int kind)
{
	bool result64 = kind & SSDQ_UCMD_RESULT64;
	bool vec = kind & SSDQ_UCMD_VEC;
	bool io = kind & SSDQ_UCMD_IO;
	struct nvme_passthru_cmd64 uc;
	struct nvme_command c = { };
	u64 result = 0;
	int ret;

	ret = ssdq_passthru_copy_in(&uc, arg, result64);
	if (ret)
		return ret;
	ret = ssdq_passthru_check(dev, &uc, io, vec, io ? ns->nsid : 0);
	if (ret)
		return ret;
	ssdq_passthru_build(&c, &uc);
	if (!ssdq_passthru_allowed(dev, partition, writer, &c, io))
		return -EACCES;
	if (io)
		ret = ssdq_io_run(ns, &c, &uc, vec, &result);
	else
		ret = ssdq_passthru_admin_user(dev, &c, uc.addr, uc.data_len,
					       false, &result);
	if (ret < 0)
		return ret;
	return ssdq_passthru_copy_out(arg, result64, result) ?: ret;
}

/* NVME_IOCTL_SUBMIT_IO: a read, write or compare of whole blocks. */
static int ssdq_submit_io(struct ssdq_ns *ns, bool partition, bool writer,
			  struct nvme_user_io __user *arg)
{
	struct nvme_passthru_cmd64 uc = { };
	struct nvme_command c = { };
	struct nvme_user_io io;
	u64 result, len;

	if (copy_from_user(&io, arg, sizeof(io)))
		return -EFAULT;
	if (io.flags) {
		dev_err_ratelimited(&ns->dev->pdev->dev,
				    "submit_io: flags take 0 only\n");
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
	len = (io.nblocks + 1ULL) * ssdq_ns_lba_bytes(ns);
	if (len > ns->dev->max_transfer) {
		dev_err_ratelimited(&ns->dev->pdev->dev,
				    "submit_io: %llu bytes, at most %u (the controller's MDTS)\n",
				    len, ns->dev->max_transfer);
		return -EINVAL;
	}
	uc.addr = io.addr;
	uc.data_len = len;
	/* As nvme's: the blocks' metadata, where it is kept apart. */
	if (ssdq_ns_meta_apart(ns) && io.metadata) {
		uc.metadata = io.metadata;
		uc.metadata_len = (io.nblocks + 1U) * ssdq_ns_meta_apart(ns);
	}
	return ssdq_io_run(ns, &c, &uc, false, &result);
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
		return ssdq_user_cmd(dev, ns, partition, writer, argp, 0);
	case NVME_IOCTL_ADMIN64_CMD:
		return ssdq_user_cmd(dev, ns, partition, writer, argp,
				     SSDQ_UCMD_RESULT64);
	case NVME_IOCTL_IO_CMD:
		return ssdq_user_cmd(dev, ns, partition, writer, argp,
				     SSDQ_UCMD_IO);
	case NVME_IOCTL_IO64_CMD:
		return ssdq_user_cmd(dev, ns, partition, writer, argp,
				     SSDQ_UCMD_IO | SSDQ_UCMD_RESULT64);
	case NVME_IOCTL_IO64_CMD_VEC:
		return ssdq_user_cmd(dev, ns, partition, writer, argp,
				     SSDQ_UCMD_IO | SSDQ_UCMD_RESULT64 |
				     SSDQ_UCMD_VEC);
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
		return ssdq_user_cmd(dev, NULL, false, false, argp, 0);
	case NVME_IOCTL_ADMIN64_CMD:
		return ssdq_user_cmd(dev, NULL, false, false, argp,
				     SSDQ_UCMD_RESULT64);
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
