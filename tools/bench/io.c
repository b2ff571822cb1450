/*
 * io.c - `xfiber bench io`: fibers doing I/O through xfiber's
 * descriptor calls, each row against its yardstick measured in the same run.
 *
 *   socketpair/threads/1cpu  two kernel threads on one CPU, blocking read()
 *                            and write() of one byte each way over a Unix
 *                            socket pair: ns per round trip
 *   socketpair/fiber/1cpu    the same between two fibers on one worker with
 *                            xf_read/xf_write, in rounds interleaved with the
 *                            threads' (x_threads: how many times faster), and
 *                            the worker's system calls per round trip,
 *                            counted by the kernel (syscalls_per_trip)
 *   socketpairs-64/...       64 such connections at once, on two CPUs: ns
 *                            per round trip of them all (a server's load)
 *   unix/go/1cpu             two goroutines doing it over net.Conns
 *                            (GOMAXPROCS=1), then xfiber's fibers with as
 *                            many round trips right after (x_xfiber)
 *   read-ready/socket, read-ready/pipe
 *                            an xf_read of one byte that finds it there,
 *                            interleaved with the plain read() (x_read)
 *   socketpair/syscalls-alone/1cpu, socketpair/uring-alone/1cpu
 *                            the floors: one thread makes the round trips
 *                            itself, with no fiber and nothing to switch -
 *                            non-blocking send and recv (the four system
 *                            calls a round trip cannot do without), or one
 *                            io_uring_enter per message with rings made as
 *                            the engine's; interleaved with the threads',
 *                            their system calls counted as the fibers'
 *   idle-10k/1cpu            10,000 fibers each waiting on a connection:
 *                            ns per connection to wake them all, and the
 *                            bytes each costs beyond its fiber (RSS), with
 *                            the kernel's epoll entries (slab object sizes)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef XF_BENCH_HAVE_IO_URING
#include <liburing.h>
#endif

#include "bench/bench.h"
#include "bench/fiber.h"
#include "bench/go.h"
#include "bench/syscount.h"
#include "bench/task.h"
#include "common/tsc.h"

#define ROUNDS	 9
#define WARM	 1000 /* untimed round trips of one connection; of many, WARM_MANY each */
#define WARM_MANY 50
#define IDLE_N	 10000
#define READ_BUF 4096 /* one-byte reads per round trip of the ready-read rows */

/* .test of a row. */
enum {
	IO_THREADS,
	IO_FIBERS,
	IO_GO,
	IO_READ_SOCKET,
	IO_READ_PIPE,
	IO_IDLE,
	IO_ALONE_SYSCALLS,
	IO_ALONE_URING
};

/* --- ping-pongs: pairs of kernel threads or of fibers --- */

/* A timed stretch: its ends, and the system calls counted between them if
 * calls is not NULL. */
struct stretch {
	const struct xf_syscount *calls;
	uint64_t calls0, calls1;
	double t0, t1;
};

static void stretch_begin(struct stretch *st)
{
	if (st->calls)
		st->calls0 = xf_syscount_read(st->calls);
	st->t0 = xf_bench_now_ns();
}

static void stretch_end(struct stretch *st)
{
	st->t1 = xf_bench_now_ns();
	if (st->calls)
		st->calls1 = xf_syscount_read(st->calls);
}

/* One connection: a pinger on fds[0] and an echo on fds[1]. */
struct pair {
	int fds[2];
	uint64_t n;	/* timed round trips, */
	uint64_t warm_n; /* after these untimed ones (WARM, or WARM_MANY each of many) */
	bool fibers; /* xf_read/xf_write, else read/write */
	struct stretch timed; /* t0 0: not started */
	int err;
	atomic_uint *warm; /* pingers not yet warm: the timing starts at 0 */
};

