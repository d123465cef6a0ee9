/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssdq trace events: one per technique's decision, so that trace-cmd, perf
 * and bpftrace see what each one does (Documentation/tracing.rst):
 *
 *   ssdq_submit        a request became an NVMe command (io.c)
 *   ssdq_sq_doorbell   a new SQ tail was published, MMIO or shadow (queue.c)
 *   ssdq_cqe           an I/O CQE was reaped, and by whom (io.c)
 *   ssdq_steer         a completion was sent to its submitting CPU (steer.c)
 *   ssdq_steer_ipi     a steering IPI ended its CPU's list (steer.c)
 *   ssdq_irqpoll_mask  the handler masked its vector for irq_poll (irq.c)
 *   ssdq_irqpoll_round an irq_poll round and what it decided (irq.c)
 *   ssdq_moder         an adaptive moderation window and its verdict (irq.c)
 *   ssdq_timeout_step  a step of timeout handling (recovery.c)
 *   ssdq_reset         a controller reset, when it ends (recovery.c)
 *
 * Each names the controller by instance (ssdqN, also before its disk
 * exists) and the queue id. Disabled, an event costs a static branch.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM ssdq

#if !defined(_SSDQ_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _SSDQ_TRACE_H

#include <linux/blk-mq.h>
#include <linux/tracepoint.h>

#include <ssdq/ssdq.h>

/* Every queue's event names its controller and queue first. */
#define SSDQ_TP_QUEUE_FIELDS	__field(int, instance) __field(u16, qid)
#define ssdq_tp_assign_queue(q)						\
	do {								\
		__entry->instance = (q)->dev->instance;			\
		__entry->qid = (q)->qid;				\
	} while (0)

/* ... and a reaping event, who reaps (enum ssdq_reaper). */
#define SSDQ_TP_REAP_FIELDS	SSDQ_TP_QUEUE_FIELDS __field(u8, reaper)
#define ssdq_tp_assign_reap(q)						\
	do {								\
		ssdq_tp_assign_queue(q);				\
		__entry->reaper = (q)->reaper;				\
	} while (0)

/* ... and a request's event, its tag. */
#define SSDQ_TP_RQ_FIELDS	SSDQ_TP_QUEUE_FIELDS __field(int, tag)
#define ssdq_tp_assign_rq(q, req)					\
	do {								\
		ssdq_tp_assign_queue(q);				\
		__entry->tag = (req)->tag;				\
	} while (0)

#define ssdq_show_opcode(op)						\
	__print_symbolic(op,						\
			 { nvme_cmd_flush,		"flush" },	\
			 { nvme_cmd_write,		"write" },	\
			 { nvme_cmd_read,		"read" },	\
			 { nvme_cmd_write_zeroes,	"write_zeroes" }, \
			 { nvme_cmd_dsm,		"dsm" })

#define ssdq_show_reaper(r)						\
	__print_symbolic(r,						\
			 { SSDQ_REAPER_IRQ,		"irq" },	\
			 { SSDQ_REAPER_IRQPOLL,		"irqpoll" },	\
			 { SSDQ_REAPER_TIMER,		"timer" },	\
			 { SSDQ_REAPER_POLL,		"poll" },	\
			 { SSDQ_REAPER_RECOVERY,	"recovery" })

#define ssdq_show_step(s)						\
	__print_symbolic(s,						\
			 { SSDQ_STEP_DEAD,		"dead" },	\
			 { SSDQ_STEP_FATAL,		"fatal_status" }, \
			 { SSDQ_STEP_LOST_IRQ,		"lost_interrupt" }, \
			 { SSDQ_STEP_ABORT,		"abort" },	\
			 { SSDQ_STEP_RESET,		"reset" })

TRACE_EVENT(ssdq_submit,
	TP_PROTO(struct ssdq_queue *q, struct request *req),
	TP_ARGS(q, req),
	TP_STRUCT__entry(
		SSDQ_TP_RQ_FIELDS
		__field(u16, cid)
		__field(u8, opcode)
		__field(u64, sector)
		__field(u32, bytes)
		__field(bool, fua)
	),
	TP_fast_assign(
		const struct nvme_command *cmd = &ssdq_iod(req)->cmd;

		ssdq_tp_assign_rq(q, req);
		__entry->cid = cmd->common.command_id;
		__entry->opcode = cmd->common.opcode;
		__entry->sector = blk_rq_pos(req);
		__entry->bytes = blk_rq_bytes(req);
		__entry->fua = req->cmd_flags & REQ_FUA;
	),
	TP_printk("ssdq%d q%u tag=%d cid=%#x %s sector=%llu bytes=%u%s",
		  __entry->instance, __entry->qid, __entry->tag, __entry->cid,
		  ssdq_show_opcode(__entry->opcode), __entry->sector,
		  __entry->bytes, __entry->fua ? " fua" : "")
);

/* The commands published since the last tail: old_tail .. sq_tail. */
TRACE_EVENT(ssdq_sq_doorbell,
	TP_PROTO(struct ssdq_queue *q, u16 old_tail, bool mmio),
	TP_ARGS(q, old_tail, mmio),
	TP_STRUCT__entry(
		SSDQ_TP_QUEUE_FIELDS
		__field(u16, batch)
		__field(u16, tail)
		__field(bool, mmio)
	),
	TP_fast_assign(
		ssdq_tp_assign_queue(q);
		__entry->batch = (q->sq_tail + q->depth - old_tail) % q->depth;
		__entry->tail = q->sq_tail;
		__entry->mmio = mmio;
	),
	TP_printk("ssdq%d q%u batch=%u tail=%u %s", __entry->instance,
		  __entry->qid, __entry->batch, __entry->tail,
		  __entry->mmio ? "mmio" : "shadow")
);

