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
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/sig.h"
#include "common/tsc.h"
#include "xfiber.h"

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

/* What one measurement found. */
struct sig_result {
	double catch_ns, send_ns, elapsed_ns;
};

/* Times iters signals of each kind with classes dirtied before each; 0, or
 * EIO with the reason in note. */
static int sig_measure(unsigned classes, uint64_t seed, uint64_t iters, struct sig_result *r,
		       char *note, size_t note_size)
{
	const double ns_per_tick = xf_tsc_ns_per_tick();
	const uint64_t chunk = iters / SIG_CHUNKS ? iters / SIG_CHUNKS : 1;
	struct xf__regs *regs = xf_bench_regs_new(seed);
	double send[SIG_CHUNKS], caught[SIG_CHUNKS], total = 0;
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
		snprintf(note, note_size, "%llu signals sent, %llu handled",
			 (unsigned long long)(chunk * SIG_CHUNKS),
			 (unsigned long long)xf_bench_sig_seen.count);
		return EIO;
	}
	r->send_ns = xf_median(send, SIG_CHUNKS) * ns_per_tick / (double)chunk;
	r->catch_ns = xf_median(caught, SIG_CHUNKS) * ns_per_tick / (double)chunk;
	r->elapsed_ns = total * ns_per_tick;
	return 0;
}

/* The row's value, note and extras from one measurement and the frame the
 * handler last saw (xf_bench_sig_seen, or its copy from a probe). */
static void sig_report(const struct sig_result *r, const struct xf_bench_sig_seen *seen,
		       struct xf_bench_sample *s)
{
	s->value = r->catch_ns - r->send_ns;
	s->elapsed_ns = r->elapsed_ns;
	snprintf(s->note, sizeof(s->note),
		 "catch %.0f ns, send %.0f ns; frame %llu B, xstate %llu B, XSTATE_BV 0x%llx",
		 r->catch_ns, r->send_ns, (unsigned long long)seen->frame_bytes,
		 (unsigned long long)seen->xstate_size, (unsigned long long)seen->xstate_bv);
	xf_bench_sample_extra(s, "catch_ns", r->catch_ns);
	xf_bench_sample_extra(s, "send_ns", r->send_ns);
	xf_bench_sample_extra(s, "frame_bytes", (double)seen->frame_bytes);
	xf_bench_sample_extra(s, "xstate_bytes", (double)seen->xstate_size);
	xf_bench_sample_extra(s, "xstate_bv", (double)seen->xstate_bv);
	xf_bench_sample_extra(s, "xfeatures", (double)seen->xfeatures);
}

static int sig_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	struct sig_result r;
	struct xf_bench_sig_seen seen;
	int err = sig_measure(xf_bench_state_classes(p->state), 0x51c0 + p->state, iters, &r,
			      s->note, sizeof(s->note));

	if (err)
		return err;
	seen = xf_bench_sig_seen;
	sig_report(&r, &seen, s);
	return 0;
}

/*
 * The seed on AMX signal frames: Linux leaves init-state tiles out of the
 * frame (XSTATE_BV, XGETBV(1)), so a process that may use AMX pays for 8 KB
 * of TILEDATA only while its tiles hold something.  These rows measure it
 * in each phase of a process's AMX life, which only runs forward - the
 * kernel grants permission once and never takes it back, and a thread's
 * first touch of tile data grows its kernel buffer for good - so each
 * phase runs in a process of its own, started afresh (exec drops the
 * permission), as `xfiber bench amx-sig-probe PHASE ITERATIONS`:
 *   unpermitted  never asked for AMX
 *   permitted    asked (ARCH_REQ_XCOMP_PERM), tiles never touched
 *   dirty        tiles loaded before every signal
 *   released     tiles used once, then TILERELEASE: back to init
 */
static const char *const amx_phases[] = {"unpermitted", "permitted", "dirty", "released"};
#define AMX_PHASES (int)(sizeof(amx_phases) / sizeof(amx_phases[0]))

