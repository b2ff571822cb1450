/*
 * command.c - `xfiber bench`: options, the plans of the workloads asked
 * for, running them, and what comes out (tables, --json, --plot); also
 * `xfiber bench compare` and `xfiber bench plot`.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/sig.h"
#include "bench/compare.h"
#include "bench/plot.h"
#include "bench/report.h"
#include "bench/run.h"
#include "bench/task.h"
#include "common/command.h"
#include "common/tsc.h"

#define MAX_WORKLOADS 16
#define MAX_CPUS      1024

/* bench_help: below, after the options it lists. */
static void bench_help(FILE *out);

/* One line on stderr, prefixed like every message of this command. */
__attribute__((format(printf, 1, 2))) static void complain(const char *fmt, ...)
{
	va_list ap;

	fputs("xfiber bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse_u64(const char *opt, const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (!*v || *end || errno || *v == '-' || x < min || x > max) {
		complain("%s wants a whole number from %llu to %llu, not '%s'", opt,
			 (unsigned long long)min, (unsigned long long)max, v);
		return -1;
	}
	*out = x;
	return 0;
}

static int parse_uint(const char *opt, const char *v, unsigned min, unsigned max, unsigned *out)
{
	uint64_t x;

	if (parse_u64(opt, v, min, max, &x))
		return -1;
	*out = (unsigned)x;
	return 0;
}

/* A number from min to max; what it counts, for the complaint. */
static int parse_number(const char *opt, const char *v, const char *what, double min, double max,
			double *out)
{
	char *end;
	double x = strtod(v, &end);

	if (!*v || *end || !(x >= min && x <= max)) {
		complain("%s wants %s from %g to %g, not '%s'", opt, what, min, max, v);
		return -1;
	}
	*out = x;
	return 0;
}

static int parse_seconds(const char *opt, const char *v, double min, double max, double *out)
{
	return parse_number(opt, v, "seconds", min, max, out);
}

/* Whether the file an option names can be written, asked before a run
 * of minutes rather than after it: a file that does not exist yet is
 * made and removed again. */
