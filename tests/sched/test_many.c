/*
 * test_many.c - N fibers (default 100,000) alive at once, all parked on one
 * condition, then released and joined.  Prints the RSS it took.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "xfiber.h"

static xf_mutex lock = XF_MUTEX_INITIALIZER;
static xf_cond go = XF_COND_INITIALIZER;
static bool released;
static atomic_uint parked, finished;

static void *park(void *arg)
{
	CHECK_ERR(xf_mutex_lock(&lock), 0);
	atomic_fetch_add(&parked, 1);
	while (!released)
		CHECK_ERR(xf_cond_wait(&go, &lock), 0);
	CHECK_ERR(xf_mutex_unlock(&lock), 0);
	atomic_fetch_add(&finished, 1);
	return arg;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	}
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 100000;
	xf_fiber **fibers = calloc(n, sizeof(*fibers));
	long rss0 = rss_kb();

	CHECK(fibers);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	for (unsigned i = 0; i < n; i++) {
		int err = xf_spawn(&fibers[i], park, (void *)(uintptr_t)i, NULL);
		if (err)
			xf_test_fail("spawn %u of %u: %s", i, n, xf_test_errname(err));
	}
	while (atomic_load(&parked) < n)
		xf_sleep_ns(1000000);
	printf("%u fibers parked, RSS grew by %ld MiB\n", n, (rss_kb() - rss0) / 1024);
	CHECK(atomic_load(&finished) == 0);
	CHECK_ERR(xf_mutex_lock(&lock), 0);
	released = true;
	CHECK_ERR(xf_cond_broadcast(&go), 0);
	CHECK_ERR(xf_mutex_unlock(&lock), 0);
	for (unsigned i = 0; i < n; i++) {
		void *r;
		CHECK_ERR(xf_join(fibers[i], &r), 0);
		CHECK(r == (void *)(uintptr_t)i);
	}
	CHECK(atomic_load(&finished) == n);
	CHECK_ERR(xf_shutdown(), 0);
	free(fibers);
	printf("%u fibers alive at once, all joined\n", n);
	return 0;
}
