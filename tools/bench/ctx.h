/*
 * ctx.h - the ping-pongs behind `xfiber bench ctx` and `pipe`: two
 * kernel tasks (threads or processes) handing control back and forth over a
 * pipe, a futex or sched_yield, dirtying their registers after every switch
 * as context_switch2 does; and the user-level peers timed against them.
 */
#ifndef XF_TOOLS_BENCH_CTX_H
#define XF_TOOLS_BENCH_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/bench.h"
#include "xfiber_internal.h"

/* Shared by the two sides; in MAP_SHARED memory so processes can use it. */
struct xf_ctx_shared {
	struct xf__regs regs[2]; /* what each side dirties with */
	int test;		 /* enum xf_ctx_test */
	bool process;		 /* futex: shared rather than private */
	bool libc;		 /* pipe through glibc, state untouched, as perf bench does */
	unsigned classes;	 /* XF_REGS_* to dirty; 0 = none */
	uint64_t iters;		 /* round trips side 0 makes */
	int a_to_b[2], b_to_a[2];
	uint32_t turn;	    /* futex word: 1 while side 1 has the turn */
	uint32_t ready;	    /* start barrier: sides arrived */
	uint32_t stop;	    /* yield: side 0 is done */
	uint64_t t0, t1;    /* TSC around side 0's loop */
	uint64_t xinuse[2]; /* XGETBV(1) when each side's loop ended */
	uint64_t csw[2];    /* kernel context switches of each side in its loop */
	int error[2];	    /* a failed system call's errno, per side */
};

/* One side of the ping-pong (ctx_nofp.c); 0, or 1 with error[side] set. */
int xf_ctx_side(struct xf_ctx_shared *sh, int side);

/* Runs n round trips of p's test between two tasks as p says (process,
 * cpus, state).  0 or an errno value, with a one-line reason in note. */
struct xf_ctx_result {
	double elapsed_ns; /* side 0's loop */
	uint64_t xinuse[2];
	uint64_t csw; /* kernel context switches of both sides, voluntary or not */
};

int xf_ctx_pingpong(const struct xf_bench_params *p, uint64_t n, struct xf_ctx_result *res,
		    char *note, size_t note_size);

const char *xf_ctx_test_name(int test);

/* Whether the options ask for a peer's rows (XF_PEER_*).  Peers run in the
 * calling thread, so only with one CPU and thread rows. */
bool xf_ctx_peer_wanted(const struct xf_bench_opts *o, unsigned peer);

/* The user-level peers' loops (ctx_nofp.c): n round trips between two
 * contexts of the calling thread, each dirtying classes from r after every
 * switch; TSC ticks. */
uint64_t xf_ctx_swapcontext_loop(const struct xf__regs *r, unsigned classes, uint64_t n,
				 void *stack, size_t stack_size);
uint64_t xf_ctx_fcontext_loop(const struct xf__regs *r, unsigned classes, uint64_t n, void *stack,
			      size_t stack_size);

#endif
