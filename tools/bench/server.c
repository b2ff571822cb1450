/*
 * server.c - `xfiber bench server`: examples/httpd.c against the servers
 * a user would pick instead, with the same routes and the same work:
 *
 *   xfiber     example_httpd, 1 worker, 1000 us slices (or as the row says)
 *   coop       example_httpd --cooperative: the same without preemption
 *   go         bench/httpd-go: net/http, GOMAXPROCS=1
 *   libuv      bench/httpd-libuv: one libuv event loop
 *   threads    example_httpd --threads: a kernel thread per connection
 *   xfiber-batch  example_httpd --batch-over-us 1000: its long requests
 *              run as batch work (xf_fiber_set_batch), in the mix rows
 *   xfiber-uring  xfiber with XFIBER_IO_BACKEND=io_uring: socket reads and
 *              writes as io_uring requests (docs/io.md)
 *   xfiber-rr  example_httpd --round-robin: a preempted request keeps its
 *              turn in the plain round robin instead of stepping aside for
 *              requests just woken (xf_config.round_robin), in the mix rows
 *
 * Each server is pinned to the first CPU and its load to the second.
 *
 *   root/SERVER, spin10/SERVER
 *            throughput, closed loop: wrk, 64 connections, GET / or
 *            GET /spin?us=10 for 1 s; the value is microseconds per request
 *            (1e6 / requests per second)
 *   mix-R%/SERVER
 *            tail latency, open loop (loadgen.c): Poisson arrivals at
 *            R% of the cooperative server's capacity (measured first, closed
 *            loop, in the same run), 99.5% /spin?us=10 and 0.5% /spin?us=5000;
 *            the value is the p99 of the short requests in microseconds,
 *            the notes give p50 and p99.9
 *   echo-1000/SERVER
 *            examples/echo.c (xfiber) against Go's goroutine per connection,
 *            tokio's multi-thread runtime (epoll; one worker, and two:
 *            tokio-2w) and monoio (io_uring, a thread per core;
 *            bench/rust-echo): 1,000 connections, each sending 512 bytes and
 *            waiting for them back, again and again, for 1 s; the value is
 *            microseconds per round trip of them all (1e6 / round trips per
 *            second); the notes give the server's CPU time and system calls
 *            per round trip, counted by the kernel (/proc, syscount.c) over
 *            the same window
 *   agree/TOOL
 *            the load generator checked against wrk and h2load at low load:
 *            each one's mean latency of GET /spin?us=10 over one connection,
 *            closed loop, against xfiber; the loadgen row's notes give the
 *            ratios, and say when one is more than 10% apart
 *
 * One run measures every row, servers side by side; make bench's suite
 * takes the 70% rows only, no agreement rows, and two runs.  Every
 * server's answers are checked first (the warm-up): GET / and a /spin
 * checksum against examples/spin.c's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/loadgen.h"
#include "bench/syscount.h"
#include "bench/task.h"

#define SERVER_RUNS_MAX 3 /* runs of the table at most: each costs ~20 s */
#define WRK_SECONDS	"1"
#define WRK_CONNS	"64"
#define MIX_SECONDS	1.5
#define MIX_CONNS	256
#define MIX_LONG	0.005
#define ECHO_CONNS	1000
#define ECHO_SIZE	512

enum server {
	SRV_XFIBER,
	SRV_COOP,
	SRV_GO,
	SRV_LIBUV,
	SRV_THREADS,
	SRV_BATCH,
	SRV_TOKIO, /* echo rows only */
	SRV_MONOIO,
	SRV_URING, /* xfiber with its io_uring engine (XFIBER_IO_BACKEND=io_uring) */
	SRV_RR,	   /* xfiber with xf_config.round_robin (mix rows) */
	SRV_N
};
static const char *const server_names[SRV_N] = {"xfiber",	"coop",		"go",	 "libuv",
						"threads",	"xfiber-batch", "tokio", "monoio",
						"xfiber-uring", "xfiber-rr"};

/* xfiber-batch: example_httpd --batch-over-us, the mix's long requests as
 * batch work (xf_fiber_set_batch), its short ones latency-critical. */
#define BATCH_OVER_US "1000"

/* .test of a row: what it measures. */
enum { T_ROOT, T_SPIN10, T_MIX, T_AGREE, T_ECHO };

/* Tools that measure the same thing at low load (T_AGREE's .size). */
enum { BY_LOADGEN, BY_WRK, BY_H2LOAD, BY_N };
static const char *const tool_names[BY_N] = {"loadgen", "wrk", "h2load"};

/* .groups: the server; .loops: the slice (xfiber), .size: the load in %;
 * .fds: the server's workers (0: one), each on a CPU of the row's, the
 * load on the second. */
static int row_workers(const struct xf_bench_row *row)
{
	return row->p.fds > 1 ? (int)row->p.fds : 1;
}

/* why if the program at path cannot be run, else NULL. */
static const char *absent(const char *path, const char *why)
{
	return access(path, X_OK) ? why : NULL;
}

