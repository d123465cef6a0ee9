/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdq's reach across kernels: from Debian 12's 6.1 to the newest stable.
 *
 * By feature, never by version number: distributions backport (Debian's
 * 6.12.25+ already has struct rq_list and blk_mq_map_hw_queues, its 6.1
 * NVME_STATUS_DNR), and enum members cannot be tested with #ifdef. Kbuild
 * greps the target kernel's headers once per build and passes
 * -DSSDQ_HAVE_<FEATURE> for each feature it finds (the probe list is in
 * Kbuild; a build with SSDQ_COMPAT_REPORT=1 prints what was found). The driver's own
 * files are written against the newest API and call the ssdq_* wrappers
 * below where kernels differ; each wrapper's old-kernel half does what
 * the newer kernel does for it. Documentation/kernels.rst lists the
 * differences a user can see.
 */
#ifndef _SSDQ_COMPAT_H
#define _SSDQ_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/hrtimer.h>
#include <linux/nvme.h>
#include <linux/pci.h>
#ifndef SSDQ_HAVE_MAP_HW_QUEUES
#include <linux/blk-mq-pci.h>
#endif

/* ---- NVMe (<linux/nvme.h>) */

#ifndef SSDQ_HAVE_NVME_SCT_SC_MASK	/* 6.10: status type and code */
#define NVME_SCT_SC_MASK	0x07ff
#endif
#ifndef SSDQ_HAVE_NVME_STATUS_DNR	/* 6.10, or a backport */
#define NVME_STATUS_DNR		NVME_SC_DNR
#define NVME_STATUS_MORE	NVME_SC_MORE
#define NVME_STATUS_CRD		NVME_SC_CRD
#endif

/* ---- PCI */

/* BAR0, requested and mapped for the device's (managed) lifetime. */
static inline void __iomem *ssdq_pcim_iomap_bar0(struct pci_dev *pdev,
						 const char *name)
{
#ifdef SSDQ_HAVE_PCIM_IOMAP_REGION	/* 6.11 */
	return pcim_iomap_region(pdev, 0, name);
#else
	int ret = pcim_iomap_regions(pdev, BIT(0), name);

	if (ret)
		return IOMEM_ERR_PTR(ret);
	return pcim_iomap_table(pdev)[0];
#endif
}

/* ---- blk-mq */

/*
 * A request list as ->queue_rqs() gets it: struct rq_list (head and tail)
 * since 6.13 (and Debian's 6.12.25+), a bare singly linked list before.
 */
#ifdef SSDQ_HAVE_STRUCT_RQ_LIST
#define ssdq_rq_list		rq_list
#define ssdq_rq_list_empty	rq_list_empty
#define ssdq_rq_list_pop	rq_list_pop
#define ssdq_rq_list_add_tail	rq_list_add_tail
#else
struct ssdq_rq_list {
	struct request *head;
	struct request *tail;
};

static inline bool ssdq_rq_list_empty(const struct ssdq_rq_list *l)
{
	return !l->head;
}

static inline void ssdq_rq_list_add_tail(struct ssdq_rq_list *l,
					 struct request *rq)
{
	rq->rq_next = NULL;
	if (l->tail)
		l->tail->rq_next = rq;
	else
		l->head = rq;
	l->tail = rq;
}

static inline struct request *ssdq_rq_list_pop(struct ssdq_rq_list *l)
{
	struct request *rq = l->head;

	if (rq) {
		l->head = rq->rq_next;
		if (!l->head)
			l->tail = NULL;
		rq->rq_next = NULL;
	}
	return rq;
}

#endif

/* Is a completion batch empty? Its list is a struct rq_list where ->queue_rqs()'s is. */
#ifdef SSDQ_HAVE_STRUCT_RQ_LIST
#define ssdq_iob_empty(iob)	rq_list_empty(&(iob)->req_list)
#else
#define ssdq_iob_empty(iob)	rq_list_empty((iob)->req_list)
#endif

/* ->queue_rqs()'s list head, as this kernel declares it (a pointer to it). */
#ifdef SSDQ_HAVE_STRUCT_RQ_LIST
#define ssdq_plug_list_t	struct rq_list
#else
#define ssdq_plug_list_t	struct request *
#endif

/*
 * ->queue_rqs() takes the list as the kernel has it; the driver works on a
 * struct ssdq_rq_list and hands back what it left.
 */
static inline struct ssdq_rq_list ssdq_rq_list_take(ssdq_plug_list_t *arg)
{
#ifdef SSDQ_HAVE_STRUCT_RQ_LIST
	struct ssdq_rq_list l = *arg;

	*arg = (struct ssdq_rq_list){ };
	return l;
#else
	struct ssdq_rq_list l = { .head = *arg };
	struct request *rq;

	for (rq = l.head; rq; rq = rq->rq_next)
		l.tail = rq;
	*arg = NULL;
	return l;
#endif
}

