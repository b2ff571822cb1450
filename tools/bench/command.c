/*
 * command.c - `xfiber bench`: options, the plans of the workloads asked
 * for, running them, and what comes out (tables, --json, --plot); also
 * `xfiber bench compare` and `xfiber bench plot`.
 */
#include <errno.h>
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

static void bench_help(FILE *out)
{
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
	fprintf(out,
		"  all        every workload above: the suite `make bench` runs\n\n"
		"options:\n"
		"  --runs=N         timed runs per row after the warm-up (default 5)\n"
		"  --time=S         seconds one run should take (default 0.2)\n"
		"  --iterations=N   fixed operations per run instead of calibrating to --time\n"
		"  --quick          tiny runs (1 run, ~30 ms, small messaging), for smoke tests\n"
		"  --timeout=S      a run longer than this stops the benchmark (default 60)\n"
		"  --baseline=ROW   the row %%speedup compares with (default: each table's first)\n"
		"  --json=FILE      write every run's numbers, the machine and the settings\n"
		"  --plot=FILE.png  bar charts with error bars (needs python3-matplotlib)\n"
		"  --cpu=N          the first CPU rows are pinned to (default: the first allowed)\n"
		"  --cpus=1|2|1,2   pin both tasks to one CPU, or one to each of two CPUs\n"
		"  --state=LIST     registers dirtied around each operation: none, x87, sse, avx,\n"
		"                   avx512, amx (default: every one this CPU has)\n"
		"  --threads, --process   kernel threads (default for ctx) or processes\n"
		"ctx:\n"
		"  --test=LIST      pipe, futex, yield (default: all three; yield needs --cpus=1)\n"
		"  --peers=LIST     swapcontext, boost, go, all or none (default: all)\n"
		"messaging (defaults as hackbench and perf bench sched messaging):\n"
		"  --groups=N (10)  --fds=N senders and receivers per group (20)\n"
		"  --loops=N (100)  messages each sender sends each receiver\n"
		"  --size=N (100)   bytes per message;  --pipe or --socket (default) transport\n\n"
		"compare: --alpha=P  significance level of Welch's t-test (default 0.05)\n\n"
		"examples:\n"
		"  xfiber bench ctx --test=pipe --state=none,avx512 --process --cpus=1,2\n"
		"  xfiber bench sig --json=a.json    ...change something...\n"
		"  xfiber bench sig --json=b.json && xfiber bench compare a.json b.json\n");
}

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

static int parse_seconds(const char *opt, const char *v, double min, double max, double *out)
{
	char *end;
	double x = strtod(v, &end);

	if (!*v || *end || !(x >= min && x <= max)) {
		complain("%s wants seconds from %g to %g, not '%s'", opt, min, max, v);
		return -1;
	}
	*out = x;
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

/* One option (name has no "=value"); value may be NULL.  1 if it took the value. */
static int parse_option(struct cli *c, const char *name, const char *value)
{
	struct xf_bench_opts *o = &c->o;
	static const struct {
		const char *name;
		unsigned bit;
	} flags[] = {{"--quick", 0},
		     {"--threads", XF_BOPT_MODE},
		     {"--process", XF_BOPT_MODE},
		     {"--pipe", XF_BOPT_MESSAGING},
		     {"--socket", XF_BOPT_MESSAGING}};
	static const char *const msg_opts[] = {"--groups", "--loops", "--size", "--fds"};
	static const unsigned msg_max[] = {1000, 1000000, 1 << 20, 1000};
	unsigned *const msg_vals[] = {&o->groups, &o->loops, &o->size, &o->fds};
	uint64_t u64;

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (strcmp(name, flags[i].name))
			continue;
		if (flags[i].bit)
			note_use(c, flags[i].bit, flags[i].name);
		if (!strcmp(name, "--quick"))
			o->quick = true;
		else if (!strcmp(name, "--threads"))
			o->modes |= XF_MODE_THREADS;
		else if (!strcmp(name, "--process"))
			o->modes |= XF_MODE_PROCESS;
		else
			o->use_pipe = !strcmp(name, "--pipe");
		return 0;
	}
	if (!value) {
		complain("unknown option '%s' (see 'xfiber bench --help')", name);
		return -1;
	}
	if (!strcmp(name, "--runs")) {
		c->runs_set = true;
		return parse_uint(name, value, 1, XF_BENCH_MAX_RUNS, &o->runs);
	}
	if (!strcmp(name, "--time")) {
		c->time_set = true;
		return parse_seconds(name, value, 0.001, 60, &o->run_time);
	}
	if (!strcmp(name, "--timeout"))
		return parse_seconds(name, value, 1, 3600, &o->timeout);
	if (!strcmp(name, "--iterations")) {
		note_use(c, XF_BOPT_ITERATIONS, name);
		return parse_u64(name, value, 1, 1000000000, &o->iterations);
	}
	if (!strcmp(name, "--json")) {
		c->json = value;
		return 0;
	}
	if (!strcmp(name, "--plot")) {
		c->plot = value;
		return 0;
	}
	if (!strcmp(name, "--baseline")) {
		o->baseline = value;
		return 0;
	}
	if (!strcmp(name, "--cpu")) {
		if (parse_u64(name, value, 0, 1023, &u64))
			return -1;
		c->cpu = (int)u64;
		return 0;
	}
	if (!strcmp(name, "--cpus")) {
		note_use(c, XF_BOPT_CPUS, name);
		return parse_list(name, value, cpus_names, 3, &o->cpus);
	}
	if (!strcmp(name, "--state")) {
		note_use(c, XF_BOPT_STATE, name);
		return parse_list(name, value, state_names, XF_STATE_N, &o->states);
	}
	if (!strcmp(name, "--test")) {
		note_use(c, XF_BOPT_TEST, name);
		return parse_list(name, value, test_names, XF_CTX_NTESTS, &o->tests);
	}
	if (!strcmp(name, "--peers")) {
		unsigned m;
		note_use(c, XF_BOPT_PEERS, name);
		if (parse_list(name, value, peer_names, 5, &m))
			return -1;
		o->peers_set = true;
		o->peers = (m & 7) | (m & 8 ? XF_PEER_ALL : 0);
		return 0;
	}
	for (int i = 0; i < 4; i++) {
		if (strcmp(name, msg_opts[i]))
			continue;
		note_use(c, XF_BOPT_MESSAGING, name);
		c->messaging_set[i] = true;
		return parse_uint(name, value, 1, msg_max[i], msg_vals[i]);
	}
	complain("unknown option '%s' (see 'xfiber bench --help')", name);
	return -1;
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
	/* Options that take a value may also take it as the next argument. */
	static const char *const valued[] = {"--runs",	 "--time",  "--timeout",  "--iterations",
					     "--json",	 "--plot",  "--baseline", "--cpu",
					     "--cpus",	 "--state", "--test",	  "--peers",
					     "--groups", "--loops", "--size",	  "--fds"};

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
			for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++) {
				if (strcmp(name, valued[k]))
					continue;
				if (i + 1 >= argc) {
					complain("%s wants a value", name);
					return -1;
				}
				value = argv[++i];
			}
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
			if (parse_seconds("--alpha", argv[i] + 8, 1e-6, 0.5, &alpha))
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
