/*
 * ctx.c - `xfiber bench ctx`: context switches per second between two
 * kernel threads or processes, like powerpc's context_switch2 (--test=pipe|
 * futex|yield, --process, one CPU or two, registers dirtied after every
 * switch).  The peers (ctx_peers.c, ctx_go.c) and, later,
 * xfiber's fibers add their rows to the same table.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/ctx.h"
#include "bench/task.h"
#include "common/tsc.h"

static const char *const test_names[XF_CTX_NTESTS] = {"pipe", "futex", "yield"};

const char *xf_ctx_test_name(int test)
{
	return test >= 0 && test < XF_CTX_NTESTS ? test_names[test] : "?";
}

bool xf_ctx_peer_wanted(const struct xf_bench_opts *o, unsigned peer)
{
	if (o->cpus && !(o->cpus & 2))
		return false;
	if (o->modes && !(o->modes & XF_MODE_THREADS))
		return false;
	return o->peers_set ? (o->peers & peer) != 0 : true;
}

static int side0_task(void *sh)
{
	return xf_ctx_side(sh, 0);
}

static int side1_task(void *sh)
{
	return xf_ctx_side(sh, 1);
}

static void close_pipes(struct xf_ctx_shared *sh)
{
	for (int i = 0; i < 2; i++) {
		if (sh->a_to_b[i] >= 0)
			close(sh->a_to_b[i]);
		if (sh->b_to_a[i] >= 0)
			close(sh->b_to_a[i]);
	}
}

int xf_ctx_pingpong(const struct xf_bench_params *p, uint64_t n, struct xf_ctx_result *res,
		    char *note, size_t note_size)
{
	struct xf_ctx_shared *sh = xf_bench_shared_alloc(sizeof(*sh));
	struct xf_bench_task task[2];
	int err = 0, started = 0, status[2] = {0, 0};

	if (!sh) {
		snprintf(note, note_size, "cannot map shared memory: %s", strerror(errno));
		return ENOMEM;
	}
	for (int side = 0; side < 2; side++)
		xf_bench_regs_fill(&sh->regs[side], 0xc7c0 + (uint64_t)side);
	sh->test = p->test;
	sh->process = p->process;
	sh->libc = p->libc;
	sh->classes = xf_bench_state_classes(p->state);
	sh->iters = n;
	sh->a_to_b[0] = sh->a_to_b[1] = sh->b_to_a[0] = sh->b_to_a[1] = -1;
	if (p->test == XF_CTX_PIPE && (pipe(sh->a_to_b) || pipe(sh->b_to_a))) {
		err = errno;
		snprintf(note, note_size, "pipe: %s", strerror(err));
	}
	while (!err && started < 2) {
		int cpu = p->cpu[p->ncpus > 1 ? started : 0];
		err = xf_bench_task_start(&task[started], p->process, cpu,
					  started ? side1_task : side0_task, sh);
		if (err)
			snprintf(note, note_size, "cannot start a %s: %s",
				 p->process ? "process" : "thread", strerror(err));
		else
			started++;
	}
	if (err && started == 1) {
		/* The lone side waits at the barrier: let it through to an empty loop. */
		sh->iters = 0;
		sh->stop = 1;
		__atomic_add_fetch(&sh->ready, 1, __ATOMIC_ACQ_REL);
	}
	for (int i = 0; i < started; i++)
		status[i] = xf_bench_task_wait(&task[i]);
	close_pipes(sh);
	if (!err && (status[0] || status[1])) {
		int side = status[0] ? 0 : 1;
		err = sh->error[side] ? sh->error[side] : EIO;
		snprintf(note, note_size, "side %d of the ping-pong failed: %s", side,
			 sh->error[side] ? strerror(sh->error[side]) : "it died");
	}
	res->elapsed_ns = (double)(sh->t1 - sh->t0) * xf_tsc_ns_per_tick();
	res->xinuse[0] = sh->xinuse[0];
	res->xinuse[1] = sh->xinuse[1];
	res->csw = sh->csw[0] + sh->csw[1];
	xf_bench_shared_free(sh, sizeof(*sh));
	return err;
}

