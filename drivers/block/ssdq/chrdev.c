// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq char devices, as nvme has them:
 *
 *   /dev/ssdqcN     the controller (class "ssdq"), nvme's /dev/nvmeN: admin
 *                   commands (ioctl and io_uring), NVME_IOCTL_RESET and
 *                   NVME_IOCTL_RESCAN (ioctl.c, uring.c)
 *   /dev/ssdqgNnM   namespace M's generic device (class "ssdq-generic"),
 *                   nvme's /dev/ngNnM: the namespace's ioctls, as on its
 *                   disk, and its I/O commands through io_uring (uring.c)
 *
 * udev (or devtmpfs) makes the nodes from the names, root's and 0600 as
 * nvme's. Who may send what is decided per command (ioctl.c), from the
 * opener's capabilities and the file's open mode.
 *
 * Lifetimes: an open file holds the char device's struct device (the cdev
 * holds it); the controller's holds a reference to struct ssdq_dev, a
 * namespace's holds its disk, which holds the namespace (disk.c). Removal
 * deletes the devices first, so nothing new opens; what is already open
 * gets ENODEV: admin commands from the stopped passthrough (ioctl.c), I/O
 * from the disk's dying queue.
 */
#include <linux/cdev.h>
#include <linux/fs.h>
#include <linux/idr.h>

#include <ssdq/ssdq.h>

#define SSDQ_MINORS	BIT(MINORBITS)

static dev_t ssdq_ctrl_base;
static dev_t ssdq_generic_base;
static DEFINE_IDA(ssdq_generic_minor_ida);

static struct class ssdq_ctrl_class = {
	.name = "ssdq",
};

static struct class ssdq_generic_class = {
	.name = "ssdq-generic",
};

/*
 * A char device in a structure that @release lets go of: what @d holds is
 * the caller's to take before. On failure @d is put, and so released.
 */
static int ssdq_chrdev_add(struct device *d, struct cdev *cdev, dev_t devt,
			   struct class *class, struct device *parent,
			   void (*release)(struct device *d),
			   const struct file_operations *fops,
			   const char *name)
{
	int ret;

	device_initialize(d);
	d->devt = devt;
	d->class = class;
	d->parent = parent;
	d->release = release;
	ret = dev_set_name(d, "%s", name);
	if (ret)
		goto put;
	cdev_init(cdev, fops);
	cdev->owner = THIS_MODULE;
	ret = cdev_device_add(cdev, d);
	if (ret)
		goto put;
	return 0;

put:
	put_device(d);
	return ret;
}

/* ---- the controller's: /dev/ssdqcN */

static int ssdq_ctrl_chr_open(struct inode *inode, struct file *file)
{
	file->private_data = container_of(inode->i_cdev, struct ssdq_dev,
					  ctrl_cdev);
	return 0;
}

static long ssdq_ctrl_chr_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	return ssdq_ctrl_ioctl(file->private_data, cmd, (void __user *)arg);
}

static int ssdq_ctrl_chr_uring_cmd(struct io_uring_cmd *ioucmd,
				   unsigned int issue_flags)
{
	return ssdq_uring_ctrl_cmd(ioucmd->file->private_data, ioucmd,
				   issue_flags);
}

static const struct file_operations ssdq_ctrl_chr_fops = {
	.owner		= THIS_MODULE,
	.open		= ssdq_ctrl_chr_open,
	.unlocked_ioctl	= ssdq_ctrl_chr_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.uring_cmd	= ssdq_ctrl_chr_uring_cmd,
};

static void ssdq_ctrl_chr_release(struct device *d)
{
	ssdq_dev_put(container_of(d, struct ssdq_dev, ctrl_device));
}

int ssdq_chrdev_ctrl_add(struct ssdq_dev *dev)
{
	char name[16];

	if (dev->instance >= SSDQ_MINORS)
		return -EBUSY;
	snprintf(name, sizeof(name), "ssdqc%d", dev->instance);
	/* Held by the device, and let go by its release. */
	kref_get(&dev->ref);
	return ssdq_chrdev_add(&dev->ctrl_device, &dev->ctrl_cdev,
			       MKDEV(MAJOR(ssdq_ctrl_base), dev->instance),
			       &ssdq_ctrl_class, &dev->pdev->dev,
			       ssdq_ctrl_chr_release, &ssdq_ctrl_chr_fops,
			       name);
}

