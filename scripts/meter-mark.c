// SPDX-License-Identifier: GPL-2.0
/*
 * Marks a window of the cost meter (scripts/meter-plugin.c): executes the
 * instruction the plugin watches for, "xchg %bx,%bx" (66 87 db), once.
 * Run in the guest between the meter's windows; what it costs itself
 * (exec, exit) falls in both a window of N and one of 2N I/Os, and so out
 * of their difference.
 */
int main(void)
{
	__asm__ volatile(".byte 0x66, 0x87, 0xdb" ::: "memory");
	return 0;
}