/* Why the Rust peer at path cannot run: the line build.sh left, or that
 * it is missing. */
static const char *rust_missing(const char *path)
{
#ifdef XF_BENCH_RUST_WHY
	static char why[150];
	FILE *f;

	if (!access(path, X_OK))
		return NULL;
	f = fopen(XF_BENCH_RUST_WHY, "r");
	if (f && fgets(why, sizeof(why), f)) {
		why[strcspn(why, "\n")] = 0;
		fclose(f);
		return why;
	}
	if (f)
		fclose(f);
	return "the Rust peers are missing: rebuild xfiber";
#else
	(void)path;
	return XF_BENCH_RUST_WHY_NOT;
#endif
}

const char *xf_bench_uring_missing(void)
{
#ifdef XF_BENCH_HAVE_IO_URING
	static char why[120];
	struct io_uring_params p = {0};
	long fd = syscall(SYS_io_uring_setup, 1, &p);

	if (fd >= 0) {
		close((int)fd);
		return NULL;
	}
	snprintf(why, sizeof(why), "the kernel refuses io_uring here: %s", strerror(errno));
	return why;
#else
	return "libxfiber was built without liburing (Debian liburing-dev: make deps)";
#endif
}

static const char *missing(enum server s)
{
	if (s == SRV_URING && xf_bench_uring_missing())
		return xf_bench_uring_missing();
#ifdef XF_BENCH_RUST_WHY
	if (s == SRV_TOKIO)
		return rust_missing(XF_BENCH_ECHO_TOKIO);
	if (s == SRV_MONOIO)
		return rust_missing(XF_BENCH_ECHO_MONOIO);
#else
	if (s == SRV_TOKIO || s == SRV_MONOIO)
		return rust_missing(NULL);
#endif
#ifndef XF_BENCH_HTTPD
	(void)s;
	return "example_httpd was not built (http-parser missing: make deps)";
#else
	if (s == SRV_GO) {
#ifdef XF_BENCH_HTTPD_GO
		return absent(XF_BENCH_HTTPD_GO, "the Go server is missing: rebuild xfiber");
#else
		return "Go was not found when xfiber was built (Debian golang-go: make deps, "
		       "then rebuild)";
#endif
	}
	if (s == SRV_LIBUV) {
#ifdef XF_BENCH_HTTPD_UV
		return absent(XF_BENCH_HTTPD_UV, "the libuv server is missing: rebuild xfiber");
#else
		return "libuv was not found when xfiber was built (Debian libuv1-dev: make deps)";
#endif
	}
	return absent(XF_BENCH_HTTPD, "example_httpd is missing: rebuild xfiber");
#endif
}

static const char *h2load_missing(void)
{
#ifdef XF_BENCH_H2LOAD
	return absent(XF_BENCH_H2LOAD, "h2load is missing (Debian nghttp2-client)");
#else
	return "h2load was not found when xfiber was built (Debian nghttp2-client: make deps, "
	       "then rebuild)";
#endif
}

static const char *wrk_missing(void)
{
#ifdef XF_BENCH_WRK
	return absent(XF_BENCH_WRK, "wrk is missing (Debian wrk: make deps)");
#else
	return "wrk was not found when xfiber was built (Debian wrk: make deps, then rebuild)";
#endif
}

struct running {
	pid_t pid;
	int port;
};

/* Each xfiber server's engine, whatever the caller's environment says. */
static char *const uring_env[] = {"XFIBER_IO_BACKEND=io_uring", NULL};
static char *const epoll_env[] = {"XFIBER_IO_BACKEND=epoll", NULL};

/* slice_us 0: the echo server of that kind (xfiber's examples/echo.c, Go's
 * -echo) instead of the HTTP one. */
static int server_start(enum server s, unsigned slice_us, const int *cpus, int workers,
			struct running *r, char *note, size_t note_size)
{
	char slice[16], nworkers[16], line[128];
	char *argv[12];
	int n = 0, fd, err;

