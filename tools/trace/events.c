/* events.c - see events.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/events.h"
#include "trace/fs.h"

static const struct {
	const char *name;
	enum xf_trace_kind kind;
} fpu_kinds[] = {
    {"x86_fpu_regs_activated", XF_EV_REGS_ACTIVATED},
    {"x86_fpu_regs_deactivated", XF_EV_REGS_DEACTIVATED},
    {"x86_fpu_after_save", XF_EV_AFTER_SAVE},
    {"x86_fpu_copy_dst", XF_EV_COPY_DST},
    {"x86_fpu_dropped", XF_EV_DROPPED},
    {"x86_fpu_after_restore", XF_EV_AFTER_RESTORE},
};

/* The field a format line declares, e.g. "\tfield:char prev_comm[16];\toffset:8;\tsize:16;". */
static void parse_field_line(struct xf_trace_event_type *t, const char *line)
{
	const char *decl = strstr(line, "field:"), *semi, *name;
	unsigned offset, size;
	char fname[64];
	size_t len;

	if (!decl || !(semi = strchr(decl, ';')))
		return;
	if (sscanf(semi, "; offset:%u; size:%u;", &offset, &size) != 2)
		return;
	/* The name is the last word of the declaration, without "[16]". */
	name = semi;
	while (name > decl && name[-1] != ' ' && name[-1] != '*' && name[-1] != ':')
		name--;
	len = strcspn(name, "[;");
	if (len == 0 || len >= sizeof(fname))
		return;
	memcpy(fname, name, len);
	fname[len] = 0;

	static const struct {
		const char *name;
		size_t where;
	} known[] = {
#define FIELD(f) {#f, offsetof(struct xf_trace_event_type, f)}
	    FIELD(common_type), FIELD(common_pid),  FIELD(prev_comm), FIELD(prev_pid),
	    FIELD(prev_state),	FIELD(next_comm),   FIELD(next_pid),  FIELD(pid),
	    FIELD(comm),	FIELD(clone_flags), FIELD(load_fpu),  FIELD(xfeatures),
#undef FIELD
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (strcmp(fname, known[i].name))
			continue;
		struct xf_trace_field *f = (struct xf_trace_field *)((char *)t + known[i].where);
		f->offset = offset;
		f->size = size;
		f->present = true;
	}
}

/* Reads events/SYSTEM/NAME/format; 0 if the event exists and parsed. */
static int load_type(struct xf_trace_events *ev, const char *base, const char *system,
		     const char *name, enum xf_trace_kind kind)
{
	struct xf_trace_event_type *t;
	char rel[256], text[8192];
	const char *id;

	if (ev->ntypes >= XF_TRACE_MAX_TYPES)
		return -1;
	snprintf(rel, sizeof(rel), "events/%s/%s/format", system, name);
	if (xf_tracefs_read(base, rel, text, sizeof(text)) <= 0)
		return -1;
	id = strstr(text, "\nID: ");
	if (!id)
		return -1;
	t = &ev->types[ev->ntypes];
	memset(t, 0, sizeof(*t));
	snprintf(t->system, sizeof(t->system), "%s", system);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->id = atoi(id + 5);
	t->kind = kind;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		parse_field_line(t, line);
	if (!t->common_pid.present || !t->common_type.present)
		return -1;
	ev->ntypes++;
	return 0;
}

static enum xf_trace_kind fpu_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(fpu_kinds) / sizeof(fpu_kinds[0]); i++) {
		if (!strcmp(name, fpu_kinds[i].name))
			return fpu_kinds[i].kind;
	}
	return XF_EV_FPU_OTHER;
}

static int by_name(const void *a, const void *b)
{
	const struct xf_trace_event_type *x = a, *y = b;
	int c = strcmp(x->system, y->system);

	return c ? c : strcmp(x->name, y->name);
}

