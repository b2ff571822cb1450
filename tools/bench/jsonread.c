/* jsonread.c - see jsonread.h.  Recursive descent, depth-limited. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/jsonread.h"

#define MAX_DEPTH 64
#define MAX_FILE  (64 << 20)

struct parser {
	const char *start, *p;
	char *err;
	size_t err_size;
	bool failed;
};

static void fail(struct parser *ps, const char *what)
{
	if (!ps->failed)
		snprintf(ps->err, ps->err_size, "%s at byte %ld", what, (long)(ps->p - ps->start));
	ps->failed = true;
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static int hex4(const char *s, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
						    : 16;
		if (d == 16)
			return -1;
		*out = *out << 4 | d;
	}
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string at ps->p (on the opening quote); a new buffer, or NULL. */
static char *parse_string(struct parser *ps)
{
	const char *s = ++ps->p;
	size_t cap = 0;
	char *out, *o;

	/* An escape never yields more bytes than it takes: the raw length bounds it. */
	while (s[cap] && s[cap] != '"')
		cap += s[cap] == '\\' && s[cap + 1] ? 2 : 1;
	out = o = malloc(cap + 1);
	if (!out) {
		fail(ps, "out of memory");
		return NULL;
	}
	while (*ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p;
		unsigned cp, lo;

		if (!c || c < 0x20) {
			fail(ps, c ? "control character in a string" : "unterminated string");
			free(out);
			return NULL;
		}
		ps->p++;
		if (c != '\\') {
			*o++ = (char)c;
			continue;
		}
		c = (unsigned char)*ps->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/': *o++ = (char)c; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (hex4(ps->p, &cp)) {
				fail(ps, "bad \\u escape");
				free(out);
				return NULL;
			}
			ps->p += 4;
			/* A surrogate pair is one code point. */
			if (cp >= 0xd800 && cp < 0xdc00 && ps->p[0] == '\\' && ps->p[1] == 'u' &&
			    !hex4(ps->p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				ps->p += 6;
			}
			o += put_utf8(o, cp);
			break;
		default:
			fail(ps, "bad escape in a string");
			free(out);
			return NULL;
		}
	}
	ps->p++;
	*o = 0;
	return out;
}

static bool parse_value(struct parser *ps, struct xf_jv *v, int depth);

static bool append(struct parser *ps, struct xf_jv *v, size_t *cap, char *key)
{
	if (v->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct xf_jv *items = realloc(v->items, ncap * sizeof(*items));
		char **keys;

		if (!items) {
			fail(ps, "out of memory");
			return false;
		}
		v->items = items;
		if (v->type == XF_JV_OBJECT) {
			keys = realloc(v->keys, ncap * sizeof(*keys));
			if (!keys) {
				fail(ps, "out of memory");
				return false;
			}
			v->keys = keys;
		}
		*cap = ncap;
	}
	memset(&v->items[v->n], 0, sizeof(v->items[v->n]));
	if (v->type == XF_JV_OBJECT)
		v->keys[v->n] = key;
	v->n++;
	return true;
}

static bool parse_container(struct parser *ps, struct xf_jv *v, int depth)
{
	const bool object = *ps->p == '{';
	const char close = object ? '}' : ']';
	size_t cap = 0;

	v->type = object ? XF_JV_OBJECT : XF_JV_ARRAY;
	ps->p++;
	skip_ws(ps);
	if (*ps->p == close) {
		ps->p++;
		return true;
	}
	for (;;) {
		char *key = NULL;
		skip_ws(ps);
		if (object) {
			if (*ps->p != '"') {
				fail(ps, "expected a member name");
				return false;
			}
			if (!(key = parse_string(ps)))
				return false;
			skip_ws(ps);
			if (*ps->p != ':') {
				free(key);
				fail(ps, "expected ':'");
				return false;
			}
			ps->p++;
		}
		if (!append(ps, v, &cap, key)) {
			free(key);
			return false;
		}
		if (!parse_value(ps, &v->items[v->n - 1], depth + 1))
			return false;
		skip_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			return true;
		}
		fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
		return false;
	}
}

