/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdq: a reference blk-mq driver for NVMe SSDs.
 *
 * Shared definitions of the driver's files:
 *   main.c  - module parameters, PCI probe/remove, module init/exit
 *   ctrl.c  - controller bring-up: registers, admin queue, admin commands,
 *             interrupt vectors, I/O queue creation and shutdown
 *   queue.c - the SQ/CQ rings: allocation, command copy, doorbells, reaping
 *   blk.c   - the blk-mq glue: tag set, command setup, PRPs, completion,
 *             the gendisk
 *   plug.c  - implicit plugging: batches, doorbells, shadow doorbells
 *   recovery.c - timeouts: lost interrupts, abort, controller reset
 *   fault.c - fault injection in the device-facing layer
 *   steer.c - completion steering to the submitting CPU
 *   irq.c   - interrupt mitigation (irq_poll, deferred re-arm), polled queues
 */
#ifndef _SSDQ_H
#define _SSDQ_H

#include <linux/blk-mq.h>
#include <linux/completion.h>
#include <linux/llist.h>
#include <linux/workqueue.h>
#include <linux/dmapool.h>
#include <linux/hrtimer.h>
#include <linux/irq_poll.h>
#include <linux/mutex.h>
#include <linux/nvme.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>

/* ssdq always runs the controller with 4 KiB memory pages (CC.MPS = 0). */
#define SSDQ_CTRL_PAGE_SHIFT	12
#define SSDQ_CTRL_PAGE_SIZE	BIT(SSDQ_CTRL_PAGE_SHIFT)

#define SSDQ_ADMIN_DEPTH	32
#define SSDQ_MAX_IO_QUEUES	128
#define SSDQ_MAX_POLL_QUEUES	128
#define SSDQ_MIN_QUEUE_DEPTH	2
#define SSDQ_MAX_QUEUE_DEPTH	1024

/*
 * Transfers are capped so that a single PRP list page always describes a
 * whole request: 1 MiB is 256 controller pages, a list page holds 512.
 */
#define SSDQ_MAX_TRANSFER	SZ_1M
#define SSDQ_MAX_SEGMENTS	(SSDQ_MAX_TRANSFER / SSDQ_CTRL_PAGE_SIZE + 1)

/* Scatterlist entries kept in each request; larger ones chain from sg_pool. */
#define SSDQ_INLINE_SGES	4

/* Load-time settings, validated once in module init (main.c). */
struct ssdq_params {
	unsigned int io_queues;		/* 0: one per possible CPU */
	unsigned int poll_queues;	/* interrupt-less, HCTX_TYPE_POLL */
	unsigned int io_queue_depth;
	unsigned int io_timeout;	/* seconds */
	unsigned int admin_timeout;	/* seconds */
	unsigned int rotational;	/* default of queue/rotational */
	unsigned int add_random;	/* default of queue/add_random */
};

extern struct ssdq_params ssdq_params;

/* plug.c's counters, per queue; see Documentation/plugging.rst. */
struct ssdq_plug_stats {
	u64 submitted;		/* commands copied into the SQ */
	u64 batches;		/* runs of a plug list, one per queue */
	u64 max_batch;		/* the largest of them */
	u64 sq_db_updates;	/* new SQ tails published */
	u64 sq_db_mmio;		/* ... of which by an MMIO write */
	u64 cq_db_updates;	/* new CQ heads published */
	u64 cq_db_mmio;		/* ... of which by an MMIO write */
};

/* recovery.c's counters; see Documentation/recovery.rst. */
struct ssdq_recovery_stats {
	atomic64_t timeouts;		/* ->timeout calls */
	atomic64_t lost_interrupts;	/* timeouts the CQ poll resolved */
	atomic64_t aborts;		/* NVMe Aborts sent */
	atomic64_t aborts_refused;	/* ... answered "not aborted" */
	atomic64_t resets;		/* sysfs, timeout and PCI resets */
	atomic64_t reset_failures;
	atomic64_t pci_resets;		/* ... of which the PCI core's (FLR) */
	atomic64_t fatal_status;	/* timeouts that found CSTS.CFS */
	atomic64_t admin_timeouts;	/* admin commands that never completed */
	atomic64_t requeued;		/* requests a reset ran again */
	atomic64_t retried;		/* ... an error status without DNR did */
	atomic64_t bad_cqes;		/* CQEs naming no request in flight */
	atomic64_t last_recovery_ms;	/* issue to recovery, last timeout */
};

/*
 * fault.c's knobs: armed counts (the next N events), or settings (delay_ms,
 * slow_enable_ms); and what they did. The order of the kinds is that of
 * the knob table in fault.c and of fault/injected.
 */
