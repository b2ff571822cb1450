/*
 * workload.c - a known number of kernel context switches with a chosen
 * register state live, for `xfiber trace` to count.
 *
 * usage: trace_workload pingpong ROUNDS [none|clean|avx512|amx]
 *
 * Two threads pinned to one CPU pass a byte back and forth through two
 * pipes ROUNDS times; each blocks once per round trip, so each switches out
 * at least ROUNDS times.  Before the loop each thread puts its registers in
 * the chosen state, and after it checks (XINUSE) that the state stayed
 * live, so every save the kernel made in between carried it:
 *   none    whatever glibc left (typically 0xa2: SSE, opmask, Hi16_ZMM)
 *   clean   YMM/ZMM uppers, opmask and Hi16_ZMM back in init state
 *   avx512  random ZMM0-31 and k0-7
 *   amx     random TILECFG and TMM0-7 (asks the kernel for permission)
 * Nothing in the loop calls a libc function that uses vector registers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"
#include "xstate/regs.h"

enum state { STATE_NONE, STATE_CLEAN, STATE_AVX512, STATE_AMX };

static const char *const state_names[] = {"none", "clean", "avx512", "amx"};

static enum state state;
static long rounds;
static int to_worker[2], to_main[2];

/* Register bits that must be in use (want) or in init state (unwanted)
 * after the loop, for the chosen state. */
static void state_bits(uint64_t *want, uint64_t *unwanted)
{
	*want = 0;
	*unwanted = 0;
	if (state == STATE_CLEAN)
		*unwanted = XF_XFEATURE_MASK(XF_XFEATURE_YMM) | XF_XFEATURE_MASK_AVX512;
	else if (state == STATE_AVX512)
		*want = XF_XFEATURE_MASK_AVX512;
	else if (state == STATE_AMX)
		*want = XF_XFEATURE_MASK(XF_XFEATURE_XTILEDATA);
}

static void set_state(uint64_t seed)
{
	static __thread struct xf__regs regs;
	uint64_t xcr0_avx512;
	xf_xstate_info info;

	xf_xstate_info_get(&info);
	switch (state) {
	case STATE_NONE: break;
	case STATE_CLEAN:
		xf_xstate_vzeroupper();
		xcr0_avx512 = info.xcr0 & (XF_XFEATURE_MASK(XF_XFEATURE_OPMASK) |
					   XF_XFEATURE_MASK(XF_XFEATURE_HI16_ZMM));
		if (xcr0_avx512 && xf_xstate_init_components(xcr0_avx512))
			xf_test_fail("cannot put opmask/Hi16_ZMM into init state");
		break;
	case STATE_AVX512:
		xf__regs_randomize(&regs, seed);
		xf__regs_load(&regs, XF_REGS_AVX512 | XF_REGS_OPMASK);
		break;
	case STATE_AMX:
		xf__regs_randomize(&regs, seed);
		xf__regs_load(&regs, XF_REGS_AMX);
		break;
	}
}

/* Fails, after the loop, if the registers did not stay as set. */
static void check_state(const char *who)
{
	uint64_t want, unwanted, inuse = xf_xstate_inuse();

	state_bits(&want, &unwanted);
	if ((inuse & want) != want || (inuse & unwanted))
		xf_test_fail("%s thread: XINUSE 0x%llx after the loop; state %s needs 0x%llx set "
			     "and 0x%llx clear",
			     who, (unsigned long long)inuse, state_names[state],
			     (unsigned long long)want, (unsigned long long)unwanted);
}

static void *worker(void *arg)
{
	char byte;

	(void)arg;
	set_state(2);
	for (long i = 0; i < rounds; i++) {
		if (read(to_worker[0], &byte, 1) != 1 || write(to_main[1], &byte, 1) != 1)
			xf_test_fail("worker: pipe read/write failed");
	}
	check_state("worker");
	return NULL;
}

/* Both threads on one CPU, so every hand-over is a context switch there. */
static void pin_to_one_cpu(void)
{
	cpu_set_t allowed, one;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		xf_test_fail("sched_getaffinity failed");
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			xf_test_fail("sched_setaffinity failed");
		return;
	}
}

int main(int argc, char **argv)
{
	pthread_t thread;
	char byte = 'x';
	int err;

	if (argc < 3 || strcmp(argv[1], "pingpong") || (rounds = atol(argv[2])) <= 0)
		xf_test_fail("usage: trace_workload pingpong ROUNDS [none|clean|avx512|amx]");
	for (state = STATE_NONE; argc > 3 && state <= STATE_AMX; state++) {
		if (!strcmp(argv[3], state_names[state]))
			break;
	}
	if (state > STATE_AMX)
		xf_test_fail("unknown state '%s'", argv[3]);
	if (state == STATE_AVX512 && !(xf__regs_classes_available() & XF_REGS_AVX512))
		xf_test_skip("this CPU or kernel has no AVX-512");
	if (state == STATE_AMX) {
		err = xf_xstate_request_amx();
		if (err == ENOTSUP)
			xf_test_skip("this CPU or kernel has no AMX");
		if (err)
			xf_test_skip("the kernel refused AMX permission: %s", strerror(err));
	}
	pin_to_one_cpu();
	if (pipe(to_worker) || pipe(to_main))
		xf_test_fail("pipe failed");
	if (pthread_create(&thread, NULL, worker, NULL))
		xf_test_fail("pthread_create failed");
	set_state(1);
	for (long i = 0; i < rounds; i++) {
		if (write(to_worker[1], &byte, 1) != 1 || read(to_main[0], &byte, 1) != 1)
			xf_test_fail("main: pipe read/write failed");
	}
	check_state("main");
	pthread_join(thread, NULL);
	return 0;
}