	snprintf(slice, sizeof(slice), "%u", slice_us);
	snprintf(nworkers, sizeof(nworkers), "%d", workers);
#ifdef XF_BENCH_RUST_WHY
	if (s == SRV_TOKIO || s == SRV_MONOIO) {
		argv[n++] = s == SRV_TOKIO ? XF_BENCH_ECHO_TOKIO : XF_BENCH_ECHO_MONOIO;
		argv[n++] = "--workers";
		argv[n++] = nworkers;
	} else
#endif
#ifdef XF_BENCH_HTTPD
	    if (s == SRV_GO) {
#ifdef XF_BENCH_HTTPD_GO
		argv[n++] = XF_BENCH_HTTPD_GO;
		argv[n++] = "-workers";
		argv[n++] = "1";
		if (!slice_us)
			argv[n++] = "-echo";
#endif
	} else if (!slice_us) {
		argv[n++] = XF_BENCH_ECHO; /* one worker: it may run on one CPU */
	} else if (s == SRV_LIBUV) {
#ifdef XF_BENCH_HTTPD_UV
		argv[n++] = XF_BENCH_HTTPD_UV;
		argv[n++] = "--workers";
		argv[n++] = "1";
#endif
	} else {
		argv[n++] = XF_BENCH_HTTPD;
		argv[n++] = "--workers";
		argv[n++] = nworkers;
		argv[n++] = "--slice-us";
		argv[n++] = slice;
		if (s == SRV_COOP)
			argv[n++] = "--cooperative";
		if (s == SRV_THREADS)
			argv[n++] = "--threads";
		if (s == SRV_BATCH) {
			argv[n++] = "--batch-over-us";
			argv[n++] = BATCH_OVER_US;
		}
		if (s == SRV_RR)
			argv[n++] = "--round-robin";
	}
#endif
	argv[n] = NULL;
	if (!n)
		return ENOTSUP;
	xf_bench_pin(cpus, workers); /* the child inherits it: a CPU per worker */
	err = xf_bench_spawn(argv, s == SRV_URING ? uring_env : epoll_env, &r->pid, &fd);
	xf_bench_pin(NULL, 0);
	if (err) {
		snprintf(note, note_size, "cannot run %s: %s", argv[0], strerror(err));
		return err;
	}
	xf_bench_read_output(fd, line, sizeof(line), true);
	close(fd);
	if (sscanf(line, "listening on 127.0.0.1:%d", &r->port) != 1) {
		kill(r->pid, SIGKILL);
		xf_bench_spawn_wait(r->pid);
		r->pid = -1;
		snprintf(note, note_size, "%s did not say where it listens", argv[0]);
		return EIO;
	}
	return 0;
}

static void server_stop(struct running *r)
{
	kill(r->pid, SIGTERM);
	xf_bench_spawn_wait(r->pid);
}

/* A duration as wrk and h2load print it ("81.87us", "3.82ms", "1.2s"), in
 * microseconds; negative if it is none. */
static double parse_us(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s)
		return -1;
	if (!strncmp(end, "us", 2))
		return v;
	if (!strncmp(end, "ms", 2))
		return v * 1e3;
	if (*end == 's')
		return v * 1e6;
	return -1;
}

/* Runs a load tool (argv) pinned to cpu, its output into out, its exit
 * status into *status.  0, or an errno value with one line in note. */
static int run_tool(char *const argv[], int cpu, char *out, size_t size, int *status, char *note,
		    size_t note_size)
{
	int fd, err;
	pid_t pid;

	xf_bench_pin(&cpu, 1);
	err = xf_bench_spawn(argv, NULL, &pid, &fd);
	xf_bench_pin(NULL, 0);
	if (err) {
		snprintf(note, note_size, "cannot run %s: %s", argv[0], strerror(err));
		return err;
	}
	xf_bench_read_output(fd, out, size, false);
	close(fd);
	*status = xf_bench_spawn_wait(pid);
	return 0;
}

/* wrk on cpu, against path with conns connections: requests per second,
 * and the mean latency in microseconds. */
static int wrk_run(int port, const char *path, const char *conns, int cpu, double *rps,
		   double *mean_us, char *note, size_t note_size)
{
	char url[128], out[4096], c[16];
	const char *line;
	int err, status;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	snprintf(c, sizeof(c), "-c%s", conns);
#ifdef XF_BENCH_WRK
	char *argv[] = {XF_BENCH_WRK, "-t1", c, "-d" WRK_SECONDS, url, NULL};
#else
	char *argv[] = {"wrk", NULL};
#endif
	err = run_tool(argv, cpu, out, sizeof(out), &status, note, note_size);
	if (err)
		return err;
	line = strstr(out, "Requests/sec:");
	if (status || !line || sscanf(line, "Requests/sec: %lf", rps) != 1 || *rps <= 0 ||
	    strstr(out, "Non-2xx")) {
		snprintf(note, note_size, "wrk against %s failed (exit status %d)", path, status);
		return EIO;
	}
	line = strstr(out, "Latency");
	*mean_us = line ? parse_us(line + strlen("Latency") + strspn(line + 7, " ")) : -1;
	return 0;
}

/* h2load (Debian nghttp2-client) over HTTP/1.1 for a second, one
 * connection: the mean latency in microseconds. */
static int h2load_run(int port, const char *path, int cpu, double *mean_us, char *note,
		      size_t note_size)
{
	char url[128], out[8192];
	const char *line;
	int err, status;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
#ifdef XF_BENCH_H2LOAD
	char *argv[] = {XF_BENCH_H2LOAD, "--h1", "-D", "1", "-c", "1", url, NULL};
#else
	char *argv[] = {"h2load", NULL};
#endif
	err = run_tool(argv, cpu, out, sizeof(out), &status, note, note_size);
	if (err)
		return err;
	/* "time for request:   MIN   MAX   MEAN   SD   +/- SD" */
	line = strstr(out, "time for request:");
	if (line) {
		const char *p = line + strlen("time for request:");

		for (int field = 0; field < 2 && p; field++) {
			p += strspn(p, " ");
			p = strchr(p, ' ');
		}
		*mean_us = p ? parse_us(p + strspn(p, " ")) : -1;
	}
	if (status || !line || *mean_us <= 0) {
		snprintf(note, note_size, "h2load against %s failed (exit status %d)", path, status);
		return EIO;
	}
	return 0;
}

