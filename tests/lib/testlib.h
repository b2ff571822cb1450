/* testlib.h - the little the tests share: failing loudly, skipping honestly. */
#ifndef XF_TESTS_TESTLIB_H
#define XF_TESTS_TESTLIB_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* ctest reports this exit code as "skipped" (SKIP_RETURN_CODE). */
#define XF_TEST_SKIP 77

/* Prints the reason and exits with XF_TEST_SKIP. */
__attribute__((noreturn, format(printf, 1, 2))) void xf_test_skip(const char *fmt, ...);
/* Prints the failure with its location and exits 1. */
__attribute__((noreturn, format(printf, 3, 4))) void xf_test_fail_at(const char *file, int line,
								     const char *fmt, ...);

#define xf_test_fail(...) xf_test_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			xf_test_fail("check failed: %s", #cond);                                   \
	} while (0)
/* Compares an errno-style return value with the expected one. */
#define CHECK_ERR(call, want)                                                                      \
	do {                                                                                       \
		int got_ = (call);                                                                 \
		if (got_ != (want))                                                                \
			xf_test_fail("%s returned %d (%s), expected %d (%s)", #call, got_,         \
				     xf_test_errname(got_), (want), xf_test_errname(want));        \
	} while (0)

const char *xf_test_errname(int err);

/* The register classes a name stands for (see xf__regs_class_parse), or
 * fails the test for an unknown name. */
unsigned xf_test_parse_class(const char *name);

/* Whether CPUID - read here, not through the library - says this CPU has
 * the named XSAVE strategy ("xsaveopt", "xsavec", "xsave", "fxsave"). */
bool xf_test_cpu_has_strategy(const char *name);
/* Skips the test, with the reason, where the CPU lacks it.  A test that
 * forces or expects a strategy calls it first: only a CPU without the
 * strategy skips, and a library that refuses one the CPU has still fails. */
void xf_test_require_strategy(const char *name);

/* Whether XINUSE (XGETBV 1) shows a component back in its init state: AVX's
 * bit clear after VZEROUPPER.  False without XGETBV1 or AVX, and where the
 * CPU reports the component in use all the same, which the SDM allows and
 * qemu's TCG does for every component (docs/cpus.md). */
bool xf_test_xinuse_tracks_init(void);

/* Runs fn() in a child process with its stderr captured into out (size
 * bytes, NUL-terminated); returns the child's wait status. */
int xf_test_run_child(void (*fn)(void), char *out, size_t size);

/* Starts the server argv[0] with argv, which says "listening on
 * 127.0.0.1:PORT" as its first line: its pid, and *port.  The server
 * dies with the calling thread (PR_SET_PDEATHSIG), so a test that ctest
 * kills at its deadline leaves no server behind.  *out, if not NULL, gets
 * the rest of the server's stdout; else it is closed. */
int xf_test_start_server(char *const argv[], int *port, FILE **out);

#endif
