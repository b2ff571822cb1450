/* consumer.c - a user program built against an installed xfiber. */
#include <stdio.h>
#include <stdlib.h>
#include <xfiber.h>

int main(void)
{
	xf_xstate_info info;
	size_t size = xf_xstate_size();
	void *buf = aligned_alloc(XF_XSTATE_ALIGN, (size + 63) & ~(size_t)63);

	if (xf_xstate_info_get(&info) || !buf || xf_xstate_save(buf, size) ||
	    xf_xstate_restore(buf, size)) {
		fprintf(stderr, "consumer: xfiber calls failed\n");
		return 1;
	}
	printf("consumer: xfiber %s, strategy %s, %u components\n", xf_version(),
	       info.strategy_name, info.ncomponents);
	free(buf);
	return 0;
}