/* In the probe process: one phase, its figures on stdout. */
static int amx_probe(int argc, char **argv)
{
	struct sig_result r;
	struct xf_bench_sig_seen seen;
	unsigned classes = 0;
	char note[160];
	int phase = -1, err;
	uint64_t iters;

	for (int i = 0; argc == 3 && i < AMX_PHASES; i++)
		if (!strcmp(argv[1], amx_phases[i]))
			phase = i;
	if (phase < 0 || !(iters = strtoull(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: xfiber bench amx-sig-probe unpermitted|permitted|dirty|"
				"released ITERATIONS\n");
		return 2;
	}
	if (phase > 0 && (err = xf_xstate_request_amx())) {
		fprintf(stderr, "xfiber: AMX permission refused: %s\n", strerror(err));
		return 1;
	}
	if (phase == 2)
		classes = XF_REGS_AMX;
	if (phase == 3) {
		struct xf__regs *regs = xf_bench_regs_new(0x7e1e);

		if (!regs)
			return 1;
		xf_bench_touch(regs, XF_REGS_AMX); /* the thread's buffer grows */
		xf_xstate_release_tiles();
		free(regs);
	}
	if ((err = xf_bench_state_setup()) ||
	    (err = sig_measure(classes, 0x51c0, iters, &r, note, sizeof(note)))) {
		fprintf(stderr, "xfiber: %s\n", err == EIO ? note : strerror(err));
		return 1;
	}
	seen = xf_bench_sig_seen;
	printf("%.3f %.3f %.0f %llu %llu %llu %llu\n", r.catch_ns, r.send_ns, r.elapsed_ns,
	       (unsigned long long)seen.frame_bytes, (unsigned long long)seen.xstate_size,
	       (unsigned long long)seen.xstate_bv, (unsigned long long)seen.xfeatures);
	return 0;
}

/* In the benchmark: runs the probe for the row's phase (p->test), pinned
 * where the row is. */
static int amx_phase_run(const struct xf_bench_params *p, uint64_t iters,
			 struct xf_bench_sample *s)
{
	char n[24], out[256] = "";
	struct sig_result r;
	struct xf_bench_sig_seen seen = {0};
	unsigned long long frame, xsize, bv, feat;
	int fd[2], status;
	ssize_t got = 0, k;
	pid_t pid;

	snprintf(n, sizeof(n), "%llu", (unsigned long long)iters);
	if (pipe(fd))
		return errno;
	pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		execl("/proc/self/exe", "xfiber", "bench", "amx-sig-probe", amx_phases[p->test], n,
		      (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (got < (ssize_t)sizeof(out) - 1 &&
	       (k = read(fd[0], out + got, sizeof(out) - 1 - (size_t)got)) > 0)
		got += k;
	close(fd[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) ||
	    sscanf(out, "%lf %lf %lf %llu %llu %llu %llu", &r.catch_ns, &r.send_ns, &r.elapsed_ns,
		   &frame, &xsize, &bv, &feat) != 7) {
		snprintf(s->note, sizeof(s->note), "the %s probe failed (status 0x%x)",
			 amx_phases[p->test], status);
		return EIO;
	}
	seen = (struct xf_bench_sig_seen){
	    .frame_bytes = frame, .xstate_size = xsize, .xstate_bv = bv, .xfeatures = feat};
	sig_report(&r, &seen, s);
	return 0;
}

static int sig_plan_amx(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			size_t err_size)
{
	struct xf_bench_params p = {.ncpus = 1, .cpu = {o->cpu[0], o->cpu[0]}};
	const char *why = xf_bench_state_unavailable(XF_STATE_AMX);

	(void)err;
	(void)err_size;
	/* Asked for other states only: not these rows. */
	if (o->states && !(o->states & (1u << XF_STATE_AMX)))
		return 0;
	for (int ph = 0; ph < AMX_PHASES; ph++) {
		struct xf_bench_row *row;

		p.test = ph;
		row = xf_bench_plan_add(plan, &p, amx_phase_run, "amx/%s", amx_phases[ph]);
		if (row && why)
			snprintf(row->skip, sizeof(row->skip), "no AMX: %s", why);
	}
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

XF_BENCH_VARIANT(sig_amx) = {
    .workload = "sig",
    .name = "amx",
    .kind = "kernel",
    .order = 10,
    .plan = sig_plan_amx,
};

/* `xfiber bench amx-sig-probe`: the command's way into amx_probe (command.c). */
int xf_bench_amx_sig_probe(int argc, char **argv)
{
	return amx_probe(argc, argv);
}

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