/* The runtime of a fiber row: the engine its name says. */
static xf_config io_config(const struct xf_bench_params *p)
{
	return (xf_config){.io_backend =
			       p->io_uring ? XF_IO_BACKEND_IO_URING : XF_IO_BACKEND_EPOLL};
}
static bool trip(const struct pair *pp, int fd, bool ping)
{
	char c = 'x';

	if (pp->fibers)
		return ping ? xf_write(fd, &c, 1) == 1 && xf_read(fd, &c, 1) == 1
			    : xf_read(fd, &c, 1) == 1 && xf_write(fd, &c, 1) == 1;
	return ping ? write(fd, &c, 1) == 1 && read(fd, &c, 1) == 1
		    : read(fd, &c, 1) == 1 && write(fd, &c, 1) == 1;
}

/* A pinger that is warm, or will never be (it failed): counted once. */
static void pinger_warm(struct pair *pp)
{
	if (!pp->timed.t0)
		atomic_fetch_sub(pp->warm, 1);
}

static int pinger(void *arg)
{
	struct pair *pp = arg;

	for (uint64_t i = 0; i < pp->n + pp->warm_n; i++) {
		if (i == pp->warm_n) {
			/* Every connection warm before any is timed. */
			pinger_warm(pp);
			while (atomic_load(pp->warm))
				pp->fibers ? xf_yield() : sched_yield();
			stretch_begin(&pp->timed);
		}
		if (!trip(pp, pp->fds[0], true)) {
			pp->err = errno ? errno : EIO;
			pinger_warm(pp);
			shutdown(pp->fds[0], SHUT_RDWR); /* the echo sees EOF */
			return 1;
		}
	}
	stretch_end(&pp->timed);
	return 0;
}

static int echoer(void *arg)
{
	struct pair *pp = arg;

	for (uint64_t i = 0; i < pp->n + pp->warm_n; i++)
		if (!trip(pp, pp->fds[1], false))
			return 1;
	return 0;
}

static void *pinger_fiber(void *arg)
{
	return (void *)(intptr_t)pinger(arg);
}

static void *echo_fiber(void *arg)
{
	return (void *)(intptr_t)echoer(arg);
}

/* Runs every pair's two sides as kernel threads: on the row's CPU, or
 * spread by the kernel over its two. */
static int run_threads(const struct xf_bench_params *p, struct pair *pairs, unsigned npairs)
{
	struct xf_bench_task *t = calloc(2 * (size_t)npairs, sizeof(*t));
	const int cpu = p->ncpus == 1 ? p->cpu[0] : -1;
	cpu_set_t saved;
	unsigned started = 0;
	int err = t ? 0 : ENOMEM;

	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (p->ncpus > 1)
		xf_bench_pin(p->cpu, p->ncpus); /* the threads inherit the two CPUs */
	for (unsigned i = 0; !err && i < npairs; i++) {
		err = xf_bench_task_start(&t[started], false, cpu, echoer, &pairs[i]);
		if (!err && ++started &&
		    (err = xf_bench_task_start(&t[started], false, cpu, pinger, &pairs[i])))
			shutdown(pairs[i].fds[0], SHUT_RDWR);
		else if (!err)
			started++;
	}
	for (unsigned i = started / 2; i < npairs; i++)
		pinger_warm(&pairs[i]); /* never started: nobody waits for them */
	for (unsigned i = 0; i < started; i++)
		if (xf_bench_task_wait(&t[i]) && !err)
			err = EIO;
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	free(t);
	return err;
}

/* The same as fibers on the row's workers (xfiber places them). */
static int run_fibers(const struct xf_bench_params *p, struct pair *pairs, unsigned npairs,
		      struct xf_bench_sample *s)
{
	xf_fiber **f = calloc(2 * (size_t)npairs, sizeof(*f));
	struct xf_fb_runtime rt;
	unsigned spawned = 0;
	int err = f ? xf_fb_start(p, io_config(p), &rt, s) : ENOMEM;

