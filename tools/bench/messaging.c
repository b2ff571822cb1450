/*
 * messaging.c - `xfiber bench messaging`: the equivalent of `perf
 * bench sched messaging` and rt-tests' hackbench.  Each group has --fds
 * receivers and --fds senders; every sender writes --loops messages of
 * --size bytes to every receiver of its group, over socket pairs (or pipes
 * with --pipe).  The row is the seconds from the start signal until every
 * task is done, as those tools report it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/task.h"

#define MAX_FDS	  64
#define MAX_TASKS 4000
#define MAX_SIZE  65536

struct msg_run {
	const struct xf_bench_params *p;
	int ready_wr;	       /* each task writes one byte here when it is set up */
	int wake_rd;	       /* ...then waits until this becomes readable */
	int ready_rd, wake_wr; /* the parent's ends */
};

struct msg_task {
	struct msg_run *run;
	int fd;		  /* receiver: where its messages arrive */
	int out[MAX_FDS]; /* sender: its group's receivers */
	struct xf_bench_task task;
};

static int wait_for_start(const struct msg_run *r)
{
	struct pollfd pfd = {.fd = r->wake_rd, .events = POLLIN};
	char c = 'R';

	/* A process keeps no copy of the parent's wake end, or a hang-up could not reach it. */
	if (r->p->process) {
		close(r->wake_wr);
		close(r->ready_rd);
	}
	if (write(r->ready_wr, &c, 1) != 1)
		return 1;
	while (poll(&pfd, 1, -1) != 1) {
		if (errno != EINTR)
			return 1;
	}
	return pfd.revents & POLLIN ? 0 : 1;
}

/* Moves one whole message, however many calls it takes; 0, or 1 on failure. */
static int transfer(int fd, char *data, size_t size, bool out)
{
	for (size_t done = 0; done < size;) {
		ssize_t n =
		    out ? write(fd, data + done, size - done) : read(fd, data + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		done += (size_t)n;
	}
	return 0;
}

static int sender(void *arg)
{
	struct msg_task *t = arg;
	const struct xf_bench_params *p = t->run->p;
	char *data = calloc(1, p->size);
	int rc = !data || wait_for_start(t->run);

	for (unsigned i = 0; !rc && i < p->loops; i++) {
		for (unsigned j = 0; !rc && j < p->fds; j++)
			rc = transfer(t->out[j], data, p->size, true);
	}
	free(data);
	return rc;
}

static int receiver(void *arg)
{
	struct msg_task *t = arg;
	const struct xf_bench_params *p = t->run->p;
	char *data = malloc(p->size);
	int rc = !data || wait_for_start(t->run);

	/* One message at a time, as hackbench reads them. */
	for (unsigned long m = 0; !rc && m < (unsigned long)p->loops * p->fds; m++)
		rc = transfer(t->fd, data, p->size, false);
	free(data);
	return rc;
}

static int channel(const struct xf_bench_params *p, int fds[2])
{
	if (p->use_pipe)
		return pipe(fds);
	return socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
}

/* Threads keep every descriptor open at once: make room if the limit allows. */
static int ensure_files(const struct xf_bench_params *p, char *note, size_t note_size)
{
	const rlim_t need = (rlim_t)p->groups * p->fds * 2 + 64;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return 0;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur >= need)
		return 0;
	snprintf(note, note_size, "%llu groups x %u fds need %llu open files; the limit is %llu",
		 (unsigned long long)p->groups, p->fds, (unsigned long long)need,
		 (unsigned long long)rl.rlim_cur);
	return EMFILE;
}

/* Sets up one group: receivers first, each on its own channel, then the
 * senders.  Processes take their ends with them, so the parent drops its
 * copies; threads share them, so they stay open (in keep) until the end. */
static int start_group(const struct xf_bench_params *p, struct msg_run *r, struct msg_task *t,
		       int *nstarted, int *keep, int *nkeep)
{
	struct msg_task *recv = t, *send = t + p->fds;
	int out[MAX_FDS];
	unsigned nout = 0;
	int err = 0;

	for (unsigned i = 0; !err && i < p->fds; i++) {
		int fds[2];
		if (channel(p, fds)) {
			err = errno;
			break;
		}
		recv[i].run = r;
		recv[i].fd = fds[0];
		out[nout++] = fds[1];
		err = xf_bench_task_start(&recv[i].task, p->process, -1, receiver, &recv[i]);
		if (!err)
			(*nstarted)++;
		if (p->process || err)
			close(fds[0]);
		else
			keep[(*nkeep)++] = fds[0];
	}
	for (unsigned i = 0; !err && i < p->fds; i++) {
		send[i].run = r;
		memcpy(send[i].out, out, p->fds * sizeof(int));
		err = xf_bench_task_start(&send[i].task, p->process, -1, sender, &send[i]);
		if (!err)
			(*nstarted)++;
	}
	for (unsigned i = 0; i < nout; i++) {
		if (p->process)
			close(out[i]);
		else
			keep[(*nkeep)++] = out[i];
	}
	return err;
}

