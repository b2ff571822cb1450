/*
 * ctx_peers.c - the user-level peers in `xfiber bench ctx`: glibc
 * swapcontext and Boost.Context's jump_fcontext ping-pongs in one thread,
 * dirtying the registers after every switch like the kernel rows.  Neither
 * saves vector state, which is the point of comparing them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/ctx.h"
#include "common/tsc.h"

#define PEER_STACK (64 * 1024)

/* Which loop a row runs: .test holds one of these. */
enum { PEER_SWAPCONTEXT, PEER_FCONTEXT };

static int peer_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	struct xf__regs *regs = xf_bench_regs_new(0x9ee4 + p->state);
	void *stack = aligned_alloc(64, PEER_STACK);
	uint64_t ticks = 0;
	double ns;

	if (!regs || !stack) {
		free(regs);
		free(stack);
		return ENOMEM;
	}
	if (p->test == PEER_SWAPCONTEXT)
		ticks = xf_ctx_swapcontext_loop(regs, xf_bench_state_classes(p->state), iters,
						stack, PEER_STACK);
#ifdef XF_HAVE_BOOST_CONTEXT
	else
		ticks = xf_ctx_fcontext_loop(regs, xf_bench_state_classes(p->state), iters, stack,
					     PEER_STACK);
#endif
	free(regs);
	free(stack);
	ns = (double)ticks * xf_tsc_ns_per_tick();
	s->value = ns > 0 ? 2.0 * (double)iters * 1e9 / ns : 0;
	s->elapsed_ns = ns;
	snprintf(s->note, sizeof(s->note), "%.1f ns/switch; %s", ns / (2.0 * (double)iters),
		 p->test == PEER_SWAPCONTEXT ? "one thread, a signal-mask system call per switch"
					     : "a bare jump: no run queue, nothing scheduled");
	xf_bench_sample_extra(s, "ns_per_switch", ns / (2.0 * (double)iters));
	return 0;
}

static void add_peer_rows(const struct xf_bench_opts *o, struct xf_bench_plan *plan, int which,
			  const char *skip)
{
	const unsigned states = xf_bench_states_wanted(o);
	struct xf_bench_params p = {.test = which, .ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};

	for (int st = 0; st < XF_STATE_N; st++) {
		struct xf_bench_row *row;
		if (!(states & (1u << st)))
			continue;
		p.state = st;
		row = xf_bench_plan_add(plan, &p, peer_run, "%s/%s", plan->variant->name,
					xf_bench_state_name(st));
		if (row && skip)
			snprintf(row->skip, sizeof(row->skip), "%s", skip);
		/* One row says it is missing; more would repeat it. */
		if (skip)
			break;
	}
}

static int plan_swapcontext(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			    size_t err_size)
{
	(void)err;
	(void)err_size;
	if (xf_ctx_peer_wanted(o, XF_PEER_SWAPCONTEXT))
		add_peer_rows(o, plan, PEER_SWAPCONTEXT, NULL);
	return 0;
}

XF_BENCH_VARIANT(swapcontext_variant) = {
    .workload = "ctx",
    .name = "swapcontext",
    .kind = "peer",
    .order = 50,
    .plan = plan_swapcontext,
};

static int plan_fcontext(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			 size_t err_size)
{
#ifdef XF_HAVE_BOOST_CONTEXT
	const char *skip = NULL;
#else
	const char *skip = "Boost.Context was not found when xfiber was built: "
			   "apt-get install libboost-context-dev, then rebuild";
#endif
	(void)err;
	(void)err_size;
	if (xf_ctx_peer_wanted(o, XF_PEER_BOOST))
		add_peer_rows(o, plan, PEER_FCONTEXT, skip);
	return 0;
}

XF_BENCH_VARIANT(fcontext_variant) = {
    .workload = "ctx",
    .name = "boost",
    .kind = "peer",
    .order = 60,
    .plan = plan_fcontext,
};
