/*
 * bench_io.c - `xfiber bench io`: fibers doing I/O through xfiber's
 * descriptor calls, each row against its yardstick measured in the same run.
 *
 *   socketpair/threads/1cpu  two kernel threads on one CPU, blocking read()
 *                            and write() of one byte each way over a Unix
 *                            socket pair: ns per round trip
 *   socketpair/fiber/1cpu    the same between two fibers on one worker with
 *                            xf_read/xf_write, in rounds interleaved with the
 *                            threads' (x_threads: how many times faster)
 *   unix/go/1cpu             two goroutines doing it over net.Conns
 *                            (GOMAXPROCS=1), then xfiber's fibers with as
 *                            many round trips right after (x_xfiber)
 *   read-ready/socket, read-ready/pipe
 *                            an xf_read of one byte that finds it there,
 *                            interleaved with the plain read() (x_read)
 *   idle-10k/1cpu            10,000 fibers each waiting on a connection:
 *                            ns per connection to wake them all, and the
 *                            bytes each costs beyond its fiber (RSS), with
 *                            the kernel's epoll entries (slab object sizes)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "bench_fiber.h"
#include "bench_go.h"
#include "bench_task.h"
#include "tsc.h"

#define ROUNDS	 9
#define WARM	 1000
#define IDLE_N	 10000
#define READ_BUF 4096 /* one-byte reads per round trip of the ready-read rows */

/* .test of a row. */
enum { IO_THREADS, IO_FIBERS, IO_GO, IO_READ_SOCKET, IO_READ_PIPE, IO_IDLE };

/* --- two kernel threads --- */

struct thread_pair {
	int fds[2];
	uint64_t n;
	double ns; /* side 0's loop */
	int err;
};

static int thread_side0(void *arg)
{
	struct thread_pair *tp = arg;
	char c = 'x';
	double t0 = xf_bench_now_ns();

	for (uint64_t i = 0; i < tp->n; i++) {
		if (write(tp->fds[0], &c, 1) != 1 || read(tp->fds[0], &c, 1) != 1) {
			tp->err = errno ? errno : EIO;
			shutdown(tp->fds[0], SHUT_RDWR); /* the other side sees EOF */
			return 1;
		}
	}
	tp->ns = xf_bench_now_ns() - t0;
	return 0;
}

static int thread_side1(void *arg)
{
	struct thread_pair *tp = arg;
	char c;

	for (uint64_t i = 0; i < tp->n; i++)
		if (read(tp->fds[1], &c, 1) != 1 || write(tp->fds[1], &c, 1) != 1)
			return 1;
	return 0;
}

/* ns per round trip of n between two threads pinned to cpu; <= 0 on failure. */
static double threads_trip_ns(int cpu, uint64_t n, char *note, size_t note_size)
{
	struct thread_pair tp = {.n = n};
	struct xf_bench_task a, b;
	int err;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, tp.fds)) {
		snprintf(note, note_size, "socketpair: %s", strerror(errno));
		return -1;
	}
	err = xf_bench_task_start(&b, false, cpu, thread_side1, &tp);
	if (!err) {
		err = xf_bench_task_start(&a, false, cpu, thread_side0, &tp);
		if (err)
			shutdown(tp.fds[1], SHUT_RDWR);
		else if (xf_bench_task_wait(&a))
			err = tp.err ? tp.err : EIO;
		xf_bench_task_wait(&b);
	}
	close(tp.fds[0]);
	close(tp.fds[1]);
	if (err) {
		snprintf(note, note_size, "the threads' ping-pong failed: %s", strerror(err));
		return -1;
	}
	return tp.ns / (double)n;
}

/* --- two fibers --- */

struct fiber_pair {
	int fds[2];
	uint64_t n;
};

static void *echo_fiber(void *arg)
{
	struct fiber_pair *fp = arg;
	char c;

	for (uint64_t i = 0; i < fp->n; i++)
		if (xf_read(fp->fds[1], &c, 1) != 1 || xf_write(fp->fds[1], &c, 1) != 1)
			return (void *)(intptr_t)(errno ? errno : EIO);
	return NULL;
}

