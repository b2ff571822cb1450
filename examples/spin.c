/* spin.c - /spin's work (spin.h): vector registers live for its whole run,
 * so that a preemption in the middle must keep them. */
#include "spin.h"

/* 16 lanes of 32 bits: one ZMM register with AVX-512F.  GCC's vector
 * extension compiles the same code for each target below, so all give the
 * same checksum. */
typedef uint32_t lanes __attribute__((vector_size(64)));

#define LCG_MUL 1664525u
#define LCG_ADD 1013904223u

/* Each register starts with distinct lanes: base+1 .. base+16. */
#define LANES_FROM(base)                                                                           \
	((lanes){base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7, base + 8,    \
		 base + 9, base + 10, base + 11, base + 12, base + 13, base + 14, base + 15,        \
		 base + 16})
#define STEP(r) ((r) = (r)*LCG_MUL + LCG_ADD)
#define FOLD(sum, r)                                                                               \
	do {                                                                                       \
		for (int j_ = 0; j_ < 16; j_++)                                                    \
			(sum) = (sum)*31 + (r)[j_];                                                \
	} while (0)

/* Eight independent chains: the multiplier's latency is hidden, and eight
 * ZMM registers (plus the two constants) stay live across the loop. */
__attribute__((target_clones("avx512f", "avx2", "default"))) uint64_t spin_work(uint64_t us)
{
	lanes r0 = LANES_FROM(0), r1 = LANES_FROM(16), r2 = LANES_FROM(32), r3 = LANES_FROM(48);
	lanes r4 = LANES_FROM(64), r5 = LANES_FROM(80), r6 = LANES_FROM(96), r7 = LANES_FROM(112);
	uint64_t steps = us * SPIN_STEPS_PER_US, sum = 0;

	for (uint64_t i = 0; i < steps; i++) {
		STEP(r0), STEP(r1), STEP(r2), STEP(r3);
		STEP(r4), STEP(r5), STEP(r6), STEP(r7);
	}
	FOLD(sum, r0);
	FOLD(sum, r1);
	FOLD(sum, r2);
	FOLD(sum, r3);
	FOLD(sum, r4);
	FOLD(sum, r5);
	FOLD(sum, r6);
	FOLD(sum, r7);
	return sum;
}
