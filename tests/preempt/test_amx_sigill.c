/*
 * test_amx_sigill.c - a fiber that uses tiles without permission dies of
 * SIGILL with a message naming the fiber and what to set; on a CPU without
 * AMX the message says so instead.
 *
 * What faults, as Linux has it: only an instruction that touches tile data
 * (XTILEDATA, feature 18, the one dynamic feature, armed in XFD until
 * ARCH_REQ_XCOMP_PERM).  TILECFG (feature 17) is permitted from the start
 * (ARCH_GET_XCOMP_PERM reports 0x200e7 on such a machine), so LDTILECFG
 * alone runs fine; the kernel's #NM handler answers the XFD fault of a task
 * without permission with SIGILL, ILL_ILLOPC (arch/x86/kernel/traps.c,
 * handle_xfd_event(); selftests/x86/amx.c, handle_noperm(), which loads
 * tile data with XRSTOR to provoke it).  So the fiber configures the tiles,
 * then zeroes one: TILEZERO is the instruction that must die.  Without AMX
 * at all, LDTILECFG itself is undefined (#UD, SIGILL).
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static void *use_tiles(void *arg)
{
	/* Palette 1, tile 0: 16 rows of 64 bytes, a tile TILEZERO may use. */
	static const unsigned char cfg[64]
	    __attribute__((aligned(64))) = {[0] = 1, [16] = 64, [48] = 16};

	(void)arg;
	__asm__ volatile("ldtilecfg %0" ::"m"(cfg)); /* allowed: TILECFG needs no permission */
	__asm__ volatile("tilezero %%tmm0" ::: "memory"); /* tile data: SIGILL */
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
	char out[16384]; /* under qemu (make check-cpus) its warnings come first */
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
