/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdq: a reference blk-mq driver for NVMe SSDs.
 *
 * Shared definitions of the driver's files, listed from the lowest layer up.
 * A file calls only into files above it in this list, never into one below
 * (scripts/layers.sh checks the object files):
 *   trace.c    - the trace events (trace.h), which every file may emit
 *   status.c   - NVMe statuses and errnos as dmesg prints them
 *   attr.c     - parsing and showing the sysfs/debugfs switches
 *   ident.c    - identity: serial, model, wwid and the namespace's ids
 *   params.c   - module parameters and their ranges
 *   fault.c    - fault injection: what the driver believes the device did
 *   queue.c    - the SQ/CQ rings and every doorbell write
 *   poll.c     - polled queues: no interrupt, ->poll
 *   irq.c      - interrupt vectors, their handler, irqpoll mitigation, and
 *                holding a queue's reapers off
 *   steer.c    - completion steering: on which CPU a request ends
 *   plug.c     - implicit plugging: when to ring the SQ doorbell
 *   ctrl.c     - the controller: registers, admin queue and commands,
 *                shadow doorbell buffer, creating and deleting I/O queues
 *   recovery.c - timeouts, resets, retries: taking requests back
 *   io.c       - the I/O path: a request from ->queue_rq to its end
 *   ioctl.c    - nvme's ioctls: a namespace's and the controller's, the
 *                passthrough rule and request
 *   uring.c    - io_uring passthrough: nvme's uring commands
 *   disk.c     - blk-mq glue: the ops, tag set, queue maps, limits, and a
 *                namespace's gendisk
 *   chrdev.c   - char devices: the controller's, each namespace's generic
 *   ns.c       - namespaces: the active list, one disk each, rescans
 *   main.c     - the PCI driver and module init/exit
 */
#ifndef _SSDQ_H
#define _SSDQ_H

#include <linux/blk-mq.h>
#include <linux/cdev.h>
#include <linux/completion.h>
#include <linux/llist.h>
#include <linux/workqueue.h>
#include <linux/dmapool.h>
#include <linux/hrtimer.h>
#include <linux/irq_poll.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/nvme.h>
#include <linux/nvme_ioctl.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/uuid.h>

#include <ssdq/compat.h>

struct io_uring_cmd;
struct seq_file;

/* ssdq always runs the controller with 4 KiB memory pages (CC.MPS = 0). */
#define SSDQ_CTRL_PAGE_SHIFT	12
#define SSDQ_CTRL_PAGE_SIZE	BIT(SSDQ_CTRL_PAGE_SHIFT)

#define SSDQ_ADMIN_DEPTH	32
/*
 * Admin commands nobody waits for have a slot each, and the command id
 * SSDQ_NOWAIT_CID + slot; ssdq_admin_exec()'s ids stay below.
 */
#define SSDQ_NOWAIT_CID		0x8000
enum ssdq_admin_slot {
	SSDQ_SLOT_ABORT,		/* recovery.c: one Abort at a time */
	SSDQ_SLOT_AEN,			/* aen.c: the Asynchronous Event Request */
	SSDQ_NR_ADMIN_SLOTS
};

#define SSDQ_MAX_IO_QUEUES	128
#define SSDQ_MAX_POLL_QUEUES	128
#define SSDQ_MAX_IDS		8	/* entries of the ids= parameter */
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

/* Load-time settings, validated once in module init (params.c). */
struct ssdq_params {
	unsigned int io_queues;		/* 0: one per possible CPU */
	unsigned int poll_queues;	/* interrupt-less, HCTX_TYPE_POLL */
	unsigned int io_queue_depth;
	unsigned int io_timeout;	/* seconds */
	unsigned int admin_timeout;	/* seconds */
	unsigned int rotational;	/* default of queue/rotational */
	unsigned int add_random;	/* default of queue/add_random */
	unsigned int fault_bar0_doorbells; /* fault.c: 0, or BAR0's pretend room */
	unsigned int fault_admin_status; /* fault.c: 0, or N: a probe's Nth fails */
	/* ids=: PCI IDs ssdq may take without a driver_override (main.c) */
	struct pci_device_id ids[SSDQ_MAX_IDS];
	unsigned int nr_ids;
};

extern struct ssdq_params ssdq_params;

/*
 * Doorbell counters, per queue: kept by the ring (queue.c) and by batching
 * (plug.c), shown by plug.c; see Documentation/plugging.rst.
 */
struct ssdq_plug_stats {
	u64 submitted;		/* commands copied into the SQ */
	u64 batches;		/* runs of a plug list, one per queue */
	u64 max_batch;		/* the largest of them */
	u64 sq_db_updates;	/* new SQ tails published */
	u64 sq_db_mmio;		/* ... of which by an MMIO write */
	u64 cq_db_updates;	/* new CQ heads published */
	u64 cq_db_mmio;		/* ... of which by an MMIO write */
	u64 early_rings;	/* tails published at a batch's first command */
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
	atomic64_t pci_errors;		/* errors AER/DPC reported (error_detected) */
	atomic64_t fatal_status;	/* timeouts that found CSTS.CFS */
	atomic64_t admin_timeouts;	/* admin commands that never completed */
	atomic64_t requeued;		/* requests a reset ran again */
	atomic64_t retried;		/* ... an error status without DNR did */
	atomic64_t bad_cqes;		/* CQEs naming no request in flight */
	atomic64_t suspends;		/* system sleeps (suspend, freeze) */
	atomic64_t last_recovery_ms;	/* issue to recovery, last timeout */
};

