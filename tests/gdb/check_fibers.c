/*
 * check_fibers.c - reads what gdb printed about runtime_fiber_states (its
 * `info fibers` table, then `fiber apply all bt`) and checks that the gdb
 * extension told the truth: all 100 fibers, each in a state its kind
 * allows, in its own function, and each backtrace running down through
 * that function to the fiber's start - a preempted one's through the
 * kernel's signal frame.
 *
 * usage: check_fibers GDB_OUTPUT
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fiber_states.h"
#include "testlib.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		xf_test_fail("cannot read %s", path);
	if (getdelim(&buf, &len, '\0', f) < 0)
		xf_test_fail("%s is empty", path);
	fclose(f);
	return buf;
}

/* The table row of fiber `name`: "  ID  NAME  STATE ... FUNCTION". */
static __attribute__((noinline)) char *table_row(const char *out, const char *name)
{
	static char key[96]; /* static: gcc 12 takes strstr's result for a pointer into it */
	const char *at = out;
	size_t n;

	snprintf(key, sizeof(key), " %s ", name);
	while ((at = strstr(at, key))) {
		const char *line = at;

		while (line > out && line[-1] != '\n')
			line--;
		/* Rows start with the selection mark and the id. */
		if (line[0] == ' ' || line[0] == '*') {
			n = strcspn(line, "\n");
			return strndup(line, n);
		}
		at += strlen(key);
	}
	return NULL;
}

/* The `fiber apply all bt` section of fiber `name`. */
static __attribute__((noinline)) char *bt_section(const char *out, const char *name)
{
	static char key[96]; /* static: gcc 12 takes strstr's result for a pointer into it */
	const char *at, *end;

	snprintf(key, sizeof(key), " \"%s\" (", name);
	at = strstr(out, key);
	if (!at)
		return NULL;
	end = strstr(at + 1, "\nFiber ");
	return strndup(at, end ? (size_t)(end - at) : strlen(at));
}

static int state_allowed(const char *row, const char *allowed)
{
	while (*allowed) {
		size_t n = strcspn(allowed, "|");
		char want[64];

		snprintf(want, sizeof(want), " %.*s", (int)n, allowed);
		if (strstr(row, want))
			return 1;
		allowed += n + (allowed[n] == '|');
	}
	return 0;
}

int main(int argc, char **argv)
{
	char *out, *row, *bt;
	unsigned preempted = 0, rows = 0;
	char entry[64];

	if (argc != 2) {
		fprintf(stderr, "usage: %s GDB_OUTPUT\n", argv[0]);
		return 2;
	}
	out = slurp(argv[1]);
	row = table_row(out, "main");
	if (!row || !strstr(row, " running ") ||
	    (!strstr(row, " states_ready") && !strstr(row, " main")))
		xf_test_fail("main's row: %s", row ? row : "missing");
	free(row);
	for (unsigned k = 0; fiber_kinds[k].name; k++)
		for (unsigned i = 0; i < fiber_kinds[k].count; i++) {
			char name[64];

			snprintf(name, sizeof(name), "%s-%u", fiber_kinds[k].name, i);
			snprintf(entry, sizeof(entry), " %s_main", fiber_kinds[k].name);
			row = table_row(out, name);
			if (!row)
				xf_test_fail("no row for %s in info fibers", name);
			rows++;
			if (!state_allowed(row, fiber_kinds[k].states))
				xf_test_fail("%s: state not %s: %s", name, fiber_kinds[k].states, row);
			if (!strstr(row, entry))
				xf_test_fail("%s: function not%s: %s", name, entry, row);
			bt = bt_section(out, name);
			if (!bt)
				xf_test_fail("no backtrace of %s", name);
			/* Its own frames, down to where it started. */
			strcat(entry, " (");
			if (!strstr(bt, entry) || !strstr(bt, "xf__fiber_start"))
				xf_test_fail("%s: backtrace lacks%s or xf__fiber_start:\n%s", name, entry,
					     bt);
			if (strstr(row, " preempted ")) {
				preempted++;
				if (!strstr(bt, "<signal handler called>"))
					xf_test_fail("%s: preempted, but no signal frame:\n%s", name, bt);
			}
			free(bt);
			free(row);
		}
	if (preempted < 2)
		xf_test_fail("%u preempted fibers, expected at least 2", preempted);
	printf("%u fibers and main: states, functions and backtraces as set up; %u preempted\n",
	       rows, preempted);
	free(out);
	return 0;
}
