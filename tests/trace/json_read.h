/*
 * json_read.h - just enough JSON reading for the trace tests: walk an
 * object's members or an array's elements, and read numbers and strings.
 * Every function takes a pointer to a value's first character; on text
 * that is not JSON the test fails with a message rather than guess.
 */
#ifndef XF_TESTS_TRACE_JSON_READ_H
#define XF_TESTS_TRACE_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of member key of the object at obj, or NULL if it has none. */
const char *json_member(const char *obj, const char *key);
/* Like json_member, but a missing key fails the test. */
const char *json_get(const char *obj, const char *key);
/* Element i of the array at arr, or NULL past its end. */
const char *json_element(const char *arr, size_t i);
/* A number, or a hex string "0x..."; anything else fails the test. */
uint64_t json_uint(const char *value);
/* True if value is the string s. */
bool json_is_string(const char *value, const char *s);
/* Shorthand: json_uint(json_get(obj, key)). */
uint64_t json_uint_of(const char *obj, const char *key);

#endif
