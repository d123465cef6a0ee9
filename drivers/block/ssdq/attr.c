// SPDX-License-Identifier: GPL-2.0
/*
 * ssdq switches and counters: the one show and store behind every
 * technique's sysfs switch (struct ssdq_attr), the parsing the debugfs
 * fault knobs share with them, and the per-queue counter tables. A bad write
 * is refused with -EINVAL and one dmesg line naming the file and what it
 * takes, so every switch says the same thing the same way; rate-limited, so
 * a script writing in a loop cannot flood the log.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include <ssdq/ssdq.h>

static struct ssdq_attr *ssdq_attr_of(struct device_attribute *dattr)
{
	return container_of(dattr, struct ssdq_attr, dattr);
}

static void *ssdq_attr_field(struct device *d, const struct ssdq_attr *a)
{
	return (char *)ssdq_from_disk_dev(d) + a->offset;
}

int ssdq_parse_uint(struct device *d, const char *name, const char *buf,
		    unsigned int min, unsigned int max, unsigned int *val)
{
	if (kstrtouint(buf, 0, val) || *val < min || *val > max) {
		if (min == max)
			dev_err_ratelimited(d, "%s takes %u\n", name, min);
		else
			dev_err_ratelimited(d, "%s takes %u-%u\n", name, min,
					    max);
		return -EINVAL;
	}
	return 0;
}

static int ssdq_parse_bool(struct device *d, const struct ssdq_attr *a,
			   const char *buf, unsigned int *val)
{
	bool on;

	if (kstrtobool(buf, &on)) {
		dev_err_ratelimited(d, "%s takes 0 or 1\n", a->path);
		return -EINVAL;
	}
	*val = on;
	return 0;
}

/* The index of the name written, or -EINVAL listing them all. */
static int ssdq_parse_choice(struct device *d, const struct ssdq_attr *a,
			     const char *buf, unsigned int *val)
{
	int match = __sysfs_match_string(a->names, -1, buf);
	char allowed[64];
	size_t len = 0;
	unsigned int i;

	if (match >= 0) {
		*val = match;
		return 0;
	}
	/* "a or b", "a, b or c" */
	for (i = 0; a->names[i]; i++)
		len += scnprintf(allowed + len, sizeof(allowed) - len, "%s%s",
				 !i ? "" : !a->names[i + 1] ? " or " : ", ",
				 a->names[i]);
	dev_err_ratelimited(d, "%s takes %s\n", a->path, allowed);
	return -EINVAL;
}

/* A mode file shows every choice, the current one in brackets. */
static ssize_t ssdq_emit_choice(char *buf, const struct ssdq_attr *a,
				unsigned int cur)
{
	unsigned int i;
	int len = 0;

	for (i = 0; a->names[i]; i++)
		len += sysfs_emit_at(buf, len, i == cur ? "[%s] " : "%s ",
				     a->names[i]);
	buf[len - 1] = '\n';
	return len;
}

ssize_t ssdq_attr_show(struct device *d, struct device_attribute *dattr,
		       char *buf)
{
	const struct ssdq_attr *a = ssdq_attr_of(dattr);
	void *field = ssdq_attr_field(d, a);

	switch (a->kind) {
	case SSDQ_ATTR_BOOL:
		return sysfs_emit(buf, "%d\n", READ_ONCE(*(bool *)field));
	case SSDQ_ATTR_CHOICE:
		return ssdq_emit_choice(buf, a,
					READ_ONCE(*(unsigned int *)field));
	default:
		return sysfs_emit(buf, "%u\n",
				  READ_ONCE(*(unsigned int *)field));
	}
}

ssize_t ssdq_attr_store(struct device *d, struct device_attribute *dattr,
			const char *buf, size_t count)
{
	const struct ssdq_attr *a = ssdq_attr_of(dattr);
	void *field = ssdq_attr_field(d, a);
	unsigned int val;
	int ret;

	switch (a->kind) {
	case SSDQ_ATTR_BOOL:
		ret = ssdq_parse_bool(d, a, buf, &val);
		break;
	case SSDQ_ATTR_CHOICE:
		ret = ssdq_parse_choice(d, a, buf, &val);
		break;
	default:
		ret = ssdq_parse_uint(d, a->path, buf, a->min, a->max, &val);
		break;
	}
	if (ret)
		return ret;
	if (a->set)
		ret = a->set(ssdq_from_disk_dev(d), val);
	else if (a->kind == SSDQ_ATTR_BOOL)
		WRITE_ONCE(*(bool *)field, val);
	else if (!WARN_ON_ONCE(a->kind == SSDQ_ATTR_ACTION))	/* no field */
		WRITE_ONCE(*(unsigned int *)field, val);
	return ret ? ret : count;
}

/* What a per-queue counters file shows, and of which device. */
struct ssdq_queue_stats_file {
	struct ssdq_dev *dev;
	const struct ssdq_queue_stats *stats;
};

static int ssdq_queue_stats_show(struct seq_file *m, void *unused)
{
	const struct ssdq_queue_stats_file *f = m->private;
	const struct ssdq_queue_stats *s = f->stats;
	struct ssdq_dev *dev = f->dev;
	unsigned int qid, i;

	seq_printf(m, "%s\n", s->header);
	for (qid = 0; qid <= dev->nr_io_queues; qid++) {
		const u64 *c = (void *)((char *)&dev->queues[qid] + s->offset);

		seq_printf(m, "%u", qid);
		for (i = 0; i < s->nr; i++)
			seq_printf(m, " %llu", READ_ONCE(c[i]));
		seq_putc(m, '\n');
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ssdq_queue_stats);

/*
 * Counters are best effort, like the rest of debugfs: no file, no error.
 * The file goes with the disk's debugfs directory (ssdq_disk_del()),
 * before devm frees what it shows.
 */
void ssdq_debugfs_queue_stats(struct ssdq_dev *dev,
			      const struct ssdq_queue_stats *stats)
{
	struct ssdq_queue_stats_file *f;

	f = devm_kzalloc(&dev->pdev->dev, sizeof(*f), GFP_KERNEL);
	if (!f)
		return;
	f->dev = dev;
	f->stats = stats;
	debugfs_create_file(stats->name, 0400, dev->debugfs, f,
			    &ssdq_queue_stats_fops);
}
