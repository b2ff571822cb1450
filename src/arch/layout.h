/*
 * layout.h - what the switch assembly (switch_x86_64_sysv_elf_gas.S) knows
 * about C's structures: field offsets and constants.  Plain numbers, because
 * the assembler cannot read C; src/sched/schedule.c checks every one of them
 * against the C definitions with _Static_assert, so a layout change that is
 * not made here too does not build.
 */
#ifndef XF_ARCH_LAYOUT_H
#define XF_ARCH_LAYOUT_H

/* struct xf_fiber (sched/sched.h) */
#define XF_F_FLAGS	 4
#define XF_F_SP		 8
#define XF_F_ON_CPU	 16
#define XF_F_SAVED_ERRNO 24
#define XF_F_RUN_NEXT	 40

/* struct xf__worker (sched/sched.h) */
#define XF_W_CURRENT	   0
#define XF_W_RUNQ_HEAD	   8
#define XF_W_RUNQ_TAIL	   16
#define XF_W_RUNQ_RUNNING_LINKED 28 /* debug builds' check */
#define XF_W_ERRNO_PTR	   40
#define XF_W_IN_SWITCH	   56
#define XF_W_TILES_COUNTDOWN 57
#define XF_W_INBOX	   64
#define XF_W_STEAL_REQUEST 72
#define XF_W_DUE	   76	/* right after steal_request */
#define XF_W_SWITCHES		 2368 /* stats.switches */

/* struct xf__xstate (xstate/xstate.h) */
#define XF_XSTATE_AMX_GRANTED 64
#define XF_XINUSE_AMX_BITS    0x60000 /* XINUSE bits 17 (XTILECFG) and 18 (XTILEDATA) */
#define XF_TILES_LOOK_EVERY   16      /* voluntary switches per look at XINUSE */

/* Constants. */
#define XF_FIBER_F_IDLE_BIT	   0x2	      /* XF_FIBER_F_IDLE */
#define XF_PREV_ACTION_BITS	   3	      /* XF_PREV_ACTION_MASK */
#define XF_PREV_REQUEUE_TAG	   1	      /* XF_PREV_REQUEUE */
#define XF_CPU_STATE_ON		   1	      /* on_cpu: XF_ON_CPU */
#define XF_CPU_STATE_OFF	   0	      /* XF_OFF_CPU */
#define XF_CPU_STATE_YIELDED	   2	      /* XF_OFF_CPU_YIELDED */
#define XF_PREEMPT_NOT_PENDING_BIT 0x80000000 /* XF_PREEMPT_NOT_PENDING */
#define XF_PREEMPT_NESTING_BITS	   0x7fffffff /* XF_PREEMPT_NESTING */

#endif
