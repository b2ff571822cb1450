/*
 * bench.h - the framework of `xfiber bench`: workloads, their variants and
 * the rows they plan, and the options that shape them.
 *
 * A workload (sig, ctx, pipe, ...) is a table with one unit.  Its rows come
 * from variants: the kernel threads/processes variant, peers such as glibc
 * swapcontext or Go, and later xfiber's own fibers.  A variant registers
 * itself with XF_BENCH_VARIANT in its own file and adds rows when the plan
 * is made; the runner (run.c) then warms up and times every row the
 * same way, so a new kind of row is a new file, nothing else.
 */
#ifndef XF_TOOLS_BENCH_H
#define XF_TOOLS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/state.h"

#define XF_BENCH_MAX_RUNS  100
#define XF_BENCH_MAX_ROWS  256
#define XF_BENCH_MAX_EXTRA 12

/* ctx tests, as context_switch2's --test. */
enum xf_ctx_test { XF_CTX_PIPE, XF_CTX_FUTEX, XF_CTX_YIELD, XF_CTX_NTESTS };

/* Peers of the kernel rows (bits of xf_bench_opts.peers). */
enum {
	XF_PEER_SWAPCONTEXT = 1,
	XF_PEER_BOOST = 2,
	XF_PEER_GO = 4,
	XF_PEER_ALL = 7,
};

/* Modes (bits of xf_bench_opts.modes). */
enum { XF_MODE_THREADS = 1, XF_MODE_PROCESS = 2 };

struct xf_bench_opts {
	unsigned runs;	     /* timed runs per row, after the warm-up */
	double run_time;     /* seconds one calibrated run should take */
	uint64_t iterations; /* fixed operations per run; 0 = calibrate */
	double timeout;	     /* seconds any one run may take */
	bool quick;	     /* tiny runs, for smoke tests */
	bool suite;	     /* part of `all`: the workloads add their suite rows */
	const char *baseline;
	const char *rows; /* --rows: comma-separated globs a row's name must match; NULL = all */
	/* What to vary; 0 = the workload's default. */
	unsigned cpus;	 /* bit n: rows pinned to n CPUs (n = 1, 2) */
	unsigned states; /* bit per enum xf_bench_state */
	unsigned tests;	 /* bit per enum xf_ctx_test */
	unsigned modes;	 /* XF_MODE_* */
	unsigned peers;	 /* XF_PEER_*; peers_set says --peers was given */
	bool peers_set;
	/* messaging */
	unsigned groups, loops, size, fds;
	bool use_pipe;
	/* The CPUs rows are pinned to: cpu[0], and cpu[1] for two-CPU rows. */
	int cpu[2];
	int ncpus; /* CPUs this process may run on */
};

/* What one row measures; the workload's run function interprets it. */
struct xf_bench_params {
	int test;      /* workload-specific: enum xf_ctx_test, an xsave op, ... */
	bool process;  /* processes rather than threads */
	bool use_pipe; /* messaging: pipes rather than socket pairs */
	bool libc;     /* pipe: glibc read/write as perf bench does, not raw syscalls */
	int ncpus;     /* 1: all on cpu[0]; 2: the two tasks (or the set) on both */
	int cpu[2];
	enum xf_bench_state state; /* registers dirtied around each operation */
	bool release_tiles; /* then TILERELEASE: dead tiles back to init (fiber preemption rows) */
	unsigned groups, loops, size, fds;
	bool io_uring; /* io rows: the runtime's io_uring engine (XF_IO_BACKEND_IO_URING) */
};

/* Why xfiber's io_uring engine cannot run here (not built, or refused by
 * the kernel), or NULL (server.c). */
const char *xf_bench_uring_missing(void);

/* One timed run. */
struct xf_bench_sample {
	double value;	   /* in the workload's unit */
	double elapsed_ns; /* how long the timed part took (calibration, progress) */
	char note[160];	   /* shown in the table's notes column */
	unsigned nextra;   /* numbers for the JSON "extra" object */
	struct {
		const char *key;
		double value;
	} extra[XF_BENCH_MAX_EXTRA];
};

/* Runs iters operations (ignored by rows with fixed_work); 0 or an errno,
 * with a one-line reason in s->note. */
typedef int (*xf_bench_run_fn)(const struct xf_bench_params *p, uint64_t iters,
			       struct xf_bench_sample *s);

struct xf_bench_variant;