/* The warm-up: the server answers GET / and /spin with the right checksum,
 * through the load generator's closed loop (any wrong answer fails it). */
static int check_server(int port, int cpu, char *note, size_t note_size)
{
	struct xf_loadgen_opts lo = {.port = port, .conns = 4, .seconds = 0.05,
				     .long_fraction = 0.5, .short_path = "/",
				     .long_path = "/spin?us=10", .seed = 1};
	struct xf_loadgen_result res;
	int err;

	xf_bench_pin(&cpu, 1);
	err = xf_loadgen_run(&lo, &res, note, note_size);
	xf_bench_pin(NULL, 0);
	if (!err && (!res.short_n || !res.long_n))
		snprintf(note, note_size, "the server answered nothing"), err = EIO;
	return err;
}

/* --quick: tiny mix runs (a smoke test's, never figures). */
static bool quick;

static int mix_run(int port, double rate, int cpu, uint64_t seed, struct xf_loadgen_result *res,
		   char *note, size_t note_size)
{
	struct xf_loadgen_opts lo = {.port = port, .rate = rate, .conns = MIX_CONNS,
				     .warmup_s = quick ? 0.05 : rate ? 0.2 : 0.3,
				     .seconds = quick ? 0.2 : MIX_SECONDS,
				     .long_fraction = MIX_LONG, .short_path = "/spin?us=10",
				     .long_path = "/spin?us=5000", .seed = seed};
	int err;

	if (!rate)
		lo.conns = 64;
	xf_bench_pin(&cpu, 1);
	err = xf_loadgen_run(&lo, res, note, note_size);
	xf_bench_pin(NULL, 0);
	return err;
}

/*
 * Where a server's CPU went during a mix run: all its threads together, and
 * xfiber's ticker thread (xf-ticker) alone with its wake-ups, each of which
 * is a look at the workers.  On the server's own CPU each look costs a
 * kernel switch there and back, ~15 us in this VM (docs/io.md): at 100 us
 * slices the looks alone take a tenth of the CPU, so R% of the cooperative
 * server's capacity is more of the preemptive one's.
 */
struct server_cpu {
	uint64_t wall_ns, run_ns, ticker_ns, ticker_wakes;
};

