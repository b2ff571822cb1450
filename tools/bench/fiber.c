/*
 * fiber.c - xfiber's rows in `xfiber bench` (see fiber.h).
 *
 *   ctx        fiber-yield, fiber-chan, fiber-preempt: switches/s between two
 *              fibers on one worker, dirtying after every switch like the
 *              kernel rows; asm-minimal: the least a switch must keep.
 *   pipe       fiber-chan: a channel ping-pong, usecs per round trip.
 *   messaging  fiber-chan: hackbench's groups as fibers over channels.
 *   fiber      the runtime's own costs, each against its yardstick measured
 *              in the same run: spawn+join, 100,000 parked fibers, a
 *              preemptive switch and a preemption tick against a bare
 *              signal round trip, the ticker's cost to a CPU-bound workload,
 *              what one preemption costs the preempted workload, how late
 *              a sleep and a byte on a socket wake a fiber beside a
 *              CPU-bound one (and the same with kernel threads).
 *
 * Every row starts the runtime with the calling thread pinned as the row
 * says (workers inherit it) and shuts it down again before returning.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/ctx.h"
#include "bench/fiber.h"
#include "bench/go.h"
#include "bench/state.h"
#include "bench/task.h"
#include "common/tsc.h"
#include "xfiber_internal.h"

#define MIN_STACK  (64 * 1024)
#define PARKED	   100000
#define CRUNCH_MIN (20u * 1000 * 1000)

/* Which measurement a row makes: xf_bench_params.test. */
enum {
	FB_YIELD,
	FB_CHAN,
	FB_PREEMPT,
	FB_MINIMAL,
	FB_MINIMAL_2SITES,
	FB_SPAWN_BURST,
	FB_SCALE_SPAWN,
	FB_SCALE_YIELD,
	FB_SCALE_CHAN,
	FB_PARKED,
	FB_SIGNAL_SWITCH,
	FB_SIGNAL_TICK,
	FB_CPU_OVERHEAD,
	FB_PREEMPT_COST,
	FB_YIELD_2SITES,
	FB_PTHREAD_LOCK,
	FB_SLEEP_LATE,
	FB_READY_LATE,
};

/* --- running a row inside the runtime --- */

int xf_fb_start(const struct xf_bench_params *p, xf_config cfg, struct xf_fb_runtime *rt,
		    struct xf_bench_sample *s)
{
	cpu_set_t set;
	int err;