/*
 * aen.c: the Asynchronous Event Request kept out, and what came of it. The
 * counters are read by debugfs; the rest is under recovery_lock, but for
 * the answer, which the admin reaper stores before it sets answered.
 */
struct ssdq_aen {
	struct work_struct work;	/* handles an answer, sends the next */
	bool answered;			/* an answer waits for the work */
	bool refused;			/* the controller failed the request */
	bool stopped;			/* removal: none sent any more */
	u16 status;			/* the answer */
	u32 result;
	u32 last;			/* the last event's dword 0 */
	u8 critical_warning;		/* SMART log, at the last such event */
	atomic64_t sent;
	atomic64_t smart;
	atomic64_t notices;
	atomic64_t errors;
	atomic64_t other;
	atomic64_t log_failures;	/* the event's log page not read */
	atomic64_t failures;		/* requests the controller failed */
};

/* ident.c: who the controller says it is (Identify Controller). */
struct ssdq_ident {
	u16 vid;
	char serial[20];		/* space-padded, as Identify has them */
	char model[40];
	char firmware_rev[8];
};

/* ... and a namespace's ids (Identify Namespace, its descriptor list). */
struct ssdq_ns_ids {
	u8 eui64[8];			/* all zero: none reported */
	u8 nguid[16];
	uuid_t uuid;
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
	SSDQ_FAULT_MEDIA_ERROR,		/* CQE says read error / write fault */
	SSDQ_FAULT_PROBE_ADMIN,		/* a probe's admin command fails (param) */
	SSDQ_FAULT_NR_KINDS,
};

struct ssdq_fault {
	bool armed;
	atomic_t left[SSDQ_FAULT_NR_KINDS];
	atomic64_t done[SSDQ_FAULT_NR_KINDS];
	atomic_t delay_ms;
	atomic_t slow_enable_ms;
	atomic_t gone;
	unsigned int fail_nth;		/* a writer's, handed to its work */
	unsigned int probe_admin_cmds;	/* admin commands of the probe so far */
	struct llist_head delayed;
	struct delayed_work delay_work;
};

/* irq.c's counters, per queue (poll.c counts "polled"). */
struct ssdq_irq_stats {
	u64 interrupts;			/* handler invocations */
	u64 completions;		/* CQEs reaped by handler or irq_poll */
	u64 rounds;			/* irq_poll rounds */
	u64 budget_exhausted;		/* ... that reaped a whole budget */
	u64 polled;			/* CQEs reaped by ->poll */
	u64 deferred;			/* rounds run by the re-arm timer */
	u64 level;			/* adaptive: deferral level now */
	u64 steps;			/* adaptive: level changes */
};

enum ssdq_irq_mode {
	SSDQ_IRQ_DIRECT,
	SSDQ_IRQ_IRQPOLL,
	SSDQ_IRQ_ADAPTIVE,
};

