/*
 * bench_ctx_go.c - the Go rows of `xfiber bench ctx`: goroutine switches
 * with GOMAXPROCS=1, by runtime.Gosched and by an unbuffered channel, from
 * the program in bench/go (built with the tool when go is found).  Each run
 * is followed by xfiber's yield or channel ping-pong with as many round
 * trips, and the ratio of the two is the run's verdict (x_xfiber).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_ctx.h"
#include "bench_fiber.h"
#include "bench_task.h"

/* .test of a Go row. */
enum { GO_GOSCHED, GO_CHAN };

#ifdef XF_BENCH_GO
static int go_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	char n[32], out[256];
	char *argv[] = {XF_BENCH_GO, "-mode", p->test == GO_GOSCHED ? "gosched" : "chan",
			"-n",	     n,	      NULL};
	char *env[] = {"GOMAXPROCS=1", NULL};
	unsigned long long switches = 0;
	size_t used = 0;
	double ns = 0, fiber;
	pid_t pid;
	int fd, err, status;
	ssize_t got;

	snprintf(n, sizeof(n), "%llu", (unsigned long long)iters);
	/* The child inherits this thread's pinning. */
	err = xf_bench_spawn(argv, env, &pid, &fd);
	if (err) {
		snprintf(s->note, sizeof(s->note), "cannot run %s: %s", XF_BENCH_GO, strerror(err));
		return err;
	}
	while (used + 1 < sizeof(out) &&
	       (got = read(fd, out + used, sizeof(out) - 1 - used)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		used += (size_t)got;
	}
	out[used] = 0;
	close(fd);
	status = xf_bench_spawn_wait(pid);
	if (status || sscanf(out, "%llu %lf", &switches, &ns) != 2 || ns <= 0) {
		snprintf(s->note, sizeof(s->note), "%s -mode %s failed (exit status %d)",
			 XF_BENCH_GO, argv[2], status);
		return EIO;
	}
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
#else
static int go_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	(void)p;
	(void)iters;
	snprintf(s->note, sizeof(s->note), "xfiber was built without Go");
	return ENOTSUP;
}
#endif

static int plan_go(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		   size_t err_size)
{
	struct xf_bench_params p = {.ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};
	const char *skip = NULL;

	(void)err;
	(void)err_size;
	if (!xf_ctx_peer_wanted(o, XF_PEER_GO))
		return 0;
	/* Go code cannot be told to dirty AVX-512 and the like: only the none rows. */
	if (!(xf_bench_states_wanted(o) & (1u << XF_STATE_NONE)))
		return 0;
#ifdef XF_BENCH_GO
	if (access(XF_BENCH_GO, X_OK))
		skip = "the Go peer " XF_BENCH_GO " is missing: rebuild xfiber";
#else
	skip = "Go was not found when xfiber was built: apt-get install golang-go "
	       "(or put go on PATH), then rebuild";
#endif
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