	if (err) {
		free(f);
		return err;
	}
	for (unsigned i = 0; !err && i < npairs; i++) {
		err = xf_spawn(&f[spawned], echo_fiber, &pairs[i], NULL);
		if (!err && ++spawned &&
		    (err = xf_spawn(&f[spawned], pinger_fiber, &pairs[i], NULL)))
			shutdown(pairs[i].fds[0], SHUT_RDWR);
		else if (!err)
			spawned++;
	}
	for (unsigned i = spawned / 2; i < npairs; i++)
		pinger_warm(&pairs[i]); /* never spawned: nobody waits for them */
	for (unsigned i = 0; i < spawned; i++) {
		void *res = NULL;

		if (xf_join(f[i], &res) == 0 && res && !err)
			err = EIO;
	}
	for (unsigned i = 0; i < npairs; i++) /* out of the poller before close */
		if (pairs[i].fds[0] >= 0) {
			xf_close(pairs[i].fds[0]);
			xf_close(pairs[i].fds[1]);
			pairs[i].fds[0] = pairs[i].fds[1] = -1;
		}
	xf_fb_stop(&rt, s);
	free(f);
	return err;
}

/* ns per round trip over all npairs connections, n timed round trips on
 * each: from the first pinger's start to the last one's end.  <= 0 on
 * failure, with the reason in s->note.  With calls (one connection), also
 * the system calls counted there per round trip in *calls_per_trip. */
static double pairs_trip_ns(const struct xf_bench_params *p, bool fibers, unsigned npairs,
			    uint64_t n, const struct xf_syscount *calls, double *calls_per_trip,
			    struct xf_bench_sample *s)
{
	struct pair *pairs = calloc(npairs, sizeof(*pairs));
	atomic_uint warm = npairs;
	double t0 = 0, t1 = 0;
	unsigned made = 0;
	int err = pairs ? 0 : ENOMEM;

	for (; !err && made < npairs; made++) {
		pairs[made] = (struct pair){.n = n,
					    .warm_n = npairs > 1 ? WARM_MANY : WARM,
					    .fibers = fibers,
					    .warm = &warm,
					    .timed.calls = npairs == 1 ? calls : NULL};
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[made].fds))
			err = errno;
	}
	if (!err)
		err = fibers ? run_fibers(p, pairs, npairs, s) : run_threads(p, pairs, npairs);
	for (unsigned i = 0; i < made; i++) {
		if (!err && pairs[i].err)
			err = pairs[i].err;
		if (!i || pairs[i].timed.t0 < t0)
			t0 = pairs[i].timed.t0;
		if (pairs[i].timed.t1 > t1)
			t1 = pairs[i].timed.t1;
		if (pairs[i].fds[0] >= 0) {
			close(pairs[i].fds[0]);
			close(pairs[i].fds[1]);
		}
	}
	if (!err && calls && npairs == 1)
		*calls_per_trip =
		    (double)(pairs[0].timed.calls1 - pairs[0].timed.calls0) / (double)n;
	free(pairs);
	if (err) {
		snprintf(s->note, sizeof(s->note), "the %s' ping-pong failed: %s",
			 fibers ? "fibers" : "threads", strerror(err));
		return -1;
	}
	return (t1 - t0) / ((double)n * npairs);
}

/* Where a row's tasks run, for its notes. */
static void where(const struct xf_bench_params *p, char *buf, size_t size)
{
	if (p->ncpus == 1)
		snprintf(buf, size, "on CPU %d", p->cpu[0]);
	else
		snprintf(buf, size, "on CPUs %d and %d", p->cpu[0], p->cpu[1]);
}

static int threads_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const uint64_t n = iters / p->groups + 1;
	double ns = pairs_trip_ns(p, false, p->groups, n, NULL, NULL, s);
	char at[40];

	if (ns <= 0)
		return EIO;
	s->value = ns;
	s->elapsed_ns = ns * (double)(n * p->groups);
	where(p, at, sizeof(at));
	snprintf(s->note, sizeof(s->note),
		 "%u connection%s, blocking read()/write() of one byte, %u threads %s", p->groups,
		 p->groups > 1 ? "s" : "", 2 * p->groups, at);
	return 0;
}

/* A row timed in ROUNDS rounds interleaved with the threads' (ns per
 * round trip each, n round trips of each of p->groups connections a
 * round): its value, the median round's ratio and the threads' in the
 * notes, with `how` after them if not empty (mine and thr end up sorted). */
