// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq module parameters: load-time settings, checked once before the PCI
 * driver registers.
 *
 * The ranges are checked here rather than by module_param_cb() setters
 * (param_set_uint_minmax(), as nvme-pci does): the kernel follows a
 * refused setter with its own "invalid for parameter" line, which does not
 * say what is allowed. This way a bad value gives one line that does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

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
		 "I/O queue pairs per controller, 0 = one per CPU (0-128, default 0)");
module_param_named(poll_queues, ssdq_params.poll_queues, uint, 0444);
MODULE_PARM_DESC(poll_queues,
		 "interrupt-less polled queue pairs per controller (0-128, default 0)");
module_param_named(io_queue_depth, ssdq_params.io_queue_depth, uint, 0444);
MODULE_PARM_DESC(io_queue_depth, "entries per I/O queue (2-1024, default 1024)");
module_param_named(io_timeout, ssdq_params.io_timeout, uint, 0444);
MODULE_PARM_DESC(io_timeout, "default I/O timeout in seconds (1-3600, default 30)");
module_param_named(admin_timeout, ssdq_params.admin_timeout, uint, 0444);
MODULE_PARM_DESC(admin_timeout, "admin command timeout in seconds (1-3600, default 60)");
module_param_named(rotational, ssdq_params.rotational, uint, 0444);
MODULE_PARM_DESC(rotational, "initial queue/rotational (0-1, default 0)");
module_param_named(add_random, ssdq_params.add_random, uint, 0444);
MODULE_PARM_DESC(add_random, "initial queue/add_random (0-1, default 0)");
module_param_named(fault_bar0_doorbells, ssdq_params.fault_bar0_doorbells,
		   uint, 0444);
MODULE_PARM_DESC(fault_bar0_doorbells,
		 "fault injection: BAR0 holds only N doorbells, 0 = all it has (0-1024, default 0)");
module_param_named(fault_admin_status, ssdq_params.fault_admin_status,
		   uint, 0444);
MODULE_PARM_DESC(fault_admin_status,
		 "fault injection: the Nth admin command of each probe fails, 0 = none (0-1024, default 0)");

/*
 * ids= names, by PCI ID, the controllers ssdq may take without being given
 * each one through its driver_override, as pci-stub's and vfio-pci's ids=
 * do (main.c, "Binding by consent").
 */
static char *ssdq_ids;
module_param_named(ids, ssdq_ids, charp, 0444);
MODULE_PARM_DESC(ids,
		 "PCI IDs ssdq may bind without driver_override: vendor:device[:subvendor:subdevice[:class:class_mask]] in hex, comma-separated, up to 8 (default none)");

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
	{ "fault_bar0_doorbells", &ssdq_params.fault_bar0_doorbells, 0, 1024 },
	{ "fault_admin_status", &ssdq_params.fault_admin_status, 0, 1024 },
};

/* Fields of one ids= entry: vendor, device, subvendor, subdevice, class, mask. */
static const unsigned int ssdq_id_field_max[] = {
	0xffff, 0xffff, 0xffff, 0xffff, 0xffffff, 0xffffff
};

/* One ids= entry, "1b36:0010" say, into @id; false if it is not one. */
static bool __init ssdq_parse_id(char *s, struct pci_device_id *id)
{
	unsigned int f[] = { 0, 0, PCI_ANY_ID, PCI_ANY_ID, 0, 0 };
	unsigned int n = 0;
	char *tok;

	while ((tok = strsep(&s, ":"))) {
		if (n == ARRAY_SIZE(f) || kstrtouint(tok, 16, &f[n]) ||
		    f[n] > ssdq_id_field_max[n])
			return false;
		n++;
	}
	/* Subsystem IDs come as a pair, and a class with its mask. */
	if (n != 2 && n != 4 && n != 6)
		return false;
	*id = (struct pci_device_id) {
		.vendor = f[0], .device = f[1],
		.subvendor = f[2], .subdevice = f[3],
		.class = f[4], .class_mask = f[5],
	};
	return true;
}

static int __init ssdq_parse_ids(void)
{
	char entry[48], *list, *p, *s;
	int ret = 0;

	if (!ssdq_ids)
		return 0;
	list = kstrdup(ssdq_ids, GFP_KERNEL);
	if (!list)
		return -ENOMEM;
	p = list;
	while ((s = strsep(&p, ","))) {
		if (!*s)
			continue;
		if (ssdq_params.nr_ids == SSDQ_MAX_IDS) {
			pr_err("ids: more than %d entries (allowed 1-%d)\n",
			       SSDQ_MAX_IDS, SSDQ_MAX_IDS);
			ret = -EINVAL;
			break;
		}
		/* strsep() cuts the entry up: name it from a copy. */
		if (strscpy(entry, s, sizeof(entry)) < 0 ||
		    !ssdq_parse_id(s, &ssdq_params.ids[ssdq_params.nr_ids])) {
			pr_err("ids: '%.*s' is not vendor:device[:subvendor:subdevice[:class:class_mask]] in hex\n",
			       (int)sizeof(entry) - 1, entry);
			ret = -EINVAL;
			break;
		}
		ssdq_params.nr_ids++;
	}
	kfree(list);
	return ret;
}

/* One line per bad value, naming the parameter and what it allows. */
int __init ssdq_params_check(void)
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
	return ssdq_parse_ids();
}
