/*
 * test_signals.c - the application's own signals beside the runtime's.
 *
 * usage: test_signals CASE
 *   before   a SIGURG handler installed before xf_init gets the SIGURGs
 *            another process sends, while preemption goes on; after
 *            xf_shutdown it is in the kernel again
 *   after    the same with the handler installed after xf_init (signal())
 *   oob      out-of-band TCP data on loopback: the kernel's SIGURG reaches
 *            the application's handler
 *   altstack the application's sigaltstack on the thread that calls xf_init
 *            is back after xf_shutdown, not disabled; one larger than the
 *            runtime's own is kept throughout, for its SA_ONSTACK handlers
 *   view     sigaction() reports the application's handler for SIGURG and
 *            SIGSEGV while the runtime's is in the kernel
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

#define SENT 20

static atomic_int got;
static atomic_int got_from_child;
static pid_t child;
static atomic_bool stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_urg_info(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	atomic_fetch_add(&got, 1);
	if (si->si_pid == child)
		atomic_fetch_add(&got_from_child, 1);
}

static void on_urg(int sig)
{
	(void)sig;
	atomic_fetch_add(&got, 1);
}

static void *spin(void *arg)
{
	while (!atomic_load(&stop))
		;
	return arg;
}

/* Waits up to 5 s for want SIGURGs to have arrived. */
static void wait_for(int want)
{
	for (uint64_t t0 = now_ns(); atomic_load(&got) < want;) {
		if (now_ns() - t0 > 5000000000ull)
			xf_test_fail("%d of %d SIGURGs reached the application's handler",
				     atomic_load(&got), want);
		xf_sleep_ns(1000000);
	}
}

/* Another process sends SENT SIGURGs, one every 5 ms, while two spinners
 * need preempting on each of two workers.  Standard signals do not queue:
 * one sent while the last is still pending merges with it, and at one a
 * millisecond more than half merged under qemu's TCG on a loaded machine,
 * which keeps signals blocked until the guest's handler runs. */
static void foreign_sender(bool install_after)
{
	xf_fiber *f[4];
	xf_stats st;

	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 100}), 0);
	if (install_after)
		CHECK(signal(SIGURG, on_urg) != SIG_ERR);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_spawn(&f[i], spin, NULL, NULL), 0);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		for (int i = 0; i < SENT; i++) {
			kill(getppid(), SIGURG);
			usleep(5000);
		}
		_exit(0);
	}
	CHECK(waitpid(child, NULL, 0) == child);
	wait_for(SENT / 2); /* standard signals do not queue: some may merge */
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK_ERR(xf_stats_get(&st), 0);
	if (!st.total.preemptions)
		xf_test_fail("no preemption while foreign SIGURGs arrived");
	CHECK_ERR(xf_shutdown(), 0);
	printf("%d of %d foreign SIGURGs handled (%d seen from the sender), %llu preemptions\n",
	       atomic_load(&got), SENT, atomic_load(&got_from_child),
	       (unsigned long long)st.total.preemptions);
	/* The application's handler is in the kernel again. */
	int before = atomic_load(&got);
	raise(SIGURG);
	if (atomic_load(&got) != before + 1)
		xf_test_fail("after xf_shutdown, SIGURG did not reach the application's handler");
}

static void test_before(void)
{
	struct sigaction sa = {.sa_sigaction = on_urg_info, .sa_flags = SA_SIGINFO | SA_RESTART};

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGURG, &sa, NULL) == 0);
	foreign_sender(false);
	if (!atomic_load(&got_from_child))
		xf_test_fail("the handler's siginfo did not name the sender");
}

static void test_after(void)
{
	foreign_sender(true);
}

static void *oob_fiber(void *arg)
{
	int *fds = arg;

	for (int i = 0; i < 5; i++) {
		CHECK(send(fds[0], "!", 1, MSG_OOB) == 1);
		wait_for(i + 1);
	}
	return NULL;
}

static void test_oob(void)
{
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(addr);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fds[2];
	xf_fiber *f;

	CHECK(signal(SIGURG, on_urg) != SIG_ERR);
	CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&addr, len) == 0 && listen(lfd, 1) == 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&addr, &len) == 0);
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(fds[0], (struct sockaddr *)&addr, len) == 0);
	fds[1] = accept(lfd, NULL, NULL);
	CHECK(fds[1] >= 0 && fcntl(fds[1], F_SETOWN, getpid()) == 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2, .slice_us = 100}), 0);
	CHECK_ERR(xf_spawn(&f, oob_fiber, fds, NULL), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	CHECK_ERR(xf_shutdown(), 0);
	printf("oob: %d SIGURGs from out-of-band data reached the application's handler\n",
	       atomic_load(&got));
}

