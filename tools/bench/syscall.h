/*
 * syscall.h - system calls without glibc, for the timed loops built
 * -mgeneral-regs-only: what runs between dirtying the registers and the
 * kernel entry must be exactly what the benchmark means to measure.
 */
#ifndef XF_TOOLS_BENCH_SYSCALL_H
#define XF_TOOLS_BENCH_SYSCALL_H

/* Up to four arguments (rdi, rsi, rdx, r10); -errno on failure. */
static inline long xf_bench_sys(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

#endif