/* The first number of a file under /proc/PID, or 0. */
static uint64_t proc_number(pid_t pid, const char *file, const char *field)
{
	char path[96], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!field ? sscanf(line, "%llu", &v) == 1
			   : !strncmp(line, field, strlen(field)) &&
				 sscanf(line + strlen(field), " %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void server_cpu_read(pid_t pid, struct server_cpu *c)
{
	char path[128], comm[32];
	unsigned long long utime = 0, stime = 0;
	struct dirent *d;
	FILE *f;
	DIR *tasks;

	memset(c, 0, sizeof(*c));
	c->wall_ns = xf_bench_now_ns();
	/* utime and stime (fields 14 and 15) count the threads that have
	 * exited too: a thread per connection comes and goes. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		char buf[1024], *p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;

		if (p)
			sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
			       &stime);
		fclose(f);
	}
	c->run_ns = (uint64_t)(utime + stime) * (1000000000u / (uint64_t)sysconf(_SC_CLK_TCK));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	while (tasks && (d = readdir(tasks))) {
		char rel[64];

		snprintf(rel, sizeof(rel), "task/%.20s/comm", d->d_name);
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, rel);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "xf-ticker\n")) {
			snprintf(rel, sizeof(rel), "task/%.20s/schedstat", d->d_name);
			c->ticker_ns = proc_number(pid, rel, NULL);
			snprintf(rel, sizeof(rel), "task/%.20s/status", d->d_name);
			c->ticker_wakes = proc_number(pid, rel, "voluntary_ctxt_switches:");
		}
		fclose(f);
	}
	if (tasks)
		closedir(tasks);
}

/* Keeps this run's extras for the JSON's extra_runs (the runner does it
 * for rows it times itself; these are measured here). */
static void keep_extras(struct xf_bench_row *row, unsigned run)
{
	for (unsigned e = 0; e < row->last.nextra; e++)
		row->extra_runs[run][e] = row->last.extra[e].value;
}

static void put(struct xf_bench_row *row, unsigned run, double value)
{
	row->samples[run] = value;
	row->elapsed_ns[run] = 0;
	row->nsamples = run + 1;
	row->iters = 1;
}

/* One tool's mean latency of GET /spin?us=10 at low load (one connection,
 * closed loop, a second): the load generator is checked against wrk and
 * h2load there, where all should see the same server. */
static int agree_run(struct xf_bench_row *row, unsigned run, int port, int cpu, char *note,
		     size_t note_size)
{
	double mean_us = -1, rps;
	int rc;

	if (row->p.size == BY_LOADGEN) {
		struct xf_loadgen_opts lo = {.port = port, .conns = 1, .warmup_s = 0.1,
					     .seconds = 1, .short_path = "/spin?us=10",
					     .long_path = "/spin?us=10", .seed = 3};
		struct xf_loadgen_result res;

		xf_bench_pin(&cpu, 1);
		rc = xf_loadgen_run(&lo, &res, note, note_size);
		xf_bench_pin(NULL, 0);
		mean_us = res.short_mean;
	} else if (row->p.size == BY_WRK) {
		rc = wrk_run(port, "/spin?us=10", "1", cpu, &rps, &mean_us, note, note_size);
	} else {
		rc = h2load_run(port, "/spin?us=10", cpu, &mean_us, note, note_size);
	}
	if (rc)
		return rc;
	if (mean_us <= 0) {
		snprintf(note, note_size, "%s printed no mean latency", tool_names[row->p.size]);
		return EIO;
	}
	put(row, run, mean_us);
	snprintf(row->last.note, sizeof(row->last.note), "mean latency, one connection, closed loop");
	return 0;
}

/* The agreement rows' verdict, in the load generator's row: each tool's
 * mean against its own. */
static void agree_verdict(struct xf_bench_plan *plan, unsigned run)
{
	struct xf_bench_row *by[BY_N] = {0};
	int len;

	for (unsigned i = 0; i < plan->nrows; i++)
		if (plan->rows[i].p.test == T_AGREE && !plan->rows[i].skip[0] &&
		    plan->rows[i].nsamples > run)
			by[plan->rows[i].p.size] = &plan->rows[i];
	if (!by[BY_LOADGEN])
		return;
	len = snprintf(by[BY_LOADGEN]->last.note, sizeof(by[BY_LOADGEN]->last.note), "mean latency;");
	for (int t = BY_WRK; t < BY_N; t++) {
		double ratio;

		if (!by[t])
			continue;
		ratio = by[t]->samples[run] / by[BY_LOADGEN]->samples[run];
		len += snprintf(by[BY_LOADGEN]->last.note + len,
				sizeof(by[BY_LOADGEN]->last.note) - (size_t)len, " %s %.2fx%s",
				tool_names[t], ratio,
				ratio > 1.1 || ratio < 1 / 1.1 ? " (apart by more than 10%)" : "");
		xf_bench_sample_extra(&by[BY_LOADGEN]->last,
				      t == BY_WRK ? "wrk_over_loadgen" : "h2load_over_loadgen", ratio);
	}
	keep_extras(by[BY_LOADGEN], run);
}

/* What one server does in a run: its throughput rows, then its mix rows. */
/* The server's system calls and CPU time over the echo load's counted
 * window.  The CPU time tells a server that does more work a round trip
 * from one the round trip's latency holds back (both sides waiting). */
struct echo_window {
	struct xf_syscount sc;
	bool counted; /* sc works */
	pid_t pid;
	uint64_t calls0, calls1;
	double t0, t1;
	struct server_cpu cpu0, cpu1;
};

static void echo_window(void *arg, bool end)
{
	struct echo_window *w = arg;

	if (end) {
		w->calls1 = w->counted ? xf_syscount_read(&w->sc) : 0;
		w->t1 = xf_bench_now_ns();
		server_cpu_read(w->pid, &w->cpu1);
	} else {
		w->calls0 = w->counted ? xf_syscount_read(&w->sc) : 0;
		w->t0 = xf_bench_now_ns();
		server_cpu_read(w->pid, &w->cpu0);
	}
}

static int measure_server(const struct xf_bench_opts *o, struct xf_bench_plan *plan, unsigned run,
			  bool warmup, enum server s, unsigned slice_us, int workers,
			  double capacity, char *err, size_t err_size)
{
	const int lcpu = o->cpu[1];
	struct running srv = {.pid = -1};
	char note[160] = "";
	int rc;

	/* The watchdog counts per server here: a run of the whole table may
	 * take longer than --timeout. */
	alarm(o->timeout > 1 ? (unsigned)o->timeout : 1);
	rc = server_start(s, slice_us, o->cpu, workers, &srv, note, sizeof(note));
	if (!rc && slice_us)
		rc = check_server(srv.port, lcpu, note, sizeof(note));
	for (unsigned i = 0; !rc && !warmup && i < plan->nrows; i++) {
		struct xf_bench_row *row = &plan->rows[i];
		struct xf_loadgen_result res;
		struct server_cpu cpu0, cpu1;
		double rps, wall, cpu_pct, ticker_pct, looks;

		if (row->skip[0] || row->p.groups != (unsigned)s || row->p.loops != slice_us ||
		    row_workers(row) != workers)
			continue;
		memset(&row->last, 0, sizeof(row->last));
		if (row->p.test == T_ECHO) {
			struct echo_window win = {.pid = srv.pid};
			char why[160] = "";
			double trips, window_trips;
			bool counted;

			/* The server's threads are all up once it listens. */
			counted = win.counted =
			    !xf_syscount_start(&win.sc, srv.pid, why, sizeof(why));
			xf_bench_pin(&lcpu, 1);
			rc = xf_loadgen_echo(srv.port, ECHO_CONNS, ECHO_SIZE, quick ? 0.05 : 0.3,
					     quick ? 0.2 : 1, &trips, echo_window, &win, note,
					     sizeof(note));
			xf_bench_pin(NULL, 0);
			if (counted)
				xf_syscount_stop(&win.sc);
			if (rc)
				break;
			put(row, run, 1e6 / trips);
			snprintf(row->last.note, sizeof(row->last.note), "%.0f round trips/s", trips);
			xf_bench_sample_extra(&row->last, "round_trips_per_s", trips);
			window_trips = trips * (win.t1 - win.t0) / 1e9;
			if (win.t1 > win.t0 && win.cpu1.run_ns > win.cpu0.run_ns) {
				double cpu_us = (double)(win.cpu1.run_ns - win.cpu0.run_ns) / 1e3 /
						window_trips;

				snprintf(row->last.note + strlen(row->last.note),
					 sizeof(row->last.note) - strlen(row->last.note),
					 "; server CPU %.1f us", cpu_us);
				xf_bench_sample_extra(&row->last, "server_cpu_us_per_trip", cpu_us);
			}
			if (counted && win.t1 > win.t0) {
				double per_trip = (double)(win.calls1 - win.calls0) / window_trips;

				snprintf(row->last.note + strlen(row->last.note),
					 sizeof(row->last.note) - strlen(row->last.note),
					 "; %.2f system calls per round trip", per_trip);
				xf_bench_sample_extra(&row->last, "syscalls_per_trip", per_trip);
			} else if (!counted) {
				snprintf(row->last.note + strlen(row->last.note),
					 sizeof(row->last.note) - strlen(row->last.note), "; %s",
					 why);
			}
			keep_extras(row, run);
			continue;
		}
		if (row->p.test == T_AGREE) {
			rc = agree_run(row, run, srv.port, lcpu, note, sizeof(note));
			if (rc)
				break;
			continue;
		}
		if (row->p.test != T_MIX) {
			double mean_us;

			rc = wrk_run(srv.port, row->p.test == T_ROOT ? "/" : "/spin?us=10", WRK_CONNS,
				     lcpu, &rps, &mean_us, note, sizeof(note));
			if (rc)
				break;
			put(row, run, 1e6 / rps);
			snprintf(row->last.note, sizeof(row->last.note), "%.0f requests/s", rps);
			xf_bench_sample_extra(&row->last, "requests_per_s", rps);
			keep_extras(row, run);
			continue;
		}
		server_cpu_read(srv.pid, &cpu0);
		rc = mix_run(srv.port, capacity * row->p.size / 100.0, lcpu, 1000 + run, &res,
			     note, sizeof(note));
		if (rc)
			break;
		server_cpu_read(srv.pid, &cpu1);
		put(row, run, res.short_p99);
		wall = (double)(cpu1.wall_ns - cpu0.wall_ns);
		cpu_pct = 100.0 * (double)(cpu1.run_ns - cpu0.run_ns) / wall / row_workers(row);
		ticker_pct = 100.0 * (double)(cpu1.ticker_ns - cpu0.ticker_ns) / wall;
		looks = (double)(cpu1.ticker_wakes - cpu0.ticker_wakes) / (wall / 1e9);
		snprintf(row->last.note, sizeof(row->last.note),
			 "short p50 %.0f p99.9 %.0f max %.0f us; long p99 %.0f us; %.0f/s offered, "
			 "%.0f answered; CPU %.0f%%",
			 res.short_p50, res.short_p999, res.short_max, res.long_p99, res.offered_rate,
			 res.done_rate, cpu_pct);
		if (cpu1.ticker_wakes)
			snprintf(row->last.note + strlen(row->last.note),
				 sizeof(row->last.note) - strlen(row->last.note),
				 ", ticker %.0f%% (%.0f looks/s)", ticker_pct, looks);
		xf_bench_sample_extra(&row->last, "short_p50_us", res.short_p50);
		xf_bench_sample_extra(&row->last, "short_p99_us", res.short_p99);
		xf_bench_sample_extra(&row->last, "short_p999_us", res.short_p999);
		xf_bench_sample_extra(&row->last, "short_max_us", res.short_max);
		xf_bench_sample_extra(&row->last, "long_p99_us", res.long_p99);
		xf_bench_sample_extra(&row->last, "offered_per_s", res.offered_rate);
		xf_bench_sample_extra(&row->last, "answered_per_s", res.done_rate);
		xf_bench_sample_extra(&row->last, "capacity_per_s", capacity);
		xf_bench_sample_extra(&row->last, "server_cpu_pct", cpu_pct);
		if (cpu1.ticker_wakes) {
			xf_bench_sample_extra(&row->last, "ticker_cpu_pct", ticker_pct);
			xf_bench_sample_extra(&row->last, "ticker_looks_per_s", looks);
		}
		keep_extras(row, run);
	}
	if (srv.pid > 0)
		server_stop(&srv);
	if (rc)
		snprintf(err, err_size, "server: %s: %s", server_names[s], note);
	return rc;
}

/* The cooperative server's capacity for the mix, closed loop. */
static int measure_capacity(const struct xf_bench_opts *o, double *capacity, char *err,
			    size_t err_size)
{
	struct xf_loadgen_result res = {0};
	struct running srv;
	char note[160] = "";
	int rc = server_start(SRV_COOP, 1000, o->cpu, 1, &srv, note, sizeof(note));

	if (!rc) {
		rc = mix_run(srv.port, 0, o->cpu[1], 7, &res, note, sizeof(note));
		server_stop(&srv);
	}
	*capacity = res.done_rate;
	if (!rc && *capacity <= 0)
		snprintf(note, sizeof(note), "no answer"), rc = EIO;
	if (rc)
		snprintf(err, err_size, "server: the cooperative server's capacity: %s", note);
	return rc;
}

/* Whether a mix row is to run: only they need the capacity (--rows). */
static bool plans_a_mix(const struct xf_bench_plan *plan)
{
	for (unsigned i = 0; i < plan->nrows; i++)
		if (plan->rows[i].p.test == T_MIX && !plan->rows[i].skip[0])
			return true;
	return false;
}

static int server_measure_all(const struct xf_bench_opts *o, struct xf_bench_plan *plan,
			      unsigned run, char *err, size_t err_size)
{
	static unsigned calls;
	bool warmup = calls++ == 0;
	double capacity = 0;
	int rc = 0;

	/* Each run takes ~20 s: the table takes at most SERVER_RUNS_MAX, and
	 * make bench's suite two (its short version stays under a minute). */
	if (run >= (o->suite ? 2 : SERVER_RUNS_MAX) && !warmup)
		return 0;
	if (!warmup && plans_a_mix(plan))
		rc = measure_capacity(o, &capacity, err, err_size);
	/* Every (server, slice) the plan names, once. */
	for (unsigned i = 0; !rc && i < plan->nrows; i++) {
		const struct xf_bench_row *row = &plan->rows[i];
		bool seen = false;

		if (row->skip[0])
			continue;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = !plan->rows[j].skip[0] && plan->rows[j].p.groups == row->p.groups &&
			       plan->rows[j].p.loops == row->p.loops &&
			       row_workers(&plan->rows[j]) == row_workers(row);
		if (!seen)
			rc = measure_server(o, plan, run, warmup, (enum server)row->p.groups,
					    row->p.loops, row_workers(row), capacity, err, err_size);
	}
	if (!rc && !warmup)
		agree_verdict(plan, run);
	return rc ? -1 : 0;
}

/* Raises the soft descriptor limit to the hard one, for this process and
 * the servers it starts; whether the echo rows' connections fit. */
static bool enough_descriptors(void)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim))
		return false;
	if (lim.rlim_cur < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
	}
	return lim.rlim_cur >= ECHO_CONNS + 100;
}

