/*
 * json.h - a small streaming JSON writer for the tools' --json output.
 * Commas and indentation are handled here; callers name keys and values.
 */
#ifndef XF_TOOLS_COMMON_JSON_H
#define XF_TOOLS_COMMON_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct xf_json {
	FILE *out;
	int depth;
	bool need_comma[32];
};

void xf_json_init(struct xf_json *j, FILE *out);
void xf_json_begin_object(struct xf_json *j, const char *key); /* key NULL inside arrays */
void xf_json_end_object(struct xf_json *j);
void xf_json_begin_array(struct xf_json *j, const char *key);
void xf_json_end_array(struct xf_json *j);
void xf_json_string(struct xf_json *j, const char *key, const char *value); /* NULL -> null */
void xf_json_uint(struct xf_json *j, const char *key, uint64_t value);
void xf_json_int(struct xf_json *j, const char *key, int64_t value);
void xf_json_double(struct xf_json *j, const char *key, double value);
void xf_json_bool(struct xf_json *j, const char *key, bool value);
void xf_json_hex(struct xf_json *j, const char *key, uint64_t value); /* "0x..." string */
void xf_json_null(struct xf_json *j, const char *key);

#endif