enum ssdq_fault_kind {
	SSDQ_FAULT_DROP_COMPLETION,
	SSDQ_FAULT_DROP_IRQ,
	SSDQ_FAULT_DELAY_COMPLETION,
	SSDQ_FAULT_BAD_CID,
	SSDQ_FAULT_ABORT_COMPLETION,	/* CQE says "Command Abort Requested" */
	SSDQ_FAULT_RETRY_COMPLETION,	/* CQE says "Namespace Not Ready" */
	SSDQ_FAULT_DROP_ADMIN,		/* admin CQE never handed up */
	SSDQ_FAULT_FAIL_DISABLE,	/* CC.EN = 0 does not take */
	SSDQ_FAULT_FATAL_STATUS,	/* timeout reads CSTS.CFS */
	SSDQ_FAULT_REFUSE_DBBUF,	/* Doorbell Buffer Config refused */
	SSDQ_FAULT_NR_KINDS,
};

struct ssdq_fault {
	bool armed;
	atomic_t left[SSDQ_FAULT_NR_KINDS];
	atomic64_t done[SSDQ_FAULT_NR_KINDS];
	atomic_t delay_ms;
	atomic_t slow_enable_ms;
	struct llist_head delayed;
	struct delayed_work delay_work;
};

/* irq.c's counters, per queue. */
struct ssdq_irq_stats {
	u64 interrupts;			/* handler invocations */
	u64 completions;		/* CQEs reaped by handler or irq_poll */
	u64 rounds;			/* irq_poll rounds */
	u64 budget_exhausted;		/* ... that reaped a whole budget */
	u64 polled;			/* CQEs reaped by ->poll */
	u64 deferred;			/* rounds run by the re-arm timer */
};

enum ssdq_irq_mode {
	SSDQ_IRQ_DIRECT,
	SSDQ_IRQ_POLL,
};

enum ssdq_steer_mode {
	SSDQ_STEER_OFF,
	SSDQ_STEER_IPI,
	SSDQ_STEER_BLK,
};

/* steer.c's per-CPU state: requests steered here, the IPI, counters. */
struct ssdq_steer_cpu {
	struct llist_head list;
	call_single_data_t csd;
	u64 local;			/* completed on the submitting CPU */
	u64 remote;			/* completed on another CPU */
	u64 ipis;			/* IPIs this CPU sent */
	u64 steered;			/* requests this CPU sent by IPI */
};

/* One NVMe submission/completion queue pair; qid 0 is the admin queue. */
struct ssdq_queue {
	struct ssdq_dev *dev;
	spinlock_t sq_lock;		/* sq_tail and the SQ slots */
	struct nvme_command *sq_cmds;
	struct nvme_completion *cqes;
	dma_addr_t sq_dma;
	dma_addr_t cq_dma;
	u32 __iomem *sq_db;
	u32 __iomem *cq_db;
	struct blk_mq_tags *tags;	/* I/O queues: tags of the hctx */
	__le32 *dbbuf_sq_db;		/* shadow doorbells, when configured */
	__le32 *dbbuf_sq_ei;
	__le32 *dbbuf_cq_db;
	__le32 *dbbuf_cq_ei;
	struct ssdq_plug_stats plug;
	struct ssdq_irq_stats irq;
	struct irq_poll iop;		/* irqpoll mode */
	spinlock_t irq_lock;		/* polling vs. the handler */
	spinlock_t cq_poll_lock;	/* polled queues: one reaper */
	struct hrtimer defer_timer;	/* deferred re-arm: next look */
	bool deferring;			/* ... is armed, vector masked */
	unsigned int defer_empty;	/* empty deferred rounds in a row */
	cpumask_var_t steer_pending;	/* CPUs owed an IPI by this reap */
	bool polling;			/* vector masked, irq_poll reaps */
	bool polled;			/* no interrupt: HCTX_TYPE_POLL */
	u16 qid;
	u16 depth;
	u16 sq_tail;
	u16 last_sq_tail;		/* the tail the controller was told */
	u16 cq_head;
	u16 vector;			/* MSI-X/MSI index */
	unsigned int irqnr;		/* its Linux irq number */
	u8 cq_phase;
	bool irq_requested;
	bool created;			/* exists on the controller */
};

/* Per-request driver data (the blk-mq PDU). */
struct ssdq_iod {
	struct nvme_command cmd;
	u16 nvme_status;		/* SCT/SC of the CQE, 0 on success */
	bool mapped;			/* data is DMA-mapped */
	bool aborted;			/* an Abort was sent for it */
	u8 retries;			/* times a reset requeued it */
	u8 genctr;			/* bumped per issue, in the command id */
	unsigned long start;		/* jiffies when it was issued */
	unsigned long fault_due;	/* a delayed completion's release */
	struct llist_node fault_node;
	struct llist_node steer_node;
	__le64 *prp_list;
	dma_addr_t prp_list_dma;
	dma_addr_t range_dma;
	struct sg_table sgt;
	unsigned int sg_count;		/* entries handed to dma_map_sg() */
	struct nvme_dsm_range range;	/* the discard range, DMA'd to device */
	struct scatterlist inline_sg[SSDQ_INLINE_SGES];
};

