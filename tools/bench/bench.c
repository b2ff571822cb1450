/* bench.c - the workload and variant registries, and the helpers plans are made with. */
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "common/tsc.h"

extern const struct xf_bench_workload __start_xf_bench_workloads[];
extern const struct xf_bench_workload __stop_xf_bench_workloads[];
extern const struct xf_bench_variant __start_xf_bench_variants[];
extern const struct xf_bench_variant __stop_xf_bench_variants[];

/* Strict order on (order, position in the section), so equal orders keep link order. */
static int after_w(const struct xf_bench_workload *a, const struct xf_bench_workload *b)
{
	return a->order != b->order ? a->order > b->order : a > b;
}

static int after_v(const struct xf_bench_variant *a, const struct xf_bench_variant *b)
{
	return a->order != b->order ? a->order > b->order : a > b;
}

const struct xf_bench_workload *xf_bench_workload_at(unsigned i)
{
	const struct xf_bench_workload *prev = NULL, *best = NULL;

	for (unsigned k = 0; k <= i; k++) {
		best = NULL;
		for (const struct xf_bench_workload *c = __start_xf_bench_workloads;
		     c < __stop_xf_bench_workloads; c++) {
			if (prev && !after_w(c, prev))
				continue;
			if (!best || after_w(best, c))
				best = c;
		}
		if (!best)
			return NULL;
		prev = best;
	}
	return best;
}

const struct xf_bench_workload *xf_bench_workload_find(const char *name)
{
	for (const struct xf_bench_workload *c = __start_xf_bench_workloads;
	     c < __stop_xf_bench_workloads; c++) {
		if (!strcmp(c->name, name))
			return c;
	}
	return NULL;
}

/* Whether name matches one of the comma-separated globs of list. */
static bool name_listed(const char *name, const char *list)
{
	char glob[128];

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (n && n < sizeof(glob)) {
			memcpy(glob, p, n);
			glob[n] = '\0';
			if (!fnmatch(glob, name, 0))
				return true;
		}
		p += n + (p[n] == ',');
	}
	return false;
}

/* --rows: the plan keeps only the rows it names, in their order.  Rows
 * are measured independently of each other (a yardstick is part of its
 * row's own run), so dropping some changes nothing in the others. */
static void keep_rows_named(struct xf_bench_plan *plan, const char *list)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < plan->nrows; i++) {
		if (!name_listed(plan->rows[i].name, list))
			continue;
		if (kept != i)
			plan->rows[kept] = plan->rows[i];
		kept++;
	}
	plan->nrows = kept;
}

int xf_bench_plan_make(const struct xf_bench_workload *w, const struct xf_bench_opts *o,
		       struct xf_bench_plan *plan, char *err, size_t err_size)
{
	const struct xf_bench_variant *prev = NULL;

	memset(plan, 0, sizeof(*plan));
	plan->workload = w;
	if (w->check && w->check(o, err, err_size))
		return -1;
	/* Variants in their order; those of other workloads are passed over. */
	for (;;) {
		const struct xf_bench_variant *best = NULL;
		for (const struct xf_bench_variant *c = __start_xf_bench_variants;
		     c < __stop_xf_bench_variants; c++) {
			if (strcmp(c->workload, w->name) || (prev && !after_v(c, prev)))
				continue;
			if (!best || after_v(best, c))
				best = c;
		}
		if (!best)
			break;
		plan->variant = best;
		if (best->plan(o, plan, err, err_size))
			return -1;
		prev = best;
	}
	if (plan->nrows < XF_BENCH_MAX_ROWS && o->rows)
		keep_rows_named(plan, o->rows);
	if (plan->nrows == XF_BENCH_MAX_ROWS) {
		snprintf(err, err_size, "%s: too many rows (at most %d); ask for fewer", w->name,
			 XF_BENCH_MAX_ROWS);
		return -1;
	}
	return 0;
}

struct xf_bench_row *xf_bench_plan_add(struct xf_bench_plan *plan, const struct xf_bench_params *p,
				       xf_bench_run_fn run, const char *fmt, ...)
{
	struct xf_bench_row *row;
	va_list ap;

	/* The last slot stays free so a full plan can be told from a complete one. */
	if (plan->nrows + 1 >= XF_BENCH_MAX_ROWS) {
		plan->nrows = XF_BENCH_MAX_ROWS;
		return NULL;
	}
	row = &plan->rows[plan->nrows++];
	memset(row, 0, sizeof(*row));
	row->variant = plan->variant;
	row->p = *p;
	row->run = run;
	va_start(ap, fmt);
	vsnprintf(row->name, sizeof(row->name), fmt, ap);
	va_end(ap);
	xf_bench_describe_pinning(row);
	/* AMX rows exist where AMX does not, saying so (states_wanted). */
	if (p->state == XF_STATE_AMX && xf_bench_state_unavailable(XF_STATE_AMX))
		snprintf(row->skip, sizeof(row->skip), "no AMX: %s",
			 xf_bench_state_unavailable(XF_STATE_AMX));
	return row;
}

void xf_bench_describe_pinning(struct xf_bench_row *row)
{
	const struct xf_bench_params *p = &row->p;

	if (p->ncpus < 2)
		snprintf(row->pinning, sizeof(row->pinning), "cpu %d", p->cpu[0]);
	else
		snprintf(row->pinning, sizeof(row->pinning), "cpus %d/%d", p->cpu[0], p->cpu[1]);
}

unsigned xf_bench_states_wanted(const struct xf_bench_opts *o)
{
	unsigned mask = 0;

	if (o->states)
		return o->states;
	for (int s = 0; s < XF_STATE_N; s++) {
		if (!xf_bench_state_unavailable(s))
			mask |= 1u << s;
	}
	/* AMX rows are planned everywhere, and skipped with the reason where
	 * this machine has none (xf_bench_plan_add): a table shows what it
	 * could not measure. */
	return mask | 1u << XF_STATE_AMX;
}

/* The slot for key: the existing one, or a new one set to 0. */
static double *extra_slot(struct xf_bench_sample *s, const char *key)
{
	for (unsigned e = 0; e < s->nextra; e++) {
		if (!strcmp(s->extra[e].key, key))
			return &s->extra[e].value;
	}
	if (s->nextra == XF_BENCH_MAX_EXTRA) {
		/* A row reporting more than the JSON can hold is our bug: say so
		 * rather than drop a number. */
		fprintf(stderr, "xfiber bench: internal error: more than %d extras (%s)\n",
			XF_BENCH_MAX_EXTRA, key);
		abort();
	}
	s->extra[s->nextra].key = key;
	s->extra[s->nextra].value = 0;
	return &s->extra[s->nextra++].value;
}

void xf_bench_sample_extra(struct xf_bench_sample *s, const char *key, double value)
{
	*extra_slot(s, key) = value;
}

void xf_bench_sample_extra_add(struct xf_bench_sample *s, const char *key, double value)
{
	*extra_slot(s, key) += value;
}

double xf_bench_now_ns(void)
{
	return (double)xf_tsc_read() * xf_tsc_ns_per_tick();
}
