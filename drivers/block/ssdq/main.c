// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq: a reference blk-mq block driver for NVMe SSDs.
 *
 * This file holds the module parameters and the PCI driver. Probe brings the
 * controller up (ctrl.c), then registers the disk on its I/O queues (blk.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/idr.h>
#include <linux/module.h>

#include <ssdq/ssdq.h>

struct ssdq_params ssdq_params = {
	.io_queues	= 0,
	.poll_queues	= 0,
	.io_queue_depth	= SSDQ_MAX_QUEUE_DEPTH,
	.io_timeout	= 30,
	.admin_timeout	= 60,
	.rotational	= 0,
	.add_random	= 0,
};

module_param_named(io_queues, ssdq_params.io_queues, uint, 0444);
MODULE_PARM_DESC(io_queues,
		 "I/O queue pairs per controller, 0 = one per CPU (0-128)");
module_param_named(poll_queues, ssdq_params.poll_queues, uint, 0444);
MODULE_PARM_DESC(poll_queues,
		 "interrupt-less polled queue pairs per controller (0-128)");
module_param_named(io_queue_depth, ssdq_params.io_queue_depth, uint, 0444);
MODULE_PARM_DESC(io_queue_depth, "entries per I/O queue (2-1024)");
module_param_named(io_timeout, ssdq_params.io_timeout, uint, 0444);
MODULE_PARM_DESC(io_timeout, "default I/O timeout in seconds (1-3600)");
module_param_named(admin_timeout, ssdq_params.admin_timeout, uint, 0444);
MODULE_PARM_DESC(admin_timeout, "admin command timeout in seconds (1-3600)");
module_param_named(rotational, ssdq_params.rotational, uint, 0444);
MODULE_PARM_DESC(rotational, "initial queue/rotational (0-1, default 0)");
module_param_named(add_random, ssdq_params.add_random, uint, 0444);
MODULE_PARM_DESC(add_random, "initial queue/add_random (0-1, default 0)");

struct ssdq_param_range {
	const char *name;
	const unsigned int *val;
	unsigned int min;
	unsigned int max;
};

static const struct ssdq_param_range ssdq_param_ranges[] = {
	{ "io_queues", &ssdq_params.io_queues, 0, SSDQ_MAX_IO_QUEUES },
	{ "poll_queues", &ssdq_params.poll_queues, 0, SSDQ_MAX_POLL_QUEUES },
	{ "io_queue_depth", &ssdq_params.io_queue_depth,
	  SSDQ_MIN_QUEUE_DEPTH, SSDQ_MAX_QUEUE_DEPTH },
	{ "io_timeout", &ssdq_params.io_timeout, 1, 3600 },
	{ "admin_timeout", &ssdq_params.admin_timeout, 1, 3600 },
	{ "rotational", &ssdq_params.rotational, 0, 1 },
	{ "add_random", &ssdq_params.add_random, 0, 1 },
};

/* One line per bad value, naming the parameter and what it allows. */
static int __init ssdq_check_params(void)
{
	const struct ssdq_param_range *p;

	for (p = ssdq_param_ranges;
	     p < ssdq_param_ranges + ARRAY_SIZE(ssdq_param_ranges); p++) {
		if (*p->val < p->min || *p->val > p->max) {
			pr_err("%s=%u out of range (allowed %u-%u)\n", p->name,
			       *p->val, p->min, p->max);
			return -EINVAL;
		}
	}
	return 0;
}

/* A sysfs mode file: every choice, the current one in brackets. */
ssize_t ssdq_sysfs_emit_choice(char *buf, const char * const *names,
			       int nr, int cur)
{
	int i, len = 0;

	for (i = 0; i < nr; i++)
		len += sysfs_emit_at(buf, len, i == cur ? "[%s] " : "%s ",
				     names[i]);
	buf[len - 1] = '\n';
	return len;
}

static DEFINE_IDA(ssdq_instance_ida);
struct dentry *ssdq_debugfs_root;

/* More queues than CPUs would leave some without a submitter. */
static unsigned int ssdq_wanted_io_queues(void)
{
	unsigned int cpus = num_possible_cpus();

	if (!ssdq_params.io_queues)
		return cpus;
	return min(ssdq_params.io_queues, cpus);
}

static struct ssdq_dev *ssdq_alloc_dev(struct pci_dev *pdev,
				       unsigned int nr_queues)
{
	int node = dev_to_node(&pdev->dev);
	struct ssdq_dev *dev;

	dev = kzalloc_node(sizeof(*dev), GFP_KERNEL, node);
	if (!dev)
		return NULL;
	dev->queues = kcalloc_node(nr_queues, sizeof(*dev->queues), GFP_KERNEL,
				   node);
	if (!dev->queues)
		goto free_dev;
	dev->instance = ida_alloc(&ssdq_instance_ida, GFP_KERNEL);
	if (dev->instance < 0)
		goto free_queues;
	dev->pdev = pdev;
	dev->irq_mode = SSDQ_IRQ_DIRECT;
	dev->irq_budget = 64;
	dev->irq_defer_rounds = 2;
	mutex_init(&dev->admin_lock);
	ssdq_recovery_init(dev);
	init_completion(&dev->admin_done);
	ssdq_fault_init(dev);
	return dev;

free_queues:
	kfree(dev->queues);
free_dev:
	kfree(dev);
	return NULL;
}

static void ssdq_free_dev(struct ssdq_dev *dev)
{
	ida_free(&ssdq_instance_ida, dev->instance);
	mutex_destroy(&dev->recovery_lock);
	mutex_destroy(&dev->admin_lock);
	kfree(dev->queues);
	kfree(dev);
}

static int ssdq_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	unsigned int wanted = ssdq_wanted_io_queues();
	unsigned int polled = min(ssdq_params.poll_queues, num_possible_cpus());
	struct ssdq_dev *dev;
	int ret;

	dev = ssdq_alloc_dev(pdev, wanted + polled + 1);
	if (!dev)
		return -ENOMEM;
	pci_set_drvdata(pdev, dev);

	ret = ssdq_ctrl_map(dev);
	if (ret)
		goto free_dev;
	ret = ssdq_ctrl_init_admin(dev);
	if (ret)
		goto teardown;
	ret = ssdq_ctrl_identify(dev);
	if (ret)
		goto teardown;
	ret = ssdq_ctrl_setup_io_queues(dev, wanted, polled);
	if (ret)
		goto teardown;
	ret = ssdq_blk_init(dev);
	if (ret)
		goto teardown;

	dev_info(&pdev->dev, "%s: %llu MiB, %u-byte blocks, %u I/O queues\n",
		 dev->disk->disk_name,
		 (unsigned long long)(dev->capacity >> (20 - SECTOR_SHIFT)),
		 1U << dev->lba_shift, dev->nr_io_queues);
	return 0;

teardown:
	ssdq_ctrl_teardown(dev);
free_dev:
	ssdq_free_dev(dev);
	return ret;
}