static bool parse_value(struct parser *ps, struct xf_jv *v, int depth)
{
	char *end;

	memset(v, 0, sizeof(*v));
	if (depth > MAX_DEPTH) {
		fail(ps, "nested too deeply");
		return false;
	}
	skip_ws(ps);
	switch (*ps->p) {
	case '{':
	case '[': return parse_container(ps, v, depth);
	case '"':
		v->type = XF_JV_STRING;
		v->string = parse_string(ps);
		return v->string != NULL;
	case 't':
	case 'f':
	case 'n':
		if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "null", 4)) {
			v->type = *ps->p == 't' ? XF_JV_BOOL : XF_JV_NULL;
			v->boolean = *ps->p == 't';
			ps->p += 4;
			return true;
		}
		if (!strncmp(ps->p, "false", 5)) {
			v->type = XF_JV_BOOL;
			ps->p += 5;
			return true;
		}
		break;
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
			v->type = XF_JV_NUMBER;
			v->number = strtod(ps->p, &end);
			if (end != ps->p) {
				ps->p = end;
				return true;
			}
		}
		break;
	}
	fail(ps, *ps->p ? "unexpected character" : "unexpected end of input");
	return false;
}

static void free_value(struct xf_jv *v)
{
	free(v->string);
	for (size_t i = 0; i < v->n; i++) {
		free_value(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
}

void xf_jv_free(struct xf_jv *v)
{
	if (v) {
		free_value(v);
		free(v);
	}
}

struct xf_jv *xf_jv_parse(const char *text, char *err, size_t err_size)
{
	struct parser ps = {.start = text, .p = text, .err = err, .err_size = err_size};
	struct xf_jv *v = calloc(1, sizeof(*v));

	if (!v) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	if (parse_value(&ps, v, 0)) {
		skip_ws(&ps);
		if (!*ps.p)
			return v;
		fail(&ps, "text after the JSON value");
	}
	xf_jv_free(v);
	return NULL;
}

struct xf_jv *xf_jv_load(const char *path, char *err, size_t err_size)
{
	FILE *f = fopen(path, "rb");
	struct xf_jv *v;
	char *text;
	long size;

	if (!f) {
		snprintf(err, err_size, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || size > MAX_FILE ||
	    fseek(f, 0, SEEK_SET)) {
		snprintf(err, err_size, "cannot read %s: not a regular file of at most %d MiB",
			 path, MAX_FILE >> 20);
		fclose(f);
		return NULL;
	}
	text = malloc((size_t)size + 1);
	if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
		snprintf(err, err_size, "cannot read %s", path);
		free(text);
		fclose(f);
		return NULL;
	}
	fclose(f);
	text[size] = 0;
	if (strlen(text) != (size_t)size) {
		snprintf(err, err_size, "%s is not JSON: it holds a NUL byte", path);
		free(text);
		return NULL;
	}
	v = xf_jv_parse(text, err, err_size);
	free(text);
	if (!v) {
		char why[200];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, err_size, "%s is not valid JSON: %s", path, why);
	}
	return v;
}

const struct xf_jv *xf_jv_get(const struct xf_jv *v, const char *key)
{
	if (!v || v->type != XF_JV_OBJECT)
		return NULL;
	for (size_t i = 0; i < v->n; i++) {
		if (!strcmp(v->keys[i], key))
			return &v->items[i];
	}
	return NULL;
}

const char *xf_jv_str(const struct xf_jv *v, const char *key, const char *fallback)
{
	const struct xf_jv *m = xf_jv_get(v, key);

	return m && m->type == XF_JV_STRING ? m->string : fallback;
}

double xf_jv_num(const struct xf_jv *v, const char *key, double fallback)
{
	const struct xf_jv *m = xf_jv_get(v, key);

	return m && m->type == XF_JV_NUMBER ? m->number : fallback;
}
