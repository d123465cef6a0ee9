// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq identity: what the controller and each namespace say they are, kept
 * from Identify (ctrl.c and ns.c issue the commands) and shown where user space
 * looks for it. lsblk's MODEL and SERIAL and udev's rules read the disk's
 * parent device (here the PCI function: serial, model, firmware_rev) and
 * the disk's own wwid, nsid, eui, nguid and uuid, in the formats the
 * kernel's nvme driver uses, so that one controller looks the same to user
 * space whichever driver has it.
 */
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uuid.h>

#include <ssdq/ssdq.h>

/*
 * Controllers whose namespace ids are known to be wrong (the same on every
 * drive, or made up): the kernel's nvme driver ignores them
 * (NVME_QUIRK_BOGUS_NID in 6.12's nvme_id_table, whence this list), and so
 * does ssdq, so that both name such a disk alike, by wwid's
 * vendor-serial-model fallback. QEMU's controller is one of them.
 */
static const struct pci_device_id ssdq_ident_bogus_nid[] = {
	{ PCI_VDEVICE(INTEL, 0x0a54) },		/* Intel P4500/P4600 */
	{ PCI_VDEVICE(INTEL, 0x5845) },		/* QEMU, old id */
	{ PCI_VDEVICE(REDHAT, 0x0010) },	/* QEMU */
	{ PCI_DEVICE(0x126f, 0x2262) },		/* Silicon Motion generic */
	{ PCI_DEVICE(0x126f, 0x2263) },		/* Silicon Motion unidentified */
	{ PCI_DEVICE(0x1987, 0x5012) },		/* Phison E12 */
	{ PCI_DEVICE(0x1987, 0x5016) },		/* Phison E16 */
	{ PCI_DEVICE(0x1cc1, 0x33f8) },		/* ADATA IM2P33F8ABR1 */
	{ PCI_DEVICE(0x10ec, 0x5762) },		/* ADATA SX6000LNP */
	{ PCI_DEVICE(0x10ec, 0x5763) },		/* ADATA SX6000PNP */
	{ PCI_DEVICE(0x1344, 0x6001) },		/* Micron Nitro */
	{ PCI_DEVICE(0x1c5c, 0x174a) },		/* SK Hynix P31 */
	{ PCI_DEVICE(0x144d, 0xa80b) },		/* Samsung PM9B1 */
	{ PCI_DEVICE(0x144d, 0xa802) },		/* Samsung SM953 */
	{ PCI_DEVICE(0x1f40, 0x1202) },		/* Netac NV3000 */
	{ PCI_DEVICE(0x1f40, 0x5236) },		/* Netac NV7000 */
	{ PCI_DEVICE(0x1e4b, 0x1001) },		/* MAXIO MAP1001 */
	{ PCI_DEVICE(0x1e4b, 0x1002) },		/* MAXIO MAP1002 */
	{ PCI_DEVICE(0x1e4b, 0x1202) },		/* MAXIO MAP1202 */
	{ PCI_DEVICE(0x1e4b, 0x1602) },		/* MAXIO MAP1602 */
	{ PCI_DEVICE(0x1cc1, 0x5350) },		/* ADATA XPG GAMMIX S50 */
	{ PCI_DEVICE(0x1dbe, 0x5216) },		/* Acer/INNOGRIT FA100 */
	{ PCI_DEVICE(0x1dbe, 0x5236) },		/* ADATA XPG GAMMIX S70 */
	{ PCI_DEVICE(0xc0a9, 0x540a) },		/* Crucial P2 */
	{ PCI_DEVICE(0x1d97, 0x2263) },		/* Lexar NM610 */
	{ PCI_DEVICE(0x1d97, 0x1d97) },		/* Lexar NM620 */
	{ PCI_DEVICE(0x1d97, 0x2269) },		/* Lexar NM760 */
	{ PCI_DEVICE(0x10ec, 0x5765) },		/* TEAMGROUP MP33 */
	{ }
};

static bool ssdq_ident_nids_bogus(struct ssdq_dev *dev)
{
	return pci_match_id(ssdq_ident_bogus_nid, dev->pdev);
}

/* From Identify Controller: who made it and which it is. */
void ssdq_ident_ctrl(struct ssdq_dev *dev, const struct nvme_id_ctrl *id)
{
	struct ssdq_ident *ident = &dev->ident;

	ident->vid = le16_to_cpu(id->vid);
	memcpy(ident->serial, id->sn, sizeof(ident->serial));
	memcpy(ident->model, id->mn, sizeof(ident->model));
	memcpy(ident->firmware_rev, id->fr, sizeof(ident->firmware_rev));
}

