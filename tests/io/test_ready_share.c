/*
 * test_ready_share.c - a fiber whose descriptor calls never wait still
 * shares its worker.  Preemption ticks that land inside the C library's
 * send or recv are deferred; the xf_ calls take a pending preemption on
 * their way out (io/ops.c, run_at).  Before, a fiber echoing over an
 * always-ready socket pair kept its worker for good: a CPU-bound fiber
 * beside it got 0% of the CPU (a reviewer's busy_io), and this test's
 * one-second window took as long as the echo fiber pleased.
 *
 * One worker at 100 us slices: a spinner alone for 0.3 s gives the scale;
 * then the spinner beside the echo fiber for 1 s must get a tenth of that
 * rate at least (a fair share is a half).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "xfiber.h"

static atomic_bool stop;
static atomic_long spins, echoes;
static int sv[2];

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
	return NULL;
}

/* Writes to one end and reads it back from the other: never waits. */
static void *echo(void *arg)
{
	char buf[100] = {0};

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		CHECK(xf_write(sv[1], buf, sizeof(buf)) == sizeof(buf));
		CHECK(xf_recv(sv[0], buf, sizeof(buf), MSG_WAITALL) == sizeof(buf));
		atomic_fetch_add_explicit(&echoes, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Spins of the spinner per second over ns of wall time, with `with`
 * beside it (or alone). */
static double spin_rate(void *(*with)(void *), uint64_t ns)
{
	xf_fiber *a = NULL, *b;
	uint64_t t;

	atomic_store(&stop, false);
	atomic_store(&spins, 0);
	if (with)
		CHECK_ERR(xf_spawn(&a, with, NULL, NULL), 0);
	CHECK_ERR(xf_spawn(&b, spinner, NULL, NULL), 0);
	t = now_ns();
	CHECK_ERR(xf_sleep_ns(ns), 0);
	atomic_store(&stop, true);
	t = now_ns() - t;
	CHECK_ERR(xf_join(b, NULL), 0);
	if (a)
		CHECK_ERR(xf_join(a, NULL), 0);
	return (double)atomic_load(&spins) / ((double)t / 1e9);
}

int main(void)
{
	double alone, beside;

	CHECK_ERR(xf_init(&(xf_config){.workers = 1, .slice_us = 100}), 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK_ERR(xf_fd_set_timeout(sv[0], 5000000000ull, 5000000000ull), 0);
	CHECK_ERR(xf_fd_set_timeout(sv[1], 5000000000ull, 5000000000ull), 0);
	alone = spin_rate(NULL, 300000000);
	beside = spin_rate(echo, 1000000000);
	printf("spinner beside an always-ready echo: %.1f%% of its rate alone; %ld echoes\n",
	       100.0 * beside / alone, (long)atomic_load(&echoes));
	CHECK(beside > alone / 10);
	CHECK(xf_close(sv[0]) == 0 && xf_close(sv[1]) == 0);
	CHECK_ERR(xf_shutdown(), 0);
	return 0;
}