/* n round trips after WARM untimed ones, the calling thread as one fiber
 * and an echo fiber on the same worker; ns per round trip, <= 0 on failure. */
static double fibers_trip_ns(const struct xf_bench_params *p, uint64_t n,
			     struct xf_bench_sample *s)
{
	struct fiber_pair fp = {.n = n + WARM};
	struct xf_fb_runtime rt;
	xf_fiber *echo = NULL;
	void *res = NULL;
	double t0 = 0, ns = 0;
	char c = 'x';
	int err = xf_fb_start(p, (xf_config){0}, &rt, s);

	if (err)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fp.fds)) {
		snprintf(s->note, sizeof(s->note), "socketpair: %s", strerror(errno));
		xf_fb_stop(&rt, s);
		return -1;
	}
	err = xf_spawn(&echo, echo_fiber, &fp, NULL);
	for (uint64_t i = 0; !err && i < n + WARM; i++) {
		if (i == WARM)
			t0 = xf_bench_now_ns();
		if (xf_write(fp.fds[0], &c, 1) != 1 || xf_read(fp.fds[0], &c, 1) != 1)
			err = errno ? errno : EIO;
	}
	if (!err)
		ns = xf_bench_now_ns() - t0;
	if (err)
		shutdown(fp.fds[0], SHUT_RDWR); /* the echo sees EOF */
	if (echo && xf_join(echo, &res) == 0 && res && !err)
		err = (int)(intptr_t)res;
	xf_close(fp.fds[0]);
	xf_close(fp.fds[1]);
	xf_fb_stop(&rt, s);
	if (err) {
		snprintf(s->note, sizeof(s->note), "the fibers' ping-pong failed: %s",
			 strerror(err));
		return -1;
	}
	return ns / (double)n;
}

static int threads_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	double ns = threads_trip_ns(p->cpu[0], iters, s->note, sizeof(s->note));

	if (ns <= 0)
		return EIO;
	s->value = ns;
	s->elapsed_ns = ns * (double)iters;
	snprintf(s->note, sizeof(s->note), "blocking read()/write() of one byte, both on CPU %d",
		 p->cpu[0]);
	return 0;
}

/* Fibers and threads in interleaved rounds; the median round's ratio. */
static int fibers_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	double fib[ROUNDS], thr[ROUNDS], ratio[ROUNDS], x;
	const uint64_t n = iters / ROUNDS + 1;

	for (int i = 0; i < ROUNDS; i++) {
		fib[i] = fibers_trip_ns(p, n, s);
		thr[i] = threads_trip_ns(p->cpu[0], n, s->note, sizeof(s->note));
		if (fib[i] <= 0 || thr[i] <= 0)
			return EIO;
		ratio[i] = thr[i] / fib[i];
	}
	s->value = xf_median(fib, ROUNDS);
	s->elapsed_ns = (s->value + xf_median(thr, ROUNDS)) * (double)(n * ROUNDS);
	x = xf_median(ratio, ROUNDS);
	snprintf(s->note, sizeof(s->note),
		 "%.2fx (quartiles %.2f-%.2f) two kernel threads on one CPU (%.0f ns), %d "
		 "interleaved rounds",
		 x, xf_quantile(ratio, ROUNDS, 0.25), xf_quantile(ratio, ROUNDS, 0.75),
		 xf_median(thr, ROUNDS), ROUNDS);
	xf_bench_sample_extra(s, "threads_ns", xf_median(thr, ROUNDS));
	xf_bench_sample_extra(s, "x_threads", x);
	return 0;
}