static inline void ssdq_rq_list_give_back(ssdq_plug_list_t *arg,
					  struct ssdq_rq_list *l)
{
#ifdef SSDQ_HAVE_STRUCT_RQ_LIST
	*arg = *l;
#else
	*arg = l->head;
#endif
}

/*
 * A request that ->queue_rqs() submits must be found by its tag when its
 * CQE comes (blk_mq_tag_to_rq()). 6.12's blk_mq_start_request() records
 * it in tags->rqs[]; 6.1's left that to the ->queue_rq dispatch
 * (blk_mq_get_driver_tag()), which a flushed plug list skips, so its nvme
 * did it itself (nvme_prep_rq_batch()). Doing it again where the core
 * already did is harmless; and the difference is in blk-mq.c, which no
 * header probe can see.
 */
static inline void ssdq_rq_record_tag(struct request *req)
{
	req->mq_hctx->tags->rqs[req->tag] = req;
}

/* Each CPU to the queue whose vector is affine to it. */
static inline void ssdq_map_hw_queues(struct blk_mq_queue_map *map,
				      struct pci_dev *pdev, unsigned int offset)
{
#ifdef SSDQ_HAVE_MAP_HW_QUEUES		/* 6.14, or a backport */
	blk_mq_map_hw_queues(map, &pdev->dev, offset);
#else
	blk_mq_pci_map_queues(map, pdev, offset);
#endif
}

/* Merging became blk-mq's default (7.0) when the flag went. */
#ifdef SSDQ_HAVE_BLK_MQ_F_SHOULD_MERGE
#define SSDQ_TAG_SET_FLAGS	BLK_MQ_F_SHOULD_MERGE
#else
#define SSDQ_TAG_SET_FLAGS	0
#endif

static inline int ssdq_rq_map_sg(struct request *req, struct scatterlist *sgl)
{
#ifdef SSDQ_HAVE_RQ_MAP_SG_2		/* 6.15: no queue argument */
	return blk_rq_map_sg(req, sgl);
#else
	return blk_rq_map_sg(req->q, req, sgl);
#endif
}

/* Quiesce every queue of a tag set, and wait for the running ones. */
static inline void ssdq_quiesce_tagset(struct blk_mq_tag_set *set)
{
#ifdef SSDQ_HAVE_QUIESCE_TAGSET		/* 6.2 */
	blk_mq_quiesce_tagset(set);
#else
	struct request_queue *q;

	mutex_lock(&set->tag_list_lock);
	list_for_each_entry(q, &set->tag_list, tag_set_list)
		blk_mq_quiesce_queue(q);
	mutex_unlock(&set->tag_list_lock);
#endif
}

static inline void ssdq_unquiesce_tagset(struct blk_mq_tag_set *set)
{
#ifdef SSDQ_HAVE_QUIESCE_TAGSET
	blk_mq_unquiesce_tagset(set);
#else
	struct request_queue *q;

	mutex_lock(&set->tag_list_lock);
	list_for_each_entry(q, &set->tag_list, tag_set_list)
		blk_mq_unquiesce_queue(q);
	mutex_unlock(&set->tag_list_lock);
#endif
}

/*
 * The end of a freeze begun with blk_freeze_queue_start(). On newer kernels
 * the plain name also restores a memalloc_noio scope, which only
 * blk_mq_freeze_queue() opens.
 */
static inline void ssdq_unfreeze_queue(struct request_queue *q)
{
#ifdef SSDQ_HAVE_UNFREEZE_NOMEMRESTORE
	blk_mq_unfreeze_queue_nomemrestore(q);
#else
	blk_mq_unfreeze_queue(q);
#endif
}

/*
 * A freeze that one task begins and another ends: system sleep's, begun by
 * the suspend callback and ended by the resume callback, which the PM core
 * may run from different workers. Since 6.13, under lockdep, the block
 * layer tracks a freeze's owner and warns when another task ends it,
 * unless the freeze is declared ownerless.
 */
static inline void ssdq_freeze_start_unowned(struct request_queue *q)
{
#ifdef SSDQ_HAVE_FREEZE_NON_OWNER	/* 6.13 */
	blk_freeze_queue_start_non_owner(q);
#else
	blk_freeze_queue_start(q);
#endif
}

static inline void ssdq_unfreeze_unowned(struct request_queue *q)
{
#ifdef SSDQ_HAVE_FREEZE_NON_OWNER
	blk_mq_unfreeze_queue_non_owner(q);
#else
	ssdq_unfreeze_queue(q);
#endif
}