/* irq.c's adaptive moderation: the window it measures, the last one's. */
struct ssdq_moder {
	u64 start_ns;			/* this window began */
	u64 start_events;		/* interrupts + deferred rounds then */
	u64 start_completions;
	u32 prev_cps;			/* last window: completions per s */
	u32 prev_cpe;			/* ... per 100 events */
	int step;			/* +1 more deferral, -1 less */
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

/* Who is reaping a queue right now; the trace events say so. */
enum ssdq_reaper {
	SSDQ_REAPER_IRQ,		/* the interrupt handler, direct mode */
	SSDQ_REAPER_IRQPOLL,		/* an irq_poll round the handler began */
	SSDQ_REAPER_TIMER,		/* ... the deferral timer began */
	SSDQ_REAPER_POLL,		/* ->poll */
	SSDQ_REAPER_RECOVERY,		/* a timeout, a reset, an admin wait */
};

/* The steps of timeout handling (recovery.c), as traced. */
enum ssdq_timeout_step {
	SSDQ_STEP_DEAD,			/* the controller is dead: fail */
	SSDQ_STEP_FATAL,		/* CSTS.CFS: reset at once */
	SSDQ_STEP_LOST_IRQ,		/* the CQE was there */
	SSDQ_STEP_ABORT,		/* send an Abort (once) */
	SSDQ_STEP_RESET,		/* reset the controller */
};

struct ssdq_queue;
struct ssdq_dev;

/* An admin answer nobody waited for; true: keep the slot (ctrl.c). */
typedef bool (*ssdq_admin_done_fn)(struct ssdq_dev *dev,
				   struct nvme_completion *cqe);

/*
 * A queue's reaper: consume up to budget CQEs, hand each to whoever owns
 * the queue's commands (the admin queue's in ctrl.c, the I/O path's in
 * io.c), publish the new CQ head. Interrupt handlers and pollers reap
 * through it without knowing what a CQE means.
 */
typedef int (*ssdq_reap_fn)(struct ssdq_queue *q, int budget,
			    struct io_comp_batch *iob);

/* One NVMe submission/completion queue pair; qid 0 is the admin queue. */
struct ssdq_queue {
	struct ssdq_dev *dev;
	ssdq_reap_fn reap;
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
	spinlock_t irq_lock;		/* irq_poll rounds vs. the handler */
	struct mutex quiesce_lock;	/* quiesced, and its transitions */
	unsigned int quiesced;		/* nested ssdq_irq_quiesce() calls */
	bool irq_stopped;		/* quiesced: the handler leaves the CQ */
	spinlock_t cq_poll_lock;	/* poll queues: one reaper */
	struct hrtimer defer_timer;	/* deferred re-arm: next look */
	bool deferring;			/* ... is armed, vector masked */
	unsigned int defer_empty;	/* empty deferred rounds in a row */
	struct ssdq_moder moder;	/* adaptive mode */
	u64 reaped;			/* CQEs consumed; see ssdq_queue_busy() */
	cpumask_var_t steer_pending;	/* CPUs owed an IPI by this reap */
	bool in_irqpoll;		/* vector masked, irq_poll reaps */
	bool cpus_offline;		/* the vector's CPUs are: reap directly */
	u8 reaper;			/* enum ssdq_reaper, for tracing */
	bool poll_queue;		/* no interrupt: HCTX_TYPE_POLL */
	u16 qid;
	u16 depth;
	u16 sq_tail;
	u16 last_sq_tail;		/* the tail the controller was told */
	u16 sq_head;			/* ... and its head, by the last CQE */
	bool rang_early;		/* ring_idle rang in the batch going in */
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
	u32 result;			/* passthrough: the CQE's dword 0 */
	bool mapped;			/* data is DMA-mapped */
	bool aborted;			/* an Abort was sent for it */
	bool escalated;			/* its timeout asked for a reset */
	bool cancelled;			/* taken back from the controller */
	u8 retries;			/* times a reset requeued it */
	u8 genctr;			/* bumped per issue, in the command id */
	unsigned long start;		/* jiffies when it was issued */
	unsigned long fault_due;	/* a delayed completion's release */
	struct llist_node fault_node;
	struct llist_node steer_node;
	__le64 *prp_list;
	dma_addr_t prp_list_dma;
	struct ssdq_pt_meta *meta;	/* passthrough's metadata (ioctl.c) */
	dma_addr_t range_dma;
	struct sg_table sgt;
	unsigned int sg_count;		/* entries handed to dma_map_sg() */
	/* One segment mapped alone (dma_map_bvec), no scatterlist: */
	dma_addr_t first_dma;
	unsigned int first_len;		/* 0: the scatterlist was used */
	struct nvme_dsm_range range;	/* the discard range, DMA'd to device */
	struct scatterlist inline_sg[SSDQ_INLINE_SGES];
};

struct ssdq_dev {
	/*
	 * The probe's, and one per namespace whose disk was added: an opener
	 * of a disk may call its ioctls after removal (disk.c).
	 */
	struct kref ref;
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
#define SSDQ_REMOVED	1		/* being removed: no reset any more */
#define SSDQ_ABORT_REFUSED 2		/* the last Abort: "not aborted", failed */
	struct mutex recovery_lock;	/* timeouts, resets: one at a time */
	struct work_struct reset_work;	/* a reset asked for through sysfs */
	const char *reset_why;		/* ... by whom: sysfs, ioctl */
	int reset_result;		/* ... and how it went */
	struct work_struct escalate_work; /* a reset for a timeout */
	bool escalation_pending;	/* ... asked for, not yet done */
	u16 abort_qid;			/* the last Abort sent: its command */
	u16 abort_cid;
	ktime_t pci_reset_start;	/* a PCI reset (FLR) under way */
	bool pci_reset_stopped;		/* ... took the requests back */
	struct work_struct pci_reset_work; /* ... restarts after it */
	ktime_t pci_error_start;	/* a frozen link's recovery under way */
	bool pci_error_stopped;		/* ... took the requests back */
	ktime_t pm_start;		/* a system sleep under way */
	bool pm_stopped;		/* ... took the requests back */
	struct ssdq_recovery_stats recovery;
	struct ssdq_fault fault;
	struct ssdq_aen aen;

	/* What Identify told us. */
	struct ssdq_ident ident;
	u32 max_transfer;		/* bytes */
	u32 dmrsl;			/* blocks in one discard range, 0: any */
	u32 max_zeroes_sectors;		/* WZSL, in sectors, 0: no limit */
	u16 oacs;
	u16 oncs;
	u32 oaes;			/* notices the controller can send */
	u8 vwc;
	u32 nn;				/* Number of Namespaces: the top nsid */

	/*
	 * The admin queue runs one command at a time, and beside it one in
	 * each slot that nobody waits for, whose CQE goes to the slot's
	 * nowait_done (NULL: none out).
	 */
	struct mutex admin_lock;
	struct completion admin_done;
	u16 admin_cid;
	u16 admin_status;
	u32 admin_result;
	ssdq_admin_done_fn nowait_done[SSDQ_NR_ADMIN_SLOTS];

