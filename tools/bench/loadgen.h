/*
 * loadgen.h - the HTTP load generator of `xfiber bench server`.
 *
 * Open loop: requests leave at Poisson arrival times whatever the server
 * does, each on a connection with nothing outstanding if there is one (else
 * pipelined behind the fewest), and each latency counts from the request's
 * intended send time, so a stalled server cannot slow the clock that
 * judges it (no coordinated omission).  Closed loop (rate 0): every
 * connection sends its next request when the last is answered, for the
 * capacity.  One thread, epoll, on the CPU its caller is pinned to.
 */
#ifndef XF_TOOLS_BENCH_LOADGEN_H
#define XF_TOOLS_BENCH_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xf_loadgen_opts {
	int port;		/* on 127.0.0.1 */
	double rate;		/* requests per second; 0 = closed loop */
	unsigned conns;		/* connections, opened before the clock starts */
	double warmup_s;	/* sent but not counted */
	double seconds;		/* counted: requests whose send time falls here */
	double long_fraction;	/* of requests that go to long_path */
	const char *short_path; /* e.g. "/spin?us=10" */
	const char *long_path;	/* e.g. "/spin?us=5000" */
	uint64_t seed;
};

struct xf_loadgen_result {
	double offered_rate; /* counted requests / seconds */
	double done_rate;    /* answered ones / seconds */
	uint64_t short_n, long_n;
	uint64_t unanswered; /* counted, but no answer within 2 s of the end */
	/* Microseconds, of the short requests. */
	double short_mean, short_p50, short_p99, short_p999, short_max;
	double long_p99;
};

/* 0, or an errno value with one line in note. */
int xf_loadgen_run(const struct xf_loadgen_opts *o, struct xf_loadgen_result *r, char *note,
		   size_t note_size);

/* An echo server's load: conns connections, each sending size bytes and
 * waiting for them to come back, again and again (closed loop), counted
 * for seconds after warmup_s.  *rate: round trips per second of them all.
 * window, if not NULL, is called as the counted window opens (end false)
 * and closes (end true), with arg: to measure the server over exactly the
 * trips counted.  0, or an errno value with one line in note. */
int xf_loadgen_echo(int port, unsigned conns, size_t size, double warmup_s, double seconds,
		    double *rate, void (*window)(void *arg, bool end), void *arg, char *note,
		    size_t note_size);

#endif