static int messaging_run(const struct xf_bench_params *p, uint64_t iters, struct xf_bench_sample *s)
{
	const int ntasks = (int)(p->groups * p->fds * 2);
	struct msg_task *tasks = calloc((size_t)ntasks, sizeof(*tasks));
	int *open_fds = calloc((size_t)ntasks + 1, sizeof(int));
	int ready[2] = {-1, -1}, wake[2] = {-1, -1};
	struct msg_run r = {.p = p};
	int err = 0, started = 0, nopen = 0, failed = 0;
	double t0 = 0, t1 = 0;

	(void)iters;
	if (!tasks || !open_fds)
		err = ENOMEM;
	if (!err && !p->process)
		err = ensure_files(p, s->note, sizeof(s->note));
	if (!err && (pipe(ready) || pipe(wake)))
		err = errno;
	r.ready_wr = ready[1];
	r.ready_rd = ready[0];
	r.wake_rd = wake[0];
	r.wake_wr = wake[1];
	for (unsigned g = 0; !err && g < p->groups; g++)
		err =
		    start_group(p, &r, tasks + (size_t)g * p->fds * 2, &started, open_fds, &nopen);
	/* Every task that started waits for ready/wake: let them go either way. */
	for (int i = 0; i < started; i++) {
		char c;
		if (read(ready[0], &c, 1) != 1) {
			err = err ? err : EIO;
			break;
		}
	}
	/* Go, or on failure a hang-up without data, which every task takes as "stop". */
	t0 = xf_bench_now_ns();
	if (!err && write(wake[1], "W", 1) != 1)
		err = errno;
	if (err && wake[1] >= 0) {
		close(wake[1]);
		wake[1] = -1;
	}
	for (int i = 0; i < ntasks; i++) {
		if (i < started && xf_bench_task_wait(&tasks[i].task))
			failed++;
	}
	t1 = xf_bench_now_ns();
	for (int i = 0; i < nopen; i++)
		close(open_fds[i]);
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (wake[i] >= 0)
			close(wake[i]);
	}
	free(tasks);
	free(open_fds);
	if (!err && failed)
		err = EIO;
	if (err) {
		if (!s->note[0])
			snprintf(s->note, sizeof(s->note), "%s (%d of %d tasks started, %d failed)",
				 strerror(err), started, ntasks, failed);
		return err;
	}
	s->value = (t1 - t0) / 1e9;
	s->elapsed_ns = t1 - t0;
	snprintf(s->note, sizeof(s->note), "%d %s, %u msgs of %u B per sender-receiver pair",
		 ntasks, p->process ? "processes" : "threads", p->loops, p->size);
	xf_bench_sample_extra(s, "tasks", ntasks);
	return 0;
}

static int messaging_check(const struct xf_bench_opts *o, char *err, size_t err_size)
{
	unsigned long tasks = (unsigned long)o->groups * o->fds * 2;

	if (o->fds > MAX_FDS || o->size > MAX_SIZE) {
		snprintf(err, err_size, "--fds is at most %d and --size at most %d", MAX_FDS,
			 MAX_SIZE);
		return -1;
	}
	if (tasks > MAX_TASKS) {
		snprintf(err, err_size, "--groups=%u x --fds=%u x 2 = %lu tasks; at most %d",
			 o->groups, o->fds, tasks, MAX_TASKS);
		return -1;
	}
	return 0;
}

static int plan_messaging(const struct xf_bench_opts *o, struct xf_bench_plan *plan, char *err,
			  size_t err_size)
{
	const unsigned modes = o->modes ? o->modes : XF_MODE_PROCESS | XF_MODE_THREADS;
	const unsigned cpus = o->cpus ? o->cpus : 2;

	(void)err;
	(void)err_size;
	for (int ncpus = 1; ncpus <= 2; ncpus++) {
		struct xf_bench_params p = {.ncpus = ncpus,
					    .cpu = {o->cpu[0], o->cpu[ncpus > 1]},
					    .use_pipe = o->use_pipe,
					    .groups = o->groups,
					    .loops = o->loops,
					    .size = o->size,
					    .fds = o->fds};
		if (!(cpus & (1u << ncpus)))
			continue;
		for (int m = XF_MODE_PROCESS; m >= XF_MODE_THREADS; m >>= 1) {
			struct xf_bench_row *row;
			if (!(modes & m))
				continue;
			p.process = m == XF_MODE_PROCESS;
			row = xf_bench_plan_add(plan, &p, messaging_run, "%s/%s/%dcpu",
						p.process ? "process" : "threads",
						p.use_pipe ? "pipe" : "socket", ncpus);
			if (!row)
				continue;
			row->fixed_work = true;
			/* Every task may run on either CPU: a set, not one CPU each. */
			if (ncpus > 1)
				snprintf(row->pinning, sizeof(row->pinning), "cpus {%d,%d}",
					 p.cpu[0], p.cpu[1]);
		}
	}
	return 0;
}

XF_BENCH_VARIANT(messaging_kernel) = {
    .workload = "messaging",
    .name = "kernel",
    .kind = "kernel",
    .order = 0,
    .plan = plan_messaging,
};

XF_BENCH_WORKLOAD(messaging_workload) = {
    .name = "messaging",
    .summary = "groups of senders and receivers (perf bench sched messaging, hackbench)",
    .what = "seconds for all messages, as hackbench and perf report them (lower is better)",
    .unit = "s",
    .higher_is_better = false,
    .order = 40,
    .options = XF_BOPT_CPUS | XF_BOPT_MODE | XF_BOPT_MESSAGING,
    .check = messaging_check,
};