static int ctx_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	struct xf_ctx_result res;
	int err = xf_ctx_pingpong(p, iters, &res, s->note, sizeof(s->note));
	double ns_per_switch;

	if (err)
		return err;
	/* Two switches per round trip, as context_switch2 counts them; the
	 * kernel's own count says whether they happened (on two CPUs a side
	 * may find its turn already come, and never sleep). */
	ns_per_switch = res.elapsed_ns / (2.0 * (double)iters);
	s->value = res.elapsed_ns > 0 ? 1e9 / ns_per_switch : 0;
	s->elapsed_ns = res.elapsed_ns;
	snprintf(s->note, sizeof(s->note),
		 "%.0f ns/switch; kernel switched %.2fx per round trip; XINUSE 0x%llx/0x%llx",
		 ns_per_switch, (double)res.csw / (double)iters, (unsigned long long)res.xinuse[0],
		 (unsigned long long)res.xinuse[1]);
	xf_bench_sample_extra(s, "ns_per_switch", ns_per_switch);
	xf_bench_sample_extra(s, "kernel_switches_per_round_trip", (double)res.csw / (double)iters);
	xf_bench_sample_extra(s, "xinuse_side0", (double)res.xinuse[0]);
	xf_bench_sample_extra(s, "xinuse_side1", (double)res.xinuse[1]);
	return 0;
}

static unsigned tests_wanted(const struct xf_bench_opts *o)
{
	return o->tests ? o->tests : (1u << XF_CTX_NTESTS) - 1;
}

static int ctx_check(const struct xf_bench_opts *o, char *err, size_t err_size)
{
	/* yield only switches when both tasks share a CPU (context_switch2 refuses too). */
	if (tests_wanted(o) == 1u << XF_CTX_YIELD && o->cpus == 4) {
		snprintf(err, err_size,
			 "--test=yield needs both tasks on one CPU: sched_yield does not switch "
			 "to a task on another CPU (use --cpus=1)");
		return -1;
	}
	return 0;
}

/* Rows for each test, each mode in modes, each state: `states` for threads,
 * `process_states` for processes. */
static void add_rows(const struct xf_bench_opts *o, struct xf_bench_plan *plan, unsigned tests,
		     unsigned modes, int ncpus, unsigned states, unsigned process_states)
{
	struct xf_bench_params p = {.ncpus = ncpus, .cpu = {o->cpu[0], o->cpu[ncpus > 1]}};

	for (int t = 0; t < XF_CTX_NTESTS; t++) {
		if (!(tests & (1u << t)) || (t == XF_CTX_YIELD && ncpus > 1))
			continue;
		for (int m = XF_MODE_THREADS; m <= XF_MODE_PROCESS; m <<= 1) {
			if (!(modes & m))
				continue;
			for (int st = 0; st < XF_STATE_N; st++) {
				if (!((m == XF_MODE_PROCESS ? process_states : states) &
				      (1u << st)))
					continue;
				p.test = t;
				p.process = m == XF_MODE_PROCESS;
				p.state = st;
				xf_bench_plan_add(plan, &p, ctx_run, "%s/%s/%dcpu/%s",
						  test_names[t], p.process ? "process" : "threads",
						  ncpus, xf_bench_state_name(st));
			}
		}
	}
}

static int ctx_plan_kernel(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			   size_t err_size)
{
	const unsigned tests = tests_wanted(o), states = xf_bench_states_wanted(o);
	unsigned modes = o->modes ? o->modes : XF_MODE_THREADS;
	const unsigned suite_states = states & ((1u << XF_STATE_NONE) | (1u << XF_STATE_AVX512));
	unsigned process_states = states;

	(void)err;
	(void)err_size;
	/* The suite adds processes, whose rows add the address-space switch,
	 * not another register cost: in the states at either end only, which
	 * keeps `make bench` within its three minutes. */
	if (o->suite && !o->modes) {
		modes = XF_MODE_THREADS | XF_MODE_PROCESS;
		process_states = suite_states;
	}
	for (int ncpus = 1; ncpus <= 2; ncpus++) {
		if (o->cpus ? o->cpus & (1u << ncpus) : ncpus == 1)
			add_rows(o, plan, tests, modes, ncpus, states, process_states);
	}
	/* The suite adds a few cross-CPU rows: wake-ups by IPI, the cost to beat. */
	if (o->suite && !o->cpus && o->ncpus >= 2)
		add_rows(o, plan, tests & ~(1u << XF_CTX_YIELD), XF_MODE_THREADS, 2, suite_states,
			 suite_states);
	return 0;
}

XF_BENCH_VARIANT(ctx_kernel) = {
    .workload = "ctx",
    .name = "kernel",
    .kind = "kernel",
    .order = 0,
    .plan = ctx_plan_kernel,
};

XF_BENCH_WORKLOAD(ctx_workload) = {
    .name = "ctx",
    .summary = "context switches/s between kernel threads or processes (context_switch2), "
	       "and peers",
    .what = "context switches per second (higher is better)",
    .unit = "switches/s",
    .higher_is_better = true,
    .order = 20,
    .options = XF_BOPT_STATE | XF_BOPT_CPUS | XF_BOPT_TEST | XF_BOPT_MODE | XF_BOPT_PEERS |
	       XF_BOPT_ITERATIONS,
    .check = ctx_check,
};
