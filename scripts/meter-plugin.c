// SPDX-License-Identifier: GPL-2.0
/*
 * The cost meter's QEMU TCG plugin (make meter, Documentation/meter.rst):
 * counts every guest instruction by the translation block it runs in.
 *
 * At translation each block gets a record (its guest address, how many
 * instructions and how many atomic ones it holds) and an inline add of 1 to
 * the record's counter each time it runs: one host add per executed block,
 * nothing else on the guest's path. The counters are plain, not atomic, so
 * the meter runs QEMU with -accel tcg,thread=single, where one host thread
 * runs every vCPU in turn and no add is lost.
 *
 * A guest program marks the windows: it executes "xchg %bx,%bx" (66 87 db),
 * which no compiler emits. At each mark the plugin writes every record whose
 * counter moved since the previous mark ("block-address instructions
 * atomics executions", the address in hex), under a "mark N WHY TIME" line; the host (meter-report.py)
 * attributes the blocks to the guest's symbols. A block runs in full or not
 * at all as far as these counts go: one that faults half-way is counted
 * whole (a page fault in the guest kernel's I/O path is rare).
 *
 * Arguments: out=FILE (where to write; required).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct block {
	uint64_t vaddr;
	uint64_t execs;		/* inline-added, one per execution */
	uint64_t seen;		/* execs at the previous mark */
	uint32_t insns;
	uint32_t atomics;
};

/* Records in chunks that never move: the inline adds point into them. */
#define CHUNK 65536
static struct block **chunks;
static size_t nchunks, nblocks;
static FILE *out;
static unsigned long marks;

static struct block *block_new(void)
{
	if (nblocks == nchunks * CHUNK) {
		struct block **c = realloc(chunks, (nchunks + 1) * sizeof(*c));

		if (!c)
			abort();
		chunks = c;
		chunks[nchunks] = calloc(CHUNK, sizeof(struct block));
		if (!chunks[nchunks])
			abort();
		nchunks++;
	}
	nblocks++;
	return &chunks[(nblocks - 1) / CHUNK][(nblocks - 1) % CHUNK];
}

/*
 * An instruction the CPU executes atomically: LOCK-prefixed, or XCHG with a
 * memory operand (locked without the prefix). Legacy prefixes may come in
 * any order before the opcode; a REX prefix comes last.
 */
static bool insn_atomic(const uint8_t *b, size_t n)
{
	size_t i = 0;

	for (; i < n; i++) {
		switch (b[i]) {
		case 0xf0:
			return true;
		case 0x66: case 0x67: case 0xf2: case 0xf3:
		case 0x2e: case 0x36: case 0x3e: case 0x26: case 0x64: case 0x65:
			continue;
		}
		break;
	}
	if (i < n && (b[i] & 0xf0) == 0x40)	/* REX */
		i++;
	/* XCHG r/m, r (86, 87) with ModRM.mod != 3: a memory operand */
	return i + 1 < n && (b[i] == 0x86 || b[i] == 0x87) && (b[i + 1] >> 6) != 3;
}

static const uint8_t mark_bytes[] = { 0x66, 0x87, 0xdb };	/* xchg %bx,%bx */

static bool insn_is_mark(struct qemu_plugin_insn *insn)
{
	return qemu_plugin_insn_size(insn) == sizeof(mark_bytes) &&
	       !memcmp(qemu_plugin_insn_data(insn), mark_bytes, sizeof(mark_bytes));
}

/*
 * The host's wall clock goes with each mark, in the form of QEMU's log
 * trace backend ("sec.usec"): the host splits QEMU's trace of device
 * events (doorbells, MSI-X) into the same windows by it.
 */
static void dump(const char *why)
{
	struct timeval tv;
	size_t i;

	gettimeofday(&tv, NULL);
	fprintf(out, "mark %lu %s %ld.%06ld\n", marks++, why, (long)tv.tv_sec, (long)tv.tv_usec);
	for (i = 0; i < nblocks; i++) {
		struct block *b = &chunks[i / CHUNK][i % CHUNK];

		if (b->execs == b->seen)
			continue;
		fprintf(out, "%" PRIx64 " %u %u %" PRIu64 "\n", b->vaddr, b->insns,
			b->atomics, b->execs - b->seen);
		b->seen = b->execs;
	}
	fflush(out);
}

static void on_mark(unsigned int vcpu, void *udata)
{
	dump("guest");
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = block_new();
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = n;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		if (insn_atomic(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn)))
			b->atomics++;
		if (insn_is_mark(insn))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark,
							       QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
}

static void on_atexit(qemu_plugin_id_t id, void *p)
{
	dump("exit");
	fclose(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	if (!path) {
		fprintf(stderr, "meter-plugin: out=FILE is required\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	fprintf(out, "# meter-plugin: block insns atomics execs (hex address)\n");
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