static int check_writable(const char *opt, const char *path)
{
	int fd;

	if (!*path) {
		complain("%s wants a file name", opt);
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0) {
		close(fd);
		unlink(path);
		return 0;
	}
	if (errno == EEXIST)
		fd = open(path, O_WRONLY | O_CLOEXEC); /* not truncated: the run may fail */
	if (fd < 0) {
		complain("%s: cannot write %s: %s", opt, path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* A comma-separated list of names into a bit mask (bit = index in names). */
static int parse_list(const char *opt, const char *v, const char *const *names, int n,
		      unsigned *mask)
{
	char buf[256], *save = NULL;

	*mask = 0;
	snprintf(buf, sizeof(buf), "%s", v);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i;
		for (i = 0; i < n && (!names[i] || strcmp(tok, names[i])); i++)
			;
		if (i == n) {
			char choices[160] = "";
			for (int k = 0; k < n; k++) {
				if (names[k])
					snprintf(choices + strlen(choices),
						 sizeof(choices) - strlen(choices), "%s%s",
						 *choices ? ", " : "", names[k]);
			}
			complain("%s: unknown value '%s' (choose from %s)", opt, tok, choices);
			return -1;
		}
		*mask |= 1u << i;
	}
	if (!*mask) {
		complain("%s wants a value", opt);
		return -1;
	}
	return 0;
}

struct cli {
	struct xf_bench_opts o;
	const struct xf_bench_workload *workloads[MAX_WORKLOADS];
	unsigned nworkloads;
	const char *json, *plot;
	bool runs_set, time_set, messaging_set[4];
	unsigned used;		 /* XF_BOPT_* of the options given */
	char used_by[16][64];	 /* an option name per bit, for messages (copied: the
				  * parser's name buffer does not outlive the option) */
	int cpu;		 /* --cpu, or -1 */
};

static void note_use(struct cli *c, unsigned bit, const char *opt)
{
	c->used |= bit;
	snprintf(c->used_by[__builtin_ctz(bit)], sizeof(c->used_by[0]), "%s", opt);
}

static const char *const state_names[] = {"none", "x87", "sse", "avx", "avx512", "amx"};
static const char *const test_names[] = {"pipe", "futex", "yield"};
static const char *const cpus_names[] = {NULL, "1", "2"};
static const char *const peer_names[] = {"swapcontext", "boost", "go", "all", "none"};

/*
 * Every option of `xfiber bench`, once: its name, what it takes, where the
 * help lists it, which workloads' option bit it counts as (XF_BOPT_*, for
 * "does not apply"), and how its value is stored.  The help, the parser and
 * the options that may take their value from the next argument all come
 * from here.
 */
struct bench_option {
	const char *name;    /* "--runs" */
	const char *arg;     /* what the value is, for the help ("N"); NULL: a flag */
	const char *help;    /* continuation lines start with '\n' and are indented */
	const char *section; /* NULL: the general options; else a heading */
	unsigned bit;	     /* XF_BOPT_* the option counts as, or 0 */
	int (*set)(struct cli *c, const struct bench_option *opt, const char *value);
	uint64_t min, max;		/* bounds of a number */
	const char *const *choices;	/* a list's names */
	int nchoices;
	int index;			/* which of a family (messaging) */
};

static int set_quick(struct cli *c, const struct bench_option *opt, const char *value)
{
	(void)opt, (void)value;
	c->o.quick = true;
	return 0;
}

static int set_mode(struct cli *c, const struct bench_option *opt, const char *value)
{
	(void)value;
	c->o.modes |= strcmp(opt->name, "--threads") ? XF_MODE_PROCESS : XF_MODE_THREADS;
	return 0;
}

static int set_transport(struct cli *c, const struct bench_option *opt, const char *value)
{
	(void)value;
	c->o.use_pipe = !strcmp(opt->name, "--pipe");
	return 0;
}

static int set_runs(struct cli *c, const struct bench_option *opt, const char *value)
{
	c->runs_set = true;
	return parse_uint(opt->name, value, (unsigned)opt->min, (unsigned)opt->max, &c->o.runs);
}

static int set_time(struct cli *c, const struct bench_option *opt, const char *value)
{
	c->time_set = true;
	return parse_seconds(opt->name, value, 0.001, 60, &c->o.run_time);
}

static int set_timeout(struct cli *c, const struct bench_option *opt, const char *value)
{
	return parse_seconds(opt->name, value, 1, 3600, &c->o.timeout);
}

static int set_iterations(struct cli *c, const struct bench_option *opt, const char *value)
{
	return parse_u64(opt->name, value, opt->min, opt->max, &c->o.iterations);
}

static int set_json(struct cli *c, const struct bench_option *opt, const char *value)
{
	c->json = value;
	return check_writable(opt->name, value);
}

static int set_plot(struct cli *c, const struct bench_option *opt, const char *value)
{
	c->plot = value;
	return check_writable(opt->name, value);
}

static int set_baseline(struct cli *c, const struct bench_option *opt, const char *value)
{
	(void)opt;
	c->o.baseline = value;
	return 0;
}

static int set_rows(struct cli *c, const struct bench_option *opt, const char *value)
{
	if (!*value || strspn(value, ",") == strlen(value)) {
		complain("%s wants row names or patterns, such as 'echo-*'", opt->name);
		return -1;
	}
	c->o.rows = value;
	return 0;
}

static int set_cpu(struct cli *c, const struct bench_option *opt, const char *value)
{
	uint64_t cpu;

	if (parse_u64(opt->name, value, opt->min, opt->max, &cpu))
		return -1;
	c->cpu = (int)cpu;
	return 0;
}

/* --cpus, --state and --test: the list's bits are the option's value. */
static int set_list(struct cli *c, const struct bench_option *opt, const char *value)
{
	unsigned *mask = opt->bit == XF_BOPT_CPUS    ? &c->o.cpus
			 : opt->bit == XF_BOPT_STATE ? &c->o.states
						     : &c->o.tests;

	return parse_list(opt->name, value, opt->choices, opt->nchoices, mask);
}

static int set_peers(struct cli *c, const struct bench_option *opt, const char *value)
{
	unsigned m;

	if (parse_list(opt->name, value, opt->choices, opt->nchoices, &m))
		return -1;
	c->o.peers_set = true;
	c->o.peers = (m & 7) | (m & 8 ? XF_PEER_ALL : 0); /* "none" leaves none */
	return 0;
}

static int set_messaging(struct cli *c, const struct bench_option *opt, const char *value)
{
	unsigned *const vals[] = {&c->o.groups, &c->o.loops, &c->o.size, &c->o.fds};

	c->messaging_set[opt->index] = true;
	return parse_uint(opt->name, value, (unsigned)opt->min, (unsigned)opt->max,
			  vals[opt->index]);
}

#define MESSAGING "messaging (defaults as hackbench and perf bench sched messaging)"

static const struct bench_option options[] = {
    {.name = "--runs",
     .arg = "N",
     .help = "timed runs per row after the warm-up (default 5)",
     .set = set_runs,
     .min = 1,
     .max = XF_BENCH_MAX_RUNS},
    {.name = "--time",
     .arg = "S",
     .help = "seconds one run should take (default 0.2)",
     .set = set_time},
    {.name = "--iterations",
     .arg = "N",
     .help = "fixed operations per run instead of calibrating to --time",
     .bit = XF_BOPT_ITERATIONS,
     .set = set_iterations,
     .min = 1,
     .max = 1000000000},
    {.name = "--quick",
     .help = "tiny runs (1 run, ~30 ms, small messaging), for smoke tests",
     .set = set_quick},
    {.name = "--timeout",
     .arg = "S",
     .help = "a run longer than this stops the benchmark (default 60)",
     .set = set_timeout},
    {.name = "--baseline",
     .arg = "ROW",
     .help = "the row %speedup compares with (default: each table's first)",
     .set = set_baseline},
    {.name = "--json",
     .arg = "FILE",
     .help = "write every run's numbers, the machine and the settings",
     .set = set_json},
    {.name = "--plot",
     .arg = "FILE.png",
     .help = "bar charts with error bars (needs python3-matplotlib)",
     .set = set_plot},
    {.name = "--rows",
     .arg = "GLOBS",
     .help = "only the rows these match, e.g. 'echo-*,mix-70%/*'",
     .set = set_rows},
    {.name = "--cpu",
     .arg = "N",
     .help = "the first CPU rows are pinned to (default: the first allowed)",
     .set = set_cpu,
     .max = MAX_CPUS - 1},
    {.name = "--cpus",
     .arg = "1|2|1,2",
     .help = "pin both tasks to one CPU, or one to each of two CPUs",
     .bit = XF_BOPT_CPUS,
     .set = set_list,
     .choices = cpus_names,
     .nchoices = 3},
    {.name = "--state",
     .arg = "LIST",
     .help = "registers dirtied around each operation: none, x87, sse, avx,\n"
	     "avx512, amx (default: every one this CPU has)",
     .bit = XF_BOPT_STATE,
     .set = set_list,
     .choices = state_names,
     .nchoices = XF_STATE_N},
    {.name = "--threads",
     .help = "kernel threads (the default for ctx)",
     .bit = XF_BOPT_MODE,
     .set = set_mode},
    {.name = "--process",
     .help = "processes instead of kernel threads",
     .bit = XF_BOPT_MODE,
     .set = set_mode},
    {.name = "--test",
     .arg = "LIST",
     .help = "pipe, futex, yield (default: all three; yield needs --cpus=1)",
     .section = "ctx",
     .bit = XF_BOPT_TEST,
     .set = set_list,
     .choices = test_names,
     .nchoices = XF_CTX_NTESTS},
    {.name = "--peers",
     .arg = "LIST",
     .help = "swapcontext, boost, go, all or none (default: all)",
     .section = "ctx",
     .bit = XF_BOPT_PEERS,
     .set = set_peers,
     .choices = peer_names,
     .nchoices = 5},
    {.name = "--groups",
     .arg = "N",
     .help = "groups of senders and receivers (10)",
     .section = MESSAGING,
     .bit = XF_BOPT_MESSAGING,
     .set = set_messaging,
     .min = 1,
     .max = 1000,
     .index = 0},
    {.name = "--fds",
     .arg = "N",
     .help = "senders and receivers per group (20)",
     .section = MESSAGING,
     .bit = XF_BOPT_MESSAGING,
     .set = set_messaging,
     .min = 1,
     .max = 1000,
     .index = 3},
    {.name = "--loops",
     .arg = "N",
     .help = "messages each sender sends each receiver (100)",
     .section = MESSAGING,
     .bit = XF_BOPT_MESSAGING,
     .set = set_messaging,
     .min = 1,
     .max = 1000000,
     .index = 1},
    {.name = "--size",
     .arg = "N",
     .help = "bytes per message (100)",
     .section = MESSAGING,
     .bit = XF_BOPT_MESSAGING,
     .set = set_messaging,
     .min = 1,
     .max = 1 << 20,
     .index = 2},
    {.name = "--pipe",
     .help = "pipes as the transport",
     .section = MESSAGING,
     .bit = XF_BOPT_MESSAGING,
     .set = set_transport},
    {.name = "--socket",
     .help = "socket pairs as the transport (the default)",
     .section = MESSAGING,
     .bit = XF_BOPT_MESSAGING,
     .set = set_transport},
};

static const struct bench_option *find_option(const char *name)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (!strcmp(name, options[i].name))
			return &options[i];
	return NULL;
}

/* One option (name has no "=value"); value is NULL for a flag. */
static int parse_option(struct cli *c, const char *name, const char *value)
{
	const struct bench_option *opt = find_option(name);

	if (!opt) {
		complain("unknown option '%s' (see 'xfiber bench --help')", name);
		return -1;
	}
	if (!opt->arg && value) {
		complain("%s takes no value, not '%s'", name, value);
		return -1;
	}
	if (opt->arg && !value) {
		complain("%s wants a value", name);
		return -1;
	}
	if (opt->bit)
		note_use(c, opt->bit, opt->name);
	return opt->set(c, opt, value);
}

static void bench_help(FILE *out)
{
	const char *section = NULL;

	fprintf(out, "usage: xfiber bench [WORKLOAD...] [OPTIONS]\n"
		     "       xfiber bench compare A.json B.json [--alpha=P]\n"
		     "       xfiber bench plot RESULTS.json OUT.png\n\n"
		     "Reproduces the classic kernel benchmarks on x86-64, with the registers in a\n"
		     "chosen state, for kernel threads and processes and for user-level peers.\n"
		     "Each row is warmed up (its work calibrated to --time), then timed --runs\n"
		     "times; tables show mean, stddev, min and median, the row's CPU pinning, and\n"
		     "%%speedup against a baseline row (100%% = no change, above = better).\n\n"
		     "workloads (default: all):\n");
	for (unsigned i = 0; xf_bench_workload_at(i); i++)
		fprintf(out, "  %-10s %s\n", xf_bench_workload_at(i)->name,
			xf_bench_workload_at(i)->summary);
	fprintf(out, "  all        every workload above: the suite `make bench` runs\n\n"
		     "options:\n");
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		const struct bench_option *opt = &options[i];
		char head[48];

		if (opt->section && (!section || strcmp(section, opt->section)))
			fprintf(out, "%s:\n", opt->section);
		section = opt->section;
		snprintf(head, sizeof(head), "%s%s%s", opt->name, opt->arg ? "=" : "",
			 opt->arg ? opt->arg : "");
		fprintf(out, "  %-16s ", head);
		for (const char *h = opt->help; *h; h++) {
			if (*h == '\n')
				fprintf(out, "\n  %-16s ", "");
			else
				fputc(*h, out);
		}
		fputc('\n', out);
	}
	fprintf(out, "\n"
		     "compare: --alpha=P  significance level of Welch's t-test (default 0.05)\n\n"
		     "examples:\n"
		     "  xfiber bench ctx --test=pipe --state=none,avx512 --process --cpus=1,2\n"
		     "  xfiber bench sig --json=a.json    ...change something...\n"
		     "  xfiber bench sig --json=b.json && xfiber bench compare a.json b.json\n");
}

