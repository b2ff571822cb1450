/* report.c - see report.h. */
#include <inttypes.h>
#include <string.h>

#include "common/json.h"
#include "trace/report.h"
#include "xfiber.h"

/* The library's name for an XCR0 component; NULL for others. */
static const char *component_name(const xf_xstate_info *info, unsigned bit)
{
	for (unsigned i = 0; i < info->ncomponents; i++) {
		if (info->components[i].bit == bit)
			return info->components[i].name;
	}
	return NULL;
}

static void print_components(FILE *out, const xf_xstate_info *info, uint64_t xfeatures)
{
	const char *sep = "";

	for (unsigned bit = 0; bit < 64; bit++) {
		const char *name = component_name(info, bit);

		if (!(xfeatures & XF_XFEATURE_MASK(bit)))
			continue;
		if (name)
			fprintf(out, "%s%s", sep, name);
		else
			fprintf(out, "%scomponent %u", sep, bit);
		sep = ", ";
	}
	if (!*sep)
		fprintf(out, "none (all in init state)");
}

static void print_event_names(FILE *out, const struct xf_trace_events *ev)
{
	for (unsigned i = 0; i < ev->ntypes; i++)
		fprintf(out, "%s%s", i ? " " : "", ev->types[i].name);
}

static void print_task_row(FILE *out, const char *pid, const char *tid, const char *comm,
			   const struct xf_fpu_counts *c)
{
	fprintf(out,
		"%7s %7s %-16s %9" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		" %9" PRIu64 " %12" PRIu64 "\n",
		pid, tid, comm, c->context_switches, xf_fpu_saves(c), c->saves_skipped,
		c->fpu_loads, c->no_load_registers_valid, c->no_load_not_returned, c->bytes_saved);
}

void xf_trace_report_text(FILE *out, const struct xf_trace_report *r)
{
	const struct xf_fpu_trace *t = r->fpu;
	const struct xf_fpu_counts *c = &t->totals;
	xf_xstate_info info;
	char pid[16], tid[16];

	xf_xstate_info_get(&info);
	fprintf(out, "xfiber trace:");
	for (char **a = r->command; *a; a++)
		fprintf(out, " %s", *a);
	if (r->exit_status > 128)
		fprintf(out, "  (killed by signal %d)\n", r->exit_status - 128);
	else
		fprintf(out, "  (exit status %d)\n", r->exit_status);
	fprintf(out, "tracepoints   ");
	print_event_names(out, r->events);
	fprintf(out,
		"\nevents lost   %" PRIu64 "%s (%u KB buffer per CPU, %" PRIu64
		" records read from all tasks)\n\n",
		r->events_lost, r->events_lost ? ": the counts below are too low" : "",
		r->buffer_kb, r->records_read);

	fprintf(out, "%7s %7s %-16s %9s %8s %8s %8s %8s %9s %12s\n", "pid", "tid", "comm",
		"switches", "saves", "skipped", "loads", "no-load", "no-load", "bytes");
	fprintf(out, "%7s %7s %-16s %9s %8s %8s %8s %8s %9s %12s\n", "", "", "", "", "", "", "",
		"valid", "in-kernel", "saved");
	for (size_t i = 0; i < t->ntasks; i++) {
		const struct xf_fpu_task *k = &t->tasks[i];

		snprintf(pid, sizeof(pid), "%d", k->pid);
		snprintf(tid, sizeof(tid), "%d", k->tid);
		print_task_row(out, k->pid < 0 ? "?" : pid, tid, k->comm, &k->c);
	}
	print_task_row(out, "total", "", "", c);

	fprintf(out, "\n%zu task%s: %" PRIu64 " context switches\n", t->ntasks,
		t->ntasks == 1 ? "" : "s", c->context_switches);
	fprintf(out,
		"  FPU saves            %9" PRIu64 "  (%" PRIu64 " at switch-out, %" PRIu64
		" at fork, %" PRIu64 " on demand; %" PRIu64 " bytes)\n",
		xf_fpu_saves(c), c->saves_at_switch, c->saves_at_fork, c->saves_on_demand,
		c->bytes_saved);
	fprintf(out,
		"  skipped saves        %9" PRIu64
		"  (switch-outs with the registers already saved)\n",
		c->saves_skipped);
	fprintf(out,
		"  FPU loads            %9" PRIu64 "  (%" PRIu64 " bytes; %" PRIu64
		" more set in place by signal delivery or sigreturn)\n",
		c->fpu_loads, c->bytes_loaded, c->set_in_place);
	fprintf(out,
		"  switches, no load    %9" PRIu64 "  (%" PRIu64 " registers still valid, %" PRIu64
		" not returned to user space; %" PRIu64 " with a load, %" PRIu64 " unclassified)\n",
		xf_fpu_switches_without_load(c), c->no_load_registers_valid,
		c->no_load_not_returned, c->switches_with_load, c->switches_unclassified);
	fprintf(out, "  saves with AVX-512   %9" PRIu64 "\n  saves with AMX       %9" PRIu64 "\n",
		c->saves_with_avx512, c->saves_with_amx);
	fprintf(out, "  registers dropped    %9" PRIu64 "  (at exit)\n", c->drops);

	fprintf(out, "\nsaves by xfeatures (the components each save wrote)\n");
	fprintf(out, "  %-12s %9s %11s %14s  %s\n", "xfeatures", "saves", "bytes/save", "bytes",
		"components");
	for (size_t i = 0; i < t->nbins; i++) {
		const struct xf_fpu_xfeatures_bin *b = &t->bins[i];

		fprintf(out, "  0x%-10" PRIx64 " %9" PRIu64 " %11" PRIu64 " %14" PRIu64 "  ",
			b->xfeatures, b->saves, b->bytes_per_save, b->saves * b->bytes_per_save);
		print_components(out, &info, b->xfeatures);
		fputc('\n', out);
	}
	if (!t->nbins)
		fprintf(out, "  (no saves)\n");
}

