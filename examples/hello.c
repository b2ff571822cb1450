/* hello.c - the README's example: fibers, a channel, and preemption. */
#include <stdint.h>
#include <stdio.h>
#include <xfiber.h>

static xf_chan *results;

/* CPU-bound and never yielding: only preemption lets the others run. */
static void *count_primes(void *arg)
{
	uint64_t limit = (uintptr_t)arg, found = 0;

	for (uint64_t n = 2; n < limit; n++) {
		uint64_t d = 2;
		while (d * d <= n && n % d)
			d++;
		found += d * d > n;
	}
	xf_chan_send(results, &found);
	return NULL;
}

int main(void)
{
	xf_fiber *f[4];
	xf_stats st;

	xf_init(&(xf_config){.workers = 1, .slice_us = 1000});
	xf_chan_create(&results, sizeof(uint64_t), 4);
	for (int i = 0; i < 4; i++)
		xf_spawn(&f[i], count_primes, (void *)(uintptr_t)(200000 * (i + 1)), NULL);
	for (int i = 0; i < 4; i++) {
		uint64_t found;
		xf_chan_recv(results, &found);
		printf("a fiber found %llu primes\n", (unsigned long long)found);
	}
	for (int i = 0; i < 4; i++)
		xf_join(f[i], NULL);
	xf_stats_get(&st);
	printf("%llu preemptions, %llu resumed straight from their signal frame, %llu XSAVEs\n",
	       (unsigned long long)st.total.preemptions,
	       (unsigned long long)st.total.state_copies_avoided,
	       (unsigned long long)st.total.xsaves);
	xf_chan_destroy(results);
	return xf_shutdown();
}