	pthread_getaffinity_np(pthread_self(), sizeof(rt->saved), &rt->saved);
	cfg.workers = (unsigned)(p->ncpus > 1 ? 2 : 1);
	/* Workers and the ticker inherit this thread's CPUs.  On one-CPU rows
	 * the ticker gets another CPU of the process's, so that preemption
	 * signals come from there, as REFERENCE.md's costs assume; the worker
	 * (this thread) is pinned as the row says once the runtime runs. */
	CPU_ZERO(&set);
	if (p->ncpus == 1 && p->cpu[1] != p->cpu[0]) {
		CPU_SET(p->cpu[1], &set); /* the planner put the other CPU there */
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	err = xf_init(&cfg);
	if (err) {
		snprintf(s->note, sizeof(s->note), "xf_init: %s", strerror(err));
		return err;
	}
	CPU_ZERO(&set);
	CPU_SET(p->cpu[0], &set);
	if (p->ncpus > 1)
		CPU_SET(p->cpu[1], &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	return 0;
}

void xf_fb_stop(struct xf_fb_runtime *rt, struct xf_bench_sample *s)
{
	xf_stats st;

	if (xf_stats_get(&st) == 0) {
		/* Summed: some runs start and stop the runtime several times. */
		xf_bench_sample_extra_add(s, "switches", (double)st.total.switches);
		xf_bench_sample_extra_add(s, "preemptions", (double)st.total.preemptions);
		xf_bench_sample_extra_add(s, "xsaves",
					  (double)(st.total.xsaves + st.total.xrstors));
		if (st.total.poller_calls) {
			xf_bench_sample_extra_add(s, "io_waits", (double)st.total.io_waits);
			xf_bench_sample_extra_add(s, "poller_calls", (double)st.total.poller_calls);
			xf_bench_sample_extra_add(s, "io_events", (double)st.total.io_events);
		}
	}
	xf_shutdown();
	pthread_setaffinity_np(pthread_self(), sizeof(rt->saved), &rt->saved);
}

static double ticks_ns(uint64_t t)
{
	return (double)t * xf_tsc_ns_per_tick();
}

/* Two fibers ping-ponging n round trips; ns of the first fiber's loop. */
static double pingpong_ns(int kind, struct xf_fb_pair *pp)
{
	void *(*partner)(void *) = kind == FB_YIELD	     ? xf_fb_yield_partner
				   : kind == FB_YIELD_2SITES ? xf_fb_yield_partner_elsewhere
				   : kind == FB_CHAN	     ? xf_fb_chan_partner
							     : xf_fb_signal_partner;
	xf_fiber *f;
	uint64_t t = 0;

	if (kind == FB_CHAN && (xf_chan_create(&pp->ping, sizeof(uint64_t), 0) ||
				xf_chan_create(&pp->pong, sizeof(uint64_t), 0)))
		return -1;
	if (xf_spawn(&f, partner, pp, NULL))
		return -1;
	xf_bench_state_init();
	switch (kind) {
	case FB_YIELD:
	case FB_YIELD_2SITES: t = xf_fb_yield_loop(pp); break;
	case FB_CHAN: t = xf_fb_chan_loop(pp); break;
	default: t = xf_fb_signal_loop(pp); break;
	}
	xf_bench_state_init();
	xf_join(f, NULL);
	if (kind == FB_CHAN) {
		xf_chan_destroy(pp->ping);
		xf_chan_destroy(pp->pong);
	}
	return ticks_ns(t);
}

static double minimal_switch_ns(uint64_t n, bool two_sites)
{
	void *stack = aligned_alloc(64, MIN_STACK);
	double ns;

	if (!stack)
		return -1;
	ns = ticks_ns(xf_fb_minimal_switch_loop(n, stack, MIN_STACK, two_sites));
	free(stack);
	return ns;
}

/* What every self-signal of these rows carries: a forced preemption tick,
 * SI_QUEUE with the runtime's tag (preempt/preempt.h), which the bare
 * signals it is compared with carry too. */
static siginfo_t forced_tick;

static void pair_init(struct xf_fb_pair *pp, const struct xf_bench_params *p, struct xf__regs *r,
		      uint64_t n)
{
	memset(&forced_tick, 0, sizeof(forced_tick));
	forced_tick.si_signo = SIGURG;
	forced_tick.si_code = SI_QUEUE;
	forced_tick.si_pid = getpid();
	forced_tick.si_uid = getuid();
	forced_tick.si_value.sival_ptr = (void *)(uintptr_t)(XF_TICK_TAG | XF_TICK_FORCED);
	*pp = (struct xf_fb_pair){.regs = r,
				  .classes = xf_bench_state_classes(p->state),
				  .n = n,
				  .pid = getpid(),
				  .tid = (int)syscall(SYS_gettid),
				  .sig = SIGURG,
				  .siginfo = &forced_tick,
				  .release_tiles = p->release_tiles};
}

/* Starts the runtime pinned as p says, runs `warm` round trips of a kind
 * ping-pong (none if 0) and then n timed ones, and stops it; *ns is the
 * timed loop's.  0 or an errno, with s's note saying why. */
static int runtime_pingpong(const struct xf_bench_params *p, int kind, uint64_t warm, uint64_t n,
			    struct xf_bench_sample *s, double *ns)
{
	struct xf__regs *r = xf_bench_regs_new(0xf1be + p->state);
	struct xf_fb_runtime rt;
	struct xf_fb_pair pp;
	int err;

	*ns = -1;
	if (!r)
		return ENOMEM;
	/* Cooperative for the preemptive rows: only their own signals preempt. */
	err = xf_fb_start(p, (xf_config){.cooperative = kind == FB_PREEMPT}, &rt, s);
	if (!err) {
		if (warm) {
			pair_init(&pp, p, r, warm);
			*ns = pingpong_ns(kind, &pp);
		}
		if (!warm || *ns > 0) {
			pair_init(&pp, p, r, n);
			*ns = pingpong_ns(kind, &pp);
		}
		xf_fb_stop(&rt, s);
		if (*ns <= 0) {
			snprintf(s->note, sizeof(s->note), "the fiber ping-pong could not start");
			err = ENOMEM;
		}
	}
	free(r);
	return err;
}

double xf_fb_pingpong_ns_per_switch(const struct xf_bench_params *p, bool chan, uint64_t n)
{
	struct xf_bench_sample scratch = {0};
	double ns;

	/* Warmed up first, as the Go peer warms its scheduler up. */
	if (runtime_pingpong(p, chan ? FB_CHAN : FB_YIELD, n / 4 + 1, n, &scratch, &ns))
		return -1;
	return ns / (2.0 * (double)n);
}

/* --- ctx and pipe rows --- */

#define YIELD_ROUNDS 15

/* The yield ping-pong against its yardstick, the minimal assembly switch,
 * interleaved in rounds within one run like signal_run's pairs: both see the
 * same moments of a noisy machine, which hits the yield's many cheap
 * instructions harder than the yardstick's few slow ones.  *ns is the
 * ping-pong's time over all rounds, *ratio the median round's ratio and *n
 * the round trips timed.  The two-site kind pairs with the two-site
 * yardstick: both then pay a mispredicted return per switch. */
static int yield_rounds(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s,
			double *ns, double *ratio, uint64_t *n)
{
	const bool two_sites = p->test == FB_YIELD_2SITES;
	struct xf__regs *r = xf_bench_regs_new(0xf1be + p->state);
	double ratios[YIELD_ROUNDS];
	struct xf_fb_runtime rt;
	struct xf_fb_pair pp;
	int err;

	if (!r)
		return ENOMEM;
	err = xf_fb_start(p, (xf_config){0}, &rt, s);
	if (err) {
		free(r);
		return err;
	}
	*ns = 0;
	pair_init(&pp, p, r, iters / YIELD_ROUNDS + 1);
	for (int i = 0; i < YIELD_ROUNDS && !err; i++) {
		double y = pingpong_ns(p->test, &pp), m = minimal_switch_ns(pp.n, two_sites);

		if (y <= 0 || m <= 0) {
			snprintf(s->note, sizeof(s->note), "the yield ping-pong could not start");
			err = ENOMEM;
		}
		*ns += y;
		ratios[i] = y / m;
	}
	xf_fb_stop(&rt, s);
	free(r);
	*n = pp.n * YIELD_ROUNDS;
	if (!err)
		*ratio = xf_median(ratios, YIELD_ROUNDS);
	return err;
}

static int switch_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	double ns, per_switch, x_minimal = 0;
	int err;

	if (p->test == FB_YIELD || p->test == FB_YIELD_2SITES) {
		if ((err = yield_rounds(p, iters, s, &ns, &x_minimal, &iters)))
			return err;
	} else if (p->test == FB_MINIMAL || p->test == FB_MINIMAL_2SITES) {
		ns = minimal_switch_ns(iters, p->test == FB_MINIMAL_2SITES);
		if (ns <= 0)
			return ENOMEM;
	} else if ((err = runtime_pingpong(p, p->test, 0, iters, s, &ns))) {
		return err;
	}
	s->elapsed_ns = ns;
	if (p->process) { /* the pipe workload's unit: usecs per round trip */
		s->value = ns / (double)iters / 1e3;
		snprintf(s->note, sizeof(s->note), "%.0f ops/sec", (double)iters * 1e9 / ns);
		xf_bench_sample_extra(s, "ops_per_sec", (double)iters * 1e9 / ns);
		return 0;
	}
	per_switch = ns / (2.0 * (double)iters);
	s->value = 1e9 / per_switch;
	snprintf(s->note, sizeof(s->note), "%.1f ns/switch", per_switch);
	if (p->test == FB_YIELD || p->test == FB_YIELD_2SITES) {
		xf_xstate_info info = {0};

		xf_xstate_info_get(&info);
		/* What it measures: two fibers of one worker that only yield,
		 * in one loop and one call site, the runtime running as any
		 * program's does (ticker, counters, the dump's look); no state
		 * dirtied for none.  Boost's row jumps and schedules nothing. */
		snprintf(s->note, sizeof(s->note),
			 "%.1f ns/switch, %.2fx the minimal asm switch%s (median of %d interleaved "
			 "pairs); scheduler included%s",
			 per_switch, x_minimal, p->test == FB_YIELD_2SITES ? " with two sites" : "",
			 YIELD_ROUNDS,
			 info.amx_permitted ? "; AMX permitted: XINUSE read every 16th" : "");
		xf_bench_sample_extra(s, "x_minimal_switch", x_minimal);
	}
	xf_bench_sample_extra(s, "ns_per_switch", per_switch);
	return 0;
}

static int plan_ctx_fiber(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			  size_t err_size)
{
	static const char *const names[] = {"fiber-yield", "fiber-chan", "fiber-preempt"};
	const unsigned states = xf_bench_states_wanted(o);
	struct xf_bench_params p = {.ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};

	(void)err;
	(void)err_size;
	/* Fibers on one worker, like the one-CPU thread rows they sit with. */
	if ((o->cpus && !(o->cpus & 2)) || (o->modes && !(o->modes & XF_MODE_THREADS)))
		return 0;
	for (int kind = FB_YIELD; kind <= FB_PREEMPT; kind++) {
		for (int st = 0; st < XF_STATE_N; st++) {
			if (!(states & (1u << st)))
				continue;
			p.test = kind;
			p.state = st;
			xf_bench_plan_add(plan, &p, switch_run, "%s/%s", names[kind],
					  xf_bench_state_name(st));
		}
	}
	if (states & (1u << XF_STATE_NONE)) {
		p.test = FB_MINIMAL;
		p.state = XF_STATE_NONE;
		xf_bench_plan_add(plan, &p, switch_run, "asm-minimal/none");
		/* The same, each side switching from its own call site: what a
		 * mispredicted return adds to every switch. */
		p.test = FB_MINIMAL_2SITES;
		xf_bench_plan_add(plan, &p, switch_run, "asm-minimal-2sites/none");
		/* And the yield ping-pong arranged the same way, against it. */
		p.test = FB_YIELD_2SITES;
		xf_bench_plan_add(plan, &p, switch_run, "fiber-yield-2sites/none");
	}
	return 0;
}

XF_BENCH_VARIANT(ctx_fiber) = {
    .workload = "ctx",
    .name = "fiber",
    .kind = "fiber",
    .order = 20,
    .plan = plan_ctx_fiber,
};

static int plan_pipe_fiber(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			   size_t err_size)
{
	/* process = true selects the pipe unit in switch_run. */
	struct xf_bench_params p = {
	    .test = FB_CHAN, .process = true, .ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};

	(void)err;
	(void)err_size;
	if ((o->cpus && !(o->cpus & 2)) || (o->modes && !(o->modes & XF_MODE_THREADS)))
		return 0;
	xf_bench_plan_add(plan, &p, switch_run, "fiber-chan/1cpu");
	return 0;
}

XF_BENCH_VARIANT(pipe_fiber) = {
    .workload = "pipe",
    .name = "fiber",
    .kind = "fiber",
    .order = 20,
    .plan = plan_pipe_fiber,
};

/* --- messaging: hackbench's groups as fibers over channels --- */

struct msg_group {
	xf_chan *chan; /* all of a group's senders to all of its receivers */
	unsigned loops, fds, size;
};

static void *msg_sender(void *arg)
{
	struct msg_group *g = arg;
	char buf[1024] = {0};

	for (unsigned i = 0; i < g->loops * g->fds; i++)
		if (xf_chan_send(g->chan, buf))
			break;
	return NULL;
}

static void *msg_receiver(void *arg)
{
	struct msg_group *g = arg;
	char buf[1024];

	for (unsigned i = 0; i < g->loops * g->fds; i++)
		if (xf_chan_recv(g->chan, buf))
			break;
	return NULL;
}

static int messaging_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const unsigned n = p->groups * p->fds;
	struct msg_group *g = calloc(p->groups, sizeof(*g));
	xf_fiber **f = calloc(2 * (size_t)n, sizeof(*f));
	struct xf_fb_runtime rt;
	double t0, t1;
	int err;

