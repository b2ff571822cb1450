/*
 * command.c - `xfiber trace [--json] -- COMMAND ...`: runs COMMAND with the
 * kernel's FPU tracepoints on, in a trace instance of its own, and reports
 * what the kernel's FPU switching did for COMMAND's tasks (fpu.h says
 * how each number is derived).
 *
 * The order of things is what keeps tracefs clean: every signal that could
 * end us is blocked (and read from a signalfd) before the first tracefs
 * change, so the one cleanup path always runs; COMMAND waits on a pipe until
 * tracing is on, and gets the original signal mask back before exec.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/command.h"
#include "trace/events.h"
#include "trace/fpu.h"
#include "trace/fs.h"
#include "trace/report.h"
#include "trace/ring.h"

/* Exit statuses of xfiber itself, as timeout(1) and env(1) use them. */
#define EXIT_TRACE_FAILED 125 /* xfiber trace could not do its job */
#define EXIT_CANNOT_RUN	  126 /* COMMAND exists but could not be executed */
#define EXIT_NOT_FOUND	  127 /* COMMAND was not found */

#define POLL_MS		 20	     /* drain interval: 4 MB lasts ~70 ms at 400k switches/s */
#define EXIT_GRACE_MS	 250	     /* after COMMAND is reaped: time for its last switch-outs */
#define BUFFER_BUDGET_KB (32 * 1024) /* split over the CPUs... */
#define BUFFER_MIN_KB	 512	     /* ...but never less than this per CPU */
#define BUFFER_MAX_KB	 4096	     /* nor more */

struct trace_options {
	bool json;
	const char *output;
	unsigned buffer_kb; /* 0: from the budget */
	char **command;
};

struct trace_run {
	struct trace_options opt;
	FILE *out;
	struct xf_tracefs fs;
	struct xf_trace_events events;
	struct xf_ring_layout layout;
	struct xf_fpu_trace fpu;
	int *cpu_fds; /* trace_pipe_raw by CPU number, -1 where none */
	unsigned ncpus;
	uint8_t *page;
	size_t page_size;
	uint64_t records_read;
	uint64_t pages_unparsed; /* the rest of such a page is lost to the counts */
	bool analysis_failed;	 /* out of memory while counting */
	int sigfd;
	sigset_t old_mask;
	pid_t child;
	bool child_done;
	int exit_status;
};

