/*
 * test_asan_mismatch.c - a program built with AddressSanitizer, linked
 * with a libxfiber built without it: xf_init says so on stderr, once, and
 * goes on (CMake checks the words).  ASan is not told of the library's
 * stack switches there, and would report stack errors that are not there.
 */
#include <stdio.h>

#include "xfiber.h"

int main(void)
{
	if (xf_init(NULL) || xf_shutdown() || xf_init(NULL) || xf_shutdown()) {
		fprintf(stderr, "the runtime did not start and stop twice\n");
		return 1;
	}
	printf("started and stopped twice\n");
	return 0;
}