/*
 * From the Namespace Identification Descriptor list (CNS 03h, NVMe 1.3):
 * each descriptor a type, a length and the id. One of the wrong length
 * ends the list: what follows it cannot be found. Read even where the ids
 * are ignored, as nvme does.
 */
void ssdq_ident_ns_descs(struct ssdq_ns *ns, const void *buf)
{
	struct ssdq_ns_ids *ident = &ns->ids;
	struct ssdq_dev *dev = ns->dev;
	bool bogus = ssdq_ident_nids_bogus(dev);
	unsigned int pos = 0;

	while (pos + sizeof(struct nvme_ns_id_desc) <= NVME_IDENTIFY_DATA_SIZE) {
		const struct nvme_ns_id_desc *d = buf + pos;
		const void *id = d + 1;
		unsigned int want;
		void *to;

		if (!d->nidl)
			return;
		switch (d->nidt) {
		case NVME_NIDT_EUI64:
			want = NVME_NIDT_EUI64_LEN;
			to = ident->eui64;
			break;
		case NVME_NIDT_NGUID:
			want = NVME_NIDT_NGUID_LEN;
			to = ident->nguid;
			break;
		case NVME_NIDT_UUID:
			want = NVME_NIDT_UUID_LEN;
			to = &ident->uuid;
			break;
		case NVME_NIDT_CSI:
			want = NVME_NIDT_CSI_LEN;
			to = NULL;
			break;
		default:		/* newer than this driver */
			want = d->nidl;
			to = NULL;
			break;
		}
		if (d->nidl != want) {
			dev_warn(&dev->pdev->dev,
				 "namespace %u: identifier type %u of %u bytes, not %u: the rest of the list ignored\n",
				 ns->nsid, d->nidt, d->nidl, want);
			return;
		}
		pos += sizeof(*d) + d->nidl;
		if (pos > NVME_IDENTIFY_DATA_SIZE)
			return;
		if (to && !bogus)
			memcpy(to, id, want);
	}
}

/*
 * From Identify Namespace: EUI-64 (NVMe 1.1) and NGUID (1.2), where the
 * descriptor list gave none, as nvme does.
 */
void ssdq_ident_ns(struct ssdq_ns *ns, const struct nvme_id_ns *id)
{
	struct ssdq_ns_ids *ident = &ns->ids;
	struct ssdq_dev *dev = ns->dev;
	u32 vs = readl(dev->bar + NVME_REG_VS);

	if (ssdq_ident_nids_bogus(dev))
		return;
	if (vs >= NVME_VS(1, 1, 0) &&
	    !memchr_inv(ident->eui64, 0, sizeof(ident->eui64)))
		memcpy(ident->eui64, id->eui64, sizeof(ident->eui64));
	if (vs >= NVME_VS(1, 2, 0) &&
	    !memchr_inv(ident->nguid, 0, sizeof(ident->nguid)))
		memcpy(ident->nguid, id->nguid, sizeof(ident->nguid));
}

static bool ssdq_ident_has(const void *id, size_t len)
{
	return memchr_inv(id, 0, len);
}

/* A string field's length without the spaces (or NULs) that pad it. */
static int ssdq_ident_strlen(const char *s, int len)
{
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\0'))
		len--;
	return len;
}

/* ------------------------------------------- /sys/block/ssdqN.../<id> */

static struct ssdq_ns_ids *ssdq_ident_of_disk(struct device *d)
{
	return &ssdq_ns_from_disk_dev(d)->ids;
}

/*
 * World wide id, the most unique the namespace has: UUID, NGUID, EUI-64,
 * else one made of the controller's vendor, serial, model and the nsid.
 */
static ssize_t wwid_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	struct ssdq_ns *ns = ssdq_ns_from_disk_dev(d);
	struct ssdq_ident *ctrl = &ns->dev->ident;
	struct ssdq_ns_ids *ident = &ns->ids;

	if (!uuid_is_null(&ident->uuid))
		return sysfs_emit(buf, "uuid.%pU\n", &ident->uuid);
	if (ssdq_ident_has(ident->nguid, sizeof(ident->nguid)))
		return sysfs_emit(buf, "eui.%16phN\n", ident->nguid);
	if (ssdq_ident_has(ident->eui64, sizeof(ident->eui64)))
		return sysfs_emit(buf, "eui.%8phN\n", ident->eui64);
	return sysfs_emit(buf, "nvme.%04x-%*phN-%*phN-%08x\n", ctrl->vid,
			  ssdq_ident_strlen(ctrl->serial, sizeof(ctrl->serial)),
			  ctrl->serial,
			  ssdq_ident_strlen(ctrl->model, sizeof(ctrl->model)),
			  ctrl->model, ns->nsid);
}
static DEVICE_ATTR_RO(wwid);