/*
 * The disk, with its limits and features. Since 6.11 both go to
 * blk_mq_alloc_disk() in struct queue_limits (features since 6.11, limits
 * since 6.9); before, they are set on the queue one by one. Old kernels
 * get ssdq's own bits for the features it uses.
 */
#ifndef SSDQ_HAVE_BLK_FEAT
#define blk_features_t		unsigned int
#define BLK_FEAT_WRITE_CACHE	BIT(0)
#define BLK_FEAT_FUA		BIT(1)
#define BLK_FEAT_ROTATIONAL	BIT(2)
#define BLK_FEAT_ADD_RANDOM	BIT(3)
#endif

/* queue/add_random: a feature since 6.11, a queue flag before. */
#ifdef SSDQ_HAVE_BLK_FEAT
#define ssdq_queue_add_random(q) ((q)->limits.features & BLK_FEAT_ADD_RANDOM)
#else
#define ssdq_queue_add_random(q) blk_queue_add_random(q)
#endif

#ifndef SSDQ_HAVE_ALLOC_DISK_LIMITS
static inline void ssdq_apply_limits(struct request_queue *q,
				     const struct queue_limits *lim,
				     blk_features_t features)
{
	blk_queue_logical_block_size(q, lim->logical_block_size);
	blk_queue_physical_block_size(q, lim->physical_block_size);
	blk_queue_io_min(q, lim->io_min);
	blk_queue_max_hw_sectors(q, lim->max_hw_sectors);
	blk_queue_max_segments(q, lim->max_segments);
	blk_queue_virt_boundary(q, lim->virt_boundary_mask);
	blk_queue_dma_alignment(q, lim->dma_alignment);
	if (lim->max_hw_discard_sectors) {
		blk_queue_max_discard_sectors(q, lim->max_hw_discard_sectors);
		blk_queue_max_discard_segments(q, lim->max_discard_segments);
		q->limits.discard_granularity = lim->discard_granularity;
	}
	blk_queue_max_write_zeroes_sectors(q, lim->max_write_zeroes_sectors);
	blk_queue_write_cache(q, features & BLK_FEAT_WRITE_CACHE,
			      features & BLK_FEAT_FUA);
	/* Before 6.11 a new queue was non-rotational only if told so. */
	if (features & BLK_FEAT_ROTATIONAL)
		blk_queue_flag_clear(QUEUE_FLAG_NONROT, q);
	else
		blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	if (features & BLK_FEAT_ADD_RANDOM)
		blk_queue_flag_set(QUEUE_FLAG_ADD_RANDOM, q);
	else
		blk_queue_flag_clear(QUEUE_FLAG_ADD_RANDOM, q);
}
#endif

static inline struct gendisk *ssdq_alloc_disk(struct blk_mq_tag_set *set,
					      struct queue_limits *lim,
					      blk_features_t features,
					      void *queuedata)
{
#ifdef SSDQ_HAVE_ALLOC_DISK_LIMITS
	lim->features |= features;
	return blk_mq_alloc_disk(set, lim, queuedata);
#else
	struct gendisk *disk = blk_mq_alloc_disk(set, queuedata);

	if (!IS_ERR(disk))
		ssdq_apply_limits(disk->queue, lim, features);
	return disk;
#endif
}

/* ---- timers and tracing */