	(void)iters;
	if (!g || !f || p->size > 1024) {
		free(g);
		free(f);
		return p->size > 1024 ? EINVAL : ENOMEM;
	}
	err = xf_fb_start(p, (xf_config){0}, &rt, s);
	if (err)
		goto out;
	for (unsigned i = 0; i < p->groups; i++) {
		g[i] = (struct msg_group){.loops = p->loops, .fds = p->fds, .size = p->size};
		if (xf_chan_create(&g[i].chan, p->size ? p->size : 1, p->fds))
			err = ENOMEM;
	}
	t0 = xf_bench_now_ns();
	for (unsigned i = 0; !err && i < n; i++) {
		if (xf_spawn(&f[2 * i], msg_receiver, &g[i / p->fds], NULL) ||
		    xf_spawn(&f[2 * i + 1], msg_sender, &g[i / p->fds], NULL))
			err = ENOMEM;
	}
	for (unsigned i = 0; i < 2 * n; i++)
		if (f[i])
			xf_join(f[i], NULL);
	t1 = xf_bench_now_ns();
	for (unsigned i = 0; i < p->groups; i++)
		if (g[i].chan)
			xf_chan_destroy(g[i].chan);
	xf_fb_stop(&rt, s);
	if (!err) {
		s->value = (t1 - t0) / 1e9;
		s->elapsed_ns = t1 - t0;
		snprintf(s->note, sizeof(s->note), "%u fibers on %d worker%s, %u loops of %u bytes",
			 2 * n, p->ncpus, p->ncpus > 1 ? "s" : "", p->loops, p->size);
		xf_bench_sample_extra(s, "tasks", 2.0 * n);
	}
out:
	free(g);
	free(f);
	return err;
}

static int plan_messaging_fiber(const struct xf_bench_opts *o, struct xf_bench_plan *plan,
				char *err, size_t err_size)
{
	const unsigned cpus = o->cpus ? o->cpus : 2;

	(void)err;
	(void)err_size;
	if (o->modes && !(o->modes & XF_MODE_THREADS))
		return 0;
	for (int ncpus = 1; ncpus <= 2; ncpus++) {
		struct xf_bench_params p = {.ncpus = ncpus,
					    .cpu = {o->cpu[0], o->cpu[ncpus > 1]},
					    .groups = o->groups,
					    .loops = o->loops,
					    .size = o->size,
					    .fds = o->fds};
		struct xf_bench_row *row;

		if (!(cpus & (1u << ncpus)) || (ncpus > 1 && o->ncpus < 2))
			continue;
		row = xf_bench_plan_add(plan, &p, messaging_run, "fiber-chan/%dcpu", ncpus);
		if (row)
			row->fixed_work = true;
	}
	return 0;
}

XF_BENCH_VARIANT(messaging_fiber) = {
    .workload = "messaging",
    .name = "fiber",
    .kind = "fiber",
    .order = 20,
    .plan = plan_messaging_fiber,
};

/* --- the `fiber` workload --- */

static void *nothing(void *arg)
{
	return arg;
}

static xf_sem parked_sem;

static void *park(void *arg)
{
	xf_sem_wait(&parked_sem);
	return arg;
}

/* B fibers alive at once (p->loops): B spawned, all B joined, again - and
 * Go's goroutines doing the same right after (bench/go, spawn-B), on the
 * same CPU. */
