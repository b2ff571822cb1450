/*
 * test_json.c - `xfiber info --json` agrees with CPUID, XGETBV and
 * getauxval read here, independently of the library.
 *
 * usage: test_json PATH-TO-xfiber
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testlib.h"

static char json[1 << 16];

/* The text after "key": in json (from *from on), or fail. */
static const char *value_of(const char *from, const char *key)
{
	char pattern[64];
	const char *p;

	snprintf(pattern, sizeof(pattern), "\"%s\": ", key);
	p = strstr(from, pattern);
	if (!p)
		xf_test_fail("key '%s' missing from xfiber info --json", key);
	return p + strlen(pattern);
}

static uint64_t number_of(const char *from, const char *key)
{
	const char *v = value_of(from, key);

	if (*v == '"')
		return strtoull(v + 1, NULL, 0); /* hex strings such as "0x600e7" */
	return strtoull(v, NULL, 10);
}

static uint64_t xgetbv(uint32_t index)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(index));
	return ((uint64_t)hi << 32) | lo;
}

int main(int argc, char **argv)
{
	unsigned eax, ebx, ecx, edx;
	uint64_t xcr0, perm = 0;
	uint32_t compacted = 576, want_std;
	char cmd[4096];
	const char *p;
	size_t n;
	FILE *f;

	if (argc != 2)
		xf_test_fail("usage: test_json PATH-TO-xfiber");
	__cpuid(1, eax, ebx, ecx, edx);
	if (!(ecx & bit_OSXSAVE))
		xf_test_skip("no XSAVE enabled by the OS: nothing to compare against");
	snprintf(cmd, sizeof(cmd), "%s info --json", argv[1]);
	f = popen(cmd, "r");
	CHECK(f);
	n = fread(json, 1, sizeof(json) - 1, f);
	json[n] = 0;
	CHECK(pclose(f) == 0);

	xcr0 = xgetbv(0);
	if (number_of(json, "xcr0") != xcr0)
		xf_test_fail("xcr0 %s vs XGETBV(0) 0x%" PRIx64, value_of(json, "xcr0"), xcr0);
	CHECK((number_of(json, "xinuse") & ~xcr0) == 0);
	__cpuid_count(0xd, 0, eax, want_std, ecx, edx);
	if (number_of(json, "xsave_size_standard") != want_std)
		xf_test_fail("standard size %" PRIu64 " vs CPUID(0xD,0).EBX %u",
			     number_of(json, "xsave_size_standard"), want_std);
	if (number_of(json, "min_sigstksz") != getauxval(AT_MINSIGSTKSZ))
		xf_test_fail("min_sigstksz %" PRIu64 " vs getauxval %lu",
			     number_of(json, "min_sigstksz"), getauxval(AT_MINSIGSTKSZ));
	syscall(SYS_arch_prctl, 0x1022 /* ARCH_GET_XCOMP_PERM */, &perm);
	{
		const uint64_t amx = (1u << 17) | (1u << 18);
		const char *v = value_of(json, "amx_permitted");
		int permitted = (xcr0 & amx) == amx && (perm & amx) == amx;
		if (strncmp(v, permitted ? "true" : "false", permitted ? 4 : 5))
			xf_test_fail("amx_permitted %.5s, ARCH_GET_XCOMP_PERM 0x%" PRIx64, v, perm);
	}
	CHECK(strncmp(value_of(json, "strategy"), "\"xsavec\"", 8) == 0 ||
	      strncmp(value_of(json, "strategy"), "\"xsaveopt\"", 10) == 0);

	/* Every enabled component, in bit order, with CPUID's size and offset. */
	p = value_of(json, "components");
	for (unsigned bit = 0; bit < 64; bit++) {
		uint32_t size, offset;

		if (!(xcr0 & (UINT64_C(1) << bit)))
			continue;
		if (bit < 2) {
			size = bit ? 256 : 160;
			offset = bit ? 160 : 0;
		} else {
			__cpuid_count(0xd, bit, eax, ebx, ecx, edx);
			size = eax;
			offset = ebx;
			if (ecx & 2)
				compacted = (compacted + 63) & ~63u;
			compacted += size;
		}
		p = strstr(p, "\"bit\": ");
		if (!p)
			xf_test_fail("component %u missing from the list", bit);
		if (number_of(p, "bit") != bit)
			xf_test_fail("component list: expected bit %u, found %" PRIu64, bit,
				     number_of(p, "bit"));
		if (number_of(p, "size") != size || number_of(p, "offset") != offset)
			xf_test_fail(
			    "component %u: size/offset %" PRIu64 "/%" PRIu64 ", CPUID says %u/%u",
			    bit, number_of(p, "size"), number_of(p, "offset"), size, offset);
		p++;
	}
	if (strstr(p, "\"bit\": "))
		xf_test_fail("components lists more than XCR0 enables");
	if (number_of(json, "xsave_size_compacted") != compacted)
		xf_test_fail("compacted size %" PRIu64 ", computed %u",
			     number_of(json, "xsave_size_compacted"), compacted);
	printf("xfiber info --json agrees with CPUID, XGETBV and getauxval\n");
	return 0;
}