static int go_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	unsigned long long trips;
	double ns, go, fiber;
	int err = xf_bench_go_run("unix", iters, &trips, &ns, s->note, sizeof(s->note));

	if (err)
		return err;
	go = ns / (double)trips;
	s->value = go;
	s->elapsed_ns = ns;
	/* xfiber's equivalent right after, so the ratio is side by side. */
	fiber = fibers_trip_ns(p, trips, s);
	if (fiber <= 0)
		return EIO;
	snprintf(s->note, sizeof(s->note),
		 "net.Conn over a Unix socket pair, GOMAXPROCS=1; xfiber's fibers %.0f ns right "
		 "after: %.2fx faster",
		 fiber, go / fiber);
	xf_bench_sample_extra(s, "xfiber_ns", fiber);
	xf_bench_sample_extra(s, "x_xfiber", go / fiber);
	return 0;
}

/* --- a read that finds its data --- */

typedef ssize_t (*read_fn)(int, void *, size_t);

/* ns per one-byte read of READ_BUF bytes written to fds[1] just before. */
static double ready_reads_ns(const int fds[2], read_fn rd, int *err)
{
	static char buf[READ_BUF];
	double t0;
	char c;

	if (write(fds[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		*err = errno ? errno : EIO;
		return -1;
	}
	t0 = xf_bench_now_ns();
	for (int i = 0; i < READ_BUF; i++) {
		if (rd(fds[0], &c, 1) != 1) {
			*err = errno ? errno : EIO;
			return -1;
		}
	}
	return (xf_bench_now_ns() - t0) / READ_BUF;
}

static int read_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const bool sock = p->test == IO_READ_SOCKET;
	const uint64_t rounds = iters / READ_BUF + 1;
	double *xf, *plain, *ratio, x;
	struct xf_fb_runtime rt;
	bool started = false;
	int fds[2], err;

	if (sock ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) : pipe2(fds, O_CLOEXEC)) {
		snprintf(s->note, sizeof(s->note), "%s: %s", sock ? "socketpair" : "pipe",
			 strerror(errno));
		return errno;
	}
	xf = calloc(rounds, sizeof(*xf));
	plain = calloc(rounds, sizeof(*plain));
	ratio = calloc(rounds, sizeof(*ratio));
	err = xf && plain && ratio ? xf_fb_start(p, (xf_config){0}, &rt, s) : ENOMEM;
	started = !err;
	/* Interleaved: each round's xf_reads against its plain reads. */
	for (uint64_t i = 0; !err && i < rounds; i++) {
		xf[i] = ready_reads_ns(fds, xf_read, &err);
		if (!err)
			plain[i] = ready_reads_ns(fds, read, &err);
		if (!err)
			ratio[i] = xf[i] / plain[i];
	}
	if (started)
		xf_fb_stop(&rt, s);
	close(fds[0]);
	close(fds[1]);
	if (!err) {
		s->value = xf_median(xf, rounds);
		s->elapsed_ns = (s->value + xf_median(plain, rounds)) * (double)(rounds * READ_BUF);
		x = xf_median(ratio, rounds);
		snprintf(s->note, sizeof(s->note),
			 "%.3fx (quartiles %.3f-%.3f) the plain read() (%.0f ns), %llu "
			 "interleaved rounds",
			 x, xf_quantile(ratio, rounds, 0.25), xf_quantile(ratio, rounds, 0.75),
			 xf_median(plain, rounds), (unsigned long long)rounds);
		xf_bench_sample_extra(s, "read_ns", xf_median(plain, rounds));
		xf_bench_sample_extra(s, "x_read", x);
	} else if (!s->note[0]) {
		snprintf(s->note, sizeof(s->note), "reads failed: %s", strerror(err));
	}
	free(xf);
	free(plain);
	free(ratio);
	return err;
}

/* --- 10,000 idle connections --- */

static xf_sem idle_gate;
static atomic_uint idle_entered;

static void *idle_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char c;

	xf_sem_wait(&idle_gate);
	atomic_fetch_add(&idle_entered, 1);
	return (void *)(intptr_t)(xf_read(fd, &c, 1) == 1 ? 0 : errno ? errno : EIO);
}

/* The object size of a kernel slab cache (SLUB's sysfs, root only); 0 if
 * unknown. */
static unsigned slab_objsize(const char *cache)
{
	char path[128];
	unsigned size = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/object_size", cache);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%u", &size) != 1)
			size = 0;
		fclose(f);
	}
	return size;
}