static int burst_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const unsigned b = p->loops;
	const uint64_t rounds = iters / b ? iters / b : 1, n = rounds * b;
	xf_fiber **f = calloc(b, sizeof(*f));
	struct xf_fb_runtime rt;
	unsigned long long go_n;
	char mode[32], go_note[160];
	double t0, t1, go_ns;
	int err;

	if (!f)
		return ENOMEM;
	err = xf_fb_start(p, (xf_config){0}, &rt, s);
	if (err) {
		free(f);
		return err;
	}
	t0 = xf_bench_now_ns();
	for (uint64_t r = 0; !err && r < rounds; r++) {
		for (unsigned i = 0; !err && i < b; i++)
			err = xf_spawn(&f[i], nothing, NULL, NULL);
		for (unsigned i = 0; !err && i < b; i++)
			err = xf_join(f[i], NULL);
	}
	t1 = xf_bench_now_ns();
	xf_fb_stop(&rt, s);
	free(f);
	if (err)
		return err;
	s->value = (t1 - t0) / (double)n;
	s->elapsed_ns = t1 - t0;
	snprintf(mode, sizeof(mode), "spawn-%u", b);
	if (xf_bench_go_run(mode, n, &go_n, &go_ns, go_note, sizeof(go_note)) || !go_n) {
		snprintf(s->note, sizeof(s->note), "%u alive: %.2f M fibers/s; Go: %.100s", b,
			 1e3 / s->value, go_note);
		return 0;
	}
	go_ns /= (double)go_n;
	xf_bench_sample_extra(s, "go_ns", go_ns);
	xf_bench_sample_extra(s, "x_go", go_ns / s->value);
	snprintf(s->note, sizeof(s->note),
		 "%u alive: %.2f M fibers/s; Go's goroutines right after %.2f M/s: %.2fx", b,
		 1e3 / s->value, 1e3 / go_ns, go_ns / s->value);
	return 0;
}

/* --- scaling: the same work on every one of 1..N workers --- */

#define SCALE_MAX_WORKERS 64

struct scale_job {
	int test;
	uint64_t n;
	xf_chan *ping, *pong;
	double t1; /* when this worker's share ended */
};

static void *scale_partner(void *arg)
{
	struct scale_job *j = arg;
	int v = 0;

	for (uint64_t i = 0; i < j->n; i++) {
		if (j->test == FB_SCALE_YIELD) {
			xf_yield();
		} else if (xf_chan_recv(j->ping, &v) || xf_chan_send(j->pong, &v)) {
			break;
		}
	}
	return NULL;
}

/* One worker's share: n spawn+joins, n yield round trips with a partner,
 * or n channel round trips with one. */
static void *scale_driver(void *arg)
{
	struct scale_job *j = arg;
	xf_attr here = XF_ATTR_INIT;
	xf_fiber *partner = NULL, *f;
	int v = 0;

	here.pinned = true; /* worker -1: this one */
	if (j->test != FB_SCALE_SPAWN && xf_spawn(&partner, scale_partner, j, &here))
		return (void *)1;
	for (uint64_t i = 0; i < j->n; i++) {
		if (j->test == FB_SCALE_SPAWN) {
			if (xf_spawn(&f, nothing, NULL, &here) || xf_join(f, NULL))
				return (void *)1;
		} else if (j->test == FB_SCALE_YIELD) {
			xf_yield();
		} else if (xf_chan_send(j->ping, &v) || xf_chan_recv(j->pong, &v)) {
			return (void *)1;
		}
	}
	j->t1 = xf_bench_now_ns();
	if (partner)
		xf_join(partner, NULL);
	return NULL;
}

/* p->groups workers, each doing the same share pinned to itself; ns per
 * operation over the whole runtime (wall time / all operations), so that
 * perfect scaling halves it with twice the workers. */
static int scale_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const unsigned w = p->groups;
	const uint64_t n = iters / w + 1;
	struct scale_job jobs[SCALE_MAX_WORKERS] = {0};
	xf_fiber *drivers[SCALE_MAX_WORKERS];
	double t0, t1 = 0;
	cpu_set_t saved, one;
	unsigned made = 0;
	void *failed = NULL;
	int err;

	/* One worker: on the row's CPU, as the other one-CPU rows.  More: on
	 * every CPU the process may use, which the workers inherit. */
	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (w == 1) {
		CPU_ZERO(&one);
		CPU_SET(p->cpu[0], &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	}
	err = xf_init(&(xf_config){.workers = w});
	if (err) {
		pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
		snprintf(s->note, sizeof(s->note), "xf_init: %s", strerror(err));
		return err;
	}
	for (unsigned i = 0; !err && i < w; i++) {
		jobs[i] = (struct scale_job){.test = p->test, .n = n};
		if (p->test == FB_SCALE_CHAN)
			err = xf_chan_create(&jobs[i].ping, sizeof(int), 0) ?:
			      xf_chan_create(&jobs[i].pong, sizeof(int), 0);
	}
	t0 = xf_bench_now_ns();
	for (; !err && made < w; made++) {
		xf_attr on = XF_ATTR_INIT;

		on.pinned = true;
		on.worker = (int)made;
		err = xf_spawn(&drivers[made], scale_driver, &jobs[made], &on);
	}
	for (unsigned i = 0; i < made; i++) {
		void *r = NULL;

		xf_join(drivers[i], &r);
		failed = failed ?: r;
		if (jobs[i].t1 > t1)
			t1 = jobs[i].t1;
	}
	for (unsigned i = 0; i < w; i++) {
		if (jobs[i].ping)
			xf_chan_destroy(jobs[i].ping);
		if (jobs[i].pong)
			xf_chan_destroy(jobs[i].pong);
	}
	xf_shutdown();
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (err || failed) {
		snprintf(s->note, sizeof(s->note), "a worker's share failed: %s",
			 strerror(err ? err : EIO));
		return err ? err : EIO;
	}
	s->value = (t1 - t0) / (double)(n * w);
	s->elapsed_ns = t1 - t0;
	snprintf(s->note, sizeof(s->note), "%u worker%s, each its own %s: %.2f M/s in all", w,
		 w > 1 ? "s" : "",
		 p->test == FB_SCALE_SPAWN ? "spawn+joins"
		 : p->test == FB_SCALE_YIELD ? "yield ping-pong"
					     : "channel ping-pong",
		 1e3 / s->value);
	return 0;
}

static int parked_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	xf_fiber **f = calloc(PARKED, sizeof(*f));
	struct xf_fb_runtime rt;
	long rss0 = xf_bench_rss_kb(), rss1;
	double t0, t1;
	int err;

	(void)iters;
	if (!f)
		return ENOMEM;
	err = xf_fb_start(p, (xf_config){0}, &rt, s);
	if (err) {
		free(f);
		return err;
	}
	xf_sem_init(&parked_sem, 0);
	t0 = xf_bench_now_ns();
	for (unsigned i = 0; !err && i < PARKED; i++)
		err = xf_spawn(&f[i], park, NULL, NULL);
	xf_sleep_ns(1000 * 1000); /* let them all reach the semaphore */
	t1 = xf_bench_now_ns();
	rss1 = xf_bench_rss_kb();
	for (unsigned i = 0; i < PARKED; i++)
		xf_sem_post(&parked_sem);
	for (unsigned i = 0; i < PARKED; i++)
		if (f[i])
			xf_join(f[i], NULL);
	xf_fb_stop(&rt, s);
	free(f);
	if (err)
		return err;
	s->value = (t1 - t0) / PARKED;
	s->elapsed_ns = t1 - t0;
	snprintf(s->note, sizeof(s->note),
		 "100,000 parked fibers with default stacks: +%ld MiB RSS", (rss1 - rss0) / 1024);
	xf_bench_sample_extra(s, "rss_mib", (double)(rss1 - rss0) / 1024.0);
	return 0;
}

