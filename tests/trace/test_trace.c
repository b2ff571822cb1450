/*
 * test_trace.c - `xfiber trace` against workloads whose switches are known.
 *
 * usage: test_trace CHECK XFIBER [WORKLOAD]
 *   pingpong  2000 pipe round trips between two threads on one CPU: each
 *             thread switches out at least once per round trip, and each
 *             switch costs one save and one load (../shared/REFERENCE.md)
 *   avx512    the same with ZMM/opmask live: saves carry XSTATE_BV bits
 *             0xe0; and with them put back in init state: they do not
 *   amx       the same with tiles live: saves carry bits 17-18 (8 KB+)
 *   sigint    SIGINT to `xfiber trace -- sleep 30`: exit 130, tracefs as before
 *   badinput  usage errors and missing commands: one line, no tracefs touched
 *   notroot   as uid 65534: refused with one line, exit 125
 * Checks that need root or tracefs skip (exit 77) with the reason.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <mntent.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json_read.h"
#include "testlib.h"

#define EXIT_TRACE_FAILED 125
#define EXIT_NOT_FOUND	  127
#define NOBODY		  65534
#define PINGPONG_ROUNDS	  2000
#define STATE_ROUNDS	  500
#define TOOL_TIMEOUT_S	  20

static const char *xfiber, *workload;

struct output {
	char out[1 << 18], err[1 << 14];
	int status; /* as from waitpid */
	double seconds;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads what is ready on fd into buf (NUL-terminated); false at EOF. */
static bool drain_fd(int fd, char *buf, size_t size, size_t *used)
{
	char scratch[4096];
	ssize_t n = read(fd, *used + 1 < size ? buf + *used : scratch,
			 *used + 1 < size ? size - 1 - *used : sizeof(scratch));

	if (n <= 0)
		return n < 0 && errno == EINTR;
	if (*used + 1 < size) {
		*used += (size_t)n;
		buf[*used] = 0;
	}
	return true;
}

/* Runs argv with stdout and stderr captured; kills it (and fails) if it
 * takes longer than TOOL_TIMEOUT_S. */