	/* [0] admin, [1..] I/O with interrupts, then the polled ones */
	struct ssdq_queue *queues;
	unsigned int nr_io_queues;	/* all I/O queues */
	unsigned int nr_poll_queues;	/* of which polled */
	unsigned int io_depth;

	/*
	 * Plugging (plug.c): runtime switches; the shadow doorbell pages
	 * (ctrl.c) that the second one uses.
	 */
	bool batch_doorbells;
	bool ring_idle;
	bool shadow_doorbells;
	__le32 *dbbuf_dbs;
	__le32 *dbbuf_eis;
	dma_addr_t dbbuf_dbs_dma;
	dma_addr_t dbbuf_eis_dma;
	size_t dbbuf_len;

	/* Interrupt mitigation (irq.c) and steering (steer.c) switches. */
	unsigned int irq_mode;
	unsigned int irq_budget;
	unsigned int irq_defer_us;
	unsigned int irq_defer_rounds;
	unsigned int steer_mode;
	struct ssdq_steer_cpu __percpu *steer;

	struct dma_pool *prp_pool;
	struct blk_mq_tag_set tag_set;	/* one for every namespace's disk */
	struct dentry *debugfs;		/* /sys/kernel/debug/ssdq/ssdqN */

	/*
	 * Namespaces (ns.c), by nsid. The list changes only in a scan (the
	 * probe's, then scan_work's), under ns_lock, which recovery takes
	 * inside recovery_lock to reach every disk's queue.
	 */
	struct mutex ns_lock;
	struct list_head namespaces;
	struct work_struct scan_work;	/* a rescan: event or sysfs */
	u32 primary_nsid;		/* the one named ssdqN, 0: none yet */
	bool probed;			/* the probe's scan is done */
	atomic64_t scans;
	atomic64_t scan_failures;
	atomic64_t ns_added;
	atomic64_t ns_removed;

	/* ioctl.c: admin commands from user space, until removal stops them. */
	struct rw_semaphore passthru_rwsem;
	bool passthru_stopped;
	u8 lpa;				/* Identify's Log Page Attributes */
	u32 io_effects[256];		/* I/O opcodes' effects, for the rule */
	struct device ctrl_device;	/* chrdev.c: /dev/ssdqcN */
	struct cdev ctrl_cdev;
	struct hlist_node cpuhp_node;	/* irq.c: CPUs going offline */
	bool watching_cpus;
};

/*
 * One active namespace and its disk, /dev/ssdqN for the controller's first
 * and /dev/ssdqNnM for namespace M otherwise (ns.c). The disk's queue and
 * private_data point here; blk-mq's tag set and the queues are the
 * controller's.
 */
struct ssdq_ns {
	struct ssdq_dev *dev;
	struct list_head entry;		/* in dev->namespaces */
	struct gendisk *disk;
	u32 nsid;
	u8 lba_shift;
	u16 ms;				/* metadata bytes per block ... */
	bool ext;			/* ... in the block (else apart) */
	sector_t capacity;		/* in 512-byte sectors */
	struct ssdq_ns_ids ids;
	u64 scan_gen;			/* the last scan that found it */
	bool added;			/* its disk was: freed by ->free_disk */
	bool cdev_added;		/* chrdev.c: /dev/ssdqgNnM ... */
	struct device cdev_device;	/* ... holding the disk while open */
	struct cdev cdev;
};

/* The bytes one logical block moves in a command's data buffer ... */
static inline u32 ssdq_ns_lba_bytes(const struct ssdq_ns *ns)
{
	return (1U << ns->lba_shift) + (ns->ext ? ns->ms : 0);
}

/* ... and in its metadata buffer (MPTR): 0 where none is kept apart. */
static inline u16 ssdq_ns_meta_apart(const struct ssdq_ns *ns)
{
	return ns->ext ? 0 : ns->ms;
}

/*
 * No block I/O, only passthrough: the block layer's pages hold whole
 * blocks, and no metadata (ns.c).
 */
static inline bool ssdq_ns_blockless(const struct ssdq_ns *ns)
{
	return ns->ms || ns->lba_shift > PAGE_SHIFT;
}

#define ssdq_for_each_ns(dev, ns) \
	list_for_each_entry(ns, &(dev)->namespaces, entry)

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

static inline bool ssdq_dead(struct ssdq_dev *dev)
{
	return test_bit(SSDQ_DEAD, &dev->flags);
}

static inline unsigned int ssdq_nr_irq_queues(struct ssdq_dev *dev)
{
	return dev->nr_io_queues - dev->nr_poll_queues;
}

/* The namespace behind /sys/block/ssdqN..., and its controller. */
static inline struct ssdq_ns *ssdq_ns_from_disk_dev(struct device *d)
{
	return dev_to_disk(d)->private_data;
}

/* Each namespace's disk shows the controller's switches. */
static inline struct ssdq_dev *ssdq_from_disk_dev(struct device *d)
{
	return ssdq_ns_from_disk_dev(d)->dev;
}

/* A request's controller, from its disk's queue. */
static inline struct ssdq_dev *ssdq_rq_dev(struct request *req)
{
	return ((struct ssdq_ns *)req->q->queuedata)->dev;
}

/* status.c: a message's room for one status or errno, on the caller's stack */
struct ssdq_msg {
	char s[80];
};

const char *ssdq_status_name(u16 status);
const char *ssdq_status_str(struct ssdq_msg *m, u16 status);
const char *ssdq_result_str(struct ssdq_msg *m, int ret);

/*
 * attr.c: a technique's switch, /sys/block/ssdqN/<group>/<name>: a field of
 * struct ssdq_dev (bool for SSDQ_ATTR_BOOL, unsigned int otherwise) that
 * the generic show and store read and write. A set hook, if any, replaces
 * the plain store of a valid value; it may still refuse it.
 */
enum ssdq_attr_kind {
	SSDQ_ATTR_BOOL,			/* 0 or 1 */
	SSDQ_ATTR_UINT,			/* min-max */
	SSDQ_ATTR_CHOICE,		/* one of names[] */
	SSDQ_ATTR_ACTION,		/* write-only: 1 runs set */
};

struct ssdq_attr {
	struct device_attribute dattr;
	const char *path;		/* "<group>/<name>", for dmesg */
	enum ssdq_attr_kind kind;
	size_t offset;			/* of the field in struct ssdq_dev */
	unsigned int min, max;		/* SSDQ_ATTR_UINT */
	const char * const *names;	/* SSDQ_ATTR_CHOICE */
	int (*set)(struct ssdq_dev *dev, unsigned int val);
};

ssize_t ssdq_attr_show(struct device *d, struct device_attribute *attr,
		       char *buf);
ssize_t ssdq_attr_store(struct device *d, struct device_attribute *attr,
			const char *buf, size_t count);

#define __SSDQ_ATTR(_name, _mode, _show, _group, _kind, _offset, _min,	\
		    _max, _names, _set)					\
	{								\
		.dattr	= __ATTR(_name, _mode, _show, ssdq_attr_store),	\
		.path	= _group "/" #_name,				\
		.kind	= _kind,					\
		.offset	= _offset,					\
		.min	= _min,						\
		.max	= _max,						\
		.names	= _names,					\
		.set	= _set,						\
	}