/* --- what the interposed C library calls add (sync/pthread.c) --- */

typedef int (*lock_fn)(pthread_mutex_t *);

/* ns per uncontended lock and unlock of a pthread mutex, n times. */
static double lock_pairs_ns(lock_fn lock, lock_fn unlock, uint64_t n)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	double t0 = xf_bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		lock(&m);
		unlock(&m);
	}
	return (xf_bench_now_ns() - t0) / (double)n;
}

struct lock_thread {
	uint64_t n;
	double ns;
};

static void *lock_thread_main(void *arg)
{
	struct lock_thread *t = arg;

	t->ns = lock_pairs_ns(pthread_mutex_lock, pthread_mutex_unlock, t->n);
	return NULL;
}

#define LOCK_ROUNDS 9

/* An uncontended pthread_mutex_lock/unlock pair made from a fiber, through
 * libxfiber's wrappers, against the C library's own (found past them with
 * RTLD_NEXT) and against the wrappers from a plain thread, which they hand
 * straight to the C library: medians of interleaved rounds. */
static int lock_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	lock_fn libc_lock = (lock_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
	lock_fn libc_unlock = (lock_fn)dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	double fiber[LOCK_ROUNDS], libc[LOCK_ROUNDS], thread[LOCK_ROUNDS];
	struct lock_thread t = {.n = iters / LOCK_ROUNDS + 1};
	struct xf_fb_runtime rt;
	int err;

	if (!libc_lock || !libc_unlock) {
		snprintf(s->note, sizeof(s->note), "the C library's pthread_mutex_lock not found");
		return ENOENT;
	}
	err = xf_fb_start(p, (xf_config){0}, &rt, s);
	if (err)
		return err;
	for (int i = 0; i < LOCK_ROUNDS; i++) {
		pthread_t th;

		fiber[i] = lock_pairs_ns(pthread_mutex_lock, pthread_mutex_unlock, t.n);
		libc[i] = lock_pairs_ns(libc_lock, libc_unlock, t.n);
		if (pthread_create(&th, NULL, lock_thread_main, &t) == 0) {
			pthread_join(th, NULL);
			thread[i] = t.ns;
		} else {
			thread[i] = 0;
		}
	}
	xf_fb_stop(&rt, s);
	s->value = xf_median(fiber, LOCK_ROUNDS);
	s->elapsed_ns = s->value * (double)(t.n * LOCK_ROUNDS);
	snprintf(s->note, sizeof(s->note),
		 "a lock+unlock pair from a fiber; the C library's own %.1f ns (+%.1f ns), the "
		 "wrappers from a plain thread %.1f ns",
		 xf_median(libc, LOCK_ROUNDS), s->value - xf_median(libc, LOCK_ROUNDS),
		 xf_median(thread, LOCK_ROUNDS));
	xf_bench_sample_extra(s, "libc_ns", xf_median(libc, LOCK_ROUNDS));
	xf_bench_sample_extra(s, "thread_ns", xf_median(thread, LOCK_ROUNDS));
	return 0;
}

static void empty_handler(int sig)
{
	(void)sig;
}

static void empty_siginfo_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
}

/* A bare self-signal round trip with the same state: SIGUSR2, whose handler
 * returns at once (lmbench lat_sig catch, without subtracting the send).
 * With siginfo: the same through an SA_SIGINFO handler, as the preemption
 * handler must be (it reads the ucontext and the tick's value) - the part
 * of a preemption's cost that is the kernel's copy of the siginfo. */
static double bare_signal_ns(struct xf_fb_pair *pp, bool siginfo)
{
	struct sigaction sa = {.sa_handler = empty_handler, .sa_flags = SA_NODEFER}, old;
	struct xf_fb_pair bare = *pp;
	uint64_t t;

	if (siginfo) {
		sa.sa_sigaction = empty_siginfo_handler;
		sa.sa_flags |= SA_SIGINFO;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, &old);
	bare.sig = SIGUSR2;
	xf_bench_state_init();
	t = xf_fb_signal_loop(&bare);
	xf_bench_state_init();
	sigaction(SIGUSR2, &old, NULL);
	return ticks_ns(t) / (double)bare.n;
}

#define SIGNAL_ROUNDS 9

static int signal_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	struct xf__regs *r = xf_bench_regs_new(0x519 + p->state);
	double ns[SIGNAL_ROUNDS], bare[SIGNAL_ROUNDS], ratio[SIGNAL_ROUNDS];
	double info[SIGNAL_ROUNDS], info_ratio[SIGNAL_ROUNDS], m, b, x, lo, hi, ib, ix;
	struct xf_fb_runtime rt;
	struct xf_fb_pair pp;
	int err;

	if (!r)
		return ENOMEM;
	/* Cooperative: only our own signals preempt. */
	err = xf_fb_start(p, (xf_config){.cooperative = true}, &rt, s);
	if (err) {
		free(r);
		return err;
	}
	/* Interleaved: bare round trips and preemptions alternate in rounds,
	 * so drift hits both alike; each round's pair gives one ratio, and the
	 * median ratio with its quartiles is the row's verdict. */
	pair_init(&pp, p, r, iters / SIGNAL_ROUNDS + 1);
	for (int i = 0; i < SIGNAL_ROUNDS; i++) {
		bare[i] = bare_signal_ns(&pp, false);
		info[i] = bare_signal_ns(&pp, true);
		if (p->test == FB_SIGNAL_SWITCH) {
			ns[i] = pingpong_ns(FB_SIGNAL_SWITCH, &pp) / (2.0 * (double)pp.n);
		} else {
			/* Alone on its worker: every tick finds nothing else to run. */
			xf_bench_state_init();
			ns[i] = ticks_ns(xf_fb_signal_loop(&pp)) / (double)pp.n;
			xf_bench_state_init();
		}
		ratio[i] = ns[i] / bare[i];
		info_ratio[i] = ns[i] / info[i];
	}
	xf_fb_stop(&rt, s);
	free(r);
	m = xf_median(ns, SIGNAL_ROUNDS);
	b = xf_median(bare, SIGNAL_ROUNDS);
	x = xf_median(ratio, SIGNAL_ROUNDS);
	lo = xf_quantile(ratio, SIGNAL_ROUNDS, 0.25);
	hi = xf_quantile(ratio, SIGNAL_ROUNDS, 0.75);
	ib = xf_median(info, SIGNAL_ROUNDS);
	ix = xf_median(info_ratio, SIGNAL_ROUNDS);
	s->value = m;
	s->elapsed_ns = m * (double)iters;
	snprintf(s->note, sizeof(s->note),
		 "%.3fx (quartiles %.3f-%.3f) the bare signal round trip (%.0f ns), %d interleaved "
		 "pairs; %.3fx one through an SA_SIGINFO handler (%.0f ns)",
		 x, lo, hi, b, SIGNAL_ROUNDS, ix, ib);
	xf_bench_sample_extra(s, "bare_ns", b);
	xf_bench_sample_extra(s, "x_bare", x);
	xf_bench_sample_extra(s, "x_bare_q1", lo);
	xf_bench_sample_extra(s, "x_bare_q3", hi);
	xf_bench_sample_extra(s, "siginfo_ns", ib);
	xf_bench_sample_extra(s, "x_siginfo", ix);
	return 0;
}

