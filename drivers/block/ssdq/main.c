// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq: a reference blk-mq block driver for NVMe SSDs.
 *
 * This file holds the PCI driver and module init/exit. Probe brings the
 * controller up (ctrl.c), hands its I/O queues the I/O path's reaper
 * (io.c), then registers the disk on them (disk.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/idr.h>
#include <linux/module.h>

#include <ssdq/ssdq.h>

static DEFINE_IDA(ssdq_instance_ida);

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
	kref_init(&dev->ref);
	dev->queues = kcalloc_node(nr_queues, sizeof(*dev->queues), GFP_KERNEL,
				   node);
	if (!dev->queues)
		goto free_dev;
	dev->instance = ida_alloc(&ssdq_instance_ida, GFP_KERNEL);
	if (dev->instance < 0)
		goto free_queues;
	/* Each technique's defaults and state. */
	if (ssdq_steer_init(dev))
		goto free_instance;
	ssdq_plug_init(dev);
	ssdq_irq_init(dev);
	ssdq_recovery_init(dev);
	ssdq_aen_init(dev);
	ssdq_fault_init(dev);
	ssdq_ns_init(dev);
	ssdq_ioctl_init(dev);
	dev->pdev = pci_dev_get(pdev);
	mutex_init(&dev->admin_lock);
	init_completion(&dev->admin_done);
	return dev;

free_instance:
	ida_free(&ssdq_instance_ida, dev->instance);
free_queues:
	kfree(dev->queues);
free_dev:
	kfree(dev);
	return NULL;
}

/* The structure itself goes with the last disk an opener holds (disk.c). */
static void ssdq_free_dev(struct ssdq_dev *dev)
{
	ssdq_steer_free(dev);
	ida_free(&ssdq_instance_ida, dev->instance);
	mutex_destroy(&dev->recovery_lock);
	mutex_destroy(&dev->admin_lock);
	mutex_destroy(&dev->ns_lock);
	kfree(dev->queues);
	dev->queues = NULL;
	ssdq_dev_put(dev);
}

static int ssdq_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	unsigned int wanted = ssdq_wanted_io_queues();
	unsigned int polled = ssdq_poll_queues_wanted();
	struct ssdq_dev *dev;
	struct ssdq_msg m;
	int ret;

	/* A driver_override or an ids= entry can name any device. */
	if (pdev->class != PCI_CLASS_STORAGE_EXPRESS) {
		dev_err(&pdev->dev, "class %06x is not NVM Express (%06x); not binding\n",
			pdev->class, PCI_CLASS_STORAGE_EXPRESS);
		return -ENODEV;
	}
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
	ssdq_ioctl_read_effects(dev);
	ret = ssdq_ctrl_setup_io_queues(dev, wanted, polled, ssdq_io_reap);
	if (ret)
		goto teardown;
	ssdq_aen_configure(dev);
	ret = ssdq_ident_add(dev);
	if (ret)
		goto teardown;
	ret = ssdq_tag_set_init(dev);
	if (ret)
		goto ident_remove;
	/* A disk for each namespace (ns.c); any failure fails the bind. */
	ret = ssdq_ns_scan(dev);
	if (ret) {
		dev_err(&pdev->dev, "namespace scan failed: %s\n",
			ssdq_result_str(&m, ret));
		ret = ret > 0 ? -EIO : ret;
		goto remove_disks;
	}
	dev->probed = true;
	ret = ssdq_chrdev_ctrl_add(dev);
	if (ret)
		goto remove_disks;
	ret = ssdq_ns_start_rescans(dev);
	if (ret)
		goto ctrl_chrdev_del;
	/* What PCI error recovery restores after a link reset wipes it. */
	pci_save_state(pdev);
	ssdq_aen_begin(dev);

	dev_info(&pdev->dev, "ssdq%d: %lld namespaces, %u I/O queues\n",
		 dev->instance, atomic64_read(&dev->ns_added),
		 dev->nr_io_queues);
	return 0;