static void trace_help(FILE *out)
{
	fprintf(out,
		"usage: xfiber trace [--json] [-o FILE] [--buffer-kb N] -- COMMAND [ARGS...]\n\n"
		"Runs COMMAND with the kernel's FPU tracepoints (x86_fpu:*, sched:sched_switch,\n"
		"task:task_newtask) on, in a tracefs instance of its own (instances/xfiber-PID),\n"
		"and reports what the kernel's FPU switching did for COMMAND, its threads and\n"
		"its children: per task (pid, tid, comm) and in total.  Needs root; mounts\n"
		"tracefs on /sys/kernel/tracing if it is not mounted, and unmounts it after.\n\n"
		"The numbers (Linux 5.2+: a task's registers are live in the CPU iff its\n"
		"TIF_NEED_FPU_LOAD flag is clear):\n"
		"  switches     switch-outs: sched_switch records with the task as prev\n"
		"  saves        XSAVEs of the task's registers: at switch-out (the\n"
		"               x86_fpu_regs_deactivated that directly follows the task's\n"
		"               sched_switch on that CPU), at fork (x86_fpu_copy_dst), on\n"
		"               demand (x86_fpu_after_save with load_fpu 0: ptrace, core dumps)\n"
		"  skipped      switch-outs with no save: the registers were already in memory\n"
		"               because the task had not returned to user space since\n"
		"  loads        x86_fpu_regs_activated with load_fpu 1: XRSTOR of the task's\n"
		"               saved registers on the way back to user space (load_fpu 0 is\n"
		"               counted apart: registers set in place by signal delivery or\n"
		"               sigreturn)\n"
		"  no-load      switches that needed no load, from the records of each stint\n"
		"               between a switch-in and the next switch-out on one CPU:\n"
		"                 valid      no load in the stint, yet a save at its end: the\n"
		"                            task returned to user space and found the CPU\n"
		"                            still holding its registers\n"
		"                 in-kernel  no load and no save: the task was switched out\n"
		"                            again before it returned to user space\n"
		"               A stint whose switch-in was not recorded is unclassified.\n"
		"  bytes saved  per save, the sizes (CPUID leaf 0xD, as `xfiber info` lists\n"
		"               them) of the components set in the saved XSTATE_BV; the\n"
		"               histogram lists each XSTATE_BV value seen, how often, and the\n"
		"               components it holds (AVX-512: bits 5-7, AMX: bits 17-18)\n\n"
		"options:\n"
		"  --json          print one JSON object: command, exit_status, tracefs,\n"
		"                  tracefs_mounted_by_xfiber, instance, buffer_size_kb,\n"
		"                  events_available[], events_lost, records_read,\n"
		"                  totals{tasks, context_switches, fpu_saves, saves_at_switch,\n"
		"                  saves_at_fork, saves_on_demand, saves_skipped, fpu_loads,\n"
		"                  registers_set_in_place, switches_with_load,\n"
		"                  switches_without_load, no_load_registers_valid,\n"
		"                  no_load_not_returned_to_user, switches_unclassified,\n"
		"                  fpu_drops, bytes_saved, bytes_loaded, saves_with_avx512,\n"
		"                  saves_with_amx}, tasks[{pid, tid, comm, and the same\n"
		"                  counts}], xfeatures_histogram[{xfeatures, components[],\n"
		"                  saves, bytes_per_save, bytes}]\n"
		"  -o, --output FILE  write the report to FILE instead of standard output\n"
		"  --buffer-kb N   ring buffer per CPU (default: 32 MB over the CPUs, 512 to\n"
		"                  4096 KB each); lost records are counted in events_lost\n\n"
		"Records of every task are read and COMMAND's kept by the process tree that\n"
		"task_newtask shows, since the kernel's own pid filter would drop the save\n"
		"of a task switching to an unrelated one.  Tracing stops when COMMAND has\n"
		"exited (and its tasks' last switch-outs are in, or after 250 ms).\n\n"
		"SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to COMMAND (unless the\n"
		"terminal already sent them to it); tracing is cleaned up in every case.\n\n"
		"exit status: COMMAND's, or 128+N if signal N ended it; 125 if xfiber trace\n"
		"itself failed (bad usage, not root, no tracefs, no x86_fpu tracepoints);\n"
		"126 if COMMAND could not be executed; 127 if it was not found.\n");
}

static int parse_args(int argc, char **argv, struct trace_options *opt)
{
	int i;

	memset(opt, 0, sizeof(*opt));
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--json")) {
			opt->json = true;
		} else if (!strncmp(argv[i], "--output=", 9)) { /* as bench takes them */
			opt->output = argv[i] + 9;
		} else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			if (++i == argc) {
				xf_trace_error("%s needs a file name", argv[i - 1]);
				return -1;
			}
			opt->output = argv[i];
		} else if (!strcmp(argv[i], "--buffer-kb") ||
			   !strncmp(argv[i], "--buffer-kb=", 12)) {
			/* --buffer-kb N, or --buffer-kb=N as bench's options */
			const char *v = argv[i][11] == '=' ? argv[i] + 12
					: i + 1 < argc	   ? argv[++i]
							   : "";
			char *end;
			unsigned long kb = strtoul(v, &end, 10);

			if (!*v || *end || kb < 64 || kb > 1024 * 1024) {
				xf_trace_error(
				    "--buffer-kb needs a number of KB from 64 to 1048576");
				return -1;
			}
			opt->buffer_kb = (unsigned)kb;
		} else if (argv[i][0] == '-') {
			xf_trace_error("unknown option '%s' (see 'xfiber trace --help')", argv[i]);
			return -1;
		} else {
			xf_trace_error("expected '--' before COMMAND '%s' (usage: xfiber trace "
				       "[--json] -- COMMAND [ARGS...])",
				       argv[i]);
			return -1;
		}
	}
	if (i + 1 >= argc || !argv[i + 1][0]) {
		xf_trace_error(
		    "no COMMAND to run (usage: xfiber trace [--json] -- COMMAND [ARGS...])");
		return -1;
	}
	opt->command = argv + i + 1;
	return 0;
}