#define SSDQ_ATTR_BOOL(_name, _group, _field, _set)			\
	__SSDQ_ATTR(_name, 0644, ssdq_attr_show, _group, SSDQ_ATTR_BOOL,	\
		    offsetof(struct ssdq_dev, _field), 0, 1, NULL, _set)
#define SSDQ_ATTR_UINT(_name, _group, _field, _min, _max, _set)		\
	__SSDQ_ATTR(_name, 0644, ssdq_attr_show, _group, SSDQ_ATTR_UINT,	\
		    offsetof(struct ssdq_dev, _field), _min, _max, NULL,	\
		    _set)
/* _names: NULL-terminated, indexed by the field's values. */
#define SSDQ_ATTR_CHOICE(_name, _group, _field, _names)			\
	__SSDQ_ATTR(_name, 0644, ssdq_attr_show, _group,		\
		    SSDQ_ATTR_CHOICE, offsetof(struct ssdq_dev, _field), 0,	\
		    0, _names, NULL)
/* Write-only, no field: an action, done by _set when 1 is written. */
#define SSDQ_ATTR_ACTION(_name, _group, _set)				\
	__SSDQ_ATTR(_name, 0200, NULL, _group, SSDQ_ATTR_ACTION, 0, 1, 1, \
		    NULL, _set)

/* A technique's directory of switches, /sys/block/ssdqN/<_name>/. */
#define SSDQ_ATTR_GROUP(_var, _name, ...)				\
	static struct attribute *_var##_attrs[] = { __VA_ARGS__, NULL };	\
	const struct attribute_group _var = {				\
		.name	= _name,					\
		.attrs	= _var##_attrs,					\
	}

/*
 * A technique's per-queue counters, /sys/kernel/debug/ssdq/ssdqN/<name>: a
 * struct of u64s in struct ssdq_queue, shown one line per queue.
 */
struct ssdq_queue_stats {
	const char *name;
	const char *header;		/* the first line: the columns */
	size_t offset;			/* of the struct in ssdq_queue */
	unsigned int nr;		/* u64s in it */
};

#define SSDQ_QUEUE_STATS(_name, _field, _type, _header)			\
	{								\
		.name	= _name,					\
		.header	= _header,					\
		.offset	= offsetof(struct ssdq_queue, _field),		\
		.nr	= sizeof(_type) / sizeof(u64),			\
	}

int ssdq_parse_uint(struct device *d, const char *name, const char *buf,
		    unsigned int min, unsigned int max, unsigned int *val);
void ssdq_debugfs_queue_stats(struct ssdq_dev *dev,
			      const struct ssdq_queue_stats *stats);

/* ident.c */
void ssdq_ident_ctrl(struct ssdq_dev *dev, const struct nvme_id_ctrl *id);
void ssdq_ident_ns_descs(struct ssdq_ns *ns, const void *buf);
void ssdq_ident_ns(struct ssdq_ns *ns, const struct nvme_id_ns *id);
int ssdq_ident_add(struct ssdq_dev *dev);
void ssdq_ident_remove(struct ssdq_dev *dev);
extern const struct attribute_group ssdq_ident_disk_group;