struct xf_bench_row {
	char name[48];	  /* unique in its workload, e.g. "pipe/threads/1cpu/avx512" */
	char pinning[24]; /* "cpus 0/0", "cpus 0/1", "cpu 0", "cpus {0,1}" */
	const struct xf_bench_variant *variant;
	struct xf_bench_params p;
	xf_bench_run_fn run; /* NULL for rows the workload's measure_all fills */
	bool fixed_work;     /* the params fix the work: no calibration */
	char skip[160];	     /* non-empty: not run, and why (one line) */
	/* Filled by the runner. */
	double estimate_s; /* its share of the time-left estimate, fixed when planned */
	uint64_t iters;
	unsigned nsamples;
	double samples[XF_BENCH_MAX_RUNS];
	double elapsed_ns[XF_BENCH_MAX_RUNS];
	double extra_runs[XF_BENCH_MAX_RUNS][XF_BENCH_MAX_EXTRA]; /* each run's extras */
	struct xf_bench_sample last; /* note and extras of the last run */
};

struct xf_bench_workload;

struct xf_bench_plan {
	const struct xf_bench_workload *workload;
	const struct xf_bench_variant *variant; /* whose plan() is adding rows now */
	unsigned nrows;
	struct xf_bench_row rows[XF_BENCH_MAX_ROWS];
};

/* Option bits: which options a workload takes (xf_bench_workload.options). */
enum {
	XF_BOPT_STATE = 1 << 0,
	XF_BOPT_CPUS = 1 << 1,
	XF_BOPT_TEST = 1 << 2,
	XF_BOPT_MODE = 1 << 3,
	XF_BOPT_PEERS = 1 << 4,
	XF_BOPT_MESSAGING = 1 << 5,
	XF_BOPT_ITERATIONS = 1 << 6,
};

struct xf_bench_workload {
	const char *name;
	const char *summary; /* one line for --help */
	const char *what;    /* table title: what the unit counts */
	const char *unit;    /* "switches/s", "ns", "usecs/op", "s" */
	bool higher_is_better;
	int order;	  /* position in `all` and in --help */
	unsigned options; /* XF_BOPT_* this workload takes */
	/* Rejects option combinations it cannot run, with one line in err.  NULL: none. */
	int (*check)(const struct xf_bench_opts *o, char *err, size_t err_size);
	/* For table workloads (xsave): one measurement fills run `run` of every
	 * row at once.  NULL: the runner calls each row's run function. */
	int (*measure_all)(const struct xf_bench_opts *o, struct xf_bench_plan *plan, unsigned run,
			   char *err, size_t err_size);
};

struct xf_bench_variant {
	const char *workload; /* the workload's name */
	const char *name;     /* "kernel", "swapcontext", "boost", "go", "fiber", ... */
	const char *kind;     /* "kernel", "peer" or "fiber" */
	int order;	      /* its rows' place in the table: lower first */
	/* Adds this variant's rows for the options.  0, or non-zero with one
	 * line in err for options it cannot honour. */
	int (*plan)(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		    size_t err_size);
};

#define XF_BENCH_WORKLOAD(var)                                                                     \
	static const struct xf_bench_workload var                                                  \
	    __attribute__((used, section("xf_bench_workloads"), aligned(sizeof(void *))))
#define XF_BENCH_VARIANT(var)                                                                      \
	static const struct xf_bench_variant var                                                   \
	    __attribute__((used, section("xf_bench_variants"), aligned(sizeof(void *))))

/* The registered workloads, in their `order`; NULL past the end. */
const struct xf_bench_workload *xf_bench_workload_at(unsigned i);
const struct xf_bench_workload *xf_bench_workload_find(const char *name);

/* Makes the plan of one workload: every variant's rows, in variant order. */
int xf_bench_plan_make(const struct xf_bench_workload *w, const struct xf_bench_opts *o,
		       struct xf_bench_plan *plan, char *err, size_t err_size);

/* Appends a row of the variant whose plan() is running (NULL when the plan
 * is full); the name is printf-style. */
struct xf_bench_row *xf_bench_plan_add(struct xf_bench_plan *plan, const struct xf_bench_params *p,
				       xf_bench_run_fn run, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes the pinning description of p into row->pinning. */
void xf_bench_describe_pinning(struct xf_bench_row *row);

/* The states to run: those asked for, or every one this machine has, and
 * AMX, whose rows say why they are skipped where it has none. */
unsigned xf_bench_states_wanted(const struct xf_bench_opts *o);

/* Records a number for the JSON "extra" object of a run (replacing one of
 * the same key). */
void xf_bench_sample_extra(struct xf_bench_sample *s, const char *key, double value);
/* Adds value to the extra named key (0 if it has none yet): for a run made
 * of several rounds, each reporting its share. */
void xf_bench_sample_extra_add(struct xf_bench_sample *s, const char *key, double value);

/* Monotonic nanoseconds (TSC-based; calibrated once by the runner). */
double xf_bench_now_ns(void);

#endif