static int add_workload(struct cli *c, const char *name)
{
	const struct xf_bench_workload *w;

	if (!strcmp(name, "all")) {
		c->o.suite = true;
		for (unsigned i = 0; xf_bench_workload_at(i); i++) {
			if (add_workload(c, xf_bench_workload_at(i)->name))
				return -1;
		}
		return 0;
	}
	w = xf_bench_workload_find(name);
	if (!w) {
		complain("unknown workload '%s' (see 'xfiber bench --help')", name);
		return -1;
	}
	for (unsigned i = 0; i < c->nworkloads; i++) {
		if (c->workloads[i] == w)
			return 0;
	}
	if (c->nworkloads < MAX_WORKLOADS)
		c->workloads[c->nworkloads++] = w;
	return 0;
}

static int parse_args(struct cli *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		char name[64];
		const char *arg = argv[i], *eq = strchr(arg, '='), *value = NULL;

		if (arg[0] != '-') {
			if (add_workload(c, arg))
				return -1;
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (eq) {
			value = eq + 1;
		} else {
			/* A value may also be the next argument. */
			const struct bench_option *opt = find_option(name);

			if (opt && opt->arg && i + 1 < argc)
				value = argv[++i];
		}
		if (parse_option(c, name, value))
			return -1;
	}
	if (!c->nworkloads && add_workload(c, "all"))
		return -1;
	return 0;
}

