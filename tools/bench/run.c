/* run.c - warm-up, calibration, timed runs, the watchdog and the progress line. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/run.h"
#include "bench/task.h"

/* Calibration stops growing the work here, whatever the row's speed. */
#define MAX_ITERS 1000000000ull

/* What the watchdog says if a run overstays: "xfiber bench: ctx pipe/...: ...". */
static char watchdog_msg[256];

static void on_watchdog(int sig)
{
	ssize_t ignored;

	(void)sig;
	xf_bench_kill_children();
	ignored = write(STDERR_FILENO, watchdog_msg, strlen(watchdog_msg));
	(void)ignored;
	_exit(1);
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double warm_s(const struct xf_bench_opts *o)
{
	return o->run_time / 2 < 0.1 ? o->run_time / 2 : 0.1;
}

static double row_estimate(const struct xf_bench_opts *o, const struct xf_bench_row *row,
			   const struct xf_bench_progress *pr)
{
	if (row->skip[0] || !row->run)
		return 0; /* table rows: see table_estimate() */
	if (row->fixed_work)
		return (o->runs + 1) * (pr->fixed_wall_s > 0 ? pr->fixed_wall_s : o->run_time);
	if (o->iterations)
		return (o->runs + 1) * (pr->run_wall_s > 0 ? pr->run_wall_s : o->run_time);
	return 2 * warm_s(o) + o->runs * (pr->run_wall_s > 0 ? pr->run_wall_s : o->run_time);
}

/* A table workload measures all its rows at once: a guess, per measurement. */
static double table_estimate(const struct xf_bench_opts *o, const struct xf_bench_plan *plan)
{
	return plan->workload->measure_all ? (o->runs + 1) * 0.1 : 0;
}

void xf_bench_progress_add(struct xf_bench_progress *pr, const struct xf_bench_opts *o,
			   struct xf_bench_plan *plan)
{
	pr->left_s += table_estimate(o, plan);
	for (unsigned i = 0; i < plan->nrows; i++) {
		if (!plan->rows[i].skip[0])
			pr->rows++;
		plan->rows[i].estimate_s = row_estimate(o, &plan->rows[i], pr);
		pr->left_s += plan->rows[i].estimate_s;
	}
}

void xf_bench_progress_clear(const struct xf_bench_progress *pr)
{
	if (pr->tty)
		fputs("\r\033[K", stderr);
}

static void show(const struct xf_bench_progress *pr, const struct xf_bench_plan *plan,
		 const struct xf_bench_row *row, const char *what, double left)
{
	char eta[32];

	if (left < 0)
		left = 0;
	if (left >= 60)
		snprintf(eta, sizeof(eta), "%dm%02ds", (int)left / 60, (int)left % 60);
	else
		snprintf(eta, sizeof(eta), "%.0f s", left);
	if (pr->tty) {
		fprintf(stderr, "\r\033[K[%u/%u] %s %s: %s, about %s left", pr->done + 1, pr->rows,
			plan->workload->name, row->name, what, eta);
	} else if (!strcmp(what, "warm-up")) {
		/* One line per row: logs stay short and still show where a run stopped. */
		fprintf(stderr, "xfiber bench: [%u/%u] %s %s (%s), about %s left\n", pr->done + 1,
			pr->rows, plan->workload->name, row->name, row->pinning, eta);
	}
	fflush(stderr);
}

/* One run under the watchdog; the harness thread starts and ends in init state. */
static int timed_run(const struct xf_bench_opts *o, struct xf_bench_row *row, uint64_t iters,
		     struct xf_bench_sample *s)
{
	unsigned secs = (unsigned)ceil(o->timeout);
	int err;

	memset(s, 0, sizeof(*s));
	xf_bench_state_init();
	alarm(secs ? secs : 1);
	err = row->run(&row->p, iters, s);
	alarm(0);
	xf_bench_state_init();
	return err;
}

/* Grows the work until one run lasts the warm-up time, then scales it to
 * --time.  The growing runs are the warm-up. */
static int calibrate(const struct xf_bench_opts *o, struct xf_bench_row *row, char *err,
		     size_t err_size)
{
	const double warm_ns = warm_s(o) * 1e9;
	struct xf_bench_sample s;
	uint64_t n = 4;

	for (;;) {
		double grow;
		if (timed_run(o, row, n, &s)) {
			snprintf(err, err_size, "%s",
				 s.note[0] ? s.note : "the warm-up run failed");
			return -1;
		}
		if (s.elapsed_ns >= warm_ns || n >= MAX_ITERS)
			break;
		/* Aim past the target, but never more than 16x at once: the first
		 * runs are noisy (page faults, cold caches). */
		grow = s.elapsed_ns > 0 ? 1.5 * warm_ns / s.elapsed_ns : 16;
		grow = grow < 2 ? 2 : grow > 16 ? 16 : grow;
		n = (uint64_t)((double)n * grow);
	}
	row->iters =
	    (uint64_t)((double)n * o->run_time * 1e9 / (s.elapsed_ns > 0 ? s.elapsed_ns : 1));
	if (row->iters < 1)
		row->iters = 1;
	if (row->iters > MAX_ITERS)
		row->iters = MAX_ITERS;
	return 0;
}

static void record(struct xf_bench_row *row, const struct xf_bench_sample *s)
{
	row->samples[row->nsamples] = s->value;
	row->elapsed_ns[row->nsamples] = s->elapsed_ns;
	for (unsigned e = 0; e < s->nextra; e++)
		row->extra_runs[row->nsamples][e] = s->extra[e].value;
	row->nsamples++;
	row->last = *s;
}

static void update_wall(struct xf_bench_progress *pr, const struct xf_bench_row *row, double w)
{
	double *avg = row->fixed_work ? &pr->fixed_wall_s : &pr->run_wall_s;

	*avg = *avg > 0 ? 0.7 * *avg + 0.3 * w : w;
}

static int run_row(const struct xf_bench_opts *o, struct xf_bench_plan *plan,
		   struct xf_bench_row *row, struct xf_bench_progress *pr, char *err,
		   size_t err_size)
{
	const int pins[2] = {row->p.cpu[0], row->p.cpu[1]};
	struct xf_bench_sample s;
	char what[32];
	int rc = 0;

	snprintf(watchdog_msg, sizeof(watchdog_msg),
		 "xfiber bench: %s %s: a run took longer than %.0f s (--timeout); stopped\n",
		 plan->workload->name, row->name, ceil(o->timeout));
	/* The harness thread runs single-task rows itself; tasks pin themselves. */
	if ((rc = xf_bench_pin(pins, row->p.ncpus < 2 ? 1 : 2))) {
		snprintf(err, err_size, "cannot pin to %s: %s", row->pinning, strerror(rc));
		return -1;
	}
	/* Take off what was added for this row, not a newer guess: the two
	 * differ once run times are known, and left_s would drift. */
	pr->left_s -= row->estimate_s;
	show(pr, plan, row, "warm-up", pr->left_s + row_estimate(o, row, pr));
	if (row->fixed_work || o->iterations) {
		row->iters = row->fixed_work ? 1 : o->iterations;
		rc = timed_run(o, row, row->iters, &s);
		if (rc && !s.note[0])
			snprintf(s.note, sizeof(s.note), "the warm-up run failed");
	} else {
		rc = calibrate(o, row, s.note, sizeof(s.note));
	}
	for (unsigned r = 0; !rc && r < o->runs; r++) {
		double t0 = wall_s();
		double per_run = pr->run_wall_s > 0 ? pr->run_wall_s : o->run_time;
		if (row->fixed_work)
			per_run = pr->fixed_wall_s > 0 ? pr->fixed_wall_s : o->run_time;
		snprintf(what, sizeof(what), "run %u/%u", r + 1, o->runs);
		show(pr, plan, row, what, pr->left_s + (o->runs - r) * per_run);
		rc = timed_run(o, row, row->iters, &s);
		if (!rc) {
			record(row, &s);
			update_wall(pr, row, wall_s() - t0);
		}
	}
	xf_bench_pin(NULL, 0);
	if (rc) {
		snprintf(err, err_size, "%s", s.note[0] ? s.note : strerror(rc));
		return -1;
	}
	return 0;
}

/* Table workloads: each run measures every row at once. */
static int run_table(const struct xf_bench_opts *o, struct xf_bench_plan *plan,
		     struct xf_bench_progress *pr, char *err, size_t err_size)
{
	const int pin = plan->nrows ? plan->rows[0].p.cpu[0] : 0;
	unsigned secs = (unsigned)ceil(o->timeout);
	char what[32];
	int rc = 0;

	snprintf(watchdog_msg, sizeof(watchdog_msg),
		 "xfiber bench: %s: a run took longer than %.0f s (--timeout); stopped\n",
		 plan->workload->name, ceil(o->timeout));
	if (!plan->nrows)
		return 0;
	xf_bench_pin(&pin, 1);
	/* The first measurement is the warm-up. */
	for (unsigned r = 0; !rc && r <= o->runs; r++) {
		if (r)
			snprintf(what, sizeof(what), "run %u/%u", r, o->runs);
		else
			snprintf(what, sizeof(what), "warm-up");
		show(pr, plan, &plan->rows[0], what, pr->left_s);
		alarm(secs ? secs : 1);
		rc = plan->workload->measure_all(o, plan, r ? r - 1 : 0, err, err_size);
		alarm(0);
	}
	xf_bench_pin(NULL, 0);
	for (unsigned i = 0; i < plan->nrows; i++)
		pr->done += !plan->rows[i].skip[0];
	pr->left_s -= table_estimate(o, plan);
	return rc ? -1 : 0;
}

int xf_bench_run_plan(const struct xf_bench_opts *o, struct xf_bench_plan *plan,
		      struct xf_bench_progress *pr, char *err, size_t err_size)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_watchdog;
	sigaction(SIGALRM, &sa, NULL);
	if (plan->workload->measure_all)
		return run_table(o, plan, pr, err, err_size);
	for (unsigned i = 0; i < plan->nrows; i++) {
		struct xf_bench_row *row = &plan->rows[i];
		char why[200];

		if (row->skip[0])
			continue;
		if (run_row(o, plan, row, pr, why, sizeof(why))) {
			snprintf(err, err_size, "%s %s: %s", plan->workload->name, row->name, why);
			return -1;
		}
		pr->done++;
	}
	return 0;
}