static void against_threads(const struct xf_bench_params *p, double mine[ROUNDS],
			    double thr[ROUNDS], uint64_t n, const char *how,
			    struct xf_bench_sample *s)
{
	double ratio[ROUNDS], x;
	char at[40];

	for (int i = 0; i < ROUNDS; i++)
		ratio[i] = thr[i] / mine[i];
	s->value = xf_median(mine, ROUNDS);
	s->elapsed_ns = (s->value + xf_median(thr, ROUNDS)) * (double)(n * p->groups * ROUNDS);
	x = xf_median(ratio, ROUNDS);
	where(p, at, sizeof(at));
	snprintf(s->note, sizeof(s->note),
		 "%.2fx (quartiles %.2f-%.2f) %u kernel threads %s (%.0f ns), %d interleaved "
		 "rounds%s%s",
		 x, xf_quantile(ratio, ROUNDS, 0.25), xf_quantile(ratio, ROUNDS, 0.75),
		 2 * p->groups, at, xf_median(thr, ROUNDS), ROUNDS, how[0] ? "; " : "", how);
	xf_bench_sample_extra(s, "threads_ns", xf_median(thr, ROUNDS));
	xf_bench_sample_extra(s, "x_threads", x);
}

/* The median round's system calls per round trip, in the row's extras
 * and as "<what>N system calls a round trip" in how. */
static void put_calls(struct xf_bench_sample *s, double calls[ROUNDS], const char *what, char *how,
		      size_t how_size)
{
	double median = xf_median(calls, ROUNDS);

	snprintf(how, how_size, "%s%.2f system calls a round trip", what, median);
	xf_bench_sample_extra(s, "syscalls_per_trip", median);
}

/* Fibers and threads in interleaved rounds; the median round's ratio, and
 * with one connection the system calls of the thread the fibers run on
 * (the worker: the ticker's are not counted), per round trip. */
static int fibers_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	double fib[ROUNDS], thr[ROUNDS], calls[ROUNDS];
	const uint64_t n = iters / ROUNDS / p->groups + 1;
	struct xf_syscount sc;
	char how[64] = "";
	bool counted = p->groups == 1 && !xf_syscount_start(&sc, getpid(), how, sizeof(how));
	int err = 0;

	for (int i = 0; !err && i < ROUNDS; i++) {
		fib[i] = pairs_trip_ns(p, true, p->groups, n, counted ? &sc : NULL, &calls[i], s);
		thr[i] = pairs_trip_ns(p, false, p->groups, n, NULL, NULL, s);
		if (fib[i] <= 0 || thr[i] <= 0)
			err = EIO;
	}
	if (counted)
		xf_syscount_stop(&sc);
	if (err)
		return err;
	how[0] = 0;
	if (counted)
		put_calls(s, calls, "", how, sizeof(how));
	against_threads(p, fib, thr, n, how, s);
	return 0;
}

/* --- the floors: one thread, no fibers, nothing waits --- */

/* n round trips of one byte by one thread, each receive finding its byte,
 * timed in *st; false on failure. */
static bool alone_syscalls(const int sv[2], uint64_t n, struct stretch *st)
{
	char c = 'x';

	stretch_begin(st);
	for (uint64_t i = 0; i < n; i++)
		if (send(sv[0], &c, 1, MSG_DONTWAIT) != 1 ||
		    recv(sv[1], &c, 1, MSG_DONTWAIT) != 1 ||
		    send(sv[1], &c, 1, MSG_DONTWAIT) != 1 || recv(sv[0], &c, 1, MSG_DONTWAIT) != 1)
			return false;
	stretch_end(st);
	return true;
}

#ifdef XF_BENCH_HAVE_IO_URING
/* Each half round trip as the engine makes it between two fibers on one
 * worker: the sender's send and its receive of the answer go in with one
 * io_uring_enter, which waits for the peer's receive, queued the half
 * before, to complete.  The ring as the engine's (io/ring.c): one issuer,
 * deferred completion work, or cooperative before Linux 6.1. */
