/*
 * fiber.h - xfiber's own rows in `xfiber bench`: fibers switching by
 * yield, by channel and by preemption, next to the kernel and the peers; and
 * the `fiber` workload's runtime costs (spawn, parked memory, signals,
 * preemption, its overhead).
 *
 * The timed loops live in fiber_nofp.c, general registers only, so
 * that between dirtying the registers and the switch nothing else touches
 * them.
 */
#ifndef XF_TOOLS_BENCH_FIBER_H
#define XF_TOOLS_BENCH_FIBER_H

#include <sched.h> /* cpu_set_t: _GNU_SOURCE before any header */
#include <stdbool.h>
#include <stdint.h>

#include "xfiber.h"
#include "xfiber_internal.h"

/* What the two sides of a fiber ping-pong share. */
struct xf_fb_pair {
	const struct xf__regs *regs;
	unsigned classes;
	uint64_t n;	      /* round trips (or signals) per side */
	xf_chan *ping, *pong; /* channel rows */
	int pid, tid;	      /* the worker's thread, for self-signals */
	int sig;
	const void *siginfo; /* what each self-signal carries (rt_tgsigqueueinfo) */
	bool release_tiles;  /* TILERELEASE after each dirtying: the tiles were used, and are dead */
};

/* Partner fibers (xf_spawn them with the pair as argument). */
void *xf_fb_yield_partner(void *pair);
/* The same ping-pong, switching from a call site of its own. */
void *xf_fb_yield_partner_elsewhere(void *pair);
void *xf_fb_chan_partner(void *pair);
void *xf_fb_signal_partner(void *pair);

/* The first fiber's side of each ping-pong; TSC ticks. */
uint64_t xf_fb_yield_loop(struct xf_fb_pair *pp);
uint64_t xf_fb_chan_loop(struct xf_fb_pair *pp);
/* n self-signals (raw rt_tgsigqueueinfo carrying pp->siginfo, so the
 * interrupted instruction is ours, not libc's), dirtying before each. */
uint64_t xf_fb_signal_loop(struct xf_fb_pair *pp);

struct xf_bench_params;
struct xf_bench_sample;

/* A row's runtime: xf_fb_start starts it with cfg, one worker (two for
 * two-CPU rows) pinned as p says - the calling thread is worker 0's first
 * fiber - and its ticker on the row's other CPU; xf_fb_stop adds the
 * runtime's counters to s's extras, shuts it down and restores the
 * thread's CPUs.  0 or an errno value, with one line in s->note. */
struct xf_fb_runtime {
	cpu_set_t saved;
};

int xf_fb_start(const struct xf_bench_params *p, xf_config cfg, struct xf_fb_runtime *rt,
		struct xf_bench_sample *s);
void xf_fb_stop(struct xf_fb_runtime *rt, struct xf_bench_sample *s);

/* For peers that set themselves against xfiber in the same run (the Go
 * rows): ns per switch of n round trips of a yield (chan false) or an
 * unbuffered channel ping-pong between two fibers on one worker, pinned as
 * p says, registers as p->state says; <= 0 if the runtime cannot start. */
double xf_fb_pingpong_ns_per_switch(const struct xf_bench_params *p, bool chan, uint64_t n);

/* The minimal assembly switch (minswitch_x86_64_sysv_elf_gas.S): n
 * round trips between two contexts saving only callee-saved GPRs, MXCSR
 * and the x87 control word, unconditionally, both switching from one call
 * site - or, two_sites, each from its own, so that every switch's return
 * is mispredicted; TSC ticks. */
uint64_t xf_fb_minimal_switch_loop(uint64_t n, void *stack, size_t stack_size, bool two_sites);

#endif