ctrl_chrdev_del:
	ssdq_chrdev_ctrl_del(dev);
remove_disks:
	/* An opener may have sent a command meanwhile, even a rescan. */
	ssdq_ioctl_stop(dev);
	cancel_work_sync(&dev->scan_work);
	ssdq_ns_remove_all(dev);
ident_remove:
	ssdq_ident_remove(dev);
teardown:
	ssdq_ctrl_teardown(dev);
	/* After the teardown: a stray CQE still finds the tag set. */
	if (dev->tag_set.tags) {
		ssdq_ns_free_all(dev);
		ssdq_tag_set_free(dev);
	}
free_dev:
	ssdq_free_dev(dev);
	return ret;
}

static void ssdq_remove(struct pci_dev *pdev)
{
	struct ssdq_dev *dev = pci_get_drvdata(pdev);

	/*
	 * Surprise removal, or a link in error: fail I/O now rather than wait
	 * for timeouts, or for a PCI error recovery that cannot finish now.
	 */
	if (!pci_device_is_present(pdev) || ssdq_fault_gone(dev) ||
	    pci_channel_offline(pdev))
		ssdq_dev_fail(dev, "device removed");
	/* No event work or passthrough, and so no rescan, from here on. */
	ssdq_aen_stop(dev);
	ssdq_chrdev_ctrl_del(dev);
	ssdq_ioctl_stop(dev);
	ssdq_ns_stop_scans(dev);
	ssdq_ns_remove_all(dev);
	ssdq_ident_remove(dev);
	/* No request is left, so no delayed completion either. */
	cancel_delayed_work_sync(&dev->fault.delay_work);
	/*
	 * Nor a reset: the sysfs file that asks for one is gone, and an FLR
	 * holds the device lock, as removal does.
	 */
	cancel_work_sync(&dev->reset_work);
	cancel_work_sync(&dev->pci_reset_work);
	ssdq_recovery_remove(dev);
	/*
	 * Every request ended; an io_uring poller that saw its command still
	 * in flight may still poll that queue (uring.c's RCU read side).
	 */
	synchronize_rcu();
	/* The tag set outlives the controller: a stray CQE still finds it. */
	ssdq_ctrl_teardown(dev);
	/* An answer reaped by the teardown may have queued these again. */
	cancel_work_sync(&dev->escalate_work);
	ssdq_aen_flush(dev);
	ssdq_ns_free_all(dev);
	ssdq_tag_set_free(dev);
	ssdq_free_dev(dev);
}

/* The namespace list stays as it is while the disks' queues freeze. */
static void ssdq_shutdown(struct pci_dev *pdev)
{
	struct ssdq_dev *dev = pci_get_drvdata(pdev);

	ssdq_aen_stop(dev);
	ssdq_ns_stop_scans(dev);
	ssdq_dev_shutdown(dev);
}

/*
 * System sleep, the same way for each kind (suspend/resume, hibernation's
 * freeze/thaw, poweroff/restore): shut down, take the requests back;
 * restart, run them (recovery.c). The PCI core saves and restores config
 * space and MSI-X around these.
 */
static int ssdq_suspend(struct device *d)
{
	ssdq_dev_suspend(dev_get_drvdata(d));
	return 0;
}

