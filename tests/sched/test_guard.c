/*
 * test_guard.c - the stack guards on kernels without MADV_GUARD_INSTALL
 * (before 6.13), forced here with XFIBER_STACK_GUARD=mprotect.
 *
 * usage: test_guard CASE
 *   limit  guarded by mprotect, each stack costs two memory mappings:
 *          parked fibers are spawned until xf_spawn fails, which must be
 *          ENOMEM, near vm.max_map_count / 2 fibers, with a message on
 *          stderr naming vm.max_map_count and xf_config.no_stack_guards
 *   off    the same kernel path with xf_config.no_stack_guards: 100,000
 *          parked fibers
 *   env    XFIBER_STACK_GUARD=sideways: xf_init fails with EINVAL and says
 *          which values it takes
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testlib.h"
#include "xfiber.h"

static xf_sem gate;

static void *parked(void *arg)
{
	CHECK_ERR(xf_sem_wait(&gate), 0);
	return arg;
}

/* Spawns parked fibers until max or a failure; returns how many, with the
 * failure's errno in *err (0 if none), then lets them all finish. */
static int spawn_parked(int max, int *err)
{
	xf_fiber **f = calloc((size_t)max, sizeof(*f));
	int n = 0;

	CHECK(f);
	*err = 0;
	while (n < max && !(*err = xf_spawn(&f[n], parked, NULL, NULL)))
		n++;
	for (int i = 0; i < n; i++)
		CHECK_ERR(xf_sem_post(&gate), 0);
	for (int i = 0; i < n; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	free(f);
	return n;
}

static void child_limit(void)
{
	int n, err;

	setenv("XFIBER_STACK_GUARD", "mprotect", 1);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	CHECK_ERR(xf_sem_init(&gate, 0), 0);
	n = spawn_parked(200000, &err);
	fprintf(stderr, "spawned=%d, then %s\n", n, strerrorname_np(err));
	CHECK_ERR(xf_shutdown(), 0);
	exit(err == ENOMEM ? 0 : 1);
}

static void test_limit(void)
{
	char out[16384]; /* under qemu (make check-cpus) its warnings come first */
	long limit = 0;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	int status, n;

	if (f) {
		if (fscanf(f, "%ld", &limit) != 1)
			limit = 0;
		fclose(f);
	}
	if (limit <= 0 || limit > 150000)
		xf_test_skip("vm.max_map_count is %ld: the limit is out of this test's reach", limit);
	status = xf_test_run_child(child_limit, out, sizeof(out));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		xf_test_fail("limit: spawning did not end in ENOMEM (status 0x%x): %s", status, out);
	if (!strstr(out, "vm.max_map_count") || !strstr(out, "no_stack_guards"))
		xf_test_fail("limit: ENOMEM without the message that says why: %s", out);
	n = strstr(out, "spawned=") ? atoi(strstr(out, "spawned=") + 8) : -1;
	if (n < limit / 2 - 1000 || n > limit / 2 + 1000)
		xf_test_fail("limit: %d fibers with %ld mappings allowed, not about half", n, limit);
	printf("limit: %s", out);
}

static void test_off(void)
{
	int n, err;

	setenv("XFIBER_STACK_GUARD", "mprotect", 1);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .no_stack_guards = true}), 0);
	CHECK_ERR(xf_sem_init(&gate, 0), 0);
	n = spawn_parked(100000, &err);
	if (err)
		xf_test_fail("off: %s after %d fibers without guards", strerrorname_np(err), n);
	CHECK_ERR(xf_shutdown(), 0);
	printf("off: 100,000 parked fibers without guards\n");
}

static void child_env(void)
{
	setenv("XFIBER_STACK_GUARD", "sideways", 1);
	exit(xf_init(NULL) == EINVAL ? 0 : 1);
}

static void test_env(void)
{
	char out[16384];
	int status = xf_test_run_child(child_env, out, sizeof(out));

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !strstr(out, "madvise, mprotect or none"))
		xf_test_fail("env: a bad XFIBER_STACK_GUARD was not refused with a message "
			     "(status 0x%x): %s",
			     status, out);
	printf("env: %s", out);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		xf_test_fail("usage: test_guard limit|off|env");
	if (!strcmp(argv[1], "limit"))
		test_limit();
	else if (!strcmp(argv[1], "off"))
		test_off();
	else if (!strcmp(argv[1], "env"))
		test_env();
	else
		xf_test_fail("unknown case %s", argv[1]);
	return 0;
}