void ssdq_chrdev_ctrl_del(struct ssdq_dev *dev)
{
	cdev_device_del(&dev->ctrl_cdev, &dev->ctrl_device);
	put_device(&dev->ctrl_device);
}

/* ---- a namespace's generic device: /dev/ssdqgNnM */

static int ssdq_ns_chr_open(struct inode *inode, struct file *file)
{
	file->private_data = container_of(inode->i_cdev, struct ssdq_ns, cdev);
	return 0;
}

/* Not a partition; writes need a file opened for writing. */
static long ssdq_ns_chr_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	return ssdq_ns_ioctl(file->private_data, false,
			     file->f_mode & FMODE_WRITE, cmd,
			     (void __user *)arg);
}

static int ssdq_ns_chr_uring_cmd(struct io_uring_cmd *ioucmd,
				 unsigned int issue_flags)
{
	return ssdq_uring_ns_cmd(ioucmd->file->private_data, ioucmd,
				 issue_flags);
}

static const struct file_operations ssdq_ns_chr_fops = {
	.owner		= THIS_MODULE,
	.open		= ssdq_ns_chr_open,
	.unlocked_ioctl	= ssdq_ns_chr_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.uring_cmd	= ssdq_ns_chr_uring_cmd,
#if SSDQ_URING_IOPOLL
	.uring_cmd_iopoll = ssdq_uring_iopoll,
#endif
};

/* The last user of the device: its minor, and its hold on the disk. */
static void ssdq_ns_chr_release(struct device *d)
{
	struct ssdq_ns *ns = container_of(d, struct ssdq_ns, cdev_device);

	ida_free(&ssdq_generic_minor_ida, MINOR(d->devt));
	put_disk(ns->disk);
}

/*
 * After the namespace's disk is added. As under nvme, a namespace whose
 * generic device fails keeps its disk: the caller says so and goes on.
 */
int ssdq_chrdev_ns_add(struct ssdq_ns *ns)
{
	char name[32];
	int minor, ret;

	minor = ida_alloc_max(&ssdq_generic_minor_ida, SSDQ_MINORS - 1,
			      GFP_KERNEL);
	if (minor < 0)
		return minor;
	snprintf(name, sizeof(name), "ssdqg%dn%u", ns->dev->instance, ns->nsid);
	/* Held by the device, and let go by its release with the minor. */
	get_device(disk_to_dev(ns->disk));
	ret = ssdq_chrdev_add(&ns->cdev_device, &ns->cdev,
			      MKDEV(MAJOR(ssdq_generic_base), minor),
			      &ssdq_generic_class, &ns->dev->pdev->dev,
			      ssdq_ns_chr_release, &ssdq_ns_chr_fops, name);
	if (!ret)
		ns->cdev_added = true;
	return ret;
}

/* Before the disk goes: no new opener; open files find its queue dying. */
void ssdq_chrdev_ns_del(struct ssdq_ns *ns)
{
	if (!ns->cdev_added)
		return;
	ns->cdev_added = false;
	cdev_device_del(&ns->cdev, &ns->cdev_device);
	put_device(&ns->cdev_device);
}

/* ---- module init and exit */

int __init ssdq_chrdev_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&ssdq_ctrl_base, 0, SSDQ_MINORS, "ssdq");
	if (ret)
		return ret;
	ret = alloc_chrdev_region(&ssdq_generic_base, 0, SSDQ_MINORS,
				  "ssdq-generic");
	if (ret)
		goto unregister_ctrl;
	ret = class_register(&ssdq_ctrl_class);
	if (ret)
		goto unregister_generic;
	ret = class_register(&ssdq_generic_class);
	if (ret)
		goto destroy_ctrl_class;
	return 0;

destroy_ctrl_class:
	class_unregister(&ssdq_ctrl_class);
unregister_generic:
	unregister_chrdev_region(ssdq_generic_base, SSDQ_MINORS);
unregister_ctrl:
	unregister_chrdev_region(ssdq_ctrl_base, SSDQ_MINORS);
	return ret;
}

void ssdq_chrdev_exit(void)
{
	class_unregister(&ssdq_generic_class);
	class_unregister(&ssdq_ctrl_class);
	unregister_chrdev_region(ssdq_generic_base, SSDQ_MINORS);
	unregister_chrdev_region(ssdq_ctrl_base, SSDQ_MINORS);
	ida_destroy(&ssdq_generic_minor_ida);
}
