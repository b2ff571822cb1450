/*
 * fpu.h - what the kernel's FPU switching did, derived from the
 * recorded events, per task and in total.
 *
 * The kernel (5.2 and later, arch/x86/include/asm/fpu/sched.h and
 * kernel/fpu/context.h) keeps this invariant: a user task's registers are
 * live in the CPU iff TIF_NEED_FPU_LOAD is clear.  At a switch-out with the
 * flag clear it saves them and sets the flag (regs_deactivated, right after
 * the task's sched_switch on that CPU); with the flag already set it saves
 * nothing.  On the way back to user space it loads them (regs_activated,
 * load_fpu 1) unless this CPU still holds them, and clears the flag.
 *
 * Everything a task does between its switch-in and its switch-out happens
 * on one CPU, so each CPU's records are walked in their own order and no
 * cross-CPU merge (or clock agreement) is needed.  A switch-in is either a
 * sched_switch naming the task as next, or, where the kernel recorded none
 * (some record nothing while certain tasks run, e.g. a CPU's idle task),
 * the first record the task makes on a CPU where another task ran last:
 * every record of a running task is made while it runs, so its stint is
 * still seen whole.  Each switch-out closes one stint, classified as:
 *   - with load: a regs_activated with load_fpu 1 in the stint;
 *   - without load, registers valid: no load, yet the switch-out saved, so
 *     the flag was cleared by a return to user space that found the CPU
 *     still holding the task's registers;
 *   - without load, not returned to user space: no load and no save; the
 *     task went back out before reaching user space (the seeds' "skipped
 *     save"; exec and kernel-mode FPU use also set the flag, untraced);
 *   - unclassified: its start was not seen (it began before tracing did,
 *     or records were lost).
 */
#ifndef XF_TOOLS_TRACE_FPU_H
#define XF_TOOLS_TRACE_FPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/events.h"

struct xf_fpu_counts {
	uint64_t context_switches; /* switch-outs: sched_switch with the task as prev */
	uint64_t saves_at_switch;  /* regs_deactivated right after the task's sched_switch */
	uint64_t saves_skipped;	   /* switch-outs without a save: registers already saved */
	uint64_t saves_at_fork;	   /* copy_dst: registers saved into a new child's buffer */
	uint64_t saves_on_demand;  /* after_save with load_fpu 0 (ptrace, core dumps) */
	uint64_t fpu_loads;	   /* regs_activated with load_fpu 1: XRSTOR of the buffer */
	uint64_t set_in_place;	   /* regs_activated with load_fpu 0: signal delivery, sigreturn */
	uint64_t switches_with_load;	    /* stints that loaded */
	uint64_t no_load_registers_valid;   /* stints that returned to user space without a load */
	uint64_t no_load_not_returned;	    /* stints that never returned to user space */
	uint64_t switches_unclassified;	    /* stints whose start was not seen */
	uint64_t drops;			    /* x86_fpu_dropped: registers given up at exit */
	uint64_t bytes_saved, bytes_loaded; /* register bytes the saves wrote, the loads read */
	uint64_t saves_with_avx512;	    /* saves whose xfeatures hold any AVX-512 component */
	uint64_t saves_with_amx;	    /* saves whose xfeatures hold TILECFG or TILEDATA */
};

static inline uint64_t xf_fpu_saves(const struct xf_fpu_counts *c)
{
	return c->saves_at_switch + c->saves_at_fork + c->saves_on_demand;
}

static inline uint64_t xf_fpu_switches_without_load(const struct xf_fpu_counts *c)
{
	return c->no_load_registers_valid + c->no_load_not_returned;
}

struct xf_fpu_xfeatures_bin {
	uint64_t xfeatures; /* XSTATE_BV of the saved image */
	uint64_t saves;
	uint64_t bytes_per_save;
};

struct xf_fpu_task {
	int tid;
	int pid;	/* thread-group id, after xf_fpu_trace_finish (-1: unknown) */
	int parent;	/* tid of the task that created it (task_newtask), or 0 */
	bool is_thread; /* created with CLONE_THREAD */
	bool exited;	/* switched out dead */
	bool ours;	/* COMMAND's, after xf_fpu_trace_finish */
	char comm[XF_TRACE_COMM_LEN];
	uint64_t comm_ts;
	struct xf_fpu_counts c;
	struct xf_fpu_xfeatures_bin *bins; /* its saves by xfeatures, until finish */
	size_t nbins, bins_cap;
};

struct xf_fpu_cpu_state;

struct xf_fpu_trace {
	int root_pid;
	struct xf_fpu_task *tasks; /* after xf_fpu_trace_finish: only COMMAND's, by pid, tid */
	size_t ntasks, tasks_cap;
	int *slots; /* open-addressing index into tasks, by tid */
	size_t nslots;
	struct xf_fpu_cpu_state *cpus;
	unsigned ncpus;
	struct xf_fpu_xfeatures_bin *bins; /* COMMAND's saves, after finish, by xfeatures */
	size_t nbins, bins_cap;
	uint32_t component_bytes[64];
	struct xf_fpu_counts totals; /* after finish */
};

/* root_pid is COMMAND's pid; its descendants are found from task_newtask. */
int xf_fpu_trace_init(struct xf_fpu_trace *t, unsigned ncpus, int root_pid);

/* Feeds one record; each CPU's records must come in that CPU's order.
 * -1 when out of memory. */
int xf_fpu_trace_record(struct xf_fpu_trace *t, const struct xf_trace_record *r);

/* Records were lost on this CPU: forget what its state machine knew. */
void xf_fpu_trace_gap(struct xf_fpu_trace *t, unsigned cpu);

/* True once every task of COMMAND's seen so far has switched out dead. */
bool xf_fpu_trace_all_exited(const struct xf_fpu_trace *t);

/* Closes open stints, keeps COMMAND's tasks only, sorts, sums the totals
 * and the histogram.  -1 when out of memory. */
int xf_fpu_trace_finish(struct xf_fpu_trace *t);

/* Register bytes of the components set in xfeatures. */
uint64_t xf_fpu_xfeatures_bytes(const struct xf_fpu_trace *t, uint64_t xfeatures);

void xf_fpu_trace_free(struct xf_fpu_trace *t);

#endif
