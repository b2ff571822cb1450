/*
 * test_memory.c - the runtime's memory stays bounded and goes back.
 *
 * usage: test_memory CASE
 *   acceptor  a fiber on worker 0 spawns 5 rounds of 20,000 short detached
 *             fibers pinned to worker 1, at most 32 alive at a time: after
 *             the first round no more stacks or fiber structures are made
 *             (worker 1's caches are bounded and hand what they free back,
 *             where worker 0 finds it)
 *   scavenge  5,000 fibers alive at once, then all joined: the stacks they
 *             leave in the shared pool give their pages back within a few
 *             seconds (the scavenger), and the next burst reuses them
 *             instead of making new ones
 *   sized     bursts of 5,000 fibers of four stack sizes other than the
 *             default, under mprotect guards (two mappings a stack): the
 *             pools keep 64 stacks a size and the scavenger unmaps those
 *             nobody reuses, so the process's mappings come back to where
 *             they were (pools that kept every stack ran out of
 *             vm.max_map_count)
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "xfiber.h"

static xf_sem slots;

static void *short_job(void *arg)
{
	volatile unsigned x = 0;

	for (int i = 0; i < 100; i++)
		x++;
	CHECK_ERR(xf_sem_post(&slots), 0);
	return arg;
}

static void stats(xf_stats *st)
{
	CHECK_ERR(xf_stats_get(st), 0);
}

static void test_acceptor(void)
{
	xf_attr on1 = XF_ATTR_INIT;
	xf_stats st;
	uint64_t stacks0 = 0, fibers0 = 0;

	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	CHECK_ERR(xf_sem_init(&slots, 32), 0);
	on1.detached = true;
	on1.pinned = true;
	on1.worker = 1;
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 20000; i++) {
			CHECK_ERR(xf_sem_wait(&slots), 0);
			CHECK_ERR(xf_spawn(NULL, short_job, NULL, &on1), 0);
		}
		for (int i = 0; i < 32; i++) /* every job of the round has ended */
			CHECK_ERR(xf_sem_wait(&slots), 0);
		for (int i = 0; i < 32; i++)
			CHECK_ERR(xf_sem_post(&slots), 0);
		stats(&st);
		printf("round %d: %llu stacks and %llu fiber structures made\n", round,
		       (unsigned long long)st.stacks_made, (unsigned long long)st.fibers_made);
		if (round == 0) {
			stacks0 = st.stacks_made;
			fibers0 = st.fibers_made;
		}
	}
	/* Up to one more batch of each may be in flight between the caches. */
	if (st.stacks_made > stacks0 + 64 || st.fibers_made > fibers0 + 256)
		xf_test_fail("spawns on worker 0 that end on worker 1 kept making memory: "
			     "%llu stacks and %llu fibers after round 1, %llu and %llu after 5",
			     (unsigned long long)stacks0, (unsigned long long)fibers0,
			     (unsigned long long)st.stacks_made, (unsigned long long)st.fibers_made);
	CHECK_ERR(xf_shutdown(), 0);
}

#define BURST 5000

static xf_sem gate;

static void *waits_at_gate(void *arg)
{
	CHECK_ERR(xf_sem_wait(&gate), 0);
	return arg;
}

static void burst(xf_fiber **f)
{
	for (int i = 0; i < BURST; i++)
		CHECK_ERR(xf_spawn(&f[i], waits_at_gate, NULL, NULL), 0);
	xf_yield(); /* they all run, and wait */
	for (int i = 0; i < BURST; i++)
		CHECK_ERR(xf_sem_post(&gate), 0);
	for (int i = 0; i < BURST; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
}

static void test_scavenge(void)
{
	xf_fiber **f = calloc(BURST, sizeof(*f));
	xf_stats st;
	uint64_t made;
	int waited_ms = 0;

	CHECK(f);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	CHECK_ERR(xf_sem_init(&gate, 0), 0);
	burst(f);
	stats(&st);
	made = st.stacks_made;
	printf("after the burst: %llu stacks made, %llu pooled with their pages\n",
	       (unsigned long long)made, (unsigned long long)st.stacks_pooled_warm);
	if (st.stacks_pooled_warm < BURST / 2)
		xf_test_fail("the burst's stacks did not go to the pool (%llu there)",
			     (unsigned long long)st.stacks_pooled_warm);
	/* The scavenger ages the pool once a second: two passes at most. */
	while (st.stacks_pooled_warm && waited_ms < 20000) {
		xf_sleep_ns(100 * 1000 * 1000);
		waited_ms += 100;
		stats(&st);
	}
	printf("after %d ms: %llu pooled with their pages, %llu scavenged\n", waited_ms,
	       (unsigned long long)st.stacks_pooled_warm, (unsigned long long)st.stacks_scavenged);
	if (st.stacks_pooled_warm || st.stacks_scavenged < BURST / 2)
		xf_test_fail("the pooled stacks kept their pages for %d ms", waited_ms);
	burst(f);
	stats(&st);
	if (st.stacks_made != made)
		xf_test_fail("the second burst made %llu stacks instead of reusing the pool's",
			     (unsigned long long)(st.stacks_made - made));
	CHECK_ERR(xf_shutdown(), 0);
	free(f);
	printf("scavenge: the pool gave its pages back and was reused\n");
}

static long mappings(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	long n = 0;
	int c;

	CHECK(maps);
	while ((c = fgetc(maps)) != EOF)
		n += c == '\n';
	fclose(maps);
	return n;
}

static void test_sized(void)
{
	xf_fiber **f = calloc(BURST, sizeof(*f));
	long before, after = 0;
	int waited_ms = 0;

	CHECK(f);
	setenv("XFIBER_STACK_GUARD", "mprotect", 1);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	CHECK_ERR(xf_sem_init(&gate, 0), 0);
	before = mappings();
	for (int s = 0; s < 4; s++) {
		xf_attr attr = XF_ATTR_INIT;

		attr.stack_size = (32 + 16 * (size_t)s) * 1024;
		for (int i = 0; i < BURST; i++)
			CHECK_ERR(xf_spawn(&f[i], waits_at_gate, NULL, &attr), 0);
		for (int i = 0; i < BURST; i++)
			CHECK_ERR(xf_sem_post(&gate), 0);
		for (int i = 0; i < BURST; i++)
			CHECK_ERR(xf_join(f[i], NULL), 0);
	}
	/* What the pools keep: 64 stacks of each size, at most. */
	if (mappings() > before + 4 * 64 * 2 + 32)
		xf_test_fail("%ld mappings after 4 bursts of %d fibers, %ld before", mappings(),
			     BURST, before);
	/* The scavenger unmaps those nobody reused: two passes at most. */
	while (waited_ms < 20000 && (after = mappings()) > before + 32) {
		xf_sleep_ns(100 * 1000 * 1000);
		waited_ms += 100;
	}
	CHECK_ERR(xf_shutdown(), 0);
	free(f);
	if (after > before + 32)
		xf_test_fail("%ld mappings %d ms after the bursts, %ld before", after, waited_ms,
			     before);
	printf("sized: %ld mappings before, %ld %d ms after 4 bursts of %d fibers\n", before, after,
	       waited_ms, BURST);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		xf_test_fail("usage: test_memory acceptor|scavenge|sized");
	if (!strcmp(argv[1], "acceptor"))
		test_acceptor();
	else if (!strcmp(argv[1], "scavenge"))
		test_scavenge();
	else if (!strcmp(argv[1], "sized"))
		test_sized();
	else
		xf_test_fail("unknown case %s", argv[1]);
	return 0;
}