/* CPU-bound work that never needs preempting: one fiber per worker. */
static atomic_uint_fast64_t work_sink;

static void *crunch(void *arg)
{
	uint64_t n = (uint64_t)(uintptr_t)arg, x = 88172645463325252ull;

	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	atomic_fetch_add(&work_sink, x);
	return NULL;
}

/* ns for `fibers` fibers each doing n rounds of crunch on the row's workers. */
static double crunch_ns(const struct xf_bench_params *p, xf_config cfg, unsigned fibers, uint64_t n,
			struct xf_bench_sample *s, uint64_t *preemptions)
{
	xf_fiber *f[8];
	struct xf_fb_runtime rt;
	double t0, t1;
	xf_stats st;

	if (xf_fb_start(p, cfg, &rt, s))
		return -1;
	t0 = xf_bench_now_ns();
	for (unsigned i = 0; i < fibers; i++) {
		/* Pinned round-robin: the same placement with or without slices. */
		xf_attr attr = XF_ATTR_INIT;
		attr.pinned = true;
		attr.worker = (int)(i % (unsigned)p->ncpus);
		xf_spawn(&f[i], crunch, (void *)(uintptr_t)n, &attr);
	}
	for (unsigned i = 0; i < fibers; i++)
		xf_join(f[i], NULL);
	t1 = xf_bench_now_ns();
	if (preemptions)
		*preemptions = xf_stats_get(&st) ? 0 : st.total.preemptions;
	xf_fb_stop(&rt, s);
	return t1 - t0;
}

#define CRUNCH_ROUNDS 5

/* p->groups fibers (0: one per CPU of the row) of p->loops million rounds
 * of crunch each, at p->size us slices (0: the default 1000): one per
 * worker, nothing is ever preempted; two on one worker, each slice ends in
 * a preemption, and the row is what preemption itself costs (issue 32: at
 * 100 us slices at most 5% against cooperative). */
static int overhead_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const unsigned fibers = p->groups ? p->groups : (unsigned)p->ncpus;
	double coop[CRUNCH_ROUNDS], sliced[CRUNCH_ROUNDS], c, t;
	uint64_t preempt = 0, n;

	/* Cooperative and sliced alternate; medians.  A fixed ~20 ms per fiber
	 * and round (p->loops million rounds of crunch) keeps timer noise
	 * small. */
	(void)iters;
	n = (uint64_t)p->loops * 1000000u;
	for (int i = 0; i < CRUNCH_ROUNDS; i++) {
		uint64_t pr = 0;
		coop[i] = crunch_ns(p, (xf_config){.cooperative = true}, fibers, n, s, NULL);
		sliced[i] = crunch_ns(p, (xf_config){.slice_us = p->size}, fibers, n, s, &pr);
		if (coop[i] <= 0 || sliced[i] <= 0)
			return ENOMEM;
		preempt += pr;
	}
	c = xf_median(coop, CRUNCH_ROUNDS);
	t = xf_median(sliced, CRUNCH_ROUNDS);
	s->value = t / (double)n;
	s->elapsed_ns = (c + t) * CRUNCH_ROUNDS;
	snprintf(s->note, sizeof(s->note),
		 "%+.2f%% against cooperative, interleaved (%u pinned fibers, %lu preemptions)",
		 (t / c - 1.0) * 100.0, fibers, (unsigned long)preempt);
	xf_bench_sample_extra(s, "overhead_pct", (t / c - 1.0) * 100.0);
	return 0;
}

/*
 * A 1 ms sleep beside a CPU-bound fiber at 1 ms slices, worker and ticker
 * on one CPU, as a server's are: how late the sleeper wakes (issue 32's
 * goal: on average at most 1 ms, at worst 2.5 ms).  Its timer is due
 * while the spinner runs; the ticker sees it and ends the spinner's slice.
 * The value is the mean lateness in ns; p->loops sleeps.
 */
static atomic_bool spin_stop;

static void *spin_until_stopped(void *arg)
{
	uint64_t x = 88172645463325252ull;

	(void)arg;
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	atomic_fetch_add(&work_sink, x);
	return NULL;
}

static int sleep_late_run(const struct xf_bench_params *p, uint64_t iters,
			  struct xf_bench_sample *s)
{
	struct xf_bench_params one = *p;
	struct xf_fb_runtime rt;
	cpu_set_t saved, set;
	unsigned n = p->loops;
	double *late = calloc(n, sizeof(*late)), sum = 0;
	xf_fiber *spinner = NULL;
	int err;