struct ssdq_dev {
	struct pci_dev *pdev;
	void __iomem *bar;
	resource_size_t bar_len;
	u32 __iomem *dbs;
	u64 cap;
	u32 ctrl_config;
	u32 db_stride;			/* in u32 units */
	int instance;
	unsigned long flags;
#define SSDQ_DEAD	0		/* controller disabled for good */
	struct mutex recovery_lock;	/* timeouts, resets: one at a time */
	struct work_struct reset_work;	/* a reset asked for through sysfs */
	int reset_result;		/* ... and how it went */
	ktime_t pci_reset_start;	/* a PCI reset (FLR) under way */
	bool pci_reset_stopped;		/* ... took the requests back */
	struct ssdq_recovery_stats recovery;
	struct ssdq_fault fault;

	/* What Identify told us. */
	u32 max_transfer;		/* bytes */
	u32 dmrsl;			/* blocks in one discard range, 0: any */
	u16 oacs;
	u16 oncs;
	u8 vwc;
	u32 nsid;
	u8 lba_shift;
	sector_t capacity;		/* in 512-byte sectors */

	/* The admin queue runs one command at a time. */
	struct mutex admin_lock;
	struct completion admin_done;
	u16 admin_cid;
	u16 admin_status;
	u32 admin_result;

	/* [0] admin, [1..] I/O with interrupts, then the polled ones */
	struct ssdq_queue *queues;
	unsigned int nr_io_queues;	/* all I/O queues */
	unsigned int nr_poll_queues;	/* of which polled */
	unsigned int io_depth;

	/* Plugging (plug.c): runtime switches and the shadow doorbell pages. */
	bool batch_doorbells;
	bool shadow_doorbells;
	__le32 *dbbuf_dbs;
	__le32 *dbbuf_eis;
	dma_addr_t dbbuf_dbs_dma;
	dma_addr_t dbbuf_eis_dma;
	size_t dbbuf_len;

	/* Interrupt mitigation (irq.c) and steering (steer.c) switches. */
	int irq_mode;
	unsigned int irq_budget;
	unsigned int irq_defer_us;
	unsigned int irq_defer_rounds;
	int steer_mode;
	struct ssdq_steer_cpu __percpu *steer;

	struct dma_pool *prp_pool;
	struct blk_mq_tag_set tag_set;
	struct gendisk *disk;
	struct dentry *debugfs;		/* /sys/kernel/debug/ssdq/ssdqN */
};

extern struct dentry *ssdq_debugfs_root;

/* main.c */
ssize_t ssdq_sysfs_emit_choice(char *buf, const char * const *names,
			       int nr, int cur);

static inline struct ssdq_iod *ssdq_iod(struct request *req)
{
	return blk_mq_rq_to_pdu(req);
}

/*
 * NVMe command id: the tag (< 4096, queues are at most 1024 deep) and, in
 * the top 4 bits, a generation bumped on every issue, so that a stale or
 * corrupt CQE naming a reused tag is recognised instead of followed.
 */
#define SSDQ_CID_TAG_BITS	12
#define SSDQ_CID_TAG_MASK	(BIT(SSDQ_CID_TAG_BITS) - 1)

static inline u16 ssdq_cid(struct request *req)
{
	return (ssdq_iod(req)->genctr & 0xf) << SSDQ_CID_TAG_BITS | req->tag;
}

/* queue.c */
int ssdq_queue_alloc(struct ssdq_dev *dev, u16 qid, u16 depth);
void ssdq_queue_free(struct ssdq_queue *q);
void ssdq_queue_reset_rings(struct ssdq_queue *q);
void ssdq_sq_copy_cmd(struct ssdq_queue *q, const struct nvme_command *cmd);
bool ssdq_cq_pending(struct ssdq_queue *q);
int ssdq_cq_reap(struct ssdq_queue *q, int budget, struct io_comp_batch *iob);
int ssdq_cq_reap_exclusive(struct ssdq_queue *q);

static inline unsigned int ssdq_nr_irq_queues(struct ssdq_dev *dev)
{
	return dev->nr_io_queues - dev->nr_poll_queues;
}

/* irq.c */
irqreturn_t ssdq_irq(int irq, void *data);
void ssdq_irq_init_queue(struct ssdq_queue *q);
void ssdq_queue_quiesce_reapers(struct ssdq_queue *q);
void ssdq_queue_resume_reapers(struct ssdq_queue *q);
void ssdq_queue_stop_irqpoll(struct ssdq_queue *q);
int ssdq_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob);
void ssdq_irq_debugfs_init(struct ssdq_dev *dev);
extern const struct attribute_group ssdq_irq_attr_group;

