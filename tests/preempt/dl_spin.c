/* dl_spin.c - a library the preemption tests load with dlopen() after
 * xf_init: a loop that spins in its own code, reading no clock through the
 * C library or the vDSO (both are unsafe to preempt in). */
#include <stdatomic.h>
#include <stdint.h>

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* Spins for `ticks` TSC ticks; returns whether *flag was seen set before
 * the end - i.e. whether another fiber of this worker ran meanwhile. */
int dl_spin(uint64_t ticks, atomic_int *flag);

__attribute__((visibility("default"))) int dl_spin(uint64_t ticks, atomic_int *flag)
{
	uint64_t end = rdtsc() + ticks;
	int seen = 0;

	while (rdtsc() < end)
		seen |= atomic_load_explicit(flag, memory_order_relaxed);
	return seen;
}
