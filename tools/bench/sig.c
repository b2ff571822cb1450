/*
 * sig.c - `xfiber bench sig`: what catching a signal costs, lmbench
 * `lat_sig catch` style.  Each run sends itself the signal n times with
 * SIG_IGN (the cost of sending) and n times with a handler that returns; the
 * row is the difference per signal (medians of alternating chunks), with the
 * interrupted code's registers dirtied before every signal (--state).  The
 * handler measures the frame.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/sig.h"
#include "common/tsc.h"

#define BENCH_SIGNAL SIGUSR1

static int sig_check(const struct xf_bench_opts *o, char *err, size_t err_size)
{
	if (!(o->cpus & 4))
		return 0;
	snprintf(err, err_size, "sig runs in one thread on one CPU: --cpus=2 does not apply");
	return -1;
}

/* Installs the handler, or SIG_IGN. */
static void disposition(bool catch)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	if (catch) {
		sa.sa_sigaction = xf__bench_sig_entry;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = SIG_IGN;
	}
	sigaction(BENCH_SIGNAL, &sa, NULL);
}

/*
 * Sending and catching alternate in SIG_CHUNKS chunks, and each takes the
 * median of its chunks: one preemption (a tick, another guest) then spoils
 * one chunk of one side, not the difference of the two.
 */
#define SIG_CHUNKS 8

static int sig_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const unsigned classes = xf_bench_state_classes(p->state);
	const double ns_per_tick = xf_tsc_ns_per_tick();
	const uint64_t chunk = iters / SIG_CHUNKS ? iters / SIG_CHUNKS : 1;
	struct xf__regs *regs = xf_bench_regs_new(0x51c0 + p->state);
	double send[SIG_CHUNKS], caught[SIG_CHUNKS], send_ns, catch_ns, total = 0;
	struct sigaction dfl;

	if (!regs)
		return ENOMEM;
	xf_bench_sig_seen.count = 0;
	for (int c = 0; c < SIG_CHUNKS; c++) {
		disposition(false);
		send[c] = (double)xf_bench_sig_loop(regs, classes, chunk, BENCH_SIGNAL);
		disposition(true);
		caught[c] = (double)xf_bench_sig_loop(regs, classes, chunk, BENCH_SIGNAL);
		total += send[c] + caught[c];
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(BENCH_SIGNAL, &dfl, NULL);
	free(regs);
	if (xf_bench_sig_seen.count != chunk * SIG_CHUNKS) {
		snprintf(s->note, sizeof(s->note), "%llu signals sent, %llu handled",
			 (unsigned long long)(chunk * SIG_CHUNKS),
			 (unsigned long long)xf_bench_sig_seen.count);
		return EIO;
	}
	send_ns = xf_median(send, SIG_CHUNKS) * ns_per_tick / (double)chunk;
	catch_ns = xf_median(caught, SIG_CHUNKS) * ns_per_tick / (double)chunk;
	s->value = catch_ns - send_ns;
	s->elapsed_ns = total * ns_per_tick;
	snprintf(s->note, sizeof(s->note),
		 "catch %.0f ns, send %.0f ns; frame %llu B, xstate %llu B, XSTATE_BV 0x%llx",
		 catch_ns, send_ns, (unsigned long long)xf_bench_sig_seen.frame_bytes,
		 (unsigned long long)xf_bench_sig_seen.xstate_size,
		 (unsigned long long)xf_bench_sig_seen.xstate_bv);
	xf_bench_sample_extra(s, "catch_ns", catch_ns);
	xf_bench_sample_extra(s, "send_ns", send_ns);
	xf_bench_sample_extra(s, "frame_bytes", (double)xf_bench_sig_seen.frame_bytes);
	xf_bench_sample_extra(s, "xstate_bytes", (double)xf_bench_sig_seen.xstate_size);
	xf_bench_sample_extra(s, "xstate_bv", (double)xf_bench_sig_seen.xstate_bv);
	xf_bench_sample_extra(s, "xfeatures", (double)xf_bench_sig_seen.xfeatures);
	return 0;
}

static int sig_plan_kernel(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			   size_t err_size)
{
	const unsigned states = xf_bench_states_wanted(o);
	struct xf_bench_params p = {.ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};

	(void)err;
	(void)err_size;
	for (int st = 0; st < XF_STATE_N; st++) {
		if (!(states & (1u << st)))
			continue;
		p.state = st;
		xf_bench_plan_add(plan, &p, sig_run, "catch/%s", xf_bench_state_name(st));
	}
	return 0;
}

XF_BENCH_VARIANT(sig_kernel) = {
    .workload = "sig",
    .name = "kernel",
    .kind = "kernel",
    .order = 0,
    .plan = sig_plan_kernel,
};

XF_BENCH_WORKLOAD(sig_workload) = {
    .name = "sig",
    .summary = "signal handler overhead (lmbench lat_sig catch), by register state",
    .what = "ns to catch a self-signal, minus sending it (lower is better)",
    .unit = "ns",
    .higher_is_better = false,
    .order = 10,
    .options = XF_BOPT_STATE | XF_BOPT_CPUS | XF_BOPT_ITERATIONS,
    .check = sig_check,
};