/* steer.c */
int ssdq_steer_init(struct ssdq_dev *dev);
void ssdq_steer_free(struct ssdq_dev *dev);
void ssdq_steer_complete(struct ssdq_queue *q, struct request *req);
void ssdq_steer_flush(struct ssdq_queue *q);
void ssdq_steer_account(struct ssdq_dev *dev, struct request *req);
void ssdq_steer_debugfs_init(struct ssdq_dev *dev);
extern const struct attribute_group ssdq_steer_attr_group;

/* ctrl.c */
int ssdq_ctrl_map(struct ssdq_dev *dev);
int ssdq_ctrl_init_admin(struct ssdq_dev *dev);
int ssdq_ctrl_identify(struct ssdq_dev *dev);
int ssdq_ctrl_setup_io_queues(struct ssdq_dev *dev, unsigned int nr_irq,
			      unsigned int nr_poll);
void ssdq_ctrl_teardown(struct ssdq_dev *dev);
void ssdq_ctrl_reset_rings(struct ssdq_dev *dev);
int ssdq_ctrl_restart(struct ssdq_dev *dev);
void ssdq_admin_complete(struct ssdq_queue *q, struct nvme_completion *cqe);
int ssdq_admin_exec(struct ssdq_dev *dev, struct nvme_command *cmd,
		    u32 *result);
int ssdq_ctrl_stop_dma(struct ssdq_dev *dev, bool shutdown);
bool ssdq_ctrl_fatal(struct ssdq_dev *dev);

/* blk.c */
int ssdq_blk_init(struct ssdq_dev *dev);
void ssdq_blk_del(struct ssdq_dev *dev);
void ssdq_blk_free(struct ssdq_dev *dev);
void ssdq_io_complete(struct ssdq_queue *q, struct nvme_completion *cqe,
		      struct io_comp_batch *iob);
void ssdq_complete_rq(struct request *req);
bool ssdq_cancel_rq(struct request *req, void *data);
blk_status_t ssdq_prep_rq(struct ssdq_queue *q, struct request *req);

/* plug.c */
void ssdq_sq_flush(struct ssdq_queue *q);
void ssdq_cq_ring_doorbell(struct ssdq_queue *q);
void ssdq_submit_cmd(struct ssdq_queue *q, const struct nvme_command *cmd,
		     bool last);
void ssdq_commit_rqs(struct blk_mq_hw_ctx *hctx);
void ssdq_queue_rqs(struct rq_list *rqlist);
int ssdq_dbbuf_setup(struct ssdq_dev *dev, unsigned int nr_queues);
int ssdq_dbbuf_config(struct ssdq_dev *dev);
void ssdq_dbbuf_init_queue(struct ssdq_queue *q);
void ssdq_dbbuf_free(struct ssdq_dev *dev);
void ssdq_dbbuf_abandon(struct ssdq_dev *dev);
void ssdq_plug_debugfs_init(struct ssdq_dev *dev);
extern const struct attribute_group ssdq_plug_attr_group;

/* recovery.c */
enum blk_eh_timer_return ssdq_timeout(struct request *req);
void ssdq_recovery_init(struct ssdq_dev *dev);
void ssdq_dev_fail(struct ssdq_dev *dev, const char *why);
void ssdq_dev_shutdown(struct ssdq_dev *dev);
void ssdq_pci_reset_prepare(struct ssdq_dev *dev);
void ssdq_pci_reset_done(struct ssdq_dev *dev);
bool ssdq_retry_rq(struct ssdq_dev *dev, struct request *req, u16 status);
void ssdq_recovery_debugfs_init(struct ssdq_dev *dev);
extern const struct attribute_group ssdq_recovery_attr_group;

/* fault.c */
void ssdq_fault_init(struct ssdq_dev *dev);
void ssdq_fault_debugfs_init(struct ssdq_dev *dev);
bool ssdq_fault_take(struct ssdq_dev *dev, enum ssdq_fault_kind kind);
bool ssdq_fault_drop_irq(struct ssdq_queue *q);
bool ssdq_fault_delay(struct ssdq_dev *dev, struct request *req);
u16 ssdq_fault_cqe_cid(struct ssdq_queue *q, u16 cid);
u16 ssdq_fault_cqe_status(struct ssdq_dev *dev, u16 status);
unsigned long ssdq_fault_slow_enable(struct ssdq_dev *dev);
void ssdq_fault_flush(struct ssdq_dev *dev);

static inline bool ssdq_dead(struct ssdq_dev *dev)
{
	return test_bit(SSDQ_DEAD, &dev->flags);
}

#endif /* _SSDQ_H */