	(void)iters;
	if (!late)
		return ENOMEM;
	/* The ticker inherits the CPU: the worker's own. */
	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	CPU_ZERO(&set);
	CPU_SET(p->cpu[0], &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	one.cpu[1] = one.cpu[0];
	err = xf_fb_start(&one, (xf_config){.slice_us = 1000}, &rt, s);
	if (!err) {
		atomic_store(&spin_stop, false);
		err = xf_spawn(&spinner, spin_until_stopped, NULL, NULL);
		for (unsigned i = 0; !err && i < n; i++) {
			double t0 = xf_bench_now_ns();

			err = xf_sleep_ns(1000000);
			late[i] = xf_bench_now_ns() - t0 - 1e6;
			sum += late[i];
		}
		atomic_store(&spin_stop, true);
		if (spinner)
			xf_join(spinner, NULL);
		xf_fb_stop(&rt, s);
	}
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (err) {
		free(late);
		return err;
	}
	s->value = sum / n;
	s->elapsed_ns = (sum + 1e6 * n);
	xf_bench_sample_extra(s, "late_p99_ns", xf_quantile(late, n, 0.99));
	xf_bench_sample_extra(s, "late_max_ns", xf_quantile(late, n, 1.0));
	snprintf(s->note, sizeof(s->note),
		 "ns late on average; p99 %.0f us, worst %.0f us over %u sleeps of 1 ms beside "
		 "a CPU-bound fiber, 1 ms slices, worker and ticker on one CPU",
		 xf_quantile(late, n, 0.99) / 1000, xf_quantile(late, n, 1.0) / 1000, n);
	free(late);
	return 0;
}

/*
 * A byte written to a socket beside a CPU-bound fiber at 100 us slices,
 * worker and ticker on one CPU and the writer - a plain thread - on the
 * other: how long until the fiber that reads it runs.  It is the short
 * request behind a long one of `bench server`'s mix, without HTTP or a
 * generator's noise.  With p->fds (the threads row) the reader and the
 * spinner are kernel threads on that one CPU instead, the reader blocked in
 * read().  The value is the mean in ns; p->loops bytes, 0.5-1.5 ms apart.
 */
struct ready_late {
	int sv[2];
	unsigned n;
	double *late;
	_Atomic uint64_t written_ns; /* set before each byte is written */
	_Atomic unsigned read;	     /* bytes read so far */
	int err;
};

static void *ready_read(void *arg)
{
	struct ready_late *r = arg;
	bool fiber = xf_self() != NULL;

	for (unsigned i = 0; i < r->n; i++) {
		char c;
		ssize_t got = fiber ? xf_read(r->sv[0], &c, 1) : read(r->sv[0], &c, 1);

		if (got != 1) {
			r->err = got < 0 ? errno : EPIPE;
			break;
		}
		r->late[i] = xf_bench_now_ns() - (double)atomic_load(&r->written_ns);
		atomic_store(&r->read, i + 1);
	}
	return NULL;
}

/* The writer: one byte at a time, the next once the last was read. */
static void *ready_write(void *arg)
{
	struct ready_late *r = arg;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < r->n; i++) {
		struct timespec gap;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		gap = (struct timespec){0, 500000 + (long)(x % 1000000)};
		nanosleep(&gap, NULL);
		atomic_store(&r->written_ns, (uint64_t)xf_bench_now_ns());
		if (write(r->sv[1], "x", 1) != 1)
			break;
		while (atomic_load(&r->read) <= i && !r->err)
			sched_yield();
	}
	shutdown(r->sv[1], SHUT_WR); /* a reader left waiting ends */
	return NULL;
}

static void pin_thread(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(t, sizeof(set), &set);
}

static int ready_late_run(const struct xf_bench_params *p, uint64_t iters,
			  struct xf_bench_sample *s)
{
	struct xf_bench_params one = *p;
	struct ready_late r = {.n = p->loops};
	struct xf_fb_runtime rt;
	cpu_set_t saved;
	pthread_t writer, reader, spinner;
	xf_fiber *fr = NULL, *fs = NULL;
	double sum = 0;
	int err;

	(void)iters;
	r.late = calloc(r.n, sizeof(*r.late));
	if (!r.late)
		return ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, r.sv)) {
		free(r.late);
		return errno;
	}
	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	pin_thread(pthread_self(), p->cpu[0]); /* the ticker inherits it */
	atomic_store(&spin_stop, false);
	if (p->fds) {
		err = pthread_create(&reader, NULL, ready_read, &r);
		if (!err) {
			pin_thread(reader, p->cpu[0]);
			err = pthread_create(&spinner, NULL, spin_until_stopped, NULL);
			if (!err) {
				pin_thread(spinner, p->cpu[0]);
				err = pthread_create(&writer, NULL, ready_write, &r);
				if (!err) {
					pin_thread(writer, p->cpu[1]);
					pthread_join(writer, NULL);
				}
				atomic_store(&spin_stop, true);
				pthread_join(spinner, NULL);
			}
			shutdown(r.sv[1], SHUT_WR);
			pthread_join(reader, NULL);
		}
	} else {
		one.cpu[1] = one.cpu[0];
		err = xf_fb_start(&one, (xf_config){.slice_us = 100}, &rt, s);
		if (!err) {
			err = xf_spawn(&fr, ready_read, &r, NULL);
			if (!err)
				err = xf_sleep_ns(1000000); /* the reader waits on its socket */
			if (!err)
				err = xf_spawn(&fs, spin_until_stopped, NULL, NULL);
			/* Joined first, the reader: a fiber in pthread_join would
			 * wake now and then, and end the spinner's slices. */
			if (!err && (err = pthread_create(&writer, NULL, ready_write, &r)) == 0) {
				pin_thread(writer, p->cpu[1]);
				xf_join(fr, NULL);
				fr = NULL;
				pthread_join(writer, NULL);
			}
			atomic_store(&spin_stop, true);
			if (fs)
				xf_join(fs, NULL);
			if (fr) {
				shutdown(r.sv[1], SHUT_WR);
				xf_join(fr, NULL);
			}
			xf_fb_stop(&rt, s);
		}
	}
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	close(r.sv[0]);
	close(r.sv[1]);
	if (!err)
		err = r.err;
	if (!err && atomic_load(&r.read) != r.n)
		err = EIO;
	if (err) {
		free(r.late);
		return err;
	}
	for (unsigned i = 0; i < r.n; i++)
		sum += r.late[i];
	s->value = sum / r.n;
	s->elapsed_ns = sum + 1e6 * r.n;
	xf_bench_sample_extra(s, "late_p99_ns", xf_quantile(r.late, r.n, 0.99));
	xf_bench_sample_extra(s, "late_max_ns", xf_quantile(r.late, r.n, 1.0));
	snprintf(s->note, sizeof(s->note),
		 "ns on average; p99 %.0f us, worst %.0f us over %u bytes, each to a %s "
		 "beside a CPU-bound one on one CPU%s",
		 xf_quantile(r.late, r.n, 0.99) / 1000, xf_quantile(r.late, r.n, 1.0) / 1000, r.n,
		 p->fds ? "kernel thread" : "fiber", p->fds ? "" : ", 100 us slices");
	free(r.late);
	return 0;
}

static int cost_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	double coop[CRUNCH_ROUNDS], sliced[CRUNCH_ROUNDS], per[CRUNCH_ROUNDS];
	const uint64_t n = (uint64_t)p->loops * 1000000u;
	uint64_t total = 0;
	int rounds = 0;

	/* Three fibers on one worker at 50 us slices, alternating with the
	 * same work done cooperatively: the extra time per preemption - the
	 * signal from the ticker's CPU, the handler, the switch, and the cache
	 * it costs.  Medians of the rounds. */
	(void)iters;
	for (int i = 0; i < CRUNCH_ROUNDS; i++) {
		uint64_t pr = 0;
		coop[i] = crunch_ns(p, (xf_config){.cooperative = true}, 3, n, s, NULL);
		sliced[i] = crunch_ns(p, (xf_config){.slice_us = XF_SLICE_US_MIN}, 3, n, s, &pr);
		if (coop[i] <= 0 || sliced[i] <= 0)
			return ENOMEM;
		if (pr) /* a round too short for any slice to end says nothing */
			per[rounds++] = (sliced[i] - coop[i]) / (double)pr;
		total += pr;
	}
	if (!rounds) {
		snprintf(s->note, sizeof(s->note), "no preemption happened in any round");
		return EAGAIN;
	}
	s->value = xf_median(per, (size_t)rounds);
	s->elapsed_ns = 0;
	for (int i = 0; i < CRUNCH_ROUNDS; i++)
		s->elapsed_ns += coop[i] + sliced[i];
	snprintf(s->note, sizeof(s->note),
		 "ns per preemption, median of %d interleaved rounds (%lu preemptions at %d us)",
		 CRUNCH_ROUNDS, (unsigned long)total, XF_SLICE_US_MIN);
	return 0; /* "preemptions" in the extras: every round's, summed by fb_stop */
}