static int ssdq_resume(struct device *d)
{
	ssdq_dev_resume(dev_get_drvdata(d));
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(ssdq_pm_ops, ssdq_suspend, ssdq_resume);

/* A function-level reset through sysfs, or one the PCI core does itself. */
static void ssdq_reset_prepare(struct pci_dev *pdev)
{
	ssdq_pci_reset_prepare(pci_get_drvdata(pdev));
}

static void ssdq_reset_done(struct pci_dev *pdev)
{
	ssdq_pci_reset_done(pci_get_drvdata(pdev));
}

/* PCI error recovery: AER or DPC reported an error on the link. */
static pci_ers_result_t ssdq_error_detected(struct pci_dev *pdev,
					    pci_channel_state_t state)
{
	return ssdq_pci_error_detected(pci_get_drvdata(pdev), state);
}

static pci_ers_result_t ssdq_slot_reset(struct pci_dev *pdev)
{
	return ssdq_pci_slot_reset(pci_get_drvdata(pdev));
}

static const struct pci_error_handlers ssdq_err_handler = {
	.error_detected	= ssdq_error_detected,
	.slot_reset	= ssdq_slot_reset,
	.reset_prepare	= ssdq_reset_prepare,
	.reset_done	= ssdq_reset_done,
};

/*
 * Binding by consent. ssdq has no ID table of its own: it binds a controller
 * only when told to, through the device's driver_override ("ssdq"), through
 * the ids= parameter or new_id (dynamic IDs, as pci-stub and vfio-pci take
 * them). Loading it, a rescan or a hotplug never takes a controller that
 * nvme could drive, and without a MODULE_DEVICE_TABLE udev never autoloads
 * it either. README.md shows how to give it one.
 */
static struct pci_driver ssdq_pci_driver = {
	.name		= "ssdq",
	.probe		= ssdq_probe,
	.remove		= ssdq_remove,
	.shutdown	= ssdq_shutdown,
	.err_handler	= &ssdq_err_handler,
	.driver.pm	= pm_sleep_ptr(&ssdq_pm_ops),
};

/* The ids= entries, checked by ssdq_params_check(), as dynamic IDs. */
static int __init ssdq_add_ids(void)
{
	const struct pci_device_id *id;
	int ret;

	for (id = ssdq_params.ids; id < ssdq_params.ids + ssdq_params.nr_ids;
	     id++) {
		ret = pci_add_dynid(&ssdq_pci_driver, id->vendor, id->device,
				    id->subvendor, id->subdevice, id->class,
				    id->class_mask, 0);
		if (ret)
			return ret;
	}
	return 0;
}

static int __init ssdq_init(void)
{
	int ret;

	ret = ssdq_params_check();
	if (ret)
		return ret;
	ret = ssdq_recovery_wq_init();
	if (ret)
		return ret;
	ret = ssdq_aen_wq_init();
	if (ret)
		goto wq_exit;
	ret = ssdq_irq_hotplug_init();
	if (ret)
		goto aen_wq_exit;
	ret = ssdq_chrdev_init();
	if (ret)
		goto hotplug_exit;
	ssdq_debugfs_root = debugfs_create_dir("ssdq", NULL);
	ret = pci_register_driver(&ssdq_pci_driver);
	if (ret)
		goto debugfs_remove;
	ret = ssdq_add_ids();
	if (ret)
		goto unregister;
	return 0;

unregister:
	pci_unregister_driver(&ssdq_pci_driver);
debugfs_remove:
	debugfs_remove_recursive(ssdq_debugfs_root);
	ssdq_chrdev_exit();
hotplug_exit:
	ssdq_irq_hotplug_exit();
aen_wq_exit:
	ssdq_aen_wq_exit();
wq_exit:
	ssdq_recovery_wq_exit();
	return ret;
}

static void __exit ssdq_exit(void)
{
	pci_unregister_driver(&ssdq_pci_driver);
	debugfs_remove_recursive(ssdq_debugfs_root);
	ssdq_chrdev_exit();
	ssdq_irq_hotplug_exit();
	ssdq_aen_wq_exit();
	ssdq_recovery_wq_exit();
	ida_destroy(&ssdq_instance_ida);
}

module_init(ssdq_init);
module_exit(ssdq_exit);

MODULE_DESCRIPTION("ssdq: reference blk-mq driver for NVMe SSDs");
MODULE_LICENSE("GPL");
MODULE_VERSION(SSDQ_VERSION);