static void run(char *const argv[], bool as_nobody, struct output *o)
{
	int out[2], err[2];
	size_t out_used = 0, err_used = 0;
	double start = now();
	bool out_open = true, err_open = true;
	pid_t pid;

	memset(o, 0, sizeof(*o));
	if (pipe(out) || pipe(err))
		xf_test_fail("pipe failed");
	pid = fork();
	if (pid < 0)
		xf_test_fail("fork failed");
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		if (as_nobody && (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
				  setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(99);
		execv(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(98);
	}
	close(out[1]);
	close(err[1]);
	while (out_open || err_open) {
		struct pollfd p[2] = {{out_open ? out[0] : -1, POLLIN, 0},
				      {err_open ? err[0] : -1, POLLIN, 0}};

		if (now() - start > TOOL_TIMEOUT_S) {
			kill(pid, SIGKILL);
			xf_test_fail("%s %s did not finish within %d s", argv[0], argv[1],
				     TOOL_TIMEOUT_S);
		}
		if (poll(p, 2, 200) <= 0)
			continue;
		if (p[0].revents)
			out_open = drain_fd(out[0], o->out, sizeof(o->out), &out_used);
		if (p[1].revents)
			err_open = drain_fd(err[0], o->err, sizeof(o->err), &err_used);
	}
	close(out[0]);
	close(err[0]);
	while (waitpid(pid, &o->status, 0) < 0) {
		if (errno != EINTR)
			xf_test_fail("waitpid failed");
	}
	o->seconds = now() - start;
}

static int exit_code(const struct output *o)
{
	return WIFEXITED(o->status) ? WEXITSTATUS(o->status) : 128 + WTERMSIG(o->status);
}

static void require_root_and_tracefs(void)
{
	char line[256];
	bool tracefs = false;
	FILE *f;

	if (geteuid() != 0)
		xf_test_skip("needs root for tracefs (running as uid %d)", (int)geteuid());
	f = fopen("/proc/filesystems", "r");
	while (f && fgets(line, sizeof(line), f))
		tracefs |= strstr(line, "\ttracefs") != NULL;
	if (f)
		fclose(f);
	if (!tracefs)
		xf_test_skip("this kernel has no tracefs");
}

/* Runs `xfiber trace --json -- WORKLOAD pingpong ROUNDS STATE` and returns
 * the JSON; skips where the kernel lacks what the check needs. */
static const char *trace_workload(struct output *o, long rounds, const char *state)
{
	char rounds_arg[32];
	const char *avail;

	snprintf(rounds_arg, sizeof(rounds_arg), "%ld", rounds);
	char *argv[] = {(char *)xfiber, "trace",    "--json",	   "--", (char *)workload,
			"pingpong",	rounds_arg, (char *)state, NULL};
	run(argv, false, o);
	if (exit_code(o) == EXIT_TRACE_FAILED && strstr(o->err, "no x86_fpu tracepoints"))
		xf_test_skip("%s", o->err);
	if (exit_code(o) == XF_TEST_SKIP)
		xf_test_skip("workload: %s", o->out);
	if (exit_code(o) != 0)
		xf_test_fail("xfiber trace exited %d: %s", exit_code(o), o->err);
	if (json_uint_of(o->out, "exit_status") != 0)
		xf_test_fail("exit_status %llu, expected 0",
			     (unsigned long long)json_uint_of(o->out, "exit_status"));
	if (json_uint_of(o->out, "events_lost"))
		xf_test_fail("%llu events lost: the counts below would be too low",
			     (unsigned long long)json_uint_of(o->out, "events_lost"));
	avail = json_get(o->out, "events_available");
	for (size_t want = 0; want < 3; want++) {
		static const char *const needed[] = {"sched:sched_switch",
						     "x86_fpu:x86_fpu_regs_activated",
						     "x86_fpu:x86_fpu_regs_deactivated"};
		bool found = false;
		const char *e;

		for (size_t i = 0; (e = json_element(avail, i)); i++)
			found |= json_is_string(e, needed[want]);
		if (!found)
			xf_test_skip("this kernel has no %s tracepoint", needed[want]);
	}
	return o->out;
}

/* Bytes of the components in xfeatures, from CPUID, not from the library. */
static uint64_t cpuid_bytes(uint64_t xfeatures)
{
	uint64_t bytes = (xfeatures & 1 ? 160 : 0) + (xfeatures & 2 ? 256 : 0);

	for (unsigned bit = 2; bit < 63; bit++) {
		unsigned eax = 0, ebx, ecx, edx;

		if ((xfeatures >> bit) & 1) {
			__cpuid_count(0xd, bit, eax, ebx, ecx, edx);
			bytes += eax;
		}
	}
	return bytes;
}

/* Saves in histogram bins whose xfeatures hold every bit of mask. */
static uint64_t saves_with_all(const char *json, uint64_t mask)
{
	const char *hist = json_get(json, "xfeatures_histogram"), *bin;
	uint64_t saves = 0;

	for (size_t i = 0; (bin = json_element(hist, i)); i++) {
		if ((json_uint_of(bin, "xfeatures") & mask) == mask)
			saves += json_uint_of(bin, "saves");
	}
	return saves;
}

static const char *const count_keys[] = {
    "context_switches", "fpu_saves",	      "saves_at_switch",       "saves_skipped",
    "fpu_loads",	"switches_with_load", "switches_without_load", "switches_unclassified",
    "bytes_saved",	"saves_with_avx512"};

/* What must hold in any report: totals are the sums over tasks, the stint
 * classes add up, and the histogram agrees with CPUID and the totals. */
static void check_consistency(const char *json)
{
	const char *totals = json_get(json, "totals"), *tasks = json_get(json, "tasks"), *t;
	const char *hist = json_get(json, "xfeatures_histogram"), *bin;
	uint64_t saves = 0, bytes = 0;
	size_t n;

	for (size_t k = 0; k < sizeof(count_keys) / sizeof(count_keys[0]); k++) {
		uint64_t sum = 0;

		for (n = 0; (t = json_element(tasks, n)); n++)
			sum += json_uint_of(t, count_keys[k]);
		if (sum != json_uint_of(totals, count_keys[k]))
			xf_test_fail("totals.%s %llu, but the tasks add up to %llu", count_keys[k],
				     (unsigned long long)json_uint_of(totals, count_keys[k]),
				     (unsigned long long)sum);
	}
	for (n = 0; (t = json_element(tasks, n)); n++) {
		uint64_t sw = json_uint_of(t, "context_switches");
		uint64_t classes = json_uint_of(t, "switches_with_load") +
				   json_uint_of(t, "no_load_registers_valid") +
				   json_uint_of(t, "no_load_not_returned_to_user") +
				   json_uint_of(t, "switches_unclassified");

		if (classes != sw)
			xf_test_fail("task %llu: %llu switches, but %llu stints classified",
				     (unsigned long long)json_uint_of(t, "tid"),
				     (unsigned long long)sw, (unsigned long long)classes);
		if (json_uint_of(t, "fpu_saves") != json_uint_of(t, "saves_at_switch") +
							json_uint_of(t, "saves_at_fork") +
							json_uint_of(t, "saves_on_demand"))
			xf_test_fail("task %llu: fpu_saves is not the sum of its kinds",
				     (unsigned long long)json_uint_of(t, "tid"));
	}
	if (json_uint_of(totals, "tasks") != n)
		xf_test_fail("totals.tasks %llu, tasks[] has %zu",
			     (unsigned long long)json_uint_of(totals, "tasks"), n);
	for (size_t i = 0; (bin = json_element(hist, i)); i++) {
		uint64_t x = json_uint_of(bin, "xfeatures"),
			 per = json_uint_of(bin, "bytes_per_save");

		if (per != cpuid_bytes(x))
			xf_test_fail("xfeatures 0x%llx: %llu bytes per save, CPUID says %llu",
				     (unsigned long long)x, (unsigned long long)per,
				     (unsigned long long)cpuid_bytes(x));
		if (json_uint_of(bin, "bytes") != per * json_uint_of(bin, "saves"))
			xf_test_fail("xfeatures 0x%llx: bytes is not saves x bytes_per_save",
				     (unsigned long long)x);
		saves += json_uint_of(bin, "saves");
		bytes += json_uint_of(bin, "bytes");
	}
	if (saves != json_uint_of(totals, "fpu_saves") ||
	    bytes != json_uint_of(totals, "bytes_saved"))
		xf_test_fail("the histogram holds %llu saves / %llu bytes, totals %llu / %llu",
			     (unsigned long long)saves, (unsigned long long)bytes,
			     (unsigned long long)json_uint_of(totals, "fpu_saves"),
			     (unsigned long long)json_uint_of(totals, "bytes_saved"));
}

/* The workload's two threads, each switched out at least once per round
 * trip; returns their switches together.  Only the workload's own process
 * counts: a sanitizer build adds helper processes of the same name (the
 * leak checker's tracer at exit). */
static bool is_workload_task(const char *json, const char *task)
{
	const char *tasks = json_get(json, "tasks"), *t;
	uint64_t pid = UINT64_MAX;

	for (size_t i = 0; (t = json_element(tasks, i)); i++) {
		if (json_is_string(json_get(t, "comm"), "trace_workload") &&
		    json_uint_of(t, "pid") < pid)
			pid = json_uint_of(t, "pid");
	}
	return json_is_string(json_get(task, "comm"), "trace_workload") &&
	       json_uint_of(task, "pid") == pid;
}

static uint64_t check_workload_threads(const char *json, long rounds)
{
	const char *tasks = json_get(json, "tasks"), *t;
	uint64_t total = 0;
	int threads = 0;

	for (size_t i = 0; (t = json_element(tasks, i)); i++) {
		uint64_t sw;

		if (!is_workload_task(json, t))
			continue;
		threads++;
		sw = json_uint_of(t, "context_switches");
		/* A thread's very first read may find its byte waiting. */
		if (sw + 2 < (uint64_t)rounds || sw > (uint64_t)rounds * 3 / 2 + 50)
			xf_test_fail("thread %llu: %llu switches for %ld round trips",
				     (unsigned long long)json_uint_of(t, "tid"),
				     (unsigned long long)sw, rounds);
		total += sw;
	}
	if (threads != 2)
		xf_test_fail("expected the workload's 2 threads in tasks[], found %d", threads);
	return total;
}

/* The least share, in %, of a ping-pong thread's switches that save and
 * load its registers (below). */
#define SAVED_SHARE_MIN 85

static void check_pingpong(void)
{
	struct output *o = malloc(sizeof(*o));
	const char *json, *tasks, *t;

	require_root_and_tracefs();
	json = trace_workload(o, PINGPONG_ROUNDS, "none");
	check_consistency(json);
	check_workload_threads(json, PINGPONG_ROUNDS);
	tasks = json_get(json, "tasks");
	for (size_t i = 0; (t = json_element(tasks, i)); i++) {
		uint64_t sw = json_uint_of(t, "context_switches");

		if (!is_workload_task(json, t))
			continue;
		/* One regs_deactivated and one regs_activated per switch, but
		 * for switches whose registers the kernel had saved already:
		 * a kernel_fpu_begin() in an interrupt or softirq saves the
		 * current task's registers once, and its next switch has none
		 * to save (the TIF_NEED_FPU_LOAD seed).  Beside make check's
		 * parallel tests that was up to 6.5% of them (2,064 saves at
		 * 2,207 switches), against 0-1% on a quiet machine. */
		if (json_uint_of(t, "saves_at_switch") * 100 < sw * SAVED_SHARE_MIN ||
		    json_uint_of(t, "saves_at_switch") > sw)
			xf_test_fail("%llu saves at %llu switches",
				     (unsigned long long)json_uint_of(t, "saves_at_switch"),
				     (unsigned long long)sw);
		if (json_uint_of(t, "fpu_loads") * 100 < sw * SAVED_SHARE_MIN ||
		    json_uint_of(t, "fpu_loads") > sw + 10)
			xf_test_fail("%llu loads at %llu switches",
				     (unsigned long long)json_uint_of(t, "fpu_loads"),
				     (unsigned long long)sw);
		if (json_uint_of(t, "switches_with_load") * 100 < sw * SAVED_SHARE_MIN)
			xf_test_fail("only %llu of %llu switches loaded, though the other thread "
				     "always ran in between",
				     (unsigned long long)json_uint_of(t, "switches_with_load"),
				     (unsigned long long)sw);
	}
	printf("%llu switches, %llu saves, %llu loads for %d round trips\n",
	       (unsigned long long)json_uint_of(json_get(json, "totals"), "context_switches"),
	       (unsigned long long)json_uint_of(json_get(json, "totals"), "fpu_saves"),
	       (unsigned long long)json_uint_of(json_get(json, "totals"), "fpu_loads"),
	       PINGPONG_ROUNDS);
	free(o);
}

static uint64_t xcr0(void)
{
	uint32_t lo, hi;
	unsigned eax, ebx, ecx, edx;

	__cpuid(1, eax, ebx, ecx, edx);
	if (!(ecx & bit_OSXSAVE))
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* Saves with all of mask set: nearly every one with the state live, and
 * (when clean_state is given) hardly any with it back in init state. */
static void check_state_saves(const char *state, const char *clean_state, uint64_t mask,
			      uint64_t min_bytes)
{
	struct output *o = malloc(sizeof(*o));
	const char *json;
	uint64_t switches, live, all;

	json = trace_workload(o, STATE_ROUNDS, state);
	check_consistency(json);
	switches = check_workload_threads(json, STATE_ROUNDS);
	live = saves_with_all(json, mask);
	/* Against the round trips' own switches (two per round trip): on a
	 * loaded machine the threads are also switched out at other points,
	 * where the state may be between loads. */
	if (live * 100 < 2 * (uint64_t)STATE_ROUNDS * 90)
		xf_test_fail("%s live: %llu of the saves hold xfeatures 0x%llx, at %llu switches",
			     state, (unsigned long long)live, (unsigned long long)mask,
			     (unsigned long long)switches);
	if (cpuid_bytes(mask) < min_bytes)
		xf_test_fail("CPUID sizes 0x%llx at %llu bytes", (unsigned long long)mask,
			     (unsigned long long)cpuid_bytes(mask));
	printf("%s live: %llu of %llu saves hold 0x%llx\n", state, (unsigned long long)live,
	       (unsigned long long)json_uint_of(json_get(json, "totals"), "fpu_saves"),
	       (unsigned long long)mask);
	if (clean_state) {
		json = trace_workload(o, STATE_ROUNDS, clean_state);
		check_consistency(json);
		switches = check_workload_threads(json, STATE_ROUNDS);
		all = json_uint_of(json_get(json, "totals"), "fpu_saves");
		live = saves_with_all(json, mask);
		if (live * 10 > all)
			xf_test_fail("%s: %llu of %llu saves still hold xfeatures 0x%llx",
				     clean_state, (unsigned long long)live, (unsigned long long)all,
				     (unsigned long long)mask);
		printf("%s: %llu of %llu saves hold 0x%llx\n", clean_state,
		       (unsigned long long)live, (unsigned long long)all, (unsigned long long)mask);
	}
	free(o);
}

static void check_avx512(void)
{
	const uint64_t avx512 = 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */

	require_root_and_tracefs();
	if ((xcr0() & avx512) != avx512)
		xf_test_skip("no AVX-512 here (XCR0 0x%llx)", (unsigned long long)xcr0());
	check_state_saves("avx512", "clean", avx512, 64 + 512 + 1024);
}

static void check_amx(void)
{
	const uint64_t amx = (1u << 17) | (1u << 18); /* TILECFG, TILEDATA */

	require_root_and_tracefs();
	if ((xcr0() & amx) != amx)
		xf_test_skip("this CPU has no AMX (XCR0 0x%llx)", (unsigned long long)xcr0());
	check_state_saves("amx", NULL, amx, 64 + 8192);
}

/* What xfiber trace must leave as it found: the mount, the top level's
 * tracing_on and x86_fpu enable, and no instance of its own. */
struct tracefs_state {
	bool mounted;
	char root[256], tracing_on[16], fpu_enable[16];
	int xfiber_instances;
};

static void read_small(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	buf[0] = 0;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	n = read(fd, buf, size - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
}

/* The top level's settings and our instances, read through a private
 * mount of tracefs if none is mounted: instances outlive an unmount, so
 * only a look inside shows whether one was left behind. */
static void tracefs_state(struct tracefs_state *s)
{
	FILE *m = setmntent("/proc/self/mounts", "r");
	char path[512], peek[] = "/tmp/xfiber-trace-peek-XXXXXX";
	const char *root;
	struct mntent *e;
	struct dirent *d;
	DIR *dir;

	memset(s, 0, sizeof(*s));
	while (m && (e = getmntent(m))) {
		if (!strcmp(e->mnt_type, "tracefs") && !s->mounted) {
			s->mounted = true;
			snprintf(s->root, sizeof(s->root), "%s", e->mnt_dir);
		}
	}
	if (m)
		endmntent(m);
	root = s->root;
	if (!s->mounted) {
		if (!mkdtemp(peek) || mount("tracefs", peek, "tracefs", 0, NULL))
			xf_test_fail("cannot mount tracefs on %s to look inside: %s", peek,
				     strerror(errno));
		root = peek;
	}
	read_small(root, "tracing_on", s->tracing_on, sizeof(s->tracing_on));
	read_small(root, "events/x86_fpu/enable", s->fpu_enable, sizeof(s->fpu_enable));
	snprintf(path, sizeof(path), "%s/instances", root);
	dir = opendir(path);
	while (dir && (d = readdir(dir)))
		s->xfiber_instances += !strncmp(d->d_name, "xfiber-", 7);
	if (dir)
		closedir(dir);
	if (!s->mounted && (umount(peek) || rmdir(peek)))
		xf_test_fail("cannot unmount %s: %s", peek, strerror(errno));
}

static void check_tracefs_unchanged(const struct tracefs_state *before)
{
	struct tracefs_state after;

	tracefs_state(&after);
	if (after.mounted != before->mounted)
		xf_test_fail("tracefs was %smounted before and is %smounted after",
			     before->mounted ? "" : "not ", after.mounted ? "" : "not ");
	if (strcmp(after.tracing_on, before->tracing_on) ||
	    strcmp(after.fpu_enable, before->fpu_enable))
		xf_test_fail("top-level tracing_on/x86_fpu enable changed: %s/%s -> %s/%s",
			     before->tracing_on, before->fpu_enable, after.tracing_on,
			     after.fpu_enable);
	if (after.xfiber_instances != before->xfiber_instances)
		xf_test_fail("%d xfiber-* trace instances left behind",
			     after.xfiber_instances - before->xfiber_instances);
}

static void check_sigint(void)
{
	struct tracefs_state before;
	char instance[512], out_path[] = "/tmp/xfiber-trace-sigint-XXXXXX";
	double start;
	int status, out_fd;
	pid_t pid;

	require_root_and_tracefs();
	tracefs_state(&before);
	out_fd = mkstemp(out_path);
	if (out_fd < 0)
		xf_test_fail("mkstemp failed");
	unlink(out_path);
	pid = fork();
	if (pid == 0) {
		dup2(out_fd, 1);
		execl(xfiber, xfiber, "trace", "--", "sleep", "30", (char *)NULL);
		_exit(98);
	}
	/* Where the instance appears: the mount xfiber makes is ours too. */
	snprintf(instance, sizeof(instance), "%s/instances/xfiber-%d",
		 before.mounted ? before.root : "/sys/kernel/tracing", (int)pid);
	for (start = now(); access(instance, F_OK); usleep(10000)) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			xf_test_fail("xfiber trace ended (status 0x%x) before tracing began",
				     status);
		if (now() - start > 10) {
			kill(pid, SIGKILL);
			xf_test_fail("%s did not appear within 10 s", instance);
		}
	}
	usleep(100000); /* let sleep start, though an earlier signal must work too */
	kill(pid, SIGINT);
	for (start = now(); waitpid(pid, &status, WNOHANG) != pid; usleep(10000)) {
		if (now() - start > 10) {
			kill(pid, SIGKILL);
			xf_test_fail("xfiber trace still running 10 s after SIGINT");
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 128 + SIGINT)
		xf_test_fail("exit status 0x%x, expected %d (sleep killed by SIGINT)", status,
			     128 + SIGINT);
	if (!access(instance, F_OK))
		xf_test_fail("%s is still there", instance);
	check_tracefs_unchanged(&before);
	{
		char report[4096] = "";
		ssize_t n = pread(out_fd, report, sizeof(report) - 1, 0);

		report[n > 0 ? n : 0] = 0;
		if (!strstr(report, "killed by signal 2"))
			xf_test_fail("the report does not say sleep was killed: %s", report);
	}
	close(out_fd);
	printf("SIGINT: exit 130 after %.2f s, instance removed, tracefs %s as before\n",
	       now() - start, before.mounted ? "mounted" : "unmounted");
}

/* One line on stderr, nothing on stdout, the expected status. */
static void expect_refusal(char *const argv[], bool as_nobody, int status, const char *words)
{
	struct output *o = malloc(sizeof(*o));
	char *nl;

	run(argv, as_nobody, o);
	if (exit_code(o) == 99 && as_nobody)
		xf_test_skip("cannot switch to uid %d", NOBODY);
	if (exit_code(o) == 98 && as_nobody)
		xf_test_skip("uid %d cannot execute %s: %s", NOBODY, argv[0], o->err);
	nl = strchr(o->err, '\n');
	if (exit_code(o) != status || !strstr(o->err, words) || !nl || nl[1] || o->out[0])
		xf_test_fail("'%s %s %s': exit %d, stdout '%s', stderr '%s'; expected exit %d and "
			     "one line with '%s'",
			     argv[1], argv[2] ? argv[2] : "", argv[2] && argv[3] ? argv[3] : "",
			     exit_code(o), o->out, o->err, status, words);
	printf("refused (%d): %s", status, o->err);
	free(o);
}

static void check_badinput(void)
{
	struct tracefs_state before;
	bool root = geteuid() == 0; /* only root can look inside tracefs */
	char *x = (char *)xfiber;

	if (root)
		tracefs_state(&before);
	expect_refusal((char *[]){x, "trace", NULL}, false, EXIT_TRACE_FAILED, "no COMMAND");
	expect_refusal((char *[]){x, "trace", "--json", "--", NULL}, false, EXIT_TRACE_FAILED,
		       "no COMMAND");
	expect_refusal((char *[]){x, "trace", "--frobnicate", "--", "true", NULL}, false,
		       EXIT_TRACE_FAILED, "unknown option");
	expect_refusal((char *[]){x, "trace", "true", NULL}, false, EXIT_TRACE_FAILED,
		       "expected '--'");
	expect_refusal((char *[]){x, "trace", "--buffer-kb", "lots", "--", "true", NULL}, false,
		       EXIT_TRACE_FAILED, "--buffer-kb");
	expect_refusal((char *[]){x, "trace", "--", "/nonexistent/xfiber-test-command", NULL},
		       false, EXIT_NOT_FOUND, "not found");
	expect_refusal((char *[]){x, "trace", "--", "xfiber-test-no-such-command", NULL}, false,
		       EXIT_NOT_FOUND, "not found");
	if (root)
		check_tracefs_unchanged(&before);
}

static void check_notroot(void)
{
	struct tracefs_state before;
	bool root = geteuid() == 0; /* then run it as nobody */
	char *x = (char *)xfiber;

	if (root)
		tracefs_state(&before);
	expect_refusal((char *[]){x, "trace", "--", "true", NULL}, root, EXIT_TRACE_FAILED,
		       "needs root");
	if (root)
		check_tracefs_unchanged(&before);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*check)(void);
		bool needs_workload;
	} checks[] = {
	    {"pingpong", check_pingpong, true},
	    {"avx512", check_avx512, true},
	    {"amx", check_amx, true},
	    {"sigint", check_sigint, false},
	    {"badinput", check_badinput, false},
	    {"notroot", check_notroot, false},
	};

	if (argc < 3)
		xf_test_fail("usage: test_trace CHECK XFIBER [WORKLOAD]");
	xfiber = argv[2];
	workload = argc > 3 ? argv[3] : NULL;
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		if (strcmp(argv[1], checks[i].name))
			continue;
		if (checks[i].needs_workload && !workload)
			xf_test_fail("%s needs the workload's path", argv[1]);
		checks[i].check();
		return 0;
	}
	xf_test_fail("unknown check '%s'", argv[1]);
}