/* params.c */
int __init ssdq_params_check(void);

/* fault.c */

/* Is any fault armed? Tested inline on the hot path, before any call. */
static inline bool ssdq_fault_armed(struct ssdq_dev *dev)
{
	return unlikely(READ_ONCE(dev->fault.armed));
}

resource_size_t ssdq_fault_bar_len(struct ssdq_dev *dev, resource_size_t len);
void ssdq_fault_init(struct ssdq_dev *dev);
void ssdq_fault_debugfs_init(struct ssdq_dev *dev);
bool ssdq_fault_take(struct ssdq_dev *dev, enum ssdq_fault_kind kind);
bool ssdq_fault_drop_irq(struct ssdq_queue *q);
bool ssdq_fault_delay(struct ssdq_dev *dev, struct request *req);
u16 ssdq_fault_cqe_cid(struct ssdq_queue *q, u16 cid);
u16 ssdq_fault_cqe_status(struct ssdq_dev *dev, struct request *req,
			  u16 status);
u16 ssdq_fault_admin_refused(struct ssdq_dev *dev);
unsigned long ssdq_fault_slow_enable(struct ssdq_dev *dev);
bool ssdq_fault_gone(struct ssdq_dev *dev);
void ssdq_fault_release_delayed(struct ssdq_dev *dev);
void ssdq_fault_nth_swap(struct ssdq_dev *dev);

/* queue.c */
int ssdq_queue_alloc(struct ssdq_dev *dev, u16 qid, u16 depth,
		     ssdq_reap_fn reap);
void ssdq_queue_free(struct ssdq_queue *q);
void ssdq_queue_reset_rings(struct ssdq_queue *q);
void ssdq_queue_set_dbbuf(struct ssdq_queue *q, __le32 *dbs, __le32 *eis);
void ssdq_sq_ring_doorbell(struct ssdq_queue *q);
void ssdq_submit_cmd(struct ssdq_queue *q, const struct nvme_command *cmd);
void ssdq_cq_ring_doorbell(struct ssdq_queue *q);

/*
 * Copy a command into the SQ. Caller holds q->sq_lock. Inline: every I/O
 * runs it, and it is a 64-byte copy and an index.
 */
static __always_inline void ssdq_sq_copy_cmd(struct ssdq_queue *q,
					     const struct nvme_command *cmd)
{
	memcpy(&q->sq_cmds[q->sq_tail], cmd, sizeof(*cmd));
	if (++q->sq_tail == q->depth)
		q->sq_tail = 0;
	/* Read without the lock by adaptive moderation (irq.c). */
	WRITE_ONCE(q->plug.submitted, q->plug.submitted + 1);
}

static inline bool ssdq_cq_pending(struct ssdq_queue *q)
{
	struct nvme_completion *cqe = &q->cqes[q->cq_head];

	return (le16_to_cpu(READ_ONCE(cqe->status)) & 1) == q->cq_phase;
}

static inline void ssdq_cq_advance(struct ssdq_queue *q)
{
	if (++q->cq_head == q->depth) {
		q->cq_head = 0;
		q->cq_phase ^= 1;
	}
}

/*
 * The ring's half of a reaper: hand each new CQE, up to budget, to @handle
 * and tell the controller once, at the end, how far we got. Inlined into
 * each kind of reaper, so @handle is a direct call. Callers make sure only
 * one context reaps a queue at a time (irq.c, poll.c).
 */
static __always_inline int
ssdq_cq_reap(struct ssdq_queue *q, int budget,
	     void (*handle)(struct ssdq_queue *q, struct nvme_completion *cqe,
			    struct io_comp_batch *iob),
	     struct io_comp_batch *iob)
{
	int found = 0;

	while (found < budget && ssdq_cq_pending(q)) {
		/* The phase bit was seen; read the rest of the entry after it. */
		dma_rmb();
		handle(q, &q->cqes[q->cq_head], iob);
		ssdq_cq_advance(q);
		found++;
	}
	if (found) {
		ssdq_cq_ring_doorbell(q);
		q->reaped += found;
	}
	return found;
}

/* Reap a queue with the reaper of its kind (admin or I/O). */
static inline int ssdq_queue_reap(struct ssdq_queue *q, int budget,
				  struct io_comp_batch *iob)
{
	return q->reap(q, budget, iob);
}

/* poll.c */
unsigned int ssdq_poll_queues_wanted(void);
void ssdq_poll_map_queues(struct blk_mq_tag_set *set);
int ssdq_poll(struct blk_mq_hw_ctx *hctx, struct io_comp_batch *iob);
int ssdq_poll_reap_alone(struct ssdq_queue *q);

/* irq.c */
void ssdq_irq_init(struct ssdq_dev *dev);
int __init ssdq_irq_hotplug_init(void);
void ssdq_irq_hotplug_exit(void);
int ssdq_irq_watch_cpus(struct ssdq_dev *dev);
void ssdq_irq_unwatch_cpus(struct ssdq_dev *dev);
int ssdq_irq_request(struct ssdq_queue *q);
void ssdq_irq_free(struct ssdq_queue *q);
void ssdq_irq_quiesce(struct ssdq_queue *q);
void ssdq_irq_unquiesce(struct ssdq_queue *q);
int ssdq_queue_reap_alone(struct ssdq_queue *q);
extern const struct ssdq_queue_stats ssdq_irq_stats;
extern const struct attribute_group ssdq_irq_attr_group;