/* Descriptors for n connections (both ends ours): raised as far as allowed. */
static unsigned idle_connections(void)
{
	struct rlimit rl;
	rlim_t want = 2 * IDLE_N + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur < want) {
		struct rlimit r = {want, rl.rlim_max < want && rl.rlim_max != RLIM_INFINITY
						 ? want
						 : rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &r)) {
			r.rlim_cur = r.rlim_max = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &r) == 0)
				rl.rlim_cur = rl.rlim_max;
		} else {
			rl.rlim_cur = want;
		}
	}
	return rl.rlim_cur >= want ? IDLE_N : rl.rlim_cur > 64 ? (unsigned)(rl.rlim_cur - 64) / 2 : 0;
}

/* In a child process of its own, forked before anything there uses these
 * descriptor numbers: the runtime's table of descriptors grows in chunks
 * kept for the life of the process, which later runs in one process would
 * find already resident. */
struct idle_job {
	const struct xf_bench_params *p;
	struct xf_bench_sample s;
	int err;
};

static int idle_measure(void *arg)
{
	struct idle_job *job = arg;
	struct xf_bench_sample *s = &job->s;
	const unsigned n = idle_connections();
	int(*fds)[2] = calloc(n ? n : 1, sizeof(*fds));
	xf_fiber **f = calloc(n ? n : 1, sizeof(*f));
	struct xf_fb_runtime rt;
	long rss_parked, rss_waiting;
	unsigned made = 0, spawned = 0, epi, pwq;
	double t0, t1, per;
	int err, len;

	if (n < 1000)
		snprintf(s->note, sizeof(s->note), "RLIMIT_NOFILE allows too few descriptors");
	err = n < 1000 ? EMFILE : !fds || !f ? ENOMEM : xf_fb_start(job->p, (xf_config){0}, &rt, s);
	if (err)
		return job->err = err;
	xf_sem_init(&idle_gate, 0);
	for (; made < n && !err; made++)
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds[made]))
			err = errno;
	for (; spawned < made && !err; spawned++)
		err = xf_spawn(&f[spawned], idle_conn, (void *)(intptr_t)fds[spawned][1], NULL);
	/* The same fibers parked on a semaphore, then waiting on their
	 * connections: the difference is what waiting on a descriptor costs. */
	xf_sleep_ns(2000000);
	rss_parked = xf_bench_rss_kb();
	for (unsigned i = 0; i < spawned; i++)
		xf_sem_post(&idle_gate);
	while (atomic_load(&idle_entered) < spawned)
		xf_sleep_ns(1000000);
	xf_sleep_ns(2000000); /* the last of them into its wait */
	rss_waiting = xf_bench_rss_kb();
	t0 = xf_bench_now_ns();
	for (unsigned i = 0; i < spawned && !err; i++)
		if (xf_write(fds[i][0], "w", 1) != 1)
			err = errno;
	for (unsigned i = 0; i < spawned; i++) {
		void *res = NULL;

		if (err)
			shutdown(fds[i][0], SHUT_RDWR);
		xf_join(f[i], &res);
		if (res && !err)
			err = (int)(intptr_t)res;
	}
	t1 = xf_bench_now_ns();
	xf_fb_stop(&rt, s);
	if (err) {
		snprintf(s->note, sizeof(s->note), "%u connections: %s", n, strerror(err));
		return job->err = err;
	}
	s->value = (t1 - t0) / n;
	s->elapsed_ns = t1 - t0;
	per = (double)(rss_waiting - rss_parked) * 1024.0 / n;
	len = snprintf(s->note, sizeof(s->note),
		       "%u connections: woken in %.1f ms; waiting costs %.0f B each beyond its "
		       "parked fiber",
		       n, (t1 - t0) / 1e6, per);
	epi = slab_objsize("eventpoll_epi");
	pwq = slab_objsize("eventpoll_pwq");
	if (epi && pwq) {
		snprintf(s->note + len, sizeof(s->note) - (size_t)len,
			 ", and the kernel %u B of epoll entries", epi + pwq);
		xf_bench_sample_extra(s, "kernel_bytes_per_conn", epi + pwq);
	}
	xf_bench_sample_extra(s, "bytes_per_conn", per);
	xf_bench_sample_extra(s, "connections", n);
	return 0; /* the process exits: its descriptors and memory go with it */
}

