/*
 * test_preempt.c - the seeds' register selftests, for preempted fibers.
 *
 * Spinner fibers (SPINNERS_PER_WORKER on every worker) each load their own
 * random values into every register of one class and verify them on every
 * iteration of an assembly loop (spin_x86_64_sysv_elf_gas.S) while time
 * slices of 50-200 us preempt them.  Modes add to that:
 *   plain     preemption and migration only
 *   signals   another thread sends SIGUSR1 to the workers at random; its
 *             handler clobbers every vector, opmask and x87 register
 *   syscalls  a getppid system call in every iteration
 *   fork      each spinner forks once, mid-loop; the child checks its copy
 *             as Linux gives it: every register kept, but tile data zero
 *             (the kernel's fork treats TILEDATA as caller-saved; the
 *             spinner's header cites the kernel's code and selftest)
 * It fails on the first mismatch with the class, register, expected and
 * actual value.  Then: errno survives preemption, the counters match what
 * happened, spinners move between workers (at their voluntary switches)
 * but a preempted fiber always resumes on the worker it was interrupted
 * on, and each worker keeps its own sigaltstack.
 *
 * Moving between workers: a preempted fiber never moves (its registers -
 * thread-local addresses among them - belong to the thread it was
 * interrupted on; preempt/signal.c), and the scheduler moves a runnable
 * fiber only to a worker that ran dry or lags by two queued fibers.  With
 * four spinners per worker, that happens when all four of a worker's
 * spinners sleep at once, which is the rarer the longer a chunk takes: a
 * spinner sleeps once per 8 chunks, so the chance is the fourth power of
 * the time it spends asleep.  AMX chunks (8 KB of tiles compared per
 * iteration, ~6x AVX-512's) on a loaded machine made it so rare that
 * preempt.amx.{signals,syscalls} ran 30 s without a move (issue 26).  So
 * past the time asked, a spinner that has not moved yet moves on purpose:
 * it waits for a fiber pinned to the other worker to wake it, and a woken
 * fiber joins its waker's queue.  preempt.avx512.longchunk runs AVX-512
 * with AMX-length chunks (400,000 iterations, ~50 ms here), and ran 30 s
 * without a move beside a CPU hog before.
 *
 * usage: test_preempt CLASS MODE [SLICE_US] [MILLISECONDS] [CHUNK]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"
#include "xstate/regs.h"
#include "xstate/xstate.h"

#define WORKERS		    2
#define SPINNERS_PER_WORKER 4
#define SPINNERS	    (WORKERS * SPINNERS_PER_WORKER)
#define ERRNO_FIBERS	    2
#define CHUNK		    4000 /* iterations per call of the spinner, unless asked */

#define SPIN_GETPPID 1
#define SPIN_FORK    2

uint64_t xf_test_spin(const struct xf__regs *want, struct xf__regs *got, unsigned classes,
		      uint64_t iterations, uint64_t flags, int64_t *child);

static unsigned classes;
static uint64_t spin_flags, chunk = CHUNK;
static xf_chan *movers[WORKERS]; /* each to a fiber pinned to that worker */
static atomic_uint moved_on_purpose;
static atomic_bool stop, want_migration;
static pid_t worker_tid[WORKERS];
static void *worker_altstack[WORKERS];

