/* report.c - the human tables and the JSON results of `xfiber bench`. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "bench/report.h"
#include "bench/stats.h"
#include "common/json.h"
#include "xfiber.h"

double xf_bench_speedup(double value, double base, bool higher_is_better)
{
	if (!(value > 0) || !(base > 0))
		return NAN;
	return higher_is_better ? 100 * value / base : 100 * base / value;
}

int xf_bench_decimals(double magnitude)
{
	magnitude = fabs(magnitude);
	if (magnitude >= 100000)
		return 0;
	if (magnitude >= 100)
		return 1;
	if (magnitude >= 1)
		return 3;
	return 4;
}

const struct xf_bench_row *xf_bench_baseline_row(const struct xf_bench_plan *plan,
						 const char *baseline)
{
	for (unsigned i = 0; baseline && i < plan->nrows; i++) {
		if (!strcmp(plan->rows[i].name, baseline) && plan->rows[i].nsamples)
			return &plan->rows[i];
	}
	for (unsigned i = 0; i < plan->nrows; i++) {
		if (plan->rows[i].nsamples)
			return &plan->rows[i];
	}
	return NULL;
}

/* What the header line and the JSON say about the machine. */
struct machine {
	char model[128];
	struct utsname uts;
	xf_xstate_info info;
};

static void machine_get(struct machine *m)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(m->model, sizeof(m->model), "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = 0;
		snprintf(m->model, sizeof(m->model), "%s", colon);
		break;
	}
	if (f)
		fclose(f);
	if (uname(&m->uts))
		memset(&m->uts, 0, sizeof(m->uts));
	xf_xstate_info_get(&m->info);
}

void xf_bench_print_header(FILE *out, const struct xf_bench_opts *o)
{
	static struct machine m;

	machine_get(&m);
	fprintf(out,
		"xfiber bench: xfiber %s (commit %s); %s, %d CPUs allowed; Linux %s; XCR0 0x%llx\n",
		xf_version(), xf_commit(), m.model, o->ncpus, m.uts.release,
		(unsigned long long)m.info.xcr0);
	if (o->iterations)
		fprintf(out, "method: warm-up, then %u run%s of %llu operations per row\n", o->runs,
			o->runs == 1 ? "" : "s", (unsigned long long)o->iterations);
	else
		fprintf(out, "method: warm-up, then %u run%s of about %.2f s per row\n", o->runs,
			o->runs == 1 ? "" : "s", o->run_time);
}

/* Column widths: the row names and the numbers, so every table lines up. */
struct layout {
	int name, pin, num, decimals;
};

static struct layout layout_of(const struct xf_bench_plan *plan)
{
	struct layout l = {.name = 3, .pin = 7, .num = 6};
	double biggest = 0;

	for (unsigned i = 0; i < plan->nrows; i++) {
		const struct xf_bench_row *row = &plan->rows[i];
		int n = (int)strlen(row->name), p = (int)strlen(row->pinning);
		l.name = n > l.name ? n : l.name;
		l.pin = p > l.pin ? p : l.pin;
		for (unsigned r = 0; r < row->nsamples; r++)
			biggest = fabs(row->samples[r]) > biggest ? fabs(row->samples[r]) : biggest;
	}
	l.decimals = xf_bench_decimals(biggest);
	/* Integer digits, the point and decimals; room for "Stddev" at least. */
	l.num = (int)floor(log10(biggest > 1 ? biggest : 1)) + 2 + l.decimals;
	l.num = l.num < 8 ? 8 : l.num;
	return l;
}

/* The note shows the last run; a paired ratio (the first extra named x_*;
 * any after it are its spread within the run) is a fresh comparison in every
 * run, so the table also gives its median over all of them, which is the
 * figure to quote. */
static void print_ratio_median(FILE *out, const struct xf_bench_row *row)
{
	for (unsigned e = 0; row->nsamples > 1 && e < row->last.nextra; e++) {
		double v[XF_BENCH_MAX_RUNS];
		struct xf_bench_summary st;

		if (strncmp(row->last.extra[e].key, "x_", 2))
			continue;
		for (unsigned r = 0; r < row->nsamples; r++)
			v[r] = row->extra_runs[r][e];
		xf_bench_summarize(v, row->nsamples, &st);
		fprintf(out, "; over the %u runs %.2fx (%.2fx-%.2fx)", row->nsamples, st.median,
			st.min, st.max);
		return;
	}
}

