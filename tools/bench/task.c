/* task.c - pinned threads and processes for the benchmarks, and their watchdog hook. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/task.h"

extern char **environ;

/* Child pids for the watchdog; a slot is 0 when free.  Sized for messaging's
 * largest run (--groups x 2 x --fds, bounded in command.c). */
#define MAX_CHILDREN 4096
static volatile pid_t children[MAX_CHILDREN];

static cpu_set_t initial_cpus;
static bool initial_saved;

static void track(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (!children[i]) {
			children[i] = pid;
			return;
		}
	}
}

static void untrack(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] == pid)
			children[i] = 0;
	}
}

void xf_bench_kill_children(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i] > 0)
			kill(children[i], SIGKILL);
	}
}

static void save_initial(void)
{
	if (!initial_saved && !sched_getaffinity(0, sizeof(initial_cpus), &initial_cpus))
		initial_saved = true;
}

int xf_bench_allowed_cpus(int *cpus, int max)
{
	int n = 0;

	save_initial();
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &initial_cpus))
			continue;
		if (n < max)
			cpus[n] = c;
		n++;
	}
	return n;
}

int xf_bench_pin(const int *cpus, int n)
{
	cpu_set_t set;

	save_initial();
	if (n == 0)
		return sched_setaffinity(0, sizeof(initial_cpus), &initial_cpus) ? errno : 0;
	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		CPU_SET(cpus[i], &set);
	return sched_setaffinity(0, sizeof(set), &set) ? errno : 0;
}

/* In a child just forked from parent: never outlive the benchmark, even one
 * killed with SIGKILL, whose watchdog then cannot stop us - an orphaned
 * server spinning on a CPU skewed every later measurement.  Exits with
 * status if the parent is gone already. */
static void die_with_benchmark(pid_t parent, int status)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(status);
}

static void *thread_main(void *arg)
{
	struct xf_bench_task *t = arg;

	if (t->cpu >= 0 && xf_bench_pin(&t->cpu, 1)) {
		t->result = -1;
		return NULL;
	}
	t->result = t->fn(t->arg);
	return NULL;
}

int xf_bench_task_start(struct xf_bench_task *t, bool process, int cpu, int (*fn)(void *),
			void *arg)
{
	pthread_attr_t attr;
	int err;

	memset(t, 0, sizeof(*t));
	t->process = process;
	t->fn = fn;
	t->arg = arg;
	t->cpu = cpu;
	if (process) {
		pid_t parent = getpid();
		pid_t pid = fork();

		if (pid < 0)
			return errno;
		if (pid == 0) {
			die_with_benchmark(parent, 1);
			if (cpu >= 0 && xf_bench_pin(&cpu, 1))
				_exit(1);
			/* _exit: the parent's stdio buffers are not ours to flush. */
			_exit(fn(arg) & 0xff);
		}
		t->pid = pid;
		track(pid);
		return 0;
	}
	err = pthread_attr_init(&attr);
	if (err)
		return err;
	/* Messaging starts hundreds of these; they need little stack. */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	err = pthread_create(&t->thread, &attr, thread_main, t);
	pthread_attr_destroy(&attr);
	return err;
}

static int wait_pid(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			untrack(pid);
			return -1;
		}
	}
	untrack(pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int xf_bench_task_wait(struct xf_bench_task *t)
{
	if (t->process)
		return wait_pid(t->pid);
	if (pthread_join(t->thread, NULL))
		return -1;
	return t->result;
}

/* The child of xf_bench_spawn, between fork and exec: async-signal-safe
 * calls only, for the parent has threads.  An exec that fails sends its
 * errno up err_fd (close-on-exec: nothing arrives when it succeeds). */
static void spawn_child(char *const argv[], char *const envp[], pid_t parent, int out_fd,
			int err_fd)
{
	int err;

	die_with_benchmark(parent, 127);
	if (dup2(out_fd, STDOUT_FILENO) >= 0)
		execve(argv[0], argv, envp);
	err = errno;
	if (write(err_fd, &err, sizeof(err)) != sizeof(err)) {
		/* the parent sees the exit status instead */
	}
	_exit(127);
}

int xf_bench_spawn(char *const argv[], char *const env[], pid_t *pid, int *out_fd)
{
	char **envp;
	size_t n = 0, k = 0;
	int fds[2], errfds[2], err = 0;
	pid_t parent = getpid(), child;

	while (environ[n])
		n++;
	while (env && env[k])
		k++;
	envp = calloc(n + k + 1, sizeof(*envp));
	if (!envp)
		return ENOMEM;
	/* The extra strings first: getenv() takes the first match. */
	if (k)
		memcpy(envp, env, k * sizeof(*envp));
	memcpy(envp + k, environ, n * sizeof(*envp));
	if (pipe2(fds, O_CLOEXEC)) {
		free(envp);
		return errno;
	}
	if (pipe2(errfds, O_CLOEXEC)) {
		err = errno;
		close(fds[0]);
		close(fds[1]);
		free(envp);
		return err;
	}
	/* fork, not posix_spawn: the child needs its death signal set before
	 * the exec.  The death signal comes when the thread that forked ends,
	 * so each caller waits for its child on the thread that spawned it. */
	child = fork();
	if (child == 0)
		spawn_child(argv, envp, parent, fds[1], errfds[1]);
	if (child < 0)
		err = errno;
	free(envp);
	close(fds[1]);
	close(errfds[1]);
	/* Nothing arrives unless the exec failed. */
	while (child > 0 && read(errfds[0], &err, sizeof(err)) < 0 && errno == EINTR)
		;
	close(errfds[0]);
	if (err) {
		if (child > 0)
			waitpid(child, NULL, 0);
		close(fds[0]);
		return err;
	}
	track(child);
	*pid = child;
	*out_fd = fds[0];
	return 0;
}

void xf_bench_read_output(int fd, char *buf, size_t size, bool first_line)
{
	size_t used = 0;
	ssize_t n;

	while (used + 1 < size && (n = read(fd, buf + used, size - 1 - used)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		used += (size_t)n;
		buf[used] = 0;
		if (first_line && strchr(buf, '\n'))
			break;
	}
	buf[used] = 0;
}

int xf_bench_spawn_wait(pid_t pid)
{
	return wait_pid(pid);
}

void *xf_bench_shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void xf_bench_shared_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

long xf_bench_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}
