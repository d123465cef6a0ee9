#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn one meter results dir (scripts/meter.sh) into results.json and
report.md: instructions, atomics and device events per I/O, by layer and by
symbol, ssdq beside nvme. Re-runnable:

    scripts/meter-report.py build/meter/latest

Inputs, per boot (boot-K/): blocks.txt (the plugin's counts, one dump per
mark), kallsyms, windows.jsonl and meta.json (the guest's), qemu-trace.log
(QEMU's device events, stamped with the clock the plugin stamps its marks
with). A window is what ran between two marks; the cost of one I/O is the
difference between a window of 2N I/Os and one of N, divided by the
difference in I/Os: fio's start and exit, the same in both, drop out.
"""

import bisect
import json
import os
import re
import sys

import shutil

from reportlib import div, fmt, gnuplot, median, r2, row, write

# Layers, by the symbol a block starts in: the module's own symbols first
# (kallsyms tags them), then by name, first match wins. The I/O path is the
# first five.
IO_PATH = ["driver", "block", "DMA mapping", "io_uring", "interrupts"]
LAYERS = [
    ("DMA mapping", re.compile(r"_*(dma_|sg_|sgl_|swiotlb|iommu|blk_rq_map_sg|__blk_rq_map_sg|"
                               r"sg_alloc_table|__sg_|sg_init|sg_next|sg_free)")),
    ("entropy", re.compile(r"_*(add_disk_randomness|add_timer_randomness|add_interrupt_randomness|"
                           r"mix_pool_bytes|_mix_pool_bytes|blake2s|crng_|credit_init_bits|fast_mix)")),
    ("block", re.compile(r"_*(blk|bio|bdev|blkdev|submit_bio|sbitmap|rq_qos|part_|disk_|elv_|bvec|"
                         r"update_io_ticks|bd_|blkcg|blk_mq|lockref_get_not_zero$)")),
    ("io_uring", re.compile(r"_*(io_|io_uring|tctx_|__io_)")),
    ("interrupts", re.compile(r"_*(asm_common_interrupt|common_interrupt|asm_sysvec|sysvec_|irq_|"
                              r"handle_|__irq|do_softirq|__do_softirq|handle_softirqs|irq_exit|"
                              r"__sysvec|generic_smp_call|flush_smp_call|__flush_smp_call|"
                              r"smp_call_function|__smp_call|send_call_function|native_send_call_func|"
                              r"x2apic_|default_send_IPI|apic_|lapic_|native_apic|__x2apic|"
                              r"ack_apic|msi_|pci_msi|note_interrupt|raise_softirq|__raise_softirq|"
                              r"run_ksoftirqd|ksoftirqd|invoke_softirq|wakeup_softirqd|"
                              r"asm_exc_|error_entry|error_return|restore_regs|native_irq_return)")),
    ("timers", re.compile(r"_*(hrtimer|tick_|timer|__run_timers|run_timer|update_process_times|"
                          r"sched_tick|scheduler_tick|clockevents|lapic_next|ktime_|read_tsc|"
                          r"native_sched_clock|sched_clock|jiffies|calc_global_load|"
                          r"update_wall_time|timekeeping|__hrtimer|rcu_sched_clock|"
                          r"rcu_)")),
    ("scheduler", re.compile(r"_*(schedule|sched_|pick_next|put_prev|set_next|enqueue_|dequeue_|"
                             r"try_to_wake_up|ttwu_|wake_up|__wake_up|update_curr|update_load|"
                             r"update_cfs|reweight|check_preempt|finish_task_switch|context_switch|"
                             r"__switch_to|resched|select_task_rq|psi_|cpuacct|account_|"
                             r"__update_load|idle_cpu|available_idle|prepare_task_switch|"
                             r"raw_spin_rq|__raw_spin_rq|wakeup_preempt|place_entity|"
                             r"update_rq_clock|set_next_entity|pick_task|newidle|"
                             r"nohz_|balance_|load_balance|update_blocked|__calc_delta|"
                             r"__enqueue|__dequeue|avg_vruntime|update_min_vruntime|"
                             r"task_tick|hrtick|entity_|yield|do_sched_yield|preempt_)")),
    ("syscall entry/exit", re.compile(r"_*(entry_SYSCALL|do_syscall|syscall_|__x64_sys|__do_sys|"
                                      r"__se_sys|x64_sys_call|exit_to_user|fpregs|switch_fpu|"
                                      r"restore_fpregs|rseq_|__rseq|fpu_|arch_exit_to_user|"
                                      r"__fdget|fdget|fput|__fput)")),
]
# The idle loop: counted, but no I/O's cost (a halted vCPU runs nothing;
# what remains is entering and leaving the halt).
IDLE = re.compile(r"_*(do_idle|cpu_startup_entry|cpuidle_|default_idle|arch_cpu_idle|"
                  r"pv_native_safe_halt|native_safe_halt|acpi_idle|poll_idle|cpu_idle_poll|"
                  r"tick_nohz_idle|start_secondary|rest_init|call_cpuidle|"
                  r"arch_cpu_idle_enter|arch_cpu_idle_exit|mwait_idle)")
# Code that runs only when a request times out: a window that ran it holds
# a timeout (single-threaded TCG delays the device), not the cost of I/O.
# (blk_mq_timeout_work itself runs whenever the queue's timer fires, which
# it does while requests are in flight; blk_mq_rq_timed_out only for one
# that expired.)
TIMEOUT = re.compile(r"^(ssdq_timeout|nvme_timeout|blk_mq_rq_timed_out)$")
DRIVERS = {"ssdq": {"ssdq"}, "nvme": {"nvme", "nvme_core"}}
USER_TOP = 0x800000000000  # x86-64: addresses below are user space
# QEMU's device events, I/O queues only (queue or vector 0 is the admin
# queue's with both drivers). Completions posted are the per-I/O divisor:
# exact, and the same count for the block and the passthrough sides
# (passthrough passes no disk statistics).
EVENTS = {"pci_nvme_mmio_doorbell_sq": "SQ doorbell MMIO writes",
          "pci_nvme_mmio_doorbell_cq": "CQ doorbell MMIO writes",
          "pci_nvme_irq_msix": "MSI-X messages",
          "pci_nvme_eventidx_sq": "SQ event-index updates (shadow doorbells)",
          "pci_nvme_eventidx_cq": "CQ event-index updates (shadow doorbells)"}
COMPLETION = "pci_nvme_enqueue_req_completion"
SIDE_LABEL = {"ssdq": "ssdq", "nvme": "nvme", "ssdq_pt": "ssdq passthrough",
              "nvme_pt": "nvme passthrough"}


class Symbols:
    """The guest's text symbols by address (its /proc/kallsyms)."""

    def __init__(self, path):
        rows = []
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 3 or p[1] not in "tTwW":
                    continue
                mod = p[3].strip("[]") if len(p) > 3 else ""
                rows.append((int(p[0], 16), p[2], mod))
        rows.sort()
        self.addr = [r[0] for r in rows]
        self.rows = rows
        self.cache = {}

    def lookup(self, a):
        """(symbol, module) of address A; user space is ("[user]", ""). An
        address past the last symbol below it by more than any function
        here is long (64 KiB) is unnamed: code kallsyms does not list
        (BPF, trampolines)."""
        if a < USER_TOP:
            return "[user]", ""
        r = self.cache.get(a)
        if r is None:
            i = bisect.bisect_right(self.addr, a) - 1
            r = self.rows[i][1:] if i >= 0 and a - self.addr[i] < 65536 else ("[unknown]", "")
            self.cache[a] = r
        return r


def layer(sym, mod):
    if sym == "[user]":
        return "user space"
    if sym == "[unknown]":
        return "unknown"
    if mod:
        for side, mods in DRIVERS.items():
            if mod in mods:
                return "driver"
    if IDLE.match(sym):
        return "idle"
    for lab, pat in LAYERS:
        if pat.match(sym):
            return lab
    return "other kernel"


def read_blocks(path):
    """{mark: {"time": s, "blocks": [(addr, insns, atomics, execs)]}}: the
    plugin's dump at mark K holds what ran since mark K-1."""
    marks, cur = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            if line.startswith("mark "):
                p = line.split()
                cur = {"time": float(p[3]), "why": p[2], "blocks": []}
                marks[int(p[1])] = cur
                continue
            a, n, at, e = line.split()
            cur["blocks"].append((int(a, 16), int(n), int(at), int(e)))
    return marks


def read_events(path, times):
    """Device events per window: {mark K: {event: count}} for the windows
    ending at mark K (times: [(start, end, K)], sorted, not overlapping);
    events between windows belong to none."""
    out = {k: {} for _, _, k in times}
    if not os.path.exists(path):
        return out
    ends = [t for _, t, _ in times]
    pat = re.compile(r"^\d+@(\d+\.\d+):(\w+) \D*(\d+)")
    with open(path) as f:
        for line in f:
            m = pat.match(line)
            if not m or (m.group(2) not in EVENTS and m.group(2) != COMPLETION):
                continue
            # The completion names its command id first, its CQ second.
            q = line.split("cqid ")[1].split()[0] if m.group(2) == COMPLETION else m.group(3)
            if q == "0":
                continue
            t = float(m.group(1))
            i = bisect.bisect_left(ends, t)
            if i < len(ends) and t >= times[i][0]:
                d = out[times[i][2]]
                d[m.group(2)] = d.get(m.group(2), 0) + 1
    return out


def window_cost(syms, blocks):
    """A window's counts: per layer and per symbol, instructions and
    atomics; whether it ran timeout code."""
    lay, sym, timeout = {}, {}, []
    for a, n, at, e in blocks:
        s, mod = syms.lookup(a)
        lab = layer(s, mod)
        key = f"{s} [{mod}]" if mod else s
        x = lay.setdefault(lab, [0, 0])
        x[0] += n * e
        x[1] += at * e
        y = sym.setdefault(key, [0, 0, lab])
        y[0] += n * e
        y[1] += at * e
        if TIMEOUT.match(s) and s not in timeout:
            timeout.append(s)
    return lay, sym, timeout


def boot_results(d):
    """Per (job, side, variant): the marginal cost per I/O of each pair of
    windows (N, 2N) of one boot."""
    meta = json.load(open(os.path.join(d, "meta.json")))
    syms = Symbols(os.path.join(d, "kallsyms"))
    marks = read_blocks(os.path.join(d, "blocks.txt"))
    wins = [json.loads(x) for x in open(os.path.join(d, "windows.jsonl"))]
    times = sorted((marks[w["mark_from"]]["time"], marks[w["mark_to"]]["time"], w["mark_to"])
                   for w in wins if w["mark_to"] in marks and w["mark_from"] in marks)
    events = read_events(os.path.join(d, "qemu-trace.log"), times)
    for w in wins:
        m = marks.get(w["mark_to"])
        w["ok"] = m is not None and w["rc"] == 0 and w["mark_to"] == w["mark_from"] + 1
        if w["ok"]:
            w["layers"], w["symbols"], w["timeout"] = window_cost(syms, m["blocks"])
            w["events"] = events.get(w["mark_to"], {})
            w["ok"] = not w["timeout"]
    out = []
    key = lambda w: (w["job"], w["side"], w["variant"])  # noqa: E731
    groups = {}
    for w in wins:
        groups.setdefault(key(w), []).append(w)
    for k, ws in groups.items():
        short = [w for w in ws if w["n"] == min(x["n"] for x in ws)]
        long_ = [w for w in ws if w["n"] != short[0]["n"]]
        for a, b in zip(short, long_):
            rec = {"job": k[0], "side": k[1], "variant": k[2], "ok": a["ok"] and b["ok"],
                   "why": "; ".join(f"{w['n']} I/Os: " + (", ".join(w.get("timeout") or []) and
                                                          "timeout code ran (" + ", ".join(w["timeout"]) + ")"
                                                          or f"status {w['rc']}")
                                    for w in (a, b) if not w["ok"])}
            dios = b["events"].get(COMPLETION, 0) - a["events"].get(COMPLETION, 0) if rec["ok"] else 0
            rec["ios"] = dios
            # Cross-check: the disk's own count, where it has one.
            rec["disk_ios"] = b["ios"] - a["ios"]
            if rec["ok"] and dios > 0:
                rec["layers"] = {lab: [(b["layers"].get(lab, [0, 0])[i] - a["layers"].get(lab, [0, 0])[i]) / dios
                                       for i in (0, 1)]
                                 for lab in set(a["layers"]) | set(b["layers"])}
                rec["symbols"] = {s: (b["symbols"].get(s, [0, 0, None])[0] - a["symbols"].get(s, [0, 0, None])[0]) / dios
                                  for s in set(a["symbols"]) | set(b["symbols"])}
                rec["symbol_layer"] = {s: (b["symbols"].get(s) or a["symbols"].get(s))[2]
                                       for s in rec["symbols"]}
                rec["events"] = {e: (b["events"].get(e, 0) - a["events"].get(e, 0)) / dios for e in EVENTS}
                # Interrupts per I/O depend on host timing at depth: the
                # pair's interrupts, for the per-interrupt fit.
                rec["irqs"] = rec["events"]["pci_nvme_irq_msix"]
                known = sum(v[0] for lab, v in rec["layers"].items() if lab not in ("user space", "idle"))
                unknown = rec["layers"].get("unknown", [0, 0])[0]
                rec["named_share"] = div(known - unknown, known)
            else:
                rec["ok"] = False
            out.append(rec)
    return meta, out


def irq_fit(rs, lab="driver"):
    """At depth, interrupts per I/O follow host timing, and a layer's cost
    per I/O is a part per I/O plus a part per interrupt: the least-squares
    line through the window pairs (a + b x MSI-X per I/O), with its largest
    residual. None under four pairs (make meter SSDQ_METER_REPEAT=2: four
    per job and side over two boots) or with one interrupt rate."""
    pts = [(r["irqs"], r["layers"].get(lab, [0, 0])[0]) for _, r in rs]
    n = len(pts)
    if n < 4:
        return None
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx < 1e-9:
        return None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    a = my - b * mx
    return {"per_io": a, "per_irq": b, "pairs": n,
            "max_residual": max(abs(y - a - b * x) for x, y in pts)}


def summarize(per_boot):
    """Per (job, side, variant): each layer's per-I/O figures over every
    window pair of every boot (median, min, max)."""
    groups = {}
    for b, recs in enumerate(per_boot):
        for r in recs:
            if r["ok"]:
                groups.setdefault((r["job"], r["side"], r["variant"]), []).append((b, r))
    out = {}
    for k, rs in groups.items():
        labs = set().union(*(r["layers"] for _, r in rs))
        s = {"pairs": len(rs), "boots": len({b for b, _ in rs}), "layers": {}, "atomics": {}, "events": {},
             "named_share": min(r["named_share"] for _, r in rs if r["named_share"] is not None),
             "irq_fit": irq_fit(rs)}
        for lab in labs:
            xs = [r["layers"].get(lab, [0, 0])[0] for _, r in rs]
            ys = [r["layers"].get(lab, [0, 0])[1] for _, r in rs]
            s["layers"][lab] = {"median": median(xs), "min": min(xs), "max": max(xs)}
            s["atomics"][lab] = {"median": median(ys), "min": min(ys), "max": max(ys)}
        for name, pick in (("I/O path", IO_PATH), ("kernel, all", None)):
            xs, ys = [], []
            for _, r in rs:
                ls = r["layers"]
                keep = [lab for lab in ls if (lab in pick if pick else lab not in ("user space", "idle"))]
                xs.append(sum(ls[lab][0] for lab in keep))
                ys.append(sum(ls[lab][1] for lab in keep))
            s["layers"][name] = {"median": median(xs), "min": min(xs), "max": max(xs)}
            s["atomics"][name] = {"median": median(ys), "min": min(ys), "max": max(ys)}
        for e in EVENTS:
            xs = [r["events"][e] for _, r in rs]
            s["events"][e] = {"median": median(xs), "min": min(xs), "max": max(xs)}
        syms = set().union(*(r["symbols"] for _, r in rs))
        s["symbols"] = {x: median([r["symbols"].get(x, 0) for _, r in rs]) for x in syms}
        s["symbol_layer"] = {}
        for _, r in rs:
            s["symbol_layer"].update(r["symbol_layer"])
        out[k] = s
    return out


def spread(x):
    if x is None:
        return "n/a"
    if x["min"] == x["max"]:
        return fmt(x["median"])
    return f"{fmt(x['median'])} ({fmt(x['min'])}-{fmt(x['max'])})"


ORDER = IO_PATH + ["I/O path", "entropy", "timers", "scheduler", "syscall entry/exit", "other kernel",
                   "unknown", "kernel, all", "user space"]


def report(d, meta, summ, per_boot):
    jobs = sorted({k[0] for k in summ}, key=lambda j: ["rr4k-qd1", "rr4k-qd32x2", "rw4k-qd32x2",
                                                        "rr4k-qd1-hipri"].index(j)
                  if j in ("rr4k-qd1", "rr4k-qd32x2", "rw4k-qd32x2", "rr4k-qd1-hipri") else 9)
    out = ["# What an I/O costs the guest, counted (make meter)", "",
           f"Guest instructions per I/O, counted by a QEMU TCG plugin (scripts/meter-plugin.c) in every block the guest ran, attributed to the guest's symbols; one boot per column group, {len(per_boot)} boot(s), guest kernel {meta.get('kernel')}, {meta.get('vcpus')} vCPUs, single-threaded TCG. Each figure is (window of 2N I/Os - window of N) / (N I/Os), N = {meta.get('n')} per job process, so fio's start and exit drop out; median over the window pairs of all boots, (min-max) where they differ. Lower is better everywhere. Documentation/meter.rst says what each layer holds.", ""]
    for job in jobs:
        sides = [k for k in summ if k[0] == job]
        a, b = summ.get((job, "ssdq", "default")), summ.get((job, "nvme", "default"))
        out += [f"## {job}", ""]
        if a and b:
            out += ["| per I/O | ssdq | nvme | ssdq/nvme |", "|---|---:|---:|---:|"]
            for lab in ORDER:
                xa, xb = a["layers"].get(lab), b["layers"].get(lab)
                if xa is None and xb is None:
                    continue
                out.append(row(f"**{lab}**" if lab == "I/O path" else lab, spread(xa), spread(xb),
                               r2(div(xa and xa["median"], xb and xb["median"]))))
            for lab in ("I/O path", "kernel, all"):
                xa, xb = a["atomics"].get(lab), b["atomics"].get(lab)
                out.append(row(f"atomic (LOCK-prefixed or XCHG) instructions, {lab}", spread(xa), spread(xb),
                               r2(div(xa and xa["median"], xb and xb["median"]))))
            for e, lab in EVENTS.items():
                xa, xb = a["events"].get(e), b["events"].get(e)
                out.append(row(lab, spread(xa), spread(xb), r2(div(xa and xa["median"], xb and xb["median"]))))
            fa, fb = a["irq_fit"], b["irq_fit"]
            if fa or fb:
                cell = lambda f: "n/a" if not f else (  # noqa: E731
                    f"{fmt(f['per_io'])} + {fmt(f['per_irq'])} per interrupt (max residual {fmt(f['max_residual'])})")
                out.append(row(f"driver = per I/O + per interrupt (fit over {max((f or {}).get('pairs', 0) for f in (fa, fb))} window pairs)",
                               cell(fa), cell(fb), r2(div(fa and fa["per_io"], fb and fb["per_io"]))))
            out.append(row("kernel instructions on named symbols", f"{100 * a['named_share']:.2f}%",
                           f"{100 * b['named_share']:.2f}%", ""))
            out.append(row("window pairs (boots)", f"{a['pairs']} ({a['boots']})", f"{b['pairs']} ({b['boots']})", ""))
            diff = sorted(set(a["symbols"]) | set(b["symbols"]),
                          key=lambda s: -abs(a["symbols"].get(s, 0) - b["symbols"].get(s, 0)))
            diff = [s for s in diff if s != "[user]"][:20]
            out += ["", "The 20 symbols whose cost per I/O differs most (the two drivers' own functions never share a name, so each shows on one side):", "",
                    "| symbol | layer | ssdq | nvme | ssdq - nvme |", "|---|---|---:|---:|---:|"]
            for s in diff:
                va, vb = a["symbols"].get(s, 0), b["symbols"].get(s, 0)
                lab = a["symbol_layer"].get(s) or b["symbol_layer"].get(s)
                out.append(row(f"`{s}`", lab or "", fmt(va), fmt(vb), f"{va - vb:+.1f}"))
            out.append("")
        pa, pb = summ.get((job, "ssdq_pt", "default")), summ.get((job, "nvme_pt", "default"))
        if pa and pb and a:
            out += ["io_uring passthrough (fio's io_uring_cmd engine on the generic char devices) beside ssdq's block path:", "",
                    "| per I/O | ssdq passthrough | nvme passthrough | ssdq block | ssdq pt / nvme pt | ssdq pt / ssdq block |",
                    "|---|---:|---:|---:|---:|---:|"]
            for lab in ORDER:
                xs = [v["layers"].get(lab) for v in (pa, pb, a)]
                if all(x is None for x in xs):
                    continue
                m = [x and x["median"] for x in xs]
                out.append(row(f"**{lab}**" if lab == "I/O path" else lab, *(spread(x) for x in xs),
                               r2(div(m[0], m[1])), r2(div(m[0], m[2]))))
            xs = [v["atomics"].get("I/O path") for v in (pa, pb, a)]
            m = [x and x["median"] for x in xs]
            out.append(row("atomic instructions, I/O path", *(spread(x) for x in xs),
                           r2(div(m[0], m[1])), r2(div(m[0], m[2]))))
            for e, lab in EVENTS.items():
                xs = [v["events"].get(e) for v in (pa, pb, a)]
                m = [x and x["median"] for x in xs]
                out.append(row(lab, *(spread(x) for x in xs), r2(div(m[0], m[1])), r2(div(m[0], m[2]))))
            out.append("")
        variants = [k for k in sides if k[1] == "ssdq" and k[2] != "default"]
        if variants and a:
            out += ["ssdq's switches (the variant against ssdq's defaults, same job):", "",
                    "| variant | I/O path | driver | atomics, I/O path | SQ doorbells | MSI-X | entropy |",
                    "|---|---:|---:|---:|---:|---:|---:|",
                    row("default", spread(a["layers"].get("I/O path")), spread(a["layers"].get("driver")),
                        spread(a["atomics"].get("I/O path")), spread(a["events"]["pci_nvme_mmio_doorbell_sq"]),
                        spread(a["events"]["pci_nvme_irq_msix"]), spread(a["layers"].get("entropy")))]
            for k in sorted(variants):
                v = summ[k]
                out.append(row(k[2], spread(v["layers"].get("I/O path")), spread(v["layers"].get("driver")),
                               spread(v["atomics"].get("I/O path")), spread(v["events"]["pci_nvme_mmio_doorbell_sq"]),
                               spread(v["events"]["pci_nvme_irq_msix"]), spread(v["layers"].get("entropy"))))
            out.append("")
    bad = [(i + 1, r) for i, recs in enumerate(per_boot) for r in recs if not r["ok"]]
    out += ["## Windows left out", ""]
    out += [f"- boot {i}: {r['job']} {r['side']} {r['variant']}: {r['why'] or 'no I/O counted'}" for i, r in bad] \
        if bad else ["None."]
    return "\n".join(out) + "\n"


CHART_LAYERS = IO_PATH + ["entropy", "timers", "scheduler", "syscall entry/exit", "other kernel"]
CHART_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf"]


def chart(d, summ):
    """A stacked bar per job and side (ssdq, nvme; and the passthrough
    sides where they ran): the kernel's instructions per I/O by layer."""
    if not shutil.which("gnuplot"):
        return False
    rows = []
    for job in sorted({k[0] for k in summ}):
        for side in ("ssdq", "nvme", "ssdq_pt", "nvme_pt"):
            x = summ.get((job, side, "default"))
            if x is None:
                continue
            vals = [max(0, (x["layers"].get(lab) or {"median": 0})["median"]) for lab in CHART_LAYERS]
            rows.append([f"{job} {SIDE_LABEL[side]}"] + vals)
    if not rows:
        return False
    dat = os.path.join(d, "chart-layers.dat")
    with open(dat, "w") as f:
        f.writelines("\t".join(str(v) for v in r) + "\n" for r in rows)
    cols = ", ".join(("'{0}' using {1}:xtic(1)" if i == 0 else "'' using {1}").format(dat, i + 2)
                     + f' title "{lab}" lc rgb "{CHART_COLORS[i]}"'
                     for i, lab in enumerate(CHART_LAYERS))
    gnuplot(f"""set terminal pngcairo size 1200,640 font "DejaVu Sans,10"
set output '{d}/layers.png'
set title "Guest kernel instructions per I/O by layer (make meter: counted, median of window pairs)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.8
set ylabel "instructions per I/O"
set yrange [0:*]
set grid ytics
set key outside right top noenhanced
set xtics rotate by -35 noenhanced
set datafile separator "\t"
plot {cols}
""")
    return os.path.exists(os.path.join(d, "layers.png"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: meter-report.py RESULTS_DIR")
    d = os.path.realpath(sys.argv[1])
    boots = sorted(x for x in os.listdir(d) if re.match(r"boot-\d+$", x)
                   and os.path.exists(os.path.join(d, x, "windows.jsonl"))
                   and os.path.exists(os.path.join(d, x, "blocks.txt")))
    if not boots:
        sys.exit(f"meter-report: {d} has no boot-K/ with windows.jsonl and blocks.txt")
    meta, per_boot = {}, []
    for b in boots:
        meta, recs = boot_results(os.path.join(d, b))
        per_boot.append(recs)
    summ = summarize(per_boot)
    res = {"meta": meta, "boots": boots,
           "summary": [dict(job=k[0], side=k[1], variant=k[2], **v) for k, v in summ.items()],
           "pairs": per_boot}
    write(os.path.join(d, "results.json"), json.dumps(res, indent=1) + "\n")
    text = report(d, meta, summ, per_boot)
    if chart(d, summ):
        text = text.replace("\n## ", "\n![instructions per I/O by layer](layers.png)\n\n## ", 1)
    write(os.path.join(d, "report.md"), text)
    print(text.split("\n## ")[0] + "\n## " + text.split("\n## ")[1] if "\n## " in text else text)


if __name__ == "__main__":
    main()