/* A 1 MiB alternate stack, larger than the runtime's: kept while it runs,
 * so an SA_ONSTACK handler raised in a fiber on worker 0 runs on it. */
static char big_altstack[1024 * 1024];
static void *_Atomic handler_frame;

static void on_usr1_onstack(int sig)
{
	char here;

	(void)sig;
	atomic_store(&handler_frame, (void *)&here);
}

static void *raises_usr1(void *arg)
{
	(void)arg;
	raise(SIGUSR1);
	return NULL;
}

static void test_altstack_kept(void)
{
	stack_t ss = {.ss_sp = big_altstack, .ss_size = sizeof(big_altstack)}, now;
	struct sigaction sa = {.sa_handler = on_usr1_onstack, .sa_flags = SA_ONSTACK};
	xf_attr on0 = {.pinned = true, .worker = 0};
	xf_fiber *f;
	char *frame;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(sigaltstack(&ss, NULL) == 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	CHECK(sigaltstack(NULL, &now) == 0);
	if (now.ss_sp != big_altstack)
		xf_test_fail("a 1 MiB alternate stack was replaced by %zu bytes", now.ss_size);
	CHECK_ERR(xf_spawn(&f, raises_usr1, NULL, &on0), 0);
	CHECK_ERR(xf_join(f, NULL), 0);
	frame = atomic_load(&handler_frame);
	if (frame < big_altstack || frame >= big_altstack + sizeof(big_altstack))
		xf_test_fail("the SA_ONSTACK handler ran at %p, off the application's stack",
			     frame);
	CHECK_ERR(xf_shutdown(), 0);
	CHECK(sigaltstack(NULL, &now) == 0);
	CHECK(now.ss_sp == big_altstack && !(now.ss_flags & SS_DISABLE));
	signal(SIGUSR1, SIG_DFL);
}

static void test_altstack(void)
{
	static char mine[64 * 1024];
	stack_t ss = {.ss_sp = mine, .ss_size = sizeof(mine)}, now;

	CHECK(sigaltstack(&ss, NULL) == 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	CHECK(sigaltstack(NULL, &now) == 0);
#ifndef __SANITIZE_ADDRESS__ /* ASan owns SIGSEGV: no overflow report, no stack of ours */
	if (now.ss_sp == mine)
		xf_test_fail("the runtime did not set its own alternate stack");
#endif
	CHECK_ERR(xf_shutdown(), 0);
	CHECK(sigaltstack(NULL, &now) == 0);
	if (now.ss_sp != mine || now.ss_size != sizeof(mine) || (now.ss_flags & SS_DISABLE))
		xf_test_fail("the application's sigaltstack was not restored (sp %p, flags %d)",
			     now.ss_sp, now.ss_flags);
	test_altstack_kept();
	printf("altstack: the application's alternate stack is back after xf_shutdown; a large "
	       "one serves its SA_ONSTACK handlers throughout\n");
}

static void on_segv(int sig)
{
	(void)sig;
}

static void test_view(void)
{
	struct sigaction sa = {.sa_handler = on_urg}, seen;

	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGURG, &sa, NULL) == 0);
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	CHECK(sigaction(SIGURG, NULL, &seen) == 0);
	if (seen.sa_handler != on_urg)
		xf_test_fail("sigaction does not report the application's SIGURG handler");
	sa.sa_handler = on_segv;
	CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
	CHECK(sigaction(SIGSEGV, NULL, &seen) == 0);
	if (seen.sa_handler != on_segv)
		xf_test_fail("sigaction does not report the application's SIGSEGV handler");
	CHECK(signal(SIGURG, SIG_IGN) == on_urg);
	CHECK_ERR(xf_shutdown(), 0);
	CHECK(sigaction(SIGURG, NULL, &seen) == 0 && seen.sa_handler == SIG_IGN);
	printf("view: sigaction reports the application's handlers while the runtime runs\n");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		xf_test_fail("usage: test_signals before|after|oob|altstack|view");
	if (!strcmp(argv[1], "before"))
		test_before();
	else if (!strcmp(argv[1], "after"))
		test_after();
	else if (!strcmp(argv[1], "oob"))
		test_oob();
	else if (!strcmp(argv[1], "altstack"))
		test_altstack();
	else if (!strcmp(argv[1], "view"))
		test_view();
	else
		xf_test_fail("unknown case %s", argv[1]);
	return 0;
}