static bool alone_uring(const int sv[2], uint64_t n, struct stretch *st)
{
	struct io_uring_params prm = {.flags = IORING_SETUP_SINGLE_ISSUER |
					       IORING_SETUP_DEFER_TASKRUN |
					       IORING_SETUP_TASKRUN_FLAG};
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	char buf[2];
	bool ok = false;
	int rc = io_uring_queue_init_params(8, &ring, &prm);

	if (rc == -EINVAL) {
		prm = (struct io_uring_params){.flags = IORING_SETUP_COOP_TASKRUN |
							IORING_SETUP_TASKRUN_FLAG};
		rc = io_uring_queue_init_params(8, &ring, &prm);
	}
	if (rc < 0)
		return false;
	/* user_data: 1 + the side whose receive it is; 0 a send. */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_recv(sqe, sv[1], &buf[1], 1, 0);
	io_uring_sqe_set_data64(sqe, 2);
	stretch_begin(st);
	for (uint64_t i = 0; i < 2 * n; i++) {
		const int from = i & 1, to = !from;
		bool arrived = false;

		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_send(sqe, sv[from], "x", 1, 0);
		io_uring_sqe_set_data64(sqe, 0);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_recv(sqe, sv[from], &buf[from], 1, 0);
		io_uring_sqe_set_data64(sqe, 1 + (uint64_t)from);
		while (!arrived) {
			struct io_uring_cqe *cqe;
			unsigned head, seen = 0;

			if (io_uring_submit_and_wait(&ring, 1) < 0)
				goto out;
			io_uring_for_each_cqe(&ring, head, cqe)
			{
				seen++;
				if (cqe->res != 1)
					goto out;
				arrived |= io_uring_cqe_get_data64(cqe) == 1 + (uint64_t)to;
			}
			io_uring_cq_advance(&ring, seen);
		}
	}
	stretch_end(st);
	ok = true;
out:
	io_uring_queue_exit(&ring); /* cancels the last receive */
	return ok;
}
#endif

/* One floor's ns per round trip on a fresh socket pair, <= 0 on failure;
 * with calls, the system calls per round trip in *calls_per_trip. */
static double alone_trip_ns(int test, uint64_t n, const struct xf_syscount *calls,
			    double *calls_per_trip)
{
	struct stretch st = {.calls = calls};
	bool ok = false;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	if (test == IO_ALONE_SYSCALLS)
		ok = alone_syscalls(sv, n, &st);
#ifdef XF_BENCH_HAVE_IO_URING
	else
		ok = alone_uring(sv, n, &st);
#endif
	close(sv[0]);
	close(sv[1]);
	if (!ok)
		return -1;
	if (calls)
		*calls_per_trip = (double)(st.calls1 - st.calls0) / (double)n;
	return (st.t1 - st.t0) / (double)n;
}

/* A floor and the threads in interleaved rounds, on the row's CPU. */
static int alone_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	double one[ROUNDS], thr[ROUNDS], calls[ROUNDS];
	const uint64_t n = iters / ROUNDS + 1;
	struct xf_syscount sc;
	char how[80] = "";
	bool counted = !xf_syscount_start(&sc, getpid(), how, sizeof(how));
	cpu_set_t saved;
	int err = 0;

	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	xf_bench_pin(p->cpu, 1);
	for (int i = 0; !err && i < ROUNDS; i++) {
		one[i] = alone_trip_ns(p->test, n, counted ? &sc : NULL, &calls[i]);
		thr[i] = pairs_trip_ns(p, false, 1, n, NULL, NULL, s);
		if (one[i] <= 0)
			snprintf(s->note, sizeof(s->note), "the one thread's round trips failed");
		if (one[i] <= 0 || thr[i] <= 0)
			err = EIO;
	}
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	if (counted)
		xf_syscount_stop(&sc);
	if (err)
		return err;
	if (counted)
		put_calls(s, calls, "one thread, ", how, sizeof(how));
	else
		snprintf(how, sizeof(how), "one thread (system calls not counted)");
	against_threads(p, one, thr, n, how, s);
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
	fiber = pairs_trip_ns(p, true, 1, trips, NULL, NULL, s);
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
	err = xf && plain && ratio ? xf_fb_start(p, io_config(p), &rt, s) : ENOMEM;
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
	err = n < 1000	   ? EMFILE
	      : !fds || !f ? ENOMEM
			   : xf_fb_start(job->p, io_config(job->p), &rt, s);
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

