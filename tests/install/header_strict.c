/* header_strict.c - xfiber.h as a strict ISO C11 compiler reads it (no GNU
 * extensions, no POSIX feature macros): built with -std=c11 -pedantic
 * -Werror by every build, so a header that needs more fails the build.
 * (<netdb.h> hides struct addrinfo there, which xf_getaddrinfo's prototype
 * once declared inside its parameter list.) */
#include <xfiber.h>

int xf_header_strict_c11(void);

int xf_header_strict_c11(void)
{
	return XF_STACK_SIZE_MIN > 0;
}