static ssize_t nsid_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%u\n", ssdq_ns_from_disk_dev(d)->nsid);
}
static DEVICE_ATTR_RO(nsid);

static ssize_t eui_show(struct device *d, struct device_attribute *attr,
			char *buf)
{
	return sysfs_emit(buf, "%8ph\n", ssdq_ident_of_disk(d)->eui64);
}
static DEVICE_ATTR_RO(eui);

static ssize_t nguid_show(struct device *d, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%pU\n", ssdq_ident_of_disk(d)->nguid);
}
static DEVICE_ATTR_RO(nguid);

/* Without a UUID, the NGUID in its place: what nvme has always shown. */
static ssize_t uuid_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	struct ssdq_ns_ids *ident = ssdq_ident_of_disk(d);

	if (uuid_is_null(&ident->uuid))
		return sysfs_emit(buf, "%pU\n", ident->nguid);
	return sysfs_emit(buf, "%pU\n", &ident->uuid);
}
static DEVICE_ATTR_RO(uuid);

static struct attribute *ssdq_ident_disk_attrs[] = {
	&dev_attr_wwid.attr,
	&dev_attr_nsid.attr,
	&dev_attr_eui.attr,
	&dev_attr_nguid.attr,
	&dev_attr_uuid.attr,
	NULL,
};

/* An id the namespace does not have is no file, as on nvme's disks. */
static umode_t ssdq_ident_disk_visible(struct kobject *kobj,
				       struct attribute *a, int n)
{
	struct ssdq_ns_ids *ident = ssdq_ident_of_disk(kobj_to_dev(kobj));
	bool nguid = ssdq_ident_has(ident->nguid, sizeof(ident->nguid));

	if (a == &dev_attr_eui.attr)
		return ssdq_ident_has(ident->eui64, sizeof(ident->eui64)) ?
		       a->mode : 0;
	if (a == &dev_attr_nguid.attr)
		return nguid ? a->mode : 0;
	if (a == &dev_attr_uuid.attr)
		return nguid || !uuid_is_null(&ident->uuid) ? a->mode : 0;
	return a->mode;
}

const struct attribute_group ssdq_ident_disk_group = {
	.attrs		= ssdq_ident_disk_attrs,
	.is_visible	= ssdq_ident_disk_visible,
};

/* ----------------- /sys/bus/pci/devices/<bdf>/<id>: the disk's parent */

static struct ssdq_ident *ssdq_ident_of_pci(struct device *d)
{
	struct ssdq_dev *dev = pci_get_drvdata(to_pci_dev(d));

	return &dev->ident;
}

/* As Identify gives them, padding and all: nvme's controller shows them so. */
static ssize_t ssdq_ident_str_show(char *buf, const char *s, int len)
{
	return sysfs_emit(buf, "%.*s\n", len, s);
}

static ssize_t serial_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	struct ssdq_ident *ident = ssdq_ident_of_pci(d);

	return ssdq_ident_str_show(buf, ident->serial, sizeof(ident->serial));
}
static DEVICE_ATTR_RO(serial);

static ssize_t model_show(struct device *d, struct device_attribute *attr,
			  char *buf)
{
	struct ssdq_ident *ident = ssdq_ident_of_pci(d);

	return ssdq_ident_str_show(buf, ident->model, sizeof(ident->model));
}
static DEVICE_ATTR_RO(model);

static ssize_t firmware_rev_show(struct device *d,
				 struct device_attribute *attr, char *buf)
{
	struct ssdq_ident *ident = ssdq_ident_of_pci(d);

	return ssdq_ident_str_show(buf, ident->firmware_rev,
				   sizeof(ident->firmware_rev));
}
static DEVICE_ATTR_RO(firmware_rev);

static struct attribute *ssdq_ident_ctrl_attrs[] = {
	&dev_attr_serial.attr,
	&dev_attr_model.attr,
	&dev_attr_firmware_rev.attr,
	NULL,
};

static const struct attribute_group ssdq_ident_ctrl_group = {
	.attrs		= ssdq_ident_ctrl_attrs,
};

/*
 * Before the disk is added: udev's rules for the disk's add event read
 * these from its parent. (A driver's dev_groups come only after probe.)
 */
int ssdq_ident_add(struct ssdq_dev *dev)
{
	return device_add_group(&dev->pdev->dev, &ssdq_ident_ctrl_group);
}

/* After the disk is gone; waits for a reader in a show to leave. */
void ssdq_ident_remove(struct ssdq_dev *dev)
{
	device_remove_group(&dev->pdev->dev, &ssdq_ident_ctrl_group);
}