static int idle_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	struct idle_job *job = xf_bench_shared_alloc(sizeof(*job));
	struct xf_bench_task t;
	int err;

	(void)iters;
	if (!job)
		return ENOMEM;
	job->p = p;
	err = xf_bench_task_start(&t, true, -1, idle_measure, job);
	if (!err && xf_bench_task_wait(&t) && !job->err)
		job->err = EIO;
	if (!err)
		err = job->err;
	*s = job->s;
	if (err && !s->note[0])
		snprintf(s->note, sizeof(s->note), "the measuring process failed: %s",
			 strerror(err));
	xf_bench_shared_free(job, sizeof(*job));
	return err;
}

/* --- the plan --- */

static struct xf_bench_params io_params(const struct xf_bench_opts *o, int test)
{
	/* cpu[1] of a one-CPU row: where the ticker runs, if there is one. */
	return (struct xf_bench_params){
	    .test = test, .ncpus = 1, .cpu = {o->cpu[0], o->ncpus >= 2 ? o->cpu[1] : o->cpu[0]}};
}

static int plan_io_kernel(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			  size_t err_size)
{
	struct xf_bench_params p = io_params(o, IO_THREADS);

	(void)err;
	(void)err_size;
	xf_bench_plan_add(plan, &p, threads_run, "socketpair/threads/1cpu");
	return 0;
}

static int plan_io_go(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
		      size_t err_size)
{
	struct xf_bench_params p = io_params(o, IO_GO);
	const char *skip = xf_bench_go_missing();
	struct xf_bench_row *row;

	(void)err;
	(void)err_size;
	row = xf_bench_plan_add(plan, &p, go_run, "unix/go/1cpu");
	if (row && skip)
		snprintf(row->skip, sizeof(row->skip), "%s", skip);
	return 0;
}

static int plan_io_fiber(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			 size_t err_size)
{
	struct xf_bench_params p = io_params(o, IO_FIBERS);
	struct xf_bench_row *row;

	(void)err;
	(void)err_size;
	xf_bench_plan_add(plan, &p, fibers_run, "socketpair/fiber/1cpu");
	p.test = IO_READ_SOCKET;
	xf_bench_plan_add(plan, &p, read_run, "read-ready/socket/1cpu");
	p.test = IO_READ_PIPE;
	xf_bench_plan_add(plan, &p, read_run, "read-ready/pipe/1cpu");
	if (o->quick)
		return 0;
	p.test = IO_IDLE;
	row = xf_bench_plan_add(plan, &p, idle_run, "idle-10k/1cpu");
	if (row)
		row->fixed_work = true;
	return 0;
}

XF_BENCH_VARIANT(io_kernel) = {
    .workload = "io",
    .name = "kernel",
    .kind = "kernel",
    .order = 0,
    .plan = plan_io_kernel,
};

XF_BENCH_VARIANT(io_fiber) = {
    .workload = "io",
    .name = "fiber",
    .kind = "fiber",
    .order = 20,
    .plan = plan_io_fiber,
};

XF_BENCH_VARIANT(io_go) = {
    .workload = "io",
    .name = "go",
    .kind = "peer",
    .order = 70,
    .plan = plan_io_go,
};

XF_BENCH_WORKLOAD(io_workload) = {
    .name = "io",
    .summary = "fibers doing I/O: socket round trips against kernel threads and Go, ready "
	       "reads, 10,000 idle connections",
    .what = "ns per operation, each against its yardstick in the same run (lower is better)",
    .unit = "ns",
    .higher_is_better = false,
    .order = 17,
    .options = XF_BOPT_ITERATIONS,
};