int xf_trace_events_load(struct xf_trace_events *ev, const char *base)
{
	char dirpath[4096];
	unsigned nfpu = 0;
	struct dirent *d;
	DIR *dir;

	ev->ntypes = 0;
	if (load_type(ev, base, "sched", "sched_switch", XF_EV_SCHED_SWITCH)) {
		xf_trace_error("this kernel has no sched:sched_switch tracepoint");
		return -1;
	}
	if (load_type(ev, base, "task", "task_newtask", XF_EV_TASK_NEWTASK)) {
		xf_trace_error("this kernel has no task:task_newtask tracepoint, needed to "
			       "follow COMMAND's threads and children");
		return -1;
	}

	snprintf(dirpath, sizeof(dirpath), "%s/events/x86_fpu", base);
	dir = opendir(dirpath);
	while (dir && (d = readdir(dir))) {
		if (d->d_name[0] == '.' || !strcmp(d->d_name, "enable") ||
		    !strcmp(d->d_name, "filter"))
			continue;
		if (load_type(ev, base, "x86_fpu", d->d_name, fpu_kind(d->d_name)) == 0)
			nfpu++;
	}
	if (dir)
		closedir(dir);
	if (!nfpu) {
		xf_trace_error("this kernel has no x86_fpu tracepoints (%s is %s)", dirpath,
			       dir ? "empty" : "missing");
		return -1;
	}
	qsort(ev->types, ev->ntypes, sizeof(ev->types[0]), by_name);
	return 0;
}

/* Little-endian integer of 1, 2, 4 or 8 bytes, sign-extended if asked. */
static int64_t field_int(const struct xf_trace_field *f, const uint8_t *p, bool is_signed)
{
	switch (f->size) {
	case 1: return is_signed ? (int64_t)(int8_t)p[f->offset] : (int64_t)p[f->offset];
	case 2: {
		uint16_t v;
		memcpy(&v, p + f->offset, 2);
		return is_signed ? (int64_t)(int16_t)v : (int64_t)v;
	}
	case 4: {
		uint32_t v;
		memcpy(&v, p + f->offset, 4);
		return is_signed ? (int64_t)(int32_t)v : (int64_t)v;
	}
	case 8: {
		int64_t v;
		memcpy(&v, p + f->offset, 8);
		return v;
	}
	default: return 0;
	}
}

static void field_comm(const struct xf_trace_field *f, const uint8_t *p, char *out)
{
	size_t n = f->size < XF_TRACE_COMM_LEN - 1 ? f->size : XF_TRACE_COMM_LEN - 1;

	memcpy(out, p + f->offset, n);
	out[n] = 0;
}

static bool fits(const struct xf_trace_field *f, size_t len)
{
	return !f->present || ((size_t)f->offset + f->size <= len);
}

int xf_trace_decode(const struct xf_trace_event_type *t, const uint8_t *payload, size_t len,
		    struct xf_trace_record *out)
{
	const struct xf_trace_field *all[] = {
	    &t->common_pid,  &t->prev_comm, &t->prev_pid,  &t->prev_state,
	    &t->next_comm,   &t->next_pid,  &t->pid,	   &t->comm,
	    &t->clone_flags, &t->load_fpu,  &t->xfeatures,
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!fits(all[i], len))
			return -1;
	}
	memset(out, 0, sizeof(*out));
	out->kind = t->kind;
	out->pid = (int)field_int(&t->common_pid, payload, true);
	if (t->prev_pid.present)
		out->prev_pid = (int)field_int(&t->prev_pid, payload, true);
	if (t->next_pid.present)
		out->next_pid = (int)field_int(&t->next_pid, payload, true);
	if (t->prev_state.present)
		out->prev_state = field_int(&t->prev_state, payload, true);
	if (t->prev_comm.present)
		field_comm(&t->prev_comm, payload, out->prev_comm);
	if (t->next_comm.present)
		field_comm(&t->next_comm, payload, out->next_comm);
	if (t->pid.present)
		out->child_pid = (int)field_int(&t->pid, payload, true);
	if (t->comm.present)
		field_comm(&t->comm, payload, out->comm);
	if (t->clone_flags.present)
		out->clone_flags = (uint64_t)field_int(&t->clone_flags, payload, false);
	out->has_load_fpu = t->load_fpu.present;
	if (t->load_fpu.present)
		out->load_fpu = field_int(&t->load_fpu, payload, false) != 0;
	if (t->xfeatures.present)
		out->xfeatures = (uint64_t)field_int(&t->xfeatures, payload, false);
	return 0;
}

struct xf_trace_event_type *xf_trace_events_find(struct xf_trace_events *ev, const uint8_t *payload,
						 size_t len)
{
	/* Every event has the same common fields, so any type says where the id is. */
	const struct xf_trace_field *type = &ev->types[0].common_type;
	int id;

	if (!ev->ntypes || !fits(type, len))
		return NULL;
	id = (int)field_int(type, payload, false);
	for (unsigned i = 0; i < ev->ntypes; i++) {
		if (ev->types[i].id == id)
			return &ev->types[i];
	}
	return NULL;
}