TRACE_EVENT(ssdq_cqe,
	TP_PROTO(struct ssdq_queue *q, u16 cid, u16 status),
	TP_ARGS(q, cid, status),
	TP_STRUCT__entry(SSDQ_TP_REAP_FIELDS __field(u16, cid) __field(u16, status)),
	TP_fast_assign(
		ssdq_tp_assign_reap(q);
		__entry->cid = cid;
		__entry->status = status;
	),
	TP_printk("ssdq%d q%u cid=%#x status=%#x by=%s", __entry->instance,
		  __entry->qid, __entry->cid, __entry->status,
		  ssdq_show_reaper(__entry->reaper))
);

TRACE_EVENT(ssdq_steer,
	TP_PROTO(struct ssdq_queue *q, struct request *req, int to),
	TP_ARGS(q, req, to),
	TP_STRUCT__entry(
		SSDQ_TP_RQ_FIELDS
		__field(u64, sector)
		__field(int, from)
		__field(int, to)
	),
	TP_fast_assign(
		ssdq_tp_assign_rq(q, req);
		__entry->sector = blk_rq_pos(req);
		__entry->from = raw_smp_processor_id();
		__entry->to = to;
	),
	TP_printk("ssdq%d q%u tag=%d sector=%llu cpu%d->cpu%d",
		  __entry->instance, __entry->qid, __entry->tag,
		  __entry->sector, __entry->from, __entry->to)
);

TRACE_EVENT(ssdq_steer_ipi,
	TP_PROTO(unsigned int requests),
	TP_ARGS(requests),
	TP_STRUCT__entry(
		__field(unsigned int, requests)
	),
	TP_fast_assign(
		__entry->requests = requests;
	),
	TP_printk("requests=%u", __entry->requests)
);

TRACE_EVENT(ssdq_irqpoll_mask,
	TP_PROTO(struct ssdq_queue *q),
	TP_ARGS(q),
	TP_STRUCT__entry(
		SSDQ_TP_QUEUE_FIELDS
	),
	TP_fast_assign(
		ssdq_tp_assign_queue(q);
	),
	TP_printk("ssdq%d q%u", __entry->instance, __entry->qid)
);

/* next: again (budget used up), defer (timer armed), unmask */
TRACE_EVENT(ssdq_irqpoll_round,
	TP_PROTO(struct ssdq_queue *q, int found, int budget, const char *next),
	TP_ARGS(q, found, budget, next),
	TP_STRUCT__entry(
		SSDQ_TP_REAP_FIELDS
		__field(int, found)
		__field(int, budget)
		__string(next, next)
	),
	TP_fast_assign(
		ssdq_tp_assign_reap(q);
		__entry->found = found;
		__entry->budget = budget;
		ssdq_assign_str(next, next);
	),
	TP_printk("ssdq%d q%u found=%d budget=%d by=%s next=%s",
		  __entry->instance, __entry->qid, __entry->found,
		  __entry->budget, ssdq_show_reaper(__entry->reaper),
		  __get_str(next))
);

/* One window of adaptive moderation: what it measured, where it went. */
TRACE_EVENT(ssdq_moder,
	TP_PROTO(struct ssdq_queue *q, u32 cps, u32 cpe, unsigned int level,
		 int step),
	TP_ARGS(q, cps, cpe, level, step),
	TP_STRUCT__entry(
		SSDQ_TP_QUEUE_FIELDS
		__field(u32, cps)
		__field(u32, cpe)
		__field(unsigned int, level)
		__field(int, step)
	),
	TP_fast_assign(
		ssdq_tp_assign_queue(q);
		__entry->cps = cps;
		__entry->cpe = cpe;
		__entry->level = level;
		__entry->step = step;
	),
	TP_printk("ssdq%d q%u cps=%u cpe=%u level=%u step=%d",
		  __entry->instance, __entry->qid, __entry->cps, __entry->cpe,
		  __entry->level, __entry->step)
);

TRACE_EVENT(ssdq_timeout_step,
	TP_PROTO(struct ssdq_queue *q, struct request *req, u8 step),
	TP_ARGS(q, req, step),
	TP_STRUCT__entry(SSDQ_TP_RQ_FIELDS __field(u8, step)),
	TP_fast_assign(
		ssdq_tp_assign_rq(q, req);
		__entry->step = step;
	),
	TP_printk("ssdq%d q%u tag=%d step=%s", __entry->instance,
		  __entry->qid, __entry->tag, ssdq_show_step(__entry->step))
);

TRACE_EVENT(ssdq_reset,
	TP_PROTO(struct ssdq_dev *dev, const char *why, int ret, s64 ms),
	TP_ARGS(dev, why, ret, ms),
	TP_STRUCT__entry(
		__field(int, instance)
		__string(why, why)
		__field(int, ret)
		__field(s64, ms)
	),
	TP_fast_assign(
		__entry->instance = dev->instance;
		ssdq_assign_str(why, why);
		__entry->ret = ret;
		__entry->ms = ms;
	),
	TP_printk("ssdq%d why=\"%s\" ret=%d ms=%lld", __entry->instance,
		  __get_str(why), __entry->ret, __entry->ms)
);

#endif /* _SSDQ_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