void xf_bench_print_table(FILE *out, const struct xf_bench_opts *o,
			  const struct xf_bench_plan *plan)
{
	const struct xf_bench_workload *w = plan->workload;
	const struct xf_bench_row *base = xf_bench_baseline_row(plan, o->baseline);
	const struct layout l = layout_of(plan);
	struct xf_bench_summary bst = {0};
	char speedup_head[80];
	int width;

	if (base)
		xf_bench_summarize(base->samples, base->nsamples, &bst);
	snprintf(speedup_head, sizeof(speedup_head), "%%speedup vs %s",
		 base ? base->name : "(none)");
	fprintf(out, "\n%s: %s [%s]\n", w->name, w->what, w->unit);
	width = fprintf(out, "%*s | %*s | %*s | %*s | %*s | %*s | %s | notes\n", l.name, "row",
			l.pin, "pinning", l.num, "Mean", l.num, "Stddev", l.num, "Min", l.num,
			"Median", speedup_head);
	for (int i = 0; i < width - 1; i++)
		fputc('=', out);
	fputc('\n', out);
	for (unsigned i = 0; i < plan->nrows; i++) {
		const struct xf_bench_row *row = &plan->rows[i];
		struct xf_bench_summary st;
		double sp;

		if (!row->nsamples) {
			fprintf(out, "%*s | %*s | skipped: %s\n", l.name, row->name, l.pin,
				row->pinning, row->skip[0] ? row->skip : "not run");
			continue;
		}
		xf_bench_summarize(row->samples, row->nsamples, &st);
		sp = base ? xf_bench_speedup(st.mean, bst.mean, w->higher_is_better) : NAN;
		fprintf(out, "%*s | %*s | %*.*f | %*.*f | %*.*f | %*.*f | %*.2f | %s", l.name,
			row->name, l.pin, row->pinning, l.num, l.decimals, st.mean, l.num,
			l.decimals, st.stddev, l.num, l.decimals, st.min, l.num, l.decimals,
			st.median, (int)strlen(speedup_head), sp, row->last.note);
		print_ratio_median(out, row);
		fputc('\n', out);
	}
}

static void json_stats(struct xf_json *j, const struct xf_bench_row *row)
{
	struct xf_bench_summary st;

	xf_bench_summarize(row->samples, row->nsamples, &st);
	xf_json_begin_object(j, "stats");
	xf_json_uint(j, "n", st.n);
	xf_json_double(j, "mean", st.mean);
	xf_json_double(j, "stddev", st.stddev);
	xf_json_double(j, "min", st.min);
	xf_json_double(j, "median", st.median);
	xf_json_double(j, "max", st.max);
	xf_json_end_object(j);
}

static void json_row(struct xf_json *j, const struct xf_bench_row *row)
{
	xf_json_begin_object(j, NULL);
	xf_json_string(j, "name", row->name);
	xf_json_string(j, "variant", row->variant ? row->variant->name : NULL);
	xf_json_string(j, "kind", row->variant ? row->variant->kind : NULL);
	xf_json_string(j, "pinning", row->pinning);
	xf_json_begin_array(j, "cpus");
	for (int i = 0; i < (row->p.ncpus > 1 ? 2 : 1); i++)
		xf_json_int(j, NULL, row->p.cpu[i]);
	xf_json_end_array(j);
	xf_json_string(j, "state", xf_bench_state_name(row->p.state));
	xf_json_string(j, "mode", row->p.process ? "process" : "threads");
	xf_json_string(j, "skipped", row->skip[0] ? row->skip : NULL);
	xf_json_uint(j, "iterations", row->iters);
	xf_json_begin_array(j, "samples");
	for (unsigned r = 0; r < row->nsamples; r++)
		xf_json_double(j, NULL, row->samples[r]);
	xf_json_end_array(j);
	xf_json_begin_array(j, "elapsed_ns");
	for (unsigned r = 0; r < row->nsamples; r++)
		xf_json_double(j, NULL, row->elapsed_ns[r]);
	xf_json_end_array(j);
	json_stats(j, row);
	xf_json_string(j, "note", row->last.note);
	xf_json_begin_object(j, "extra");
	for (unsigned e = 0; e < row->last.nextra; e++)
		xf_json_double(j, row->last.extra[e].key, row->last.extra[e].value);
	xf_json_end_object(j);
	/* The same keys, one value per timed run, in the order of samples. */
	xf_json_begin_object(j, "extra_runs");
	for (unsigned e = 0; e < row->last.nextra; e++) {
		xf_json_begin_array(j, row->last.extra[e].key);
		for (unsigned r = 0; r < row->nsamples; r++)
			xf_json_double(j, NULL, row->extra_runs[r][e]);
		xf_json_end_array(j);
	}
	xf_json_end_object(j);
	xf_json_end_object(j);
}