#define MANY_PAIRS 64

static struct xf_bench_params io_params(const struct xf_bench_opts *o, int test)
{
	/* cpu[1] of a one-CPU row: where the ticker runs, if there is one. */
	return (struct xf_bench_params){.test = test,
					.ncpus = 1,
					.groups = 1,
					.cpu = {o->cpu[0], o->ncpus >= 2 ? o->cpu[1] : o->cpu[0]}};
}

/* The same rows' many-connections form, on two CPUs if there are two. */
static bool many_params(const struct xf_bench_opts *o, struct xf_bench_params *p)
{
	if (o->ncpus < 2)
		return false;
	p->ncpus = 2;
	p->groups = MANY_PAIRS;
	return true;
}

static int plan_io_kernel(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			  size_t err_size)
{
	struct xf_bench_params p = io_params(o, IO_THREADS);

	(void)err;
	(void)err_size;
	const char *no_uring = xf_bench_uring_missing();
	struct xf_bench_row *row;

	xf_bench_plan_add(plan, &p, threads_run, "socketpair/threads/1cpu");
	p.test = IO_ALONE_SYSCALLS;
	xf_bench_plan_add(plan, &p, alone_run, "socketpair/syscalls-alone/1cpu");
	p.test = IO_ALONE_URING;
	row = xf_bench_plan_add(plan, &p, alone_run, "socketpair/uring-alone/1cpu");
	if (row && no_uring)
		snprintf(row->skip, sizeof(row->skip), "%s", no_uring);
	p.test = IO_THREADS;
	if (many_params(o, &p))
		xf_bench_plan_add(plan, &p, threads_run, "socketpairs-%d/threads/2cpu", MANY_PAIRS);
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

/* The same fiber rows on the io_uring engine, beside epoll's: the rows
 * choose the engine, whatever XFIBER_IO_BACKEND says. */
static void plan_io_uring(const struct xf_bench_opts *o, struct xf_bench_plan *plan)
{
	struct xf_bench_params p = io_params(o, IO_FIBERS);
	const char *why = xf_bench_uring_missing();
	struct xf_bench_row *rows[4] = {0};
	unsigned n = 0;

	unsetenv("XFIBER_IO_BACKEND");
	p.io_uring = true;
	rows[n++] = xf_bench_plan_add(plan, &p, fibers_run, "socketpair/fiber-uring/1cpu");
	if (many_params(o, &p)) {
		rows[n++] = xf_bench_plan_add(plan, &p, fibers_run,
					      "socketpairs-%d/fiber-uring/2cpu", MANY_PAIRS);
		p = io_params(o, IO_FIBERS);
		p.io_uring = true;
	}
	p.test = IO_READ_SOCKET;
	rows[n++] = xf_bench_plan_add(plan, &p, read_run, "read-ready/socket-uring/1cpu");
	if (!o->quick) {
		p.test = IO_IDLE;
		rows[n] = xf_bench_plan_add(plan, &p, idle_run, "idle-10k-uring/1cpu");
		if (rows[n])
			rows[n]->fixed_work = true;
		n++;
	}
	for (unsigned i = 0; why && i < n; i++)
		if (rows[i])
			snprintf(rows[i]->skip, sizeof(rows[i]->skip), "%s", why);
}

static int plan_io_fiber(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			 size_t err_size)
{
	struct xf_bench_params p = io_params(o, IO_FIBERS);
	struct xf_bench_row *row;

	(void)err;
	(void)err_size;
	xf_bench_plan_add(plan, &p, fibers_run, "socketpair/fiber/1cpu");
	if (many_params(o, &p)) {
		xf_bench_plan_add(plan, &p, fibers_run, "socketpairs-%d/fiber/2cpu", MANY_PAIRS);
		p = io_params(o, IO_FIBERS);
	}
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
	plan_io_uring(o, plan);
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
