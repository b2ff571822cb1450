/* spin.h - the vector work of example_httpd's /spin route, shared with the
 * peer servers of `xfiber bench server` so that every server does the same. */
#ifndef XF_EXAMPLES_SPIN_H
#define XF_EXAMPLES_SPIN_H

#include <stdint.h>

/* One microsecond of work on the development machine (an AMD EPYC Zen 4
 * guest: ~2.5 ns per step of the 8 registers below).  Fixed rather than
 * calibrated at start, so that the checksum depends only on the
 * microseconds asked for; on other CPUs the work takes more or less time. */
#define SPIN_STEPS_PER_US 400u

/* Runs us * SPIN_STEPS_PER_US steps of a 32-bit linear congruential
 * generator on 128 lanes, held in eight 512-bit registers (ZMM) throughout
 * where the CPU has AVX-512F, else in sixteen 256-bit registers (YMM) with AVX2,
 * else in general registers and memory, and
 * returns a checksum of the lanes: the same on every CPU for the same us. */
uint64_t spin_work(uint64_t us);

/* The same work on one path: isa is "avx512f", "avx2" or "generic".
 * Returns -1 when this CPU (or its kernel) lacks it, else 0 and the
 * checksum in *sum: the tests compare the paths. */
int spin_work_on(const char *isa, uint64_t us, uint64_t *sum);

#endif