static void json_machine(struct xf_json *j, const struct xf_bench_opts *o)
{
	static struct machine m;

	machine_get(&m);
	xf_json_begin_object(j, "machine");
	xf_json_string(j, "cpu_model", m.model);
	xf_json_string(j, "kernel", m.uts.release);
	xf_json_string(j, "kernel_version", m.uts.version);
	xf_json_string(j, "arch", m.uts.machine);
	xf_json_hex(j, "xcr0", m.info.xcr0);
	xf_json_uint(j, "xsave_size_standard", m.info.size_standard);
	xf_json_string(j, "xsave_strategy", m.info.strategy_name);
	xf_json_bool(j, "amx_permitted", m.info.amx_permitted);
	xf_json_uint(j, "min_sigstksz", m.info.min_sigstksz);
	xf_json_int(j, "cpus_allowed", o->ncpus);
	xf_json_end_object(j);
}

static void json_settings(struct xf_json *j, const struct xf_bench_opts *o, int argc, char **argv)
{
	xf_json_begin_object(j, "settings");
	xf_json_begin_array(j, "argv");
	for (int i = 0; i < argc; i++)
		xf_json_string(j, NULL, argv[i]);
	xf_json_end_array(j);
	xf_json_uint(j, "runs", o->runs);
	xf_json_double(j, "run_time_s", o->run_time);
	xf_json_uint(j, "iterations", o->iterations);
	xf_json_double(j, "timeout_s", o->timeout);
	xf_json_bool(j, "quick", o->quick);
	xf_json_string(j, "baseline", o->baseline);
	xf_json_int(j, "cpu", o->cpu[0]);
	xf_json_uint(j, "groups", o->groups);
	xf_json_uint(j, "loops", o->loops);
	xf_json_uint(j, "size", o->size);
	xf_json_uint(j, "fds", o->fds);
	xf_json_string(j, "transport", o->use_pipe ? "pipe" : "socket");
	xf_json_end_object(j);
}

int xf_bench_write_json(const char *path, const struct xf_bench_opts *o, int argc, char **argv,
			struct xf_bench_plan *const *plans, unsigned nplans)
{
	FILE *f = fopen(path, "w");
	char date[32];
	time_t now = time(NULL);
	struct xf_json j;
	int err = 0;

	if (!f)
		return errno;
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	xf_json_init(&j, f);
	xf_json_begin_object(&j, NULL);
	xf_json_string(&j, "schema", XF_BENCH_SCHEMA);
	xf_json_string(&j, "date", date);
	xf_json_begin_object(&j, "xfiber");
	xf_json_string(&j, "version", xf_version());
	xf_json_string(&j, "commit", xf_commit());
	xf_json_end_object(&j);
	json_machine(&j, o);
	json_settings(&j, o, argc, argv);
	xf_json_begin_array(&j, "workloads");
	for (unsigned p = 0; p < nplans; p++) {
		const struct xf_bench_plan *plan = plans[p];
		const struct xf_bench_row *base = xf_bench_baseline_row(plan, o->baseline);

		xf_json_begin_object(&j, NULL);
		xf_json_string(&j, "name", plan->workload->name);
		xf_json_string(&j, "what", plan->workload->what);
		xf_json_string(&j, "unit", plan->workload->unit);
		xf_json_bool(&j, "higher_is_better", plan->workload->higher_is_better);
		xf_json_string(&j, "baseline", base ? base->name : NULL);
		xf_json_begin_array(&j, "rows");
		for (unsigned i = 0; i < plan->nrows; i++)
			json_row(&j, &plan->rows[i]);
		xf_json_end_array(&j);
		xf_json_end_object(&j);
	}
	xf_json_end_array(&j);
	xf_json_end_object(&j);
	if (ferror(f))
		err = EIO;
	if (fclose(f) && !err)
		err = errno;
	return err;
}
