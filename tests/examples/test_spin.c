/* test_spin.c - /spin's work (examples/spin.c) gives the same checksum on
 * every path the CPU has: AVX-512F, AVX2 and plain C, against a scalar
 * reference written here lane by lane, as the Go peer's fallback is.  The
 * servers' answers are compared with spin_work, so a path that drifted
 * would make the bench's warm-up reject a peer on some CPUs only. */
#include <stdint.h>
#include <stdio.h>

#include "spin.h"

static uint64_t reference(uint64_t us)
{
	uint32_t lanes[128];
	uint64_t sum = 0;

	for (unsigned i = 0; i < 128; i++)
		lanes[i] = i + 1;
	for (uint64_t s = 0; s < us * SPIN_STEPS_PER_US; s++)
		for (unsigned i = 0; i < 128; i++)
			lanes[i] = lanes[i] * 1664525u + 1013904223u;
	for (unsigned i = 0; i < 128; i++)
		sum = sum * 31 + lanes[i];
	return sum;
}

int main(void)
{
	static const char *const isas[] = {"avx512f", "avx2", "generic"};
	static const uint64_t us[] = {0, 1, 10, 37};
	int failed = 0, ran = 0;

	for (unsigned u = 0; u < sizeof(us) / sizeof(us[0]); u++) {
		uint64_t want = reference(us[u]), got;

		if (spin_work(us[u]) != want) {
			printf("spin_work(%llu): %016llx, expected %016llx\n",
			       (unsigned long long)us[u], (unsigned long long)spin_work(us[u]),
			       (unsigned long long)want);
			failed = 1;
		}
		for (unsigned i = 0; i < sizeof(isas) / sizeof(isas[0]); i++) {
			if (spin_work_on(isas[i], us[u], &got)) {
				if (!u)
					printf("%s: not on this CPU, skipped\n", isas[i]);
				continue;
			}
			ran++;
			if (got != want) {
				printf("%s, %llu us: %016llx, expected %016llx\n", isas[i],
				       (unsigned long long)us[u], (unsigned long long)got,
				       (unsigned long long)want);
				failed = 1;
			}
		}
	}
	if (!ran) {
		printf("no path ran\n");
		failed = 1;
	}
	if (!failed)
		printf("ok: %d checksums agree\n", ran);
	return failed;
}