static void json_counts(struct xf_json *j, const struct xf_fpu_counts *c)
{
	xf_json_uint(j, "context_switches", c->context_switches);
	xf_json_uint(j, "fpu_saves", xf_fpu_saves(c));
	xf_json_uint(j, "saves_at_switch", c->saves_at_switch);
	xf_json_uint(j, "saves_at_fork", c->saves_at_fork);
	xf_json_uint(j, "saves_on_demand", c->saves_on_demand);
	xf_json_uint(j, "saves_skipped", c->saves_skipped);
	xf_json_uint(j, "fpu_loads", c->fpu_loads);
	xf_json_uint(j, "registers_set_in_place", c->set_in_place);
	xf_json_uint(j, "switches_with_load", c->switches_with_load);
	xf_json_uint(j, "switches_without_load", xf_fpu_switches_without_load(c));
	xf_json_uint(j, "no_load_registers_valid", c->no_load_registers_valid);
	xf_json_uint(j, "no_load_not_returned_to_user", c->no_load_not_returned);
	xf_json_uint(j, "switches_unclassified", c->switches_unclassified);
	xf_json_uint(j, "fpu_drops", c->drops);
	xf_json_uint(j, "bytes_saved", c->bytes_saved);
	xf_json_uint(j, "bytes_loaded", c->bytes_loaded);
	xf_json_uint(j, "saves_with_avx512", c->saves_with_avx512);
	xf_json_uint(j, "saves_with_amx", c->saves_with_amx);
}

void xf_trace_report_json(FILE *out, const struct xf_trace_report *r)
{
	const struct xf_fpu_trace *t = r->fpu;
	xf_xstate_info info;
	struct xf_json j;

	xf_xstate_info_get(&info);
	xf_json_init(&j, out);
	xf_json_begin_object(&j, NULL);
	xf_json_begin_array(&j, "command");
	for (char **a = r->command; *a; a++)
		xf_json_string(&j, NULL, *a);
	xf_json_end_array(&j);
	xf_json_int(&j, "exit_status", r->exit_status);
	xf_json_string(&j, "tracefs", r->tracefs);
	xf_json_bool(&j, "tracefs_mounted_by_xfiber", r->tracefs_mounted);
	xf_json_string(&j, "instance", r->instance);
	xf_json_uint(&j, "buffer_size_kb", r->buffer_kb);
	xf_json_begin_array(&j, "events_available");
	for (unsigned i = 0; i < r->events->ntypes; i++) {
		char name[96];

		snprintf(name, sizeof(name), "%s:%s", r->events->types[i].system,
			 r->events->types[i].name);
		xf_json_string(&j, NULL, name);
	}
	xf_json_end_array(&j);
	xf_json_uint(&j, "events_lost", r->events_lost);
	xf_json_uint(&j, "records_read", r->records_read);
	xf_json_uint(&j, "pages_unparsed", r->pages_unparsed);

	xf_json_begin_object(&j, "totals");
	xf_json_uint(&j, "tasks", t->ntasks);
	json_counts(&j, &t->totals);
	xf_json_end_object(&j);

	xf_json_begin_array(&j, "tasks");
	for (size_t i = 0; i < t->ntasks; i++) {
		const struct xf_fpu_task *k = &t->tasks[i];

		xf_json_begin_object(&j, NULL);
		if (k->pid < 0)
			xf_json_null(&j, "pid");
		else
			xf_json_int(&j, "pid", k->pid);
		xf_json_int(&j, "tid", k->tid);
		xf_json_string(&j, "comm", k->comm);
		json_counts(&j, &k->c);
		xf_json_end_object(&j);
	}
	xf_json_end_array(&j);

	xf_json_begin_array(&j, "xfeatures_histogram");
	for (size_t i = 0; i < t->nbins; i++) {
		const struct xf_fpu_xfeatures_bin *b = &t->bins[i];

		xf_json_begin_object(&j, NULL);
		xf_json_hex(&j, "xfeatures", b->xfeatures);
		xf_json_begin_array(&j, "components");
		for (unsigned bit = 0; bit < 64; bit++) {
			char other[32];
			const char *name = component_name(&info, bit);

			if (!(b->xfeatures & XF_XFEATURE_MASK(bit)))
				continue;
			snprintf(other, sizeof(other), "component %u", bit);
			xf_json_string(&j, NULL, name ? name : other);
		}
		xf_json_end_array(&j);
		xf_json_uint(&j, "saves", b->saves);
		xf_json_uint(&j, "bytes_per_save", b->bytes_per_save);
		xf_json_uint(&j, "bytes", b->saves * b->bytes_per_save);
		xf_json_end_object(&j);
	}
	xf_json_end_array(&j);
	xf_json_end_object(&j);
}
