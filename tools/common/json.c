/* json.c - see json.h. */
#include <inttypes.h>
#include <math.h>

#include "common/json.h"

void xf_json_init(struct xf_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->need_comma[0] = false;
}

static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* Comma, newline, indentation and "key": before any value. */
static void begin_value(struct xf_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->out);
	if (j->depth > 0) {
		fputc('\n', j->out);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->out);
	}
	j->need_comma[j->depth] = true;
	if (key) {
		put_string(j->out, key);
		fputs(": ", j->out);
	}
}

static void open_container(struct xf_json *j, const char *key, char c)
{
	begin_value(j, key);
	fputc(c, j->out);
	if (j->depth + 1 < (int)(sizeof(j->need_comma) / sizeof(j->need_comma[0])))
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_container(struct xf_json *j, char c)
{
	bool had_items = j->need_comma[j->depth];

	j->depth--;
	if (had_items) {
		fputc('\n', j->out);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->out);
	}
	fputc(c, j->out);
	if (j->depth == 0)
		fputc('\n', j->out);
}

void xf_json_begin_object(struct xf_json *j, const char *key)
{
	open_container(j, key, '{');
}
void xf_json_end_object(struct xf_json *j)
{
	close_container(j, '}');
}
void xf_json_begin_array(struct xf_json *j, const char *key)
{
	open_container(j, key, '[');
}
void xf_json_end_array(struct xf_json *j)
{
	close_container(j, ']');
}

void xf_json_string(struct xf_json *j, const char *key, const char *value)
{
	begin_value(j, key);
	if (value)
		put_string(j->out, value);
	else
		fputs("null", j->out);
}

void xf_json_uint(struct xf_json *j, const char *key, uint64_t value)
{
	begin_value(j, key);
	fprintf(j->out, "%" PRIu64, value);
}

void xf_json_int(struct xf_json *j, const char *key, int64_t value)
{
	begin_value(j, key);
	fprintf(j->out, "%" PRId64, value);
}

void xf_json_double(struct xf_json *j, const char *key, double value)
{
	begin_value(j, key);
	if (isfinite(value))
		fprintf(j->out, "%.17g", value);
	else
		fputs("null", j->out); /* JSON has no NaN or infinity */
}

void xf_json_bool(struct xf_json *j, const char *key, bool value)
{
	begin_value(j, key);
	fputs(value ? "true" : "false", j->out);
}

void xf_json_hex(struct xf_json *j, const char *key, uint64_t value)
{
	begin_value(j, key);
	fprintf(j->out, "\"0x%" PRIx64 "\"", value);
}

void xf_json_null(struct xf_json *j, const char *key)
{
	begin_value(j, key);
	fputs("null", j->out);
}
