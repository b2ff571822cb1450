/*
 * report.h - `xfiber trace` output: the text report and the --json
 * object (keys documented in docs/trace.md and `xfiber trace --help`).
 */
#ifndef XF_TOOLS_TRACE_REPORT_H
#define XF_TOOLS_TRACE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trace/events.h"
#include "trace/fpu.h"

struct xf_trace_report {
	char **command;		 /* NULL-terminated argv */
	int exit_status;	 /* what xfiber exits with: COMMAND's status, or 128+signal */
	const char *tracefs;	 /* mount point */
	bool tracefs_mounted;	 /* xfiber mounted it for the run */
	const char *instance;	 /* instance name */
	unsigned buffer_kb;	 /* per-CPU buffer */
	uint64_t events_lost;	 /* overrun + dropped + commit overrun, all CPUs */
	uint64_t records_read;	 /* records of every task, before keeping COMMAND's */
	uint64_t pages_unparsed; /* buffer pages parsing gave up on: counts too low */
	const struct xf_trace_events *events;
	const struct xf_fpu_trace *fpu; /* finished */
};

void xf_trace_report_text(FILE *out, const struct xf_trace_report *r);
void xf_trace_report_json(FILE *out, const struct xf_trace_report *r);

#endif
