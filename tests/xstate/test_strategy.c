/*
 * test_strategy.c - what XFIBER_XSAVE and XFIBER_CPUID_DISABLE lead to.
 *
 * usage: test_strategy EXPECTED [XCR0]
 *   EXPECTED is a strategy name the engine must have chosen (and which must
 *   then work; a CPU without it skips), "default" for the documented preference, or "EINVAL"/"ENOTSUP": no strategy, every
 * save and restore refused with that errno, and a message naming the variable.
 *   XCR0, when given, is the value discovery must have found: `make
 *   check-cpus` names both for each CPU model (tests/cpus/CMakeLists.txt).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "xfiber.h"

int main(int argc, char **argv)
{
	xf_xstate_info info;
	static uint8_t buf[16384] __attribute__((aligned(64)));
	int want_err;

	if (argc != 2 && argc != 3)
		xf_test_fail("usage: test_strategy EXPECTED [XCR0]");
	CHECK_ERR(xf_xstate_info_get(&info), 0);
	if (argc == 3 && info.xcr0 != strtoull(argv[2], NULL, 0))
		xf_test_fail("XCR0 0x%" PRIx64 ", expected %s", info.xcr0, argv[2]);
	if (!strcmp(argv[1], "default")) {
		/* The documented preference, among what CPUID says the CPU has. */
		argv[1] = xf_test_cpu_has_strategy("xsaveopt") ? "xsaveopt"
			  : xf_test_cpu_has_strategy("xsavec") ? "xsavec"
			  : xf_test_cpu_has_strategy("xsave")  ? "xsave"
							       : "fxsave";
	}
	want_err = !strcmp(argv[1], "EINVAL") ? EINVAL : !strcmp(argv[1], "ENOTSUP") ? ENOTSUP : 0;
	if (!want_err) {
		if (argc == 2) /* with an XCR0, the CPU is known: a lack is a failure */
			xf_test_require_strategy(argv[1]);
		if (strcmp(info.strategy_name, argv[1]))
			xf_test_fail("chose %s, expected %s (%s)", info.strategy_name, argv[1],
				     info.strategy_error ? info.strategy_error : "no error");
		CHECK(info.strategy_error == NULL);
		CHECK_ERR(xf_xstate_save(buf, sizeof(buf)), 0);
		CHECK_ERR(xf_xstate_restore(buf, sizeof(buf)), 0);
		printf("strategy %s chosen and working, XCR0 0x%" PRIx64 "\n", info.strategy_name,
		       info.xcr0);
		return 0;
	}
	CHECK(info.strategy == XF_XSAVE_NONE);
	CHECK(xf_xstate_size() == 0);
	CHECK(info.strategy_error && strstr(info.strategy_error, "XFIBER_XSAVE="));
	CHECK_ERR(xf_xstate_save(buf, sizeof(buf)), want_err);
	CHECK_ERR(xf_xstate_restore(buf, sizeof(buf)), want_err);
	printf("refused as expected: %s\n", info.strategy_error);
	return 0;
}