/* Options that none of the chosen workloads takes are a mistake worth a line. */
static int check_applicable(const struct cli *c)
{
	for (unsigned bit = 1; bit && bit <= XF_BOPT_ITERATIONS; bit <<= 1) {
		unsigned takers = 0;
		if (!(c->used & bit))
			continue;
		for (unsigned i = 0; i < c->nworkloads; i++)
			takers |= c->workloads[i]->options & bit;
		if (!takers) {
			complain("%s does not apply to %s%s", c->used_by[__builtin_ctz(bit)],
				 c->workloads[0]->name, c->nworkloads > 1 ? " and the others" : "");
			return -1;
		}
	}
	return 0;
}

/* CPUs, states and the quick and messaging defaults. */
static int settle(struct cli *c)
{
	struct xf_bench_opts *o = &c->o;
	int allowed[MAX_CPUS], n, k = 0;

	o->ncpus = xf_bench_allowed_cpus(allowed, MAX_CPUS);
	n = o->ncpus < MAX_CPUS ? o->ncpus : MAX_CPUS;
	if (n < 1) {
		complain("cannot read this process's CPUs (sched_getaffinity)");
		return -1;
	}
	if (c->cpu >= 0) {
		while (k < n && allowed[k] != c->cpu)
			k++;
		if (k == n) {
			complain("--cpu=%d: this process may not run on CPU %d", c->cpu, c->cpu);
			return -1;
		}
	}
	/* Two-CPU rows take the next allowed CPU after the first. */
	o->cpu[0] = allowed[k];
	o->cpu[1] = allowed[(k + 1) % n];
	if ((o->cpus & 4) && o->ncpus < 2) {
		complain("--cpus=2 needs two CPUs, but this process may run on only %d", o->ncpus);
		return -1;
	}
	for (int s = 0; s < XF_STATE_N; s++) {
		const char *why;
		if (!(o->states & (1u << s)) || !(why = xf_bench_state_unavailable(s)))
			continue;
		complain("--state=%s: %s", xf_bench_state_name(s), why);
		return -1;
	}
	if (o->quick) {
		o->runs = c->runs_set ? o->runs : 1;
		o->run_time = c->time_set ? o->run_time : 0.03;
	}
	/* hackbench's and perf's defaults; --quick makes them small. */
	o->groups = c->messaging_set[0] ? o->groups : o->quick ? 2 : 10;
	o->loops = c->messaging_set[1] ? o->loops : o->quick ? 10 : 100;
	o->size = c->messaging_set[2] ? o->size : 100;
	o->fds = c->messaging_set[3] ? o->fds : o->quick ? 4 : 20;
	return 0;
}

