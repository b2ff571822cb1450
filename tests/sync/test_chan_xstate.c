/*
 * test_chan_xstate.c - channels copy messages without vector registers.
 *
 * libc's memcpy may use ymm16-31 (glibc's EVEX variants on AVX-512 CPUs),
 * which puts Hi16_ZMM in use for good.  A channel must leave the extended
 * state as the fiber had it: for messages of every size class, a send and a
 * receive add no component to XINUSE, and every byte arrives intact.
 */
#include <stdint.h>
#include <string.h>

#include "testlib.h"
#include "xfiber.h"

#define MAX_MSG 5000

static unsigned char out[MAX_MSG], in[MAX_MSG + 1]; /* one guard byte */

/* Nothing here may touch a vector register but the library calls under test. */
__attribute__((target("general-regs-only"), noinline)) static uint64_t
added_by_round_trip(xf_chan *ch, uint64_t vector_components)
{
	uint64_t before;

	xf_xstate_init_components(vector_components);
	before = xf_xstate_inuse();
	CHECK_ERR(xf_chan_send(ch, out), 0);
	CHECK_ERR(xf_chan_recv(ch, in), 0);
	return xf_xstate_inuse() & ~before;
}

int main(void)
{
	static const size_t sizes[] = {1,  2,  3,  7,  8,   9,	 15,  16,   17,	  31,	32,
				       33, 63, 64, 65, 100, 127, 128, 1000, 4095, 4096, MAX_MSG};
	xf_xstate_info info;
	uint64_t vector_components;

	CHECK_ERR(xf_xstate_info_get(&info), 0);
	if (!xf_test_xinuse_tracks_init())
		xf_test_skip("XINUSE does not show components returning to init state on this CPU "
			     "(no XGETBV1, or it reports them in use all the same)");
	/* Everything but x87 and SSE, which init_components leaves alone. */
	vector_components = info.xcr0 & ~(uint64_t)3;
	CHECK_ERR(xf_init(&(xf_config){.workers = 1}), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		const size_t n = sizes[i];
		xf_chan *ch;
		uint64_t added;

		for (size_t b = 0; b < n; b++)
			out[b] = (unsigned char)(b * 7 + n);
		memset(in, 0xee, sizeof(in));
		CHECK_ERR(xf_chan_create(&ch, n, 1), 0);
		added = added_by_round_trip(ch, vector_components);
		CHECK_ERR(xf_chan_destroy(ch), 0);
		if (added)
			xf_test_fail("a %zu-byte message put components 0x%llx in use", n,
				     (unsigned long long)added);
		if (memcmp(in, out, n) || in[n] != 0xee)
			xf_test_fail("a %zu-byte message arrived damaged or overran", n);
	}
	CHECK_ERR(xf_shutdown(), 0);
	printf("channel messages of 1 to %d bytes: intact, and no extended state put in use\n",
	       MAX_MSG);
	return 0;
}