/* Where execvp() would find name: 0, ENOENT or EACCES.  Checked before
 * tracefs is touched, so a typo costs no tracing setup. */
static int find_command(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];
	int err = ENOENT;

	if (strchr(name, '/'))
		return access(name, X_OK) ? errno : 0;
	if (!path)
		path = "/usr/local/bin:/bin:/usr/bin";
	for (const char *dir = path; dir; dir = strchr(dir, ':') ? strchr(dir, ':') + 1 : NULL) {
		int len = (int)strcspn(dir, ":");
		struct stat st;

		if (len)
			snprintf(buf, sizeof(buf), "%.*s/%s", len, dir, name);
		else
			snprintf(buf, sizeof(buf), "./%s", name); /* an empty entry is "." */
		if (stat(buf, &st) || S_ISDIR(st.st_mode))
			continue;
		if (access(buf, X_OK) == 0)
			return 0;
		err = EACCES;
	}
	return err;
}

/* One CPU's buffer is drained in its own order; records go to trace_fpu. */
struct drain_ctx {
	struct trace_run *run;
	unsigned cpu;
};

static void on_record(void *ctx, uint64_t ts, const uint8_t *payload, size_t len)
{
	struct drain_ctx *d = ctx;
	struct trace_run *run = d->run;
	struct xf_trace_event_type *type;
	struct xf_trace_record rec;

	run->records_read++;
	type = xf_trace_events_find(&run->events, payload, len);
	if (!type || xf_trace_decode(type, payload, len, &rec))
		return;
	rec.cpu = d->cpu;
	rec.ts = ts;
	if (xf_fpu_trace_record(&run->fpu, &rec))
		run->analysis_failed = true;
}

static int drain_cpu(struct trace_run *run, unsigned cpu)
{
	/* Bounded, so a CPU that writes as fast as we read cannot keep us
	 * from noticing signals and COMMAND's exit. */
	size_t max_pages = 2 * run->opt.buffer_kb * 1024 / run->page_size + 2;
	struct drain_ctx d = {run, cpu};

	for (size_t n = 0; n < max_pages; n++) {
		ssize_t got = read(run->cpu_fds[cpu], run->page, run->page_size);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return 0;
		if (got < 0) {
			xf_trace_error("reading the CPU %u trace buffer failed: %s", cpu,
				       strerror(errno));
			return -1;
		}
		if (got == 0)
			return 0;
		/* The page's "missed" flag says records were lost before it:
		 * forget this CPU's state before its records are counted. */
		if (xf_ring_page_missed(&run->layout, run->page, (size_t)got))
			xf_fpu_trace_gap(&run->fpu, cpu);
		if (!xf_ring_page_parse(&run->layout, run->page, (size_t)got, on_record, &d)) {
			run->pages_unparsed++;
			xf_fpu_trace_gap(&run->fpu, cpu);
		}
	}
	return 0;
}

static int drain_all(struct trace_run *run)
{
	for (unsigned cpu = 0; cpu < run->ncpus; cpu++) {
		if (run->cpu_fds[cpu] >= 0 && drain_cpu(run, cpu))
			return -1;
	}
	return 0;
}