struct spinner {
	struct xf__regs *want, *got; /* want[0] here, want[1] in a forked child */
	uint64_t chunks;
	unsigned workers_seen;
	int64_t child;
	int index;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Each worker keeps its own alternate signal stack, even after frames
 * taken on another worker were returned from here. */
static void check_altstack(void)
{
	stack_t ss;
	int w;

	xf_preempt_disable(); /* the worker must not change between the two reads */
	w = xf_worker_id();
	CHECK(sigaltstack(NULL, &ss) == 0);
	xf_preempt_enable();
	if (ss.ss_sp != worker_altstack[w])
		xf_test_fail("worker %d runs with sigaltstack %p, its own is %p: a frame from "
			     "another worker leaked its uc_stack",
			     w, ss.ss_sp, worker_altstack[w]);
}

/* The worker the calling fiber runs on, read where it cannot move. */
static int worker_now(void)
{
	int w;

	xf_preempt_disable();
	w = xf_worker_id();
	xf_preempt_enable();
	return w;
}

/* Blocks until a fiber pinned to the other worker wakes it, there.  Not
 * always: a post that comes before the wait is not a wake-up, and a fiber
 * woken while still switching out goes home first; the next chunk tries
 * again. */
static void move_away(void)
{
	xf_sem woken, *p = &woken;
	int from = worker_now();

	CHECK_ERR(xf_sem_init(&woken, 0), 0);
	CHECK_ERR(xf_chan_send(movers[(from + 1) % WORKERS], &p), 0);
	CHECK_ERR(xf_sem_wait(&woken), 0);
	CHECK_ERR(xf_sem_destroy(&woken), 0);
	if (worker_now() != from)
		atomic_fetch_add(&moved_on_purpose, 1);
}

/* Pinned to worker w: wakes whoever asks, until its channel closes. */
static void *mover(void *arg)
{
	xf_sem *s;

	while (xf_chan_recv(movers[(intptr_t)arg], &s) == 0)
		CHECK_ERR(xf_sem_post(s), 0);
	return NULL;
}

static void *spinner(void *arg)
{
	struct spinner *s = arg;
	char msg[512];

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t flags = spin_flags;
		uint64_t bad;

		if (s->chunks)
			flags &= ~(uint64_t)SPIN_FORK; /* fork in the first chunk only */
		bad = xf_test_spin(s->want, s->got, classes, chunk, flags, &s->child);
		if (bad) {
			if (xf__regs_compare(s->want, s->got, classes, msg, sizeof(msg)) == 0)
				snprintf(msg, sizeof(msg), "a register changed and changed back");
			xf_test_fail("spinner %d, iteration %lu of chunk %lu: %s", s->index,
				     (unsigned long)bad - 1, (unsigned long)s->chunks, msg);
		}
		if (s->child > 0) {
			int status;
			CHECK(waitpid((pid_t)s->child, &status, 0) == s->child);
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				xf_test_fail("spinner %d: the forked child saw other register "
					     "values (status 0x%x)",
					     s->index, status);
			s->child = -1;
		}
		s->chunks++;
		s->workers_seen |= 1u << xf_worker_id();
		check_altstack();
		/* Now and then sleep a little: workers run out of fibers and steal
		 * preempted ones, frames and all, from each other. */
		if ((s->chunks + (uint64_t)s->index) % 8 == 0)
			xf_sleep_ns(500000u * (1 + (unsigned)s->index % 4));
		/* Past the time asked with no spinner moved yet (long chunks, a
		 * loaded machine, qemu's TCG): move on purpose. */
		else if (atomic_load_explicit(&want_migration, memory_order_relaxed) &&
			 __builtin_popcount(s->workers_seen) == 1)
			move_away();
	}
	return NULL;
}

static bool migrated_so_far(const struct spinner *sp)
{
	for (int i = 0; i < SPINNERS; i++) {
		if (__builtin_popcount(__atomic_load_n(&sp[i].workers_seen, __ATOMIC_RELAXED)) > 1)
			return true;
	}
	return false;
}

static __attribute__((noipa)) int errno_get(void)
{
	return errno;
}

static __attribute__((noipa)) void errno_set(int v)
{
	errno = v;
}

static void *errno_spinner(void *arg)
{
	int mine = 5000 + (int)(intptr_t)arg;
	volatile uint64_t sink = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		errno_set(mine);
		for (int i = 0; i < 200000; i++)
			sink += (uint64_t)i;
		if (errno_get() != mine)
			xf_test_fail("errno %d after preemption, expected %d", errno_get(), mine);
	}
	return NULL;
}

/* --- the application's own signals, clobbering everything --- */
static struct xf__regs *garbage;
static atomic_ulong app_signals;

static void app_handler(int sig)
{
	(void)sig;
	/* Everything but tiles, whose use needs TILECFG this handler cannot
	 * know; sigreturn must bring all of it back. */
	xf__regs_load(garbage, classes & ~XF_REGS_AMX);
	atomic_fetch_add(&app_signals, 1);
}