/* steer.c */
int ssdq_steer_init(struct ssdq_dev *dev);
void ssdq_steer_free(struct ssdq_dev *dev);
int ssdq_steer_init_queue(struct ssdq_queue *q);
void ssdq_steer_free_queue(struct ssdq_queue *q);
bool ssdq_steer_elsewhere(struct ssdq_queue *q, struct request *req,
			  unsigned int mode);
void ssdq_steer_send_ipis(struct ssdq_queue *q);

/*
 * Does a completed request leave this CPU? Asked by a queue's reaper once
 * per CQE, with the request already marked complete: false (complete it
 * here) when steering is off or the request is on its submitting CPU,
 * otherwise steer.c decides.
 */
static inline bool ssdq_steer_away(struct ssdq_queue *q, struct request *req)
{
	unsigned int mode = READ_ONCE(q->dev->steer_mode);

	if (mode == SSDQ_STEER_OFF ||
	    (mode == SSDQ_STEER_IPI &&
	     blk_mq_rq_cpu(req) == raw_smp_processor_id()))
		return false;
	return ssdq_steer_elsewhere(q, req, mode);
}

/* Where did completions end up? Counted where every request ends. */
static inline void ssdq_steer_account(struct ssdq_dev *dev,
				      struct request *req)
{
	if (blk_mq_rq_cpu(req) == raw_smp_processor_id())
		this_cpu_inc(dev->steer->local);
	else
		this_cpu_inc(dev->steer->remote);
}

void ssdq_steer_debugfs_init(struct ssdq_dev *dev);
extern const struct attribute_group ssdq_steer_attr_group;

/* plug.c */
void ssdq_plug_init(struct ssdq_dev *dev);
bool ssdq_plug_ring_now(struct ssdq_queue *q, bool first, bool last);
void ssdq_plug_account_batch(struct ssdq_queue *q, unsigned int n);
extern const struct ssdq_queue_stats ssdq_plug_stats;
extern const struct attribute_group ssdq_plug_attr_group;

/* ctrl.c */
int ssdq_ctrl_map(struct ssdq_dev *dev);
int ssdq_ctrl_init_admin(struct ssdq_dev *dev);
int ssdq_ctrl_identify(struct ssdq_dev *dev);
int ssdq_ctrl_setup_io_queues(struct ssdq_dev *dev, unsigned int nr_irq,
			      unsigned int nr_poll, ssdq_reap_fn io_reap);
void ssdq_ctrl_teardown(struct ssdq_dev *dev);
void ssdq_ctrl_reset_rings(struct ssdq_dev *dev);
int ssdq_ctrl_restart(struct ssdq_dev *dev);
int ssdq_admin_exec(struct ssdq_dev *dev, struct nvme_command *cmd,
		    u32 *result);
int ssdq_admin_submit_nowait(struct ssdq_dev *dev, enum ssdq_admin_slot slot,
			     struct nvme_command *cmd, ssdq_admin_done_fn done);
void ssdq_admin_nowait_release(struct ssdq_dev *dev, enum ssdq_admin_slot slot);
int ssdq_ctrl_stop_dma(struct ssdq_dev *dev, bool shutdown);
bool ssdq_ctrl_fatal(struct ssdq_dev *dev);

/* aen.c */
int __init ssdq_aen_wq_init(void);
void ssdq_aen_wq_exit(void);
void ssdq_aen_init(struct ssdq_dev *dev);
void ssdq_aen_configure(struct ssdq_dev *dev);
void ssdq_aen_begin(struct ssdq_dev *dev);
void ssdq_aen_restart(struct ssdq_dev *dev);
void ssdq_aen_stop(struct ssdq_dev *dev);
void ssdq_aen_flush(struct ssdq_dev *dev);
void ssdq_aen_debugfs_init(struct ssdq_dev *dev);

/* recovery.c */
int __init ssdq_recovery_wq_init(void);
void ssdq_recovery_wq_exit(void);
void ssdq_recovery_init(struct ssdq_dev *dev);
enum blk_eh_timer_return ssdq_timeout(struct request *req);
bool ssdq_retry_rq(struct ssdq_dev *dev, struct request *req, u16 status);
void ssdq_dev_fail(struct ssdq_dev *dev, const char *why);
void ssdq_recovery_remove(struct ssdq_dev *dev);
void ssdq_dev_shutdown(struct ssdq_dev *dev);
void ssdq_dev_suspend(struct ssdq_dev *dev);
void ssdq_dev_resume(struct ssdq_dev *dev);
void ssdq_pci_reset_prepare(struct ssdq_dev *dev);
void ssdq_pci_reset_done(struct ssdq_dev *dev);
pci_ers_result_t ssdq_pci_error_detected(struct ssdq_dev *dev,
					 pci_channel_state_t state);
pci_ers_result_t ssdq_pci_slot_reset(struct ssdq_dev *dev);
int ssdq_admin_exec_guarded(struct ssdq_dev *dev, struct nvme_command *cmd,
			    u32 *result);