static void add_row_on(const struct xf_bench_opts *o, struct xf_bench_plan *plan, int test,
		       enum server s, unsigned slice_us, unsigned load, unsigned workers)
{
	struct xf_bench_params p = {.test = test, .ncpus = 2, .cpu = {o->cpu[0], o->cpu[1]},
				    .groups = s, .loops = slice_us, .size = load, .fds = workers};
	char name[48];
	struct xf_bench_row *row;
	const char *why = missing(s);

	if (s == SRV_XFIBER && slice_us != 1000)
		snprintf(name, sizeof(name), "xfiber-%uus", slice_us);
	else if (s == SRV_BATCH)
		snprintf(name, sizeof(name), "xfiber-%uus-batch", slice_us);
	else if (s == SRV_URING && slice_us != 1000)
		snprintf(name, sizeof(name), "xfiber-%uus-uring", slice_us);
	else if (s == SRV_RR)
		snprintf(name, sizeof(name), "xfiber-%uus-rr", slice_us);
	else
		snprintf(name, sizeof(name), "%s", server_names[s]);
	if (test == T_AGREE)
		row = xf_bench_plan_add(plan, &p, NULL, "agree/%s", tool_names[load]);
	else if (test == T_ECHO && workers > 1)
		row = xf_bench_plan_add(plan, &p, NULL, "echo-%u/%s-%uw", ECHO_CONNS,
					server_names[s], workers);
	else if (test == T_ECHO)
		row = xf_bench_plan_add(plan, &p, NULL, "echo-%u/%s", ECHO_CONNS, server_names[s]);
	else if (test == T_MIX && workers > 1)
		row = xf_bench_plan_add(plan, &p, NULL, "mix-%u%%/%s-%uw", load, name, workers);
	else if (test == T_MIX)
		row = xf_bench_plan_add(plan, &p, NULL, "mix-%u%%/%s", load, name);
	else
		row = xf_bench_plan_add(plan, &p, NULL, "%s/%s", test == T_ROOT ? "root" : "spin10",
					name);
	if (!row)
		return;
	row->fixed_work = true;
	if (workers > 1)
		snprintf(row->pinning, sizeof(row->pinning), "srv %d+%d, load %d", o->cpu[0],
			 o->cpu[1], o->cpu[1]);
	else
		snprintf(row->pinning, sizeof(row->pinning), "srv %d, load %d", o->cpu[0],
			 o->cpu[1]);
	if (!why && (test == T_ROOT || test == T_SPIN10 || (test == T_AGREE && load == BY_WRK)))
		why = wrk_missing();
	if (!why && test == T_AGREE && load == BY_H2LOAD)
		why = h2load_missing();
	if (!why && o->ncpus < 2)
		why = "needs two CPUs: one for the server, one for its load";
	if (!why && test == T_ECHO && !enough_descriptors())
		why = "RLIMIT_NOFILE's hard limit is too low for 1,000 connections each side";
	if (why)
		snprintf(row->skip, sizeof(row->skip), "%s", why);
}