/* --rows may leave a workload without rows: it is not run at all.  Rows
 * it names that no workload plans are an error, not an empty table. */
static int drop_empty_plans(struct cli *c, struct xf_bench_plan **plans)
{
	unsigned kept = 0;

	if (!c->o.rows)
		return 0;
	for (unsigned p = 0; p < c->nworkloads; p++) {
		if (!plans[p]->nrows) {
			free(plans[p]);
			continue;
		}
		plans[kept] = plans[p];
		c->workloads[kept++] = c->workloads[p];
	}
	for (unsigned p = kept; p < c->nworkloads; p++)
		plans[p] = NULL;
	c->nworkloads = kept;
	if (kept)
		return 0;
	complain("--rows=%s: no row of these workloads matches (a table's first column names "
		 "its rows%s)",
		 c->o.rows, c->o.quick ? "; --quick leaves most rows out" : "");
	return -1;
}

static int check_baseline(const struct xf_bench_opts *o, struct xf_bench_plan *const *plans,
			  unsigned n)
{
	if (!o->baseline)
		return 0;
	for (unsigned p = 0; p < n; p++) {
		for (unsigned i = 0; i < plans[p]->nrows; i++) {
			if (!strcmp(plans[p]->rows[i].name, o->baseline))
				return 0;
		}
	}
	complain("--baseline=%s: no such row (rows look like %s)", o->baseline,
		 n && plans[0]->nrows ? plans[0]->rows[0].name : "none planned");
	return -1;
}