int ssdq_reset_request(struct ssdq_dev *dev, const char *why);
void ssdq_recovery_debugfs_init(struct ssdq_dev *dev);
extern const struct attribute_group ssdq_recovery_attr_group;

/* io.c */
blk_status_t ssdq_queue_rq(struct blk_mq_hw_ctx *hctx,
			   const struct blk_mq_queue_data *bd);
void ssdq_queue_rqs(ssdq_plug_list_t *plug_list);
void ssdq_commit_rqs(struct blk_mq_hw_ctx *hctx);
int ssdq_io_reap(struct ssdq_queue *q, int budget, struct io_comp_batch *iob);
void ssdq_complete_rq(struct request *req);

/* ioctl.c */
void ssdq_ioctl_init(struct ssdq_dev *dev);
void ssdq_ioctl_read_effects(struct ssdq_dev *dev);
void ssdq_ioctl_stop(struct ssdq_dev *dev);
bool ssdq_passthru_allowed(struct ssdq_dev *dev, bool partition, bool writer,
			   const struct nvme_command *c, bool io);
int ssdq_passthru_check(struct ssdq_dev *dev,
			const struct nvme_passthru_cmd64 *uc, bool io, bool vec,
			u32 nsid);
void ssdq_passthru_build(struct nvme_command *c,
			 const struct nvme_passthru_cmd64 *uc);
int ssdq_admin_data_dir(u8 opcode);
int ssdq_passthru_admin(struct ssdq_dev *dev, struct nvme_command *c,
			struct iov_iter *iter, u64 *result);
int ssdq_passthru_admin_user(struct ssdq_dev *dev, struct nvme_command *c,
			     u64 addr, u32 len, bool vec, u64 *result);
struct request *ssdq_passthru_rq_alloc(struct ssdq_ns *ns,
				       const struct nvme_command *c,
				       blk_opf_t flags,
				       blk_mq_req_flags_t blk_flags,
				       u32 timeout_ms);
int ssdq_passthru_rq_map(struct ssdq_ns *ns, struct request *req,
			 const struct nvme_passthru_cmd64 *uc, bool vec,
			 struct iov_iter *iter);
/*
 * A passthrough request's metadata buffer, taken from it: the request may
 * then be freed while the buffer waits for the submitter (io_uring's task
 * work, uring.c). Inline: every io_uring command's end asks.
 */
static inline struct ssdq_pt_meta *ssdq_passthru_meta_take(struct request *req)
{
	struct ssdq_iod *iod = ssdq_iod(req);
	struct ssdq_pt_meta *meta = iod->meta;

	iod->meta = NULL;
	return meta;
}

int ssdq_passthru_meta_end(struct ssdq_pt_meta *meta, bool copy);
int ssdq_passthru_meta_unmap(struct request *req, bool copy);
int ssdq_passthru_rq_status(struct request *req, blk_status_t sts);
int ssdq_ns_ioctl(struct ssdq_ns *ns, bool partition, bool writer,
		  unsigned int cmd, void __user *argp);
int ssdq_ioctl(struct block_device *bdev, ssdq_blk_mode_t mode,
	       unsigned int cmd, unsigned long arg);
int ssdq_ctrl_ioctl(struct ssdq_dev *dev, unsigned int cmd, void __user *argp);

/* uring.c */
int ssdq_uring_ns_cmd(struct ssdq_ns *ns, struct io_uring_cmd *ioucmd,
		      unsigned int issue_flags);
int ssdq_uring_ctrl_cmd(struct ssdq_dev *dev, struct io_uring_cmd *ioucmd,
			unsigned int issue_flags);
int ssdq_uring_iopoll(struct io_uring_cmd *ioucmd, struct io_comp_batch *iob,
		      unsigned int poll_flags);

/* disk.c */
extern struct dentry *ssdq_debugfs_root;
int ssdq_tag_set_init(struct ssdq_dev *dev);
void ssdq_tag_set_free(struct ssdq_dev *dev);
int ssdq_disk_alloc(struct ssdq_ns *ns, const char *name);
int ssdq_disk_register(struct ssdq_ns *ns);
void ssdq_disk_del(struct ssdq_ns *ns);
void ssdq_dev_put(struct ssdq_dev *dev);

/* chrdev.c */
int __init ssdq_chrdev_init(void);
void ssdq_chrdev_exit(void);
int ssdq_chrdev_ctrl_add(struct ssdq_dev *dev);
void ssdq_chrdev_ctrl_del(struct ssdq_dev *dev);
int ssdq_chrdev_ns_add(struct ssdq_ns *ns);
void ssdq_chrdev_ns_del(struct ssdq_ns *ns);

/* ns.c */
void ssdq_ns_init(struct ssdq_dev *dev);
int ssdq_ns_scan(struct ssdq_dev *dev);
int ssdq_ns_start_rescans(struct ssdq_dev *dev);
void ssdq_ns_stop_scans(struct ssdq_dev *dev);
void ssdq_ns_remove_all(struct ssdq_dev *dev);
void ssdq_ns_free_all(struct ssdq_dev *dev);

#endif /* _SSDQ_H */
