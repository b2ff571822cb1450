/*
 * fiber_nofp.c - the timed fiber loops of `xfiber bench`.
 *
 * WARNING: built -mgeneral-regs-only.  Between xf_bench_touch() and the
 * switch nothing here may touch a vector register, so each switch carries
 * exactly the state the row names.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "bench/fiber.h"
#include "bench/state.h"
#include "bench/syscall.h"
#include "common/tsc.h"

#define SYS_rt_tgsigqueueinfo 297

/* Both fibers run this loop, as both goroutines of Go's Gosched ping-pong
 * run one function: each xf_yield then returns to the call site it was
 * called from, which the CPU's return stack predicts.  Two different loops
 * would mispredict that return at every switch (~6 ns here; see
 * minswitch_x86_64_sysv_elf_gas.S). */
__attribute__((noinline)) uint64_t xf_fb_yield_loop(struct xf_fb_pair *pp)
{
	const uint64_t n = pp->n;
	const unsigned classes = pp->classes;
	uint64_t t0 = xf_tsc_read();

	/* In registers, not read back from *pp after every call: the loop
	 * costs what the yardstick's costs (a count and a branch). */
	if (!classes) {
		for (uint64_t i = 0; i < n; i++)
			xf_yield();
	} else {
		for (uint64_t i = 0; i < n; i++) {
			xf_yield();
			xf_bench_touch(pp->regs, classes);
		}
	}
	return xf_tsc_read() - t0;
}

void *xf_fb_yield_partner(void *arg)
{
	xf_fb_yield_loop(arg);
	return NULL;
}

/* Its own loop: every switch between it and xf_fb_yield_loop returns to a
 * call site the switch did not come from, and mispredicts that return, as
 * the asm-minimal-2sites yardstick does (and as fibers that yield from
 * different places do). */
void *xf_fb_yield_partner_elsewhere(void *arg)
{
	const struct xf_fb_pair *pp = arg;

	for (uint64_t i = 0; i < pp->n; i++)
		xf_yield();
	return NULL;
}

void *xf_fb_chan_partner(void *arg)
{
	struct xf_fb_pair *pp = arg;
	uint64_t v;

	for (uint64_t i = 0; i < pp->n; i++) {
		if (xf_chan_recv(pp->ping, &v))
			break;
		xf_bench_touch(pp->regs, pp->classes);
		if (xf_chan_send(pp->pong, &v))
			break;
	}
	return NULL;
}

uint64_t xf_fb_chan_loop(struct xf_fb_pair *pp)
{
	uint64_t t0 = xf_tsc_read(), v = 0;

	for (uint64_t i = 0; i < pp->n; i++) {
		if (xf_chan_send(pp->ping, &v) || xf_chan_recv(pp->pong, &v))
			break;
		xf_bench_touch(pp->regs, pp->classes);
	}
	return xf_tsc_read() - t0;
}

/* Sent as the runtime's ticker sends preemption signals, SI_QUEUE with a
 * value; the bare signals it is compared with are sent the same way. */
static void signal_self(const struct xf_fb_pair *pp)
{
	xf_bench_sys(SYS_rt_tgsigqueueinfo, pp->pid, pp->tid, pp->sig, (long)pp->siginfo);
}

/* Dirties the row's state before a preemption; with release_tiles, the
 * tiles were used and are given back, as xfiber does at a voluntary switch
 * (what the kernel's frame then skips is the row's point). */
static inline void dirty(const struct xf_fb_pair *pp)
{
	xf_bench_touch(pp->regs, pp->classes);
	if (pp->release_tiles)
		xf_xstate_release_tiles();
}

void *xf_fb_signal_partner(void *arg)
{
	struct xf_fb_pair *pp = arg;

	for (uint64_t i = 0; i < pp->n; i++) {
		dirty(pp);
		signal_self(pp);
	}
	return NULL;
}

uint64_t xf_fb_signal_loop(struct xf_fb_pair *pp)
{
	uint64_t t0 = xf_tsc_read();

	for (uint64_t i = 0; i < pp->n; i++) {
		dirty(pp);
		signal_self(pp);
	}
	return xf_tsc_read() - t0;
}
