/* testlib.c - see testlib.h. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "xstate/regs.h"

void xf_test_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("SKIP: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
	exit(XF_TEST_SKIP);
}

void xf_test_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

const char *xf_test_errname(int err)
{
	return err ? strerrorname_np(err) : "0";
}

unsigned xf_test_parse_class(const char *name)
{
	unsigned c = xf__regs_class_parse(name);

	if (!c)
		xf_test_fail("unknown register class '%s'", name);
	return c;
}

static uint64_t xgetbv(uint32_t index)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
	return ((uint64_t)hi << 32) | lo;
}

bool xf_test_cpu_has_strategy(const char *name)
{
	unsigned eax, ebx, ecx, edx;
	bool xsave;

	__cpuid(1, eax, ebx, ecx, edx);
	xsave = (ecx & bit_XSAVE) && (ecx & bit_OSXSAVE);
	__cpuid_count(0xd, 1, eax, ebx, ecx, edx);
	if (!strcmp(name, "fxsave"))
		return true; /* every x86-64 CPU */
	if (!strcmp(name, "xsave"))
		return xsave;
	if (!strcmp(name, "xsaveopt"))
		return xsave && (eax & (1u << 0));
	if (!strcmp(name, "xsavec"))
		return xsave && (eax & (1u << 1));
	xf_test_fail("unknown strategy '%s'", name);
}

void xf_test_require_strategy(const char *name)
{
	if (!xf_test_cpu_has_strategy(name))
		xf_test_skip("this CPU has no %s (CPUID)", name);
}

bool xf_test_xinuse_tracks_init(void)
{
	unsigned eax, ebx, ecx, edx;
	const uint64_t ymm = 1u << 2;
	uint32_t lo, hi;

	__cpuid(1, eax, ebx, ecx, edx);
	if (!(ecx & bit_OSXSAVE) || !(ecx & bit_AVX) || (xgetbv(0) & 6) != 6)
		return false;
	__cpuid_count(0xd, 1, eax, ebx, ecx, edx);
	if (!(eax & (1u << 2)))
		return false; /* no XGETBV1 */
	/* One asm statement: nothing the compiler adds may run in between. */
	__asm__ volatile("vzeroupper\n\txgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return !(lo & ymm);
}

/* A pipe, then fork(): the child's pid, or 0 in the child. */
static pid_t fork_piped(int pipefd[2])
{
	pid_t pid;

	if (pipe(pipefd))
		xf_test_fail("pipe failed");
	pid = fork();
	if (pid < 0)
		xf_test_fail("fork failed");
	return pid;
}

int xf_test_run_child(void (*fn)(void), char *out, size_t size)
{
	int pipefd[2], status;
	size_t used = 0;
	pid_t pid;

	pid = fork_piped(pipefd);
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		fn();
		_exit(0);
	}
	close(pipefd[1]);
	/* Read to the end: a message may come in several writes.  What does
	 * not fit is drained and dropped, or a child with more to say would
	 * block on a full pipe, and waitpid with it. */
	for (;;) {
		char rest[4096];
		ssize_t r = used + 1 < size ? read(pipefd[0], out + used, size - 1 - used)
					    : read(pipefd[0], rest, sizeof(rest));
		if (r <= 0)
			break;
		if (used + 1 < size)
			used += (size_t)r;
	}
	out[used] = 0;
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return status;
}

int xf_test_start_server(char *const argv[], int *port, FILE **out)
{
	const pid_t parent = getpid();
	char line[128];
	int pipefd[2];
	pid_t pid;
	FILE *f;

	pid = fork_piped(pipefd);
	if (pid == 0) {
		/* The parent may have died before the death signal was set. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		close(pipefd[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	f = fdopen(pipefd[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "listening on 127.0.0.1:%d", port) != 1 || *port <= 0)
		xf_test_fail("%s's first line is not \"listening on 127.0.0.1:PORT\"", argv[0]);
	if (out)
		*out = f;
	else
		fclose(f);
	return pid;
}