static inline void ssdq_hrtimer_setup(struct hrtimer *timer,
				      enum hrtimer_restart (*fn)(struct hrtimer *),
				      clockid_t clock, enum hrtimer_mode mode)
{
#ifdef SSDQ_HAVE_HRTIMER_SETUP		/* 6.13 */
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

/* In TP_fast_assign: the string's source is named once since 6.10. */
#ifdef SSDQ_HAVE_ASSIGN_STR_1
#define ssdq_assign_str(dst, src)	do { (void)(src); __assign_str(dst); } while (0)
#else
#define ssdq_assign_str(dst, src)	__assign_str(dst, src)
#endif

/*
 * A block device's open mode: blk_mode_t since 6.5 (declared in blkdev.h,
 * in types.h by 7.3), fmode_t before.
 */
#ifdef SSDQ_HAVE_BLK_MODE_T
#define ssdq_blk_mode_t	blk_mode_t
#define SSDQ_OPEN_WRITE	BLK_OPEN_WRITE
#else
#define ssdq_blk_mode_t	fmode_t
#define SSDQ_OPEN_WRITE	FMODE_WRITE
#endif

/*
 * nvme lets openers without CAP_SYS_ADMIN send some passthrough commands
 * since 6.2 (nvme_cmd_allowed()); 6.1's lets none. No header says which,
 * so ssdq keys it to blk_mode_t (6.5): stricter than nvme on 6.2-6.4,
 * never looser.
 */
#ifdef SSDQ_HAVE_BLK_MODE_T
#define SSDQ_UNPRIVILEGED_PASSTHRU	1
#else
#define SSDQ_UNPRIVILEGED_PASSTHRU	0
#endif

/*
 * A disk gone for good: 6.12's blk_mark_disk_dead() marks its queue dying,
 * 6.1's only freezes it, and there a passthrough request's allocation
 * (blk_queue_enter(), which bios skip by the disk's GD_DEAD) waits for the
 * queue until del_gendisk(), which a given-up controller never reaches by
 * itself: an io_uring worker stuck there keeps its process from exiting.
 * So ssdq marks the queue dying first, as 6.12 does; no header tells.
 */
static inline void ssdq_mark_disk_dead(struct gendisk *disk)
{
	blk_queue_flag_set(QUEUE_FLAG_DYING, disk->queue);
	blk_mark_disk_dead(disk);
}

/* ---- io_uring passthrough (uring.c) */

/* Its own header since 6.6 (linux/io_uring/cmd.h), io_uring.h's before. */
#ifdef SSDQ_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

/*
 * The command in the 128-byte SQE: a pointer of its own before 6.6, read
 * through the SQE since, by type since 6.16.
 */
static inline const struct nvme_uring_cmd *
ssdq_uring_cmd_of(struct io_uring_cmd *ioucmd)
{
#if defined(SSDQ_HAVE_SQE128_CMD)
	return io_uring_sqe128_cmd(ioucmd->sqe, struct nvme_uring_cmd);
#elif defined(SSDQ_HAVE_IO_URING_CMD_H)
	return io_uring_sqe_cmd(ioucmd->sqe);
#else
	return ioucmd->cmd;
#endif
}

/* The second result (dword 0) goes to a 32-byte CQE: said since 6.18. */
static inline void ssdq_uring_cmd_done(struct io_uring_cmd *ioucmd, int ret,
				       u64 res2, unsigned int issue_flags)
{
#ifdef SSDQ_HAVE_CMD_DONE32
	io_uring_cmd_done32(ioucmd, ret, res2, issue_flags);
#else
	io_uring_cmd_done(ioucmd, ret, res2, issue_flags);
#endif
}

/*
 * A completion moved to the submitter's task: SSDQ_URING_TASK_CB(fn) makes
 * fn##_tw, a task-work callback of the kernel's kind (a struct io_tw_req
 * since 6.18) that calls fn(ioucmd, issue_flags). Lazily woken since 6.5.
 */
#ifdef SSDQ_HAVE_IO_TW_REQ
#define SSDQ_URING_TASK_CB(fn)						\
static void fn##_tw(struct io_tw_req tw_req, io_tw_token_t tw)		\
{									\
	fn(io_uring_cmd_from_tw(tw_req),				\
	   IO_URING_CMD_TASK_WORK_ISSUE_FLAGS);				\
}
#else
#define SSDQ_URING_TASK_CB(fn)						\
static void fn##_tw(struct io_uring_cmd *ioucmd, unsigned int issue_flags) \
{									\
	fn(ioucmd, issue_flags);					\
}
#endif

#ifdef SSDQ_HAVE_DO_IN_TASK_LAZY
#define ssdq_uring_cmd_in_task(ioucmd, cb) \
	io_uring_cmd_do_in_task_lazy(ioucmd, cb)
#else
#define ssdq_uring_cmd_in_task(ioucmd, cb) \
	io_uring_cmd_complete_in_task(ioucmd, cb)
#endif

/* A registered (fixed) buffer: told the issue's flags since 6.15. */
static inline int ssdq_uring_import_fixed(u64 ubuf, unsigned long len, int rw,
					  struct iov_iter *iter,
					  struct io_uring_cmd *ioucmd,
					  unsigned int issue_flags)
{
#ifdef SSDQ_HAVE_IMPORT_FIXED_5
	return io_uring_cmd_import_fixed(ubuf, len, rw, iter, ioucmd);
#else
	return io_uring_cmd_import_fixed(ubuf, len, rw, iter, ioucmd,
					 issue_flags);
#endif
}

/* A request's end_io: told the completion batch too since 6.15. */
#ifdef SSDQ_HAVE_END_IO_2
#define SSDQ_END_IO_PARAMS	struct request *req, blk_status_t err
#else
#define SSDQ_END_IO_PARAMS	struct request *req, blk_status_t err,	\
				const struct io_comp_batch *iob
#endif

/*
 * Polling for one request (blk_rq_poll(), 6.6): without it, no
 * ->uring_cmd_iopoll, and io_uring turns IOPOLL rings away (EOPNOTSUPP).
 */
#ifdef SSDQ_HAVE_BLK_RQ_POLL
#define SSDQ_URING_IOPOLL	1
#else
#define SSDQ_URING_IOPOLL	0
#endif

#endif /* _SSDQ_COMPAT_H */