static int plan_fiber(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		      size_t err_size)
{
	const unsigned states = xf_bench_states_wanted(o);
	/* cpu[1] of a one-CPU row: where the ticker runs, if there is one. */
	struct xf_bench_params p = {.ncpus = 1,
				    .cpu = {o->cpu[0], o->ncpus >= 2 ? o->cpu[1] : o->cpu[0]}};
	struct xf_bench_row *row;

	(void)err;
	(void)err_size;
	/* Spawn+join with B fibers alive at once, Go beside: B = 1 is the
	 * plain spawn+join row. */
	p.test = FB_SPAWN_BURST;
	p.loops = 1;
	xf_bench_plan_add(plan, &p, burst_run, "spawn+join/1cpu");
	for (unsigned b = 100; b <= 10000; b *= 10) {
		p.loops = b;
		xf_bench_plan_add(plan, &p, burst_run, "spawn-burst-%u/1cpu", b);
	}
	p.loops = 0;
	/* Scaling: 1, 2, 4 ... workers up to the CPUs this process may use. */
	for (int test = FB_SCALE_SPAWN; test <= FB_SCALE_CHAN; test++) {
		for (unsigned w = 1; w <= (unsigned)o->ncpus && w <= SCALE_MAX_WORKERS; w *= 2) {
			p.test = test;
			p.groups = w;
			p.ncpus = w > 1 ? 2 : 1; /* the pinning column: "cpus 0/1" for all of them */
			if (w > 1)
				p.cpu[1] = o->cpu[1];
			xf_bench_plan_add(plan, &p, scale_run, "scale-%s/%uw",
					  test == FB_SCALE_SPAWN ? "spawn"
					  : test == FB_SCALE_YIELD ? "yield"
								   : "chan",
					  w);
		}
	}
	p.groups = 0;
	p.ncpus = 1;
	p.cpu[1] = o->ncpus >= 2 ? o->cpu[1] : o->cpu[0];
	if (!o->quick) {
		p.test = FB_PARKED;
		row = xf_bench_plan_add(plan, &p, parked_run, "parked-100k/1cpu");
		if (row)
			row->fixed_work = true;
	}
	p.test = FB_PTHREAD_LOCK;
	xf_bench_plan_add(plan, &p, lock_run, "pthread-lock/1cpu");
	for (int kind = FB_SIGNAL_SWITCH; kind <= FB_SIGNAL_TICK; kind++) {
		for (int st = 0; st < XF_STATE_N; st++) {
			if (!(states & (1u << st)))
				continue;
			p.test = kind;
			p.state = st;
			xf_bench_plan_add(plan, &p, signal_run, "%s/%s",
					  kind == FB_SIGNAL_SWITCH ? "preempt-switch"
								   : "preempt-tick",
					  xf_bench_state_name(st));
		}
	}
	/* Against preempt-switch/amx: the same with the tiles used and given
	 * back before each preemption - what returning dead state to init
	 * saves every preemption (the kernel's frame skips 8 KB of TILEDATA). */
	if (states & (1u << XF_STATE_AMX)) {
		p.test = FB_SIGNAL_SWITCH;
		p.state = XF_STATE_AMX;
		p.release_tiles = true;
		xf_bench_plan_add(plan, &p, signal_run, "preempt-switch/amx-released");
		p.release_tiles = false;
	}
	/* The last two rows measure time differences that need real run
	 * lengths: a --quick run would only show noise. */
	if (o->quick)
		return 0;
	p.state = XF_STATE_NONE;
	p.loops = CRUNCH_MIN / 1000000; /* million rounds of work */
	p.test = FB_CPU_OVERHEAD;
	if (o->ncpus >= 2) {
		p.ncpus = 2;
		p.cpu[1] = o->cpu[1];
	}
	row = xf_bench_plan_add(plan, &p, overhead_run, "cpu-bound-1000us/%dcpu", p.ncpus);
	if (row)
		row->fixed_work = true;
	p.ncpus = 1;
	p.groups = 2; /* sharing one worker: preempted at every slice */
	p.size = 100;
	row = xf_bench_plan_add(plan, &p, overhead_run, "cpu-bound-100us-shared/1cpu");
	if (row)
		row->fixed_work = true;
	p.groups = 0;
	p.size = 0;
	p.test = FB_PREEMPT_COST;
	row = xf_bench_plan_add(plan, &p, cost_run, "preemption-cost/1cpu");
	if (row)
		row->fixed_work = true;
	p.test = FB_SLEEP_LATE;
	p.loops = 300;
	row = xf_bench_plan_add(plan, &p, sleep_late_run, "sleep-1ms-late/1cpu");
	if (row)
		row->fixed_work = true;
	/* The writer runs on the second CPU, as a client would: with one
	 * CPU it would share the reader's, and time something else. */
	p.test = FB_READY_LATE;
	p.cpu[1] = o->ncpus >= 2 ? o->cpu[1] : o->cpu[0];
	for (int threads = 0; threads < 2; threads++) {
		p.fds = (unsigned)threads;
		row = xf_bench_plan_add(plan, &p, ready_late_run, "ready-behind-cpu-bound/%s",
					threads ? "threads" : "xfiber-100us");
		if (row) {
			row->fixed_work = true;
			if (o->ncpus < 2)
				snprintf(row->skip, sizeof(row->skip),
					 "needs a second CPU for the writer (--cpus)");
			else
				snprintf(row->pinning, sizeof(row->pinning), "cpu %d, writer %d",
					 p.cpu[0], p.cpu[1]);
		}
	}
	p.fds = 0;
	return 0;
}

XF_BENCH_VARIANT(fiber_variant) = {
    .workload = "fiber",
    .name = "fiber",
    .kind = "fiber",
    .order = 0,
    .plan = plan_fiber,
};

XF_BENCH_WORKLOAD(fiber_workload) = {
    .name = "fiber",
    .summary = "xfiber's own costs: spawn, parked memory, preemption against bare signals",
    .what = "ns per operation, each against its yardstick in the same run (lower is better)",
    .unit = "ns",
    .higher_is_better = false,
    .order = 15,
    .options = XF_BOPT_STATE | XF_BOPT_ITERATIONS,
};
