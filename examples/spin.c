/* spin.c - /spin's work (spin.h): vector registers live for its whole run,
 * so that a preemption in the middle must keep them. */
#include "spin.h"

#include <string.h>

/* 128 lanes of 32 bits, each its own linear congruential generator: eight
 * ZMM registers of 16 lanes with AVX-512F, sixteen YMM registers of 8 with
 * AVX2.  Both fold the lanes in the same order, so give the same checksum. */
typedef uint32_t lanes16 __attribute__((vector_size(64)));
typedef uint32_t lanes8 __attribute__((vector_size(32)));

#define LCG_MUL 1664525u
#define LCG_ADD 1013904223u

/* Each register starts with distinct lanes: base+1 .. base+16 (or +8). */
#define LANES16_FROM(base)                                                                         \
	((lanes16){base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7, base + 8, \
		   base + 9, base + 10, base + 11, base + 12, base + 13, base + 14, base + 15,     \
		   base + 16})
#define LANES8_FROM(base)                                                                          \
	((lanes8){base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7, base + 8})
#define STEP(r) ((r) = (r)*LCG_MUL + LCG_ADD)
#define FOLD(sum, r, n)                                                                            \
	do {                                                                                       \
		for (int j_ = 0; j_ < (n); j_++)                                                   \
			(sum) = (sum)*31 + (r)[j_];                                                \
	} while (0)

/* Eight independent chains: the multiplier's latency is hidden, and eight
 * ZMM registers (plus the two constants) stay live across the loop.  Built
 * for AVX-512F, and without a target for CPUs with neither extension (where
 * GCC splits the vectors into general registers and memory). */
static inline __attribute__((always_inline)) uint64_t spin_lanes16(uint64_t us)
{
	lanes16 r0 = LANES16_FROM(0), r1 = LANES16_FROM(16), r2 = LANES16_FROM(32);
	lanes16 r3 = LANES16_FROM(48), r4 = LANES16_FROM(64), r5 = LANES16_FROM(80);
	lanes16 r6 = LANES16_FROM(96), r7 = LANES16_FROM(112);
	uint64_t steps = us * SPIN_STEPS_PER_US, sum = 0;

	for (uint64_t i = 0; i < steps; i++) {
		STEP(r0), STEP(r1), STEP(r2), STEP(r3);
		STEP(r4), STEP(r5), STEP(r6), STEP(r7);
	}
	FOLD(sum, r0, 16);
	FOLD(sum, r1, 16);
	FOLD(sum, r2, 16);
	FOLD(sum, r3, 16);
	FOLD(sum, r4, 16);
	FOLD(sum, r5, 16);
	FOLD(sum, r6, 16);
	FOLD(sum, r7, 16);
	return sum;
}

__attribute__((target("avx512f"))) static uint64_t spin_zmm(uint64_t us)
{
	return spin_lanes16(us);
}

static uint64_t spin_generic(uint64_t us)
{
	return spin_lanes16(us);
}

/* The same 128 lanes in sixteen vectors of 8: GCC keeps the two constants
 * and thirteen of them in YMM registers, three on the stack.  GCC 12 does
 * not split the 64-byte vectors above into YMM halves
 * for AVX2: it kept them in memory, and a 10 µs /spin took 150 µs on a
 * Zen 3 EPYC (no AVX-512). */
__attribute__((target("avx2"))) static uint64_t spin_ymm(uint64_t us)
{
	lanes8 a0 = LANES8_FROM(0), a1 = LANES8_FROM(8), a2 = LANES8_FROM(16);
	lanes8 a3 = LANES8_FROM(24), a4 = LANES8_FROM(32), a5 = LANES8_FROM(40);
	lanes8 a6 = LANES8_FROM(48), a7 = LANES8_FROM(56), a8 = LANES8_FROM(64);
	lanes8 a9 = LANES8_FROM(72), a10 = LANES8_FROM(80), a11 = LANES8_FROM(88);
	lanes8 a12 = LANES8_FROM(96), a13 = LANES8_FROM(104), a14 = LANES8_FROM(112);
	lanes8 a15 = LANES8_FROM(120);
	uint64_t steps = us * SPIN_STEPS_PER_US, sum = 0;

	for (uint64_t i = 0; i < steps; i++) {
		STEP(a0), STEP(a1), STEP(a2), STEP(a3), STEP(a4), STEP(a5), STEP(a6), STEP(a7);
		STEP(a8), STEP(a9), STEP(a10), STEP(a11), STEP(a12), STEP(a13), STEP(a14);
		STEP(a15);
	}
	FOLD(sum, a0, 8);
	FOLD(sum, a1, 8);
	FOLD(sum, a2, 8);
	FOLD(sum, a3, 8);
	FOLD(sum, a4, 8);
	FOLD(sum, a5, 8);
	FOLD(sum, a6, 8);
	FOLD(sum, a7, 8);
	FOLD(sum, a8, 8);
	FOLD(sum, a9, 8);
	FOLD(sum, a10, 8);
	FOLD(sum, a11, 8);
	FOLD(sum, a12, 8);
	FOLD(sum, a13, 8);
	FOLD(sum, a14, 8);
	FOLD(sum, a15, 8);
	return sum;
}

/* __builtin_cpu_supports checks XCR0 as well as CPUID: a kernel that does
 * not save ZMM state gets the AVX2 path. */
uint64_t spin_work(uint64_t us)
{
	if (__builtin_cpu_supports("avx512f"))
		return spin_zmm(us);
	if (__builtin_cpu_supports("avx2"))
		return spin_ymm(us);
	return spin_generic(us);
}

int spin_work_on(const char *isa, uint64_t us, uint64_t *sum)
{
	if (!strcmp(isa, "avx512f") && __builtin_cpu_supports("avx512f"))
		*sum = spin_zmm(us);
	else if (!strcmp(isa, "avx2") && __builtin_cpu_supports("avx2"))
		*sum = spin_ymm(us);
	else if (!strcmp(isa, "generic"))
		*sum = spin_generic(us);
	else
		return -1;
	return 0;
}