static void ssdq_remove(struct pci_dev *pdev)
{
	struct ssdq_dev *dev = pci_get_drvdata(pdev);

	/* Surprise removal: fail I/O now rather than wait for timeouts. */
	if (!pci_device_is_present(pdev))
		ssdq_dev_fail(dev, "device removed");
	ssdq_blk_del(dev);
	/* No request is left, so no delayed completion either. */
	cancel_delayed_work_sync(&dev->fault.delay_work);
	/* Nor a reset: the sysfs file that asks for one is gone. */
	cancel_work_sync(&dev->reset_work);
	/* The tag set outlives the controller: a stray CQE still finds it. */
	ssdq_ctrl_teardown(dev);
	ssdq_blk_free(dev);
	ssdq_free_dev(dev);
}

static void ssdq_shutdown(struct pci_dev *pdev)
{
	ssdq_dev_shutdown(pci_get_drvdata(pdev));
}

/* A function-level reset through sysfs, or one the PCI core does itself. */
static void ssdq_reset_prepare(struct pci_dev *pdev)
{
	ssdq_pci_reset_prepare(pci_get_drvdata(pdev));
}

static void ssdq_reset_done(struct pci_dev *pdev)
{
	ssdq_pci_reset_done(pci_get_drvdata(pdev));
}

static const struct pci_error_handlers ssdq_err_handler = {
	.reset_prepare	= ssdq_reset_prepare,
	.reset_done	= ssdq_reset_done,
};

/*
 * QEMU's emulated controller, and any NVMe controller by class. There is
 * deliberately no MODULE_DEVICE_TABLE: ssdq must never be autoloaded and race
 * the kernel's nvme driver for a machine's boot disk. Users bind it by hand,
 * usually through driver_override (see README.md).
 */
static const struct pci_device_id ssdq_id_table[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT, 0x0010) },
	{ PCI_DEVICE_CLASS(PCI_CLASS_STORAGE_EXPRESS, 0xffffff) },
	{ }
};

static struct pci_driver ssdq_pci_driver = {
	.name		= "ssdq",
	.id_table	= ssdq_id_table,
	.probe		= ssdq_probe,
	.remove		= ssdq_remove,
	.shutdown	= ssdq_shutdown,
	.err_handler	= &ssdq_err_handler,
};

static int __init ssdq_init(void)
{
	int ret;

	ret = ssdq_check_params();
	if (ret)
		return ret;
	ssdq_debugfs_root = debugfs_create_dir("ssdq", NULL);
	ret = pci_register_driver(&ssdq_pci_driver);
	if (ret)
		debugfs_remove_recursive(ssdq_debugfs_root);
	return ret;
}

static void __exit ssdq_exit(void)
{
	pci_unregister_driver(&ssdq_pci_driver);
	debugfs_remove_recursive(ssdq_debugfs_root);
	ida_destroy(&ssdq_instance_ida);
}

module_init(ssdq_init);
module_exit(ssdq_exit);

MODULE_DESCRIPTION("ssdq: reference blk-mq driver for NVMe SSDs");
MODULE_LICENSE("GPL");