static void add_row(const struct xf_bench_opts *o, struct xf_bench_plan *plan, int test,
		    enum server s, unsigned slice_us, unsigned load)
{
	add_row_on(o, plan, test, s, slice_us, load, 1);
}

static int plan_server(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		       size_t err_size)
{
	static const unsigned loads_full[] = {10, 30, 50, 70, 90}, loads_suite[] = {70};
	static const unsigned slices_full[] = {50, 100, 1000}, slices_suite[] = {100};
	const unsigned *loads = o->suite || o->quick ? loads_suite : loads_full;
	const unsigned *slices = o->suite || o->quick ? slices_suite : slices_full;
	const unsigned nloads = o->suite || o->quick ? 1 : 5, nslices = o->suite || o->quick ? 1 : 3;

	(void)err;
	(void)err_size;
	quick = o->quick;
	for (int t = T_ROOT; t <= (o->quick ? T_ROOT : T_SPIN10); t++)
		for (enum server s = SRV_XFIBER; s < SRV_N; s++)
			if (s != SRV_COOP && s != SRV_BATCH && s != SRV_TOKIO && s != SRV_MONOIO &&
			    s != SRV_RR)
				add_row(o, plan, t, s, 1000, 0);
	add_row(o, plan, T_ECHO, SRV_XFIBER, 0, 0);
	add_row(o, plan, T_ECHO, SRV_URING, 0, 0);
	add_row(o, plan, T_ECHO, SRV_GO, 0, 0);
	add_row(o, plan, T_ECHO, SRV_TOKIO, 0, 0);
	add_row(o, plan, T_ECHO, SRV_MONOIO, 0, 0);
	if (!o->quick)
		add_row_on(o, plan, T_ECHO, SRV_TOKIO, 0, 0, 2);
	if (!o->suite && !o->quick)
		for (int t = BY_LOADGEN; t < BY_N; t++)
			add_row(o, plan, T_AGREE, SRV_XFIBER, 1000, (unsigned)t);
	for (unsigned l = 0; l < nloads; l++) {
		for (unsigned k = 0; k < nslices; k++)
			add_row(o, plan, T_MIX, SRV_XFIBER, slices[k], loads[l]);
		add_row(o, plan, T_MIX, SRV_RR, 100, loads[l]);
		add_row(o, plan, T_MIX, SRV_BATCH, 100, loads[l]);
		add_row(o, plan, T_MIX, SRV_URING, 100, loads[l]);
		add_row(o, plan, T_MIX, SRV_COOP, 1000, loads[l]);
		if (o->quick)
			continue;
		add_row(o, plan, T_MIX, SRV_GO, 1000, loads[l]);
		add_row(o, plan, T_MIX, SRV_LIBUV, 1000, loads[l]);
		add_row(o, plan, T_MIX, SRV_THREADS, 1000, loads[l]);
	}
	/* The same mix, the same rates, on two workers that share their CPUs
	 * with the load (issue 32): at 70% of one worker's capacity. */
	if (!o->quick && !o->suite) {
		add_row_on(o, plan, T_MIX, SRV_XFIBER, 100, 70, 2);
		add_row_on(o, plan, T_MIX, SRV_BATCH, 100, 70, 2);
		add_row_on(o, plan, T_MIX, SRV_THREADS, 1000, 70, 2);
	}
	return 0;
}

XF_BENCH_VARIANT(server_variant) = {
    .workload = "server",
    .name = "servers",
    .kind = "peer",
    .order = 0,
    .plan = plan_server,
};

XF_BENCH_WORKLOAD(server_workload) = {
    .name = "server",
    .summary = "HTTP servers: example_httpd against Go net/http, libuv and a thread per "
	       "connection; throughput (wrk) and tail latency under a mix (open loop)",
    .what = "microseconds: per request (root, spin10), p99 of short requests (mix); lower is "
	    "better",
    .unit = "us",
    .higher_is_better = false,
    .order = 35,
    .options = 0,
    .measure_all = server_measure_all,
};