static void *signal_sender(void *arg)
{
	uint64_t seed = 12345;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct timespec ts;

		seed = seed * 6364136223846793005u + 1442695040888963407u;
		ts = (struct timespec){0, (long)(20000 + (seed >> 33) % 180000)};
		nanosleep(&ts, NULL);
		syscall(SYS_tgkill, getpid(), worker_tid[(seed >> 20) % WORKERS], SIGUSR1);
	}
	return NULL;
}

/* Learns each worker's thread id and alternate stack. */
static void *probe(void *arg)
{
	int w = (int)(intptr_t)arg;
	stack_t ss;

	CHECK(xf_worker_id() == w);
	worker_tid[w] = (pid_t)syscall(SYS_gettid);
	CHECK(sigaltstack(NULL, &ss) == 0);
	worker_altstack[w] = ss.ss_sp;
	return NULL;
}

int main(int argc, char **argv)
{
	struct spinner sp[SPINNERS];
	xf_fiber *f[SPINNERS], *ef[ERRNO_FIBERS], *mv[WORKERS];
	unsigned slice = argc > 3 ? (unsigned)atoi(argv[3]) : 100;
	unsigned ms = argc > 4 ? (unsigned)atoi(argv[4]) : 1000;
	const char *mode;
	pthread_t sender;
	unsigned migrated = 0;
	uint64_t t0;
	xf_stats st;

	if (argc < 3)
		xf_test_fail("usage: test_preempt CLASS MODE [SLICE_US] [MILLISECONDS] [CHUNK]");
	if (argc > 5 && !(chunk = strtoull(argv[5], NULL, 10)))
		xf_test_fail("CHUNK must be a positive number of iterations, not '%s'", argv[5]);
	classes = xf_test_parse_class(argv[1]);
	mode = argv[2];
	if ((xf__regs_classes_available() & classes) != classes)
		xf_test_skip("this CPU lacks register class %s", argv[1]);
	if (!strcmp(mode, "syscalls"))
		spin_flags = SPIN_GETPPID;
	else if (!strcmp(mode, "fork"))
		spin_flags = SPIN_FORK;
	else if (strcmp(mode, "plain") && strcmp(mode, "signals"))
		xf_test_fail("unknown mode '%s'", mode);

	CHECK_ERR(xf_init(&(xf_config){
		      .workers = WORKERS, .slice_us = slice, .amx = (classes & XF_REGS_AMX) != 0}),
		  0);
	for (int w = 0; w < WORKERS; w++) {
		xf_attr attr = XF_ATTR_INIT;
		xf_fiber *p;
		attr.pinned = true;
		attr.worker = w;
		CHECK_ERR(xf_spawn(&p, probe, (void *)(intptr_t)w, &attr), 0);
		CHECK_ERR(xf_join(p, NULL), 0);
		CHECK_ERR(xf_chan_create(&movers[w], sizeof(xf_sem *), SPINNERS), 0);
		CHECK_ERR(xf_spawn(&mv[w], mover, (void *)(intptr_t)w, &attr), 0);
	}
	CHECK(worker_altstack[0] != worker_altstack[1]);

	garbage = aligned_alloc(64, sizeof(*garbage));
	CHECK(garbage);
	xf__regs_randomize(garbage, 0xbad);
	if (!strcmp(mode, "signals")) {
		struct sigaction sa = {.sa_handler = app_handler, .sa_flags = SA_RESTART};
		sigemptyset(&sa.sa_mask);
		CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
		CHECK(pthread_create(&sender, NULL, signal_sender, NULL) == 0);
	}

	/* Spawned from worker 0: the other worker has to steal half of them. */
	for (int i = 0; i < SPINNERS; i++) {
		sp[i] = (struct spinner){.index = i, .child = -1};
		sp[i].want = aligned_alloc(64, 2 * sizeof(struct xf__regs));
		sp[i].got = aligned_alloc(64, sizeof(struct xf__regs));
		CHECK(sp[i].want && sp[i].got);
		xf__regs_randomize(sp[i].want, 1000 + (uint64_t)i);
		sp[i].want[1] = sp[i].want[0];
		memset(sp[i].want[1].tiles, 0, sizeof(sp[i].want[1].tiles));
		CHECK_ERR(xf_spawn(&f[i], spinner, &sp[i], NULL), 0);
	}
	for (int i = 0; i < ERRNO_FIBERS; i++)
		CHECK_ERR(xf_spawn(&ef[i], errno_spinner, (void *)(intptr_t)i, NULL), 0);

	/* Run for the time asked, and on (up to 30 s, on a loaded machine or
	 * under qemu's TCG) until there is enough to judge: preemptions, some
	 * of them resumed on another worker, and application signals where
	 * they are sent. */
	t0 = now_ns();
	for (;;) {
		uint64_t ran = now_ns() - t0;

		xf_sleep_ns(10 * 1000 * 1000);
		CHECK_ERR(xf_stats_get(&st), 0);
		if (ran < (uint64_t)ms * 1000000u)
			continue;
		atomic_store(&want_migration, !migrated_so_far(sp));
		if ((st.total.preemptions >= 50 && migrated_so_far(sp) &&
		     (strcmp(mode, "signals") || atomic_load(&app_signals))) ||
		    ran > 30ull * 1000 * 1000 * 1000)
			break;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < SPINNERS; i++) {
		CHECK_ERR(xf_join(f[i], NULL), 0);
		migrated += __builtin_popcount(sp[i].workers_seen) > 1;
		free(sp[i].want);
		free(sp[i].got);
	}
	for (int i = 0; i < ERRNO_FIBERS; i++)
		CHECK_ERR(xf_join(ef[i], NULL), 0);
	for (int w = 0; w < WORKERS; w++) {
		CHECK_ERR(xf_chan_close(movers[w]), 0);
		CHECK_ERR(xf_join(mv[w], NULL), 0);
		CHECK_ERR(xf_chan_destroy(movers[w]), 0);
	}
	if (!strcmp(mode, "signals"))
		pthread_join(sender, NULL);
	CHECK_ERR(xf_stats_get(&st), 0);
	CHECK_ERR(xf_shutdown(), 0);
	free(garbage);

	printf("class %s, mode %s, slice %u us: %lu preemptions (%lu deferred, %lu idle ticks), "
	       "%lu resumed from their frame, %lu on another worker, %lu frame bytes, "
	       "%u spinners migrated (%u of them on purpose), %lu app signals\n",
	       argv[1], mode, slice, (unsigned long)st.total.preemptions,
	       (unsigned long)st.total.preemptions_deferred,
	       (unsigned long)st.total.preemption_ticks_idle,
	       (unsigned long)st.total.state_copies_avoided,
	       (unsigned long)st.total.preempted_migrations,
	       (unsigned long)st.total.frame_xstate_bytes, migrated,
	       atomic_load(&moved_on_purpose), (unsigned long)atomic_load(&app_signals));
	/* The counters match what happened. */
	if (st.total.preemptions < 10)
		xf_test_fail("only %lu preemptions: the registers were hardly tested",
			     (unsigned long)st.total.preemptions);
	CHECK(st.total.state_copies_avoided == st.total.preemptions);
	CHECK(st.total.xsaves == 0 && st.total.xrstors == 0); /* zero-copy */
	CHECK(st.total.switches >= st.total.preemptions);
	/* Every frame carries the legacy region and, with XSAVE, the header. */
	CHECK(st.total.frame_xstate_bytes >=
	      st.total.preemptions *
		  (xf__xstate.info.has_xsave ? XSAVE_EXTENDED_OFFSET : XSAVE_LEGACY_SIZE));
	if (!migrated)
		xf_test_fail("no spinner ever changed workers");
	/* Preempted fibers resume on the thread they were interrupted on. */
	if (st.total.preempted_migrations)
		xf_test_fail("%lu preempted fibers resumed on another worker",
			     (unsigned long)st.total.preempted_migrations);
	if (!strcmp(mode, "signals") && !atomic_load(&app_signals))
		xf_test_fail("no application signal arrived");
	return 0;
}
