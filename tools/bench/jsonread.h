/*
 * jsonread.h - a small JSON reader for `xfiber bench compare`: the
 * whole document becomes a tree of values (common/json.h writes; this reads).
 */
#ifndef XF_TOOLS_BENCH_JSONREAD_H
#define XF_TOOLS_BENCH_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>

enum xf_jv_type { XF_JV_NULL, XF_JV_BOOL, XF_JV_NUMBER, XF_JV_STRING, XF_JV_ARRAY, XF_JV_OBJECT };

struct xf_jv {
	enum xf_jv_type type;
	bool boolean;
	double number;
	char *string;	     /* XF_JV_STRING, NUL-terminated UTF-8 */
	size_t n;	     /* items of an array, members of an object */
	struct xf_jv *items; /* array items, or object member values */
	char **keys;	     /* object member names */
};

/* Parses text; NULL with a one-line reason (and where) in err. */
struct xf_jv *xf_jv_parse(const char *text, char *err, size_t err_size);
/* Reads and parses a file; NULL with a one-line reason in err. */
struct xf_jv *xf_jv_load(const char *path, char *err, size_t err_size);
void xf_jv_free(struct xf_jv *v);

/* An object's member, or NULL (also when v is not an object). */
const struct xf_jv *xf_jv_get(const struct xf_jv *v, const char *key);
/* A member's string or number, or the fallback when absent or of another type. */
const char *xf_jv_str(const struct xf_jv *v, const char *key, const char *fallback);
double xf_jv_num(const struct xf_jv *v, const char *key, double fallback);

#endif