static int run_compare(int argc, char **argv)
{
	const char *files[2] = {NULL, NULL};
	double alpha = 0.05;
	char err[512];
	int nfiles = 0;

	for (int i = 2; i < argc; i++) {
		if (!strncmp(argv[i], "--alpha=", 8)) {
			if (parse_number("--alpha", argv[i] + 8, "a significance level", 1e-6, 0.5,
					 &alpha))
				return 2;
		} else if (argv[i][0] == '-') {
			complain("compare: unknown option '%s' (see 'xfiber bench --help')",
				 argv[i]);
			return 2;
		} else if (nfiles < 2) {
			files[nfiles++] = argv[i];
		} else {
			nfiles++;
		}
	}
	if (nfiles != 2) {
		complain("compare wants two result files: xfiber bench compare A.json B.json");
		return 2;
	}
	if (xf_bench_compare(files[0], files[1], alpha, err, sizeof(err))) {
		complain("compare: %s", err);
		return 1;
	}
	return 0;
}

static int run_plot(int argc, char **argv)
{
	char err[512];

	if (argc != 4 || argv[2][0] == '-' || argv[3][0] == '-') {
		complain("plot wants a result file and an image: xfiber bench plot RESULTS.json "
			 "OUT.png");
		return 2;
	}
	if (access(argv[2], R_OK)) {
		complain("plot: cannot read %s: %s", argv[2], strerror(errno));
		return 1;
	}
	if (check_writable("plot", argv[3]))
		return 1;
	if (xf_bench_plot(argv[2], argv[3], err, sizeof(err))) {
		complain("%s", err);
		return 1;
	}
	return 0;
}

