/*
 * tick.h - what a preemption tick carries: the value of its SI_QUEUE
 * signal.  Apart from preempt.h, so that the xfiber command can send the
 * runtime's own forced tick (xfiber_internal.h) without the rest.
 */
#ifndef XF_PREEMPT_TICK_H
#define XF_PREEMPT_TICK_H

#include <stdint.h>

/* What a tick carries (SI_QUEUE's value): a tag saying the runtime sent it,
 * and either the switch count the ticker saw on the worker - an aimed tick,
 * which the handler drops if the worker has switched since - or
 * XF_TICK_FORCED: take it whatever the count (tests, benchmarks).  A SIGURG
 * without the tag is the application's (preempt/sigaction.c). */
#define XF_TICK_TAG	 0x7866000000000000ull /* "xf" */
#define XF_TICK_TAG_MASK 0xffff000000000000ull
#define XF_TICK_FORCED	 0x0000800000000000ull
#define XF_TICK_ANSWER	 0x0000400000000000ull /* answer a steal request, do not switch */
#define XF_TICK_REPORT	 0x0000200000000000ull /* record a backtrace, do not switch (stall.c) */
#define XF_TICK_COUNT	 0x00001fffffffffffull

static inline uint64_t xf__tick_aimed(uint64_t switches)
{
	return XF_TICK_TAG | (switches & XF_TICK_COUNT);
}

#endif
