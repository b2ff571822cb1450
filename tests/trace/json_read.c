/* json_read.c - see json_read.h. */
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "testlib.h"

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

/* The character after the string starting at the quote p. */
static const char *skip_string(const char *p)
{
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
	}
	if (*p != '"')
		xf_test_fail("JSON: unterminated string");
	return p + 1;
}

/* The character after the value starting at p. */
static const char *skip_value(const char *p)
{
	p = skip_space(p);
	if (*p == '"')
		return skip_string(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = skip_space(p + 1);
		while (*p != close) {
			if (close == '}') {
				if (*p != '"')
					xf_test_fail("JSON: expected a key at '%.20s'", p);
				p = skip_space(skip_string(p));
				if (*p++ != ':')
					xf_test_fail("JSON: expected ':'");
			}
			p = skip_space(skip_value(p));
			if (*p == ',')
				p = skip_space(p + 1);
			else if (*p != close)
				xf_test_fail("JSON: expected ',' or '%c' at '%.20s'", close, p);
		}
		return p + 1;
	}
	if (!*p || strchr(",}]:", *p))
		xf_test_fail("JSON: expected a value at '%.20s'", p);
	while (*p && !strchr(",}] \n\t\r", *p))
		p++;
	return p;
}

const char *json_member(const char *obj, const char *key)
{
	const char *p = skip_space(obj);
	size_t len = strlen(key);

	if (*p != '{')
		xf_test_fail("JSON: expected an object for key '%s'", key);
	p = skip_space(p + 1);
	while (*p == '"') {
		const char *name = p + 1, *name_end = skip_string(p), *value;

		p = skip_space(name_end);
		if (*p++ != ':')
			xf_test_fail("JSON: expected ':' after a key");
		value = skip_space(p);
		if ((size_t)(name_end - 1 - name) == len && !strncmp(name, key, len))
			return value;
		p = skip_space(skip_value(value));
		if (*p == ',')
			p = skip_space(p + 1);
	}
	return NULL;
}

const char *json_get(const char *obj, const char *key)
{
	const char *v = json_member(obj, key);

	if (!v)
		xf_test_fail("JSON: key '%s' missing", key);
	return v;
}

const char *json_element(const char *arr, size_t i)
{
	const char *p = skip_space(arr);

	if (*p != '[')
		xf_test_fail("JSON: expected an array");
	p = skip_space(p + 1);
	for (size_t n = 0; *p != ']'; n++) {
		if (n == i)
			return p;
		p = skip_space(skip_value(p));
		if (*p == ',')
			p = skip_space(p + 1);
	}
	return NULL;
}

uint64_t json_uint(const char *value)
{
	const char *p = skip_space(value);
	char *end;
	uint64_t v;

	if (*p == '"' && p[1] == '0' && p[2] == 'x')
		v = strtoull(p + 1, &end, 16);
	else if (*p >= '0' && *p <= '9')
		v = strtoull(p, &end, 10);
	else
		xf_test_fail("JSON: expected a number at '%.20s'", p);
	return v;
}

bool json_is_string(const char *value, const char *s)
{
	const char *p = skip_space(value);
	size_t len = strlen(s);

	return *p == '"' && !strncmp(p + 1, s, len) && p[len + 1] == '"';
}

uint64_t json_uint_of(const char *obj, const char *key)
{
	return json_uint(json_get(obj, key));
}