/* Runs every plan, a table after each; then the JSON and the plot. */
static int run_plans(struct cli *c, struct xf_bench_plan **plans, int argc, char **argv)
{
	struct xf_bench_progress pr = {.tty = isatty(STDERR_FILENO)};
	char err[512], tmp_json[64] = "";
	const char *json = c->json;
	int rc = 0;

	for (unsigned p = 0; p < c->nworkloads; p++)
		xf_bench_progress_add(&pr, &c->o, plans[p]);
	xf_bench_print_header(stdout, &c->o);
	fflush(stdout);
	for (unsigned p = 0; p < c->nworkloads && !rc; p++) {
		rc = xf_bench_run_plan(&c->o, plans[p], &pr, err, sizeof(err));
		xf_bench_progress_clear(&pr);
		if (rc) {
			complain("%s", err);
			return 1;
		}
		xf_bench_print_table(stdout, &c->o, plans[p]);
		fflush(stdout);
	}
	if (!json && c->plot) {
		int fd;
		snprintf(tmp_json, sizeof(tmp_json), "/tmp/xfiber-bench-XXXXXX");
		fd = mkstemp(tmp_json);
		if (fd < 0) {
			complain("--plot: cannot make a temporary file: %s", strerror(errno));
			return 1;
		}
		close(fd);
		json = tmp_json;
	}
	if (json && (rc = xf_bench_write_json(json, &c->o, argc, argv, plans, c->nworkloads))) {
		complain("--json: cannot write %s: %s", json, strerror(rc));
		rc = 1;
	} else if (c->json) {
		printf("\nresults: %s\n", c->json);
	}
	if (!rc && c->plot) {
		rc = xf_bench_plot(json, c->plot, err, sizeof(err)) ? 1 : 0;
		if (rc)
			complain("%s", err);
		else
			printf("plot: %s\n", c->plot);
	}
	if (tmp_json[0])
		unlink(tmp_json);
	return rc;
}

static int bench_run(int argc, char **argv)
{
	struct xf_bench_plan *plans[MAX_WORKLOADS] = {NULL};
	struct cli c = {.o = {.runs = 5, .run_time = 0.2, .timeout = 60}, .cpu = -1};
	char err[512];
	int rc = 2;

	if (argc >= 2 && !strcmp(argv[1], "compare"))
		return run_compare(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "plot"))
		return run_plot(argc, argv);
	/* Internal: the sig workload's AMX rows run each phase in a fresh
	 * process this way (sig.c). */
	if (argc >= 2 && !strcmp(argv[1], "amx-sig-probe"))
		return xf_bench_amx_sig_probe(argc - 1, argv + 1);
	if (parse_args(&c, argc, argv) || check_applicable(&c))
		return 2;
	if (settle(&c))
		return 1;
	if (c.plot && xf_bench_plot_check(err, sizeof(err))) {
		complain("%s", err);
		return 1;
	}
	if (xf_bench_state_setup()) {
		complain("this CPU has no XSAVE: the register states cannot be set up");
		return 1;
	}
	xf_tsc_ns_per_tick();
	for (unsigned p = 0; p < c.nworkloads; p++) {
		plans[p] = malloc(sizeof(*plans[p]));
		if (!plans[p]) {
			complain("out of memory");
			goto out;
		}
		if (xf_bench_plan_make(c.workloads[p], &c.o, plans[p], err, sizeof(err))) {
			complain("%s", err);
			goto out;
		}
	}
	if (drop_empty_plans(&c, plans))
		goto out;
	if (check_baseline(&c.o, plans, c.nworkloads))
		goto out;
	rc = run_plans(&c, plans, argc, argv);
out:
	for (unsigned p = 0; p < c.nworkloads; p++)
		free(plans[p]);
	return rc;
}

XF_COMMAND(bench_command) = {
    .name = "bench",
    .summary = "run the benchmark suite (signals, context switches, pipes, messaging, xsave)",
    .run = bench_run,
    .help = bench_help,
};