/* The CPUs the instance has buffers for: per_cpu/cpuN. */
static int open_cpu_buffers(struct trace_run *run)
{
	char path[PATH_MAX + 64];
	struct dirent *d;
	unsigned max = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/per_cpu", run->fs.instance);
	dir = opendir(path);
	if (!dir) {
		xf_trace_error("cannot list %s: %s", path, strerror(errno));
		return -1;
	}
	while ((d = readdir(dir))) {
		unsigned cpu;

		if (sscanf(d->d_name, "cpu%u", &cpu) == 1 && cpu + 1 > max)
			max = cpu + 1;
	}
	closedir(dir);
	run->cpu_fds = malloc((max ? max : 1) * sizeof(int));
	if (!run->cpu_fds) {
		xf_trace_error("out of memory");
		return -1;
	}
	run->ncpus = max;
	for (unsigned cpu = 0; cpu < max; cpu++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%u/trace_pipe_raw", run->fs.instance,
			 cpu);
		run->cpu_fds[cpu] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (run->cpu_fds[cpu] < 0 && errno != ENOENT) {
			xf_trace_error("cannot open %s: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void close_cpu_buffers(struct trace_run *run)
{
	for (unsigned cpu = 0; run->cpu_fds && cpu < run->ncpus; cpu++) {
		if (run->cpu_fds[cpu] >= 0)
			close(run->cpu_fds[cpu]);
	}
	free(run->cpu_fds);
	run->cpu_fds = NULL;
}

static int setup_tracing(struct trace_run *run)
{
	char value[64];
	long subbuf_kb;

	if (xf_tracefs_open(&run->fs) || xf_tracefs_instance_create(&run->fs))
		return -1;
	if (xf_trace_events_load(&run->events, run->fs.instance))
		return -1;
	xf_ring_layout_load(&run->layout, run->fs.instance);
	run->page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (xf_tracefs_read(run->fs.instance, "buffer_subbuf_size_kb", value, sizeof(value)) > 0 &&
	    (subbuf_kb = strtol(value, NULL, 10)) > 0)
		run->page_size = (size_t)subbuf_kb * 1024;
	run->page = malloc(run->page_size);
	if (!run->page) {
		xf_trace_error("out of memory");
		return -1;
	}
	if (open_cpu_buffers(run))
		return -1;
	if (!run->opt.buffer_kb) {
		unsigned kb = BUFFER_BUDGET_KB / (run->ncpus ? run->ncpus : 1);

		run->opt.buffer_kb = kb < BUFFER_MIN_KB	  ? BUFFER_MIN_KB
				     : kb > BUFFER_MAX_KB ? BUFFER_MAX_KB
							  : kb;
	}
	snprintf(value, sizeof(value), "%u", run->opt.buffer_kb);
	if (xf_tracefs_write(&run->fs, "buffer_size_kb", value))
		return -1;
	/* Overwrite mode (the default) stays: only there does the kernel flag
	 * the first page after lost records, which xf_fpu_trace_gap() needs;
	 * dropping new records when full leaves no mark in the stream. */
	if (xf_tracefs_write(&run->fs, "options/overwrite", "1"))
		return -1;
	for (unsigned i = 0; i < run->events.ntypes; i++) {
		char rel[160];

		snprintf(rel, sizeof(rel), "events/%s/%s/enable", run->events.types[i].system,
			 run->events.types[i].name);
		if (xf_tracefs_write(&run->fs, rel, "1"))
			return -1;
	}
	if (xf_fpu_trace_init(&run->fpu, run->ncpus, 0)) {
		xf_trace_error("out of memory");
		return -1;
	}
	return 0;
}

/* Forks COMMAND, held on a pipe until tracing is on.  Returns 0, or the
 * exit status to end with. */
static int start_command(struct trace_run *run)
{
	int go[2], failed[2], exec_errno;
	ssize_t n;

	if (pipe2(go, O_CLOEXEC) || pipe2(failed, O_CLOEXEC)) {
		xf_trace_error("pipe: %s", strerror(errno));
		return EXIT_TRACE_FAILED;
	}
	run->child = fork();
	if (run->child < 0) {
		xf_trace_error("fork: %s", strerror(errno));
		return EXIT_TRACE_FAILED;
	}
	if (run->child == 0) {
		char byte;

		close(go[1]);
		close(failed[0]);
		if (read(go[0], &byte, 1) != 1)
			_exit(EXIT_TRACE_FAILED); /* the parent gave up */
		sigprocmask(SIG_SETMASK, &run->old_mask, NULL);
		execvp(run->opt.command[0], run->opt.command);
		exec_errno = errno;
		if (write(failed[1], &exec_errno, sizeof(exec_errno)) < 0)
			_exit(EXIT_CANNOT_RUN);
		_exit(exec_errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
	}
	close(go[0]);
	close(failed[1]);
	run->fpu.root_pid = run->child;
	if (xf_tracefs_write(&run->fs, "tracing_on", "1") || write(go[1], "g", 1) != 1) {
		close(go[1]); /* the child reads EOF and exits */
		close(failed[0]);
		return EXIT_TRACE_FAILED;
	}
	close(go[1]);
	/* EOF once exec succeeded (close-on-exec), else the exec errno. */
	do
		n = read(failed[0], &exec_errno, sizeof(exec_errno));
	while (n < 0 && errno == EINTR);
	close(failed[0]);
	if (n == sizeof(exec_errno)) {
		xf_trace_error("cannot run '%s': %s", run->opt.command[0], strerror(exec_errno));
		return exec_errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
	}
	return 0;
}

static void reap(struct trace_run *run)
{
	int status;

	if (run->child_done || waitpid(run->child, &status, WNOHANG) != run->child)
		return;
	run->child_done = true;
	run->exit_status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static void handle_signals(struct trace_run *run)
{
	struct signalfd_siginfo si;

	while (read(run->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(run);
			continue;
		}
		if (run->child_done)
			continue;
		/* A terminal sends its signals to the whole foreground process
		 * group: COMMAND has this one already unless it left our group. */
		if (si.ssi_code == SI_KERNEL && getpgid(run->child) == getpgrp())
			continue;
		kill(run->child, (int)si.ssi_signo);
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Drains while COMMAND runs; then a short grace for its tasks' final
 * switch-outs, which can come after the parent has reaped it. */
static int follow_command(struct trace_run *run)
{
	struct pollfd pfd = {.fd = run->sigfd, .events = POLLIN};
	int ret = 0;

	while (!run->child_done) {
		if (poll(&pfd, 1, POLL_MS) > 0)
			handle_signals(run);
		reap(run); /* a SIGCHLD merged with an earlier one */
		if (!ret && drain_all(run))
			ret = -1; /* keep waiting for COMMAND, but read no more */
	}
	for (uint64_t end = now_ms() + EXIT_GRACE_MS;
	     !ret && !xf_fpu_trace_all_exited(&run->fpu) && now_ms() < end;) {
		poll(NULL, 0, 10);
		ret = drain_all(run);
	}
	if (xf_tracefs_write(&run->fs, "tracing_on", "0"))
		ret = -1;
	if (!ret)
		ret = drain_all(run);
	return ret;
}

/* Records the kernel could not keep: overrun (overwritten before we read
 * them), dropped (only with overwrite off) and commit overrun, summed over
 * the CPUs. */
static uint64_t events_lost(const struct trace_run *run)
{
	static const char *const keys[] = {
	    "\noverrun: ", "\ncommit overrun: ", "\ndropped events: "};
	uint64_t lost = 0;

	for (unsigned cpu = 0; cpu < run->ncpus; cpu++) {
		char rel[64], text[1024] = "\n";

		snprintf(rel, sizeof(rel), "per_cpu/cpu%u/stats", cpu);
		if (xf_tracefs_read(run->fs.instance, rel, text + 1, sizeof(text) - 1) <= 0)
			continue;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			const char *p = strstr(text, keys[k]);

			if (p)
				lost += strtoull(p + strlen(keys[k]), NULL, 10);
		}
	}
	return lost;
}

static int block_signals(struct trace_run *run)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, &run->old_mask)) {
		xf_trace_error("sigprocmask: %s", strerror(errno));
		return -1;
	}
	run->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (run->sigfd < 0) {
		xf_trace_error("signalfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void report(struct trace_run *run, uint64_t lost, bool mounted, const char *instance)
{
	struct xf_trace_report r = {
	    .command = run->opt.command,
	    .exit_status = run->exit_status,
	    .tracefs = run->fs.root,
	    .tracefs_mounted = mounted,
	    .instance = instance,
	    .buffer_kb = run->opt.buffer_kb,
	    .events_lost = lost,
	    .records_read = run->records_read,
	    .pages_unparsed = run->pages_unparsed,
	    .events = &run->events,
	    .fpu = &run->fpu,
	};

	if (run->opt.json)
		xf_trace_report_json(run->out, &r);
	else
		xf_trace_report_text(run->out, &r);
}

/* Everything between the first tracefs change and the last, with one exit. */
static int run_traced(struct trace_run *run)
{
	char instance[64] = "";
	int status = EXIT_TRACE_FAILED;
	bool mounted, traced = false;
	uint64_t lost = 0;

	if (setup_tracing(run) == 0) {
		snprintf(instance, sizeof(instance), "%s", run->fs.instance_name);
		status = start_command(run);
		if (status == 0) {
			traced = follow_command(run) == 0;
			lost = events_lost(run);
		} else if (run->child > 0) {
			while (waitpid(run->child, NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	mounted = run->fs.mounted_here;
	close_cpu_buffers(run);
	if (xf_tracefs_close(&run->fs))
		traced = false;
	if (status)
		return status;
	if (!traced || run->analysis_failed) {
		if (run->analysis_failed)
			xf_trace_error("out of memory while counting records");
		return EXIT_TRACE_FAILED;
	}
	if (xf_fpu_trace_finish(&run->fpu)) {
		xf_trace_error("out of memory while counting records");
		return EXIT_TRACE_FAILED;
	}
	report(run, lost, mounted, instance);
	if (fflush(run->out) || ferror(run->out)) {
		xf_trace_error("cannot write the report: %s", strerror(errno));
		return EXIT_TRACE_FAILED;
	}
	return run->exit_status;
}

static int trace_run(int argc, char **argv)
{
	struct trace_run run = {.sigfd = -1, .out = stdout};
	int err, status;

	if (parse_args(argc, argv, &run.opt))
		return EXIT_TRACE_FAILED;
	err = find_command(run.opt.command[0]);
	if (err) {
		if (err == ENOENT)
			xf_trace_error("COMMAND '%s' not found", run.opt.command[0]);
		else
			xf_trace_error("cannot run '%s': %s", run.opt.command[0], strerror(err));
		return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
	}
	if (geteuid() != 0) {
		xf_trace_error(
		    "needs root: tracefs and its event controls are root-only (running as "
		    "uid %d)",
		    (int)geteuid());
		return EXIT_TRACE_FAILED;
	}
	if (run.opt.output && !(run.out = fopen(run.opt.output, "w"))) {
		xf_trace_error("cannot write '%s': %s", run.opt.output, strerror(errno));
		return EXIT_TRACE_FAILED;
	}
	if (block_signals(&run)) {
		status = EXIT_TRACE_FAILED;
	} else {
		status = run_traced(&run);
		close(run.sigfd);
		sigprocmask(SIG_SETMASK, &run.old_mask, NULL);
	}
	xf_fpu_trace_free(&run.fpu);
	free(run.page);
	if (run.out != stdout && fclose(run.out) && status != EXIT_TRACE_FAILED) {
		xf_trace_error("cannot write '%s': %s", run.opt.output, strerror(errno));
		status = EXIT_TRACE_FAILED;
	}
	return status;
}

XF_COMMAND(trace_command) = {
    .name = "trace",
    .summary = "run a command and report the kernel's FPU saves and loads for it",
    .run = trace_run,
    .help = trace_help,
};
