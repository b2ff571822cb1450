/*
 * ctx_go.c - the Go rows of `xfiber bench ctx`: goroutine switches
 * with GOMAXPROCS=1, by runtime.Gosched and by an unbuffered channel, from
 * the program in bench/go (built with the tool when go is found).  Each run
 * is followed by xfiber's yield or channel ping-pong with as many round
 * trips, and the ratio of the two is the run's verdict (x_xfiber).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "bench/ctx.h"
#include "bench/fiber.h"
#include "bench/go.h"

/* .test of a Go row. */
enum { GO_GOSCHED, GO_CHAN };

static int go_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const char *mode = p->test == GO_GOSCHED ? "gosched" : "chan";
	unsigned long long switches;
	double ns, fiber;
	int err = xf_bench_go_run(mode, iters, &switches, &ns, s->note, sizeof(s->note));

	if (err)
		return err;
	s->value = (double)switches * 1e9 / ns;
	s->elapsed_ns = ns;
	xf_bench_sample_extra(s, "ns_per_switch", ns / (double)switches);
	/* xfiber's equivalent right after, so the ratio is side by side. */
	fiber = xf_fb_pingpong_ns_per_switch(p, p->test == GO_CHAN, iters);
	if (fiber <= 0) {
		snprintf(s->note, sizeof(s->note), "%.1f ns/switch, GOMAXPROCS=1",
			 ns / (double)switches);
		return 0;
	}
	snprintf(s->note, sizeof(s->note),
		 "%.1f ns/switch, GOMAXPROCS=1; xfiber's %s %.1f ns right after: %.2fx faster",
		 ns / (double)switches, p->test == GO_CHAN ? "channel" : "yield", fiber,
		 ns / (double)switches / fiber);
	xf_bench_sample_extra(s, "xfiber_ns_per_switch", fiber);
	xf_bench_sample_extra(s, "x_xfiber", ns / (double)switches / fiber);
	return 0;
}

static int plan_go(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		   size_t err_size)
{
	struct xf_bench_params p = {.ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};
	const char *skip = xf_bench_go_missing();

	(void)err;
	(void)err_size;
	if (!xf_ctx_peer_wanted(o, XF_PEER_GO))
		return 0;
	/* Go code cannot be told to dirty AVX-512 and the like: only the none rows. */
	if (!(xf_bench_states_wanted(o) & (1u << XF_STATE_NONE)))
		return 0;
	for (int t = GO_GOSCHED; t <= GO_CHAN; t++) {
		struct xf_bench_row *row;
		p.test = t;
		row = xf_bench_plan_add(plan, &p, go_run, "go/%s",
					t == GO_GOSCHED ? "gosched" : "chan");
		if (row && skip) {
			snprintf(row->skip, sizeof(row->skip), "%s", skip);
			break;
		}
	}
	return 0;
}

XF_BENCH_VARIANT(go_variant) = {
    .workload = "ctx",
    .name = "go",
    .kind = "peer",
    .order = 70,
    .plan = plan_go,
};
