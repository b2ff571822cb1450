/*
 * test_amx_sigill.c - a fiber that uses tiles without permission dies of
 * SIGILL with a message naming the fiber and what to set; on a CPU without
 * AMX the message says so instead.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static void *use_tiles(void *arg)
{
	static const unsigned char cfg[64] __attribute__((aligned(64))) = {1};

	(void)arg;
	__asm__ volatile("ldtilecfg %0" ::"m"(cfg));
	return NULL;
}

static void child(void)
{
	xf_fiber *f;

	xf_init(&(xf_config){.workers = 1}); /* no .amx */
	xf_spawn(&f, use_tiles, NULL, NULL);
	xf_join(f, NULL);
}

int main(void)
{
	char out[1024];
	int status = xf_test_run_child(child, out, sizeof(out));

	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGILL)
		xf_test_fail("child did not die of SIGILL (status 0x%x): %s", status, out);
	if (!strstr(out, "xfiber: fiber 2 used AMX tiles without permission: set xf_config.amx") &&
	    !strstr(out,
		    "xfiber: fiber 2 used an AMX instruction, but this CPU or kernel has no AMX"))
		xf_test_fail("no AMX report; stderr was: %s", out);
	printf("reported: %s", out);
	return 0;
}
