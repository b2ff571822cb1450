/*
 * events.h - the tracepoints `xfiber trace` records, and decoding
 * their raw records.
 *
 * Field offsets are never assumed: each event's `format` file in tracefs
 * says where its fields are, so a kernel that moved or dropped a field still
 * decodes (a missing field reads as absent, never as garbage).
 */
#ifndef XF_TOOLS_TRACE_EVENTS_H
#define XF_TOOLS_TRACE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum xf_trace_kind {
	XF_EV_SCHED_SWITCH,	/* sched:sched_switch */
	XF_EV_TASK_NEWTASK,	/* task:task_newtask (who forked whom, and CLONE_THREAD) */
	XF_EV_REGS_ACTIVATED,	/* x86_fpu_regs_activated */
	XF_EV_REGS_DEACTIVATED, /* x86_fpu_regs_deactivated */
	XF_EV_AFTER_SAVE,	/* x86_fpu_after_save */
	XF_EV_COPY_DST,		/* x86_fpu_copy_dst */
	XF_EV_DROPPED,		/* x86_fpu_dropped */
	XF_EV_AFTER_RESTORE,	/* x86_fpu_after_restore (kernels before 5.2) */
	XF_EV_FPU_OTHER,	/* any other x86_fpu event: recorded, not interpreted */
};

struct xf_trace_field {
	unsigned offset, size;
	bool present;
};

struct xf_trace_event_type {
	char system[16];
	char name[64];
	int id;
	enum xf_trace_kind kind;
	struct xf_trace_field common_type, common_pid;
	struct xf_trace_field prev_comm, prev_pid, prev_state, next_comm,
	    next_pid;				      /* sched_switch */
	struct xf_trace_field pid, comm, clone_flags; /* task_newtask */
	struct xf_trace_field load_fpu, xfeatures;    /* x86_fpu */
};

#define XF_TRACE_MAX_TYPES 32
#define XF_TRACE_COMM_LEN  16

struct xf_trace_events {
	unsigned ntypes;
	struct xf_trace_event_type types[XF_TRACE_MAX_TYPES];
};

/* One decoded record.  Fields an event does not have are 0 / "". */
struct xf_trace_record {
	enum xf_trace_kind kind;
	unsigned cpu;
	uint64_t ts; /* ns on the instance's trace clock */
	int pid;     /* common_pid: the task that was running */
	int prev_pid, next_pid, child_pid;
	int64_t prev_state;
	char prev_comm[XF_TRACE_COMM_LEN], next_comm[XF_TRACE_COMM_LEN], comm[XF_TRACE_COMM_LEN];
	uint64_t clone_flags;
	bool has_load_fpu; /* kernels before 5.2 have no load_fpu field */
	bool load_fpu;	   /* TIF_NEED_FPU_LOAD of the running task */
	uint64_t xfeatures;
};

/* Reads the formats of sched_switch, task_newtask and every x86_fpu event
 * from the instance at base.  Fails (with one error line) without either
 * of the first two or without any x86_fpu event. */
int xf_trace_events_load(struct xf_trace_events *ev, const char *base);

/* The type of the record at payload (its common_type), or NULL for a type
 * not loaded or a record too short to say. */
struct xf_trace_event_type *xf_trace_events_find(struct xf_trace_events *ev, const uint8_t *payload,
						 size_t len);

/* Decodes payload (the record after the ring buffer's header) into *out;
 * -1 if it is shorter than the format says. */
int xf_trace_decode(const struct xf_trace_event_type *t, const uint8_t *payload, size_t len,
		    struct xf_trace_record *out);

#endif
