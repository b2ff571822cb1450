/*
 * test_state.c - per-fiber state: MXCSR and the x87 control word across
 * switches and migrations, errno across blocking switches, fiber-local
 * storage and its destructors.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "testlib.h"
#include "xfiber.h"

#define FIBERS 8
#define ROUNDS 20000

static uint32_t get_mxcsr(void)
{
	uint32_t v;
	__asm__ volatile("stmxcsr %0" : "=m"(v));
	return v;
}

static void set_mxcsr(uint32_t v)
{
	__asm__ volatile("ldmxcsr %0" ::"m"(v));
}

static uint16_t get_fcw(void)
{
	uint16_t v;
	__asm__ volatile("fnstcw %0" : "=m"(v));
	return v;
}

static void set_fcw(uint16_t v)
{
	__asm__ volatile("fldcw %0" ::"m"(v));
}

/* MXCSR's control bits, which a switch keeps per fiber; its six exception
 * flags are caller-saved under the ABI, and pass from fiber to fiber. */
#define MXCSR_CONTROL 0xffc0u
#define MXCSR_INEXACT 0x20u

static atomic_uint migrations;

/* Raises "inexact" in MXCSR, as most floating-point code does sooner or later. */
static void raise_inexact(void)
{
	volatile double third = 1.0;

	third /= 3.0;
}

static void *control_words(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	/* Rounding mode, FTZ, DAZ; precision and rounding control: all differ.
	 * Fibers i and i + 2 of one parity differ in DAZ alone for some i,
	 * however the workers share them out. */
	static const uint32_t mxcsr_of[FIBERS] = {0x1f80, 0x3f80, 0x1fc0, 0x5f80,
						  0x9f80, 0x7f80, 0x9fc0, 0x7fc0};
	uint32_t mxcsr = mxcsr_of[i];
	uint16_t fcw = (uint16_t)(0x007f | ((i & 3) << 8) | (((i >> 2) & 3) << 10));
	int worker = xf_worker_id();

	set_mxcsr(mxcsr);
	set_fcw(fcw);
	for (int r = 0; r < ROUNDS; r++) {
		/* Half the fibers raise a flag, so that the fibers a switch goes
		 * between differ in their flags as well as their control bits. */
		if (i & 1) {
			raise_inexact();
			if (!(get_mxcsr() & MXCSR_INEXACT))
				xf_test_fail("fiber %u: 1/3 did not raise inexact", i);
		}
		if (r % 4 == 0)
			xf_yield();
		else if (r % 997 == 0)
			xf_sleep_ns(1000);
		if ((get_mxcsr() & MXCSR_CONTROL) != mxcsr)
			xf_test_fail("fiber %u: MXCSR 0x%x, expected control bits 0x%x (round %d)",
				     i, get_mxcsr(), mxcsr, r);
		if (get_fcw() != fcw)
			xf_test_fail("fiber %u: x87 CW 0x%x, expected 0x%x (round %d)", i,
				     get_fcw(), fcw, r);
		if (xf_worker_id() != worker) {
			atomic_fetch_add(&migrations, 1);
			worker = xf_worker_id();
		}
		for (volatile int k = 0; k < 100; k++)
			;
	}
	return NULL;
}

static xf_sem errno_sem = XF_SEM_INITIALIZER(0);

/*
 * __errno_location() is declared const, so within one function the compiler
 * may compute &errno once and keep it across xf_yield() - and a fiber that
 * migrated would then use the previous worker's errno.  A fiber that may
 * migrate reads errno through a function the compiler cannot see into
 * (noipa), or is pinned.  The runtime's part - saving and restoring errno
 * with every switch - is what this test checks.
 */
static __attribute__((noipa)) int errno_get(void)
{
	return errno;
}

static __attribute__((noipa)) void errno_set(int v)
{
	errno = v;
}

static void switch_somehow(int r)
{
	switch (r % 3) {
	case 0: xf_yield(); break;
	case 1: xf_sleep_ns(500); break;
	default:
		xf_sem_post(&errno_sem);
		xf_sem_wait(&errno_sem);
		break;
	}
}

static void *errno_keeper(void *arg)
{
	int mine = 1000 + (int)(uintptr_t)arg;

	for (int r = 0; r < 2000; r++) {
		errno_set(mine);
		switch_somehow(r);
		if (errno_get() != mine)
			xf_test_fail("fiber errno %d, expected %d after a switch", errno_get(),
				     mine);
	}
	return NULL;
}

/* Pinned, plain errno is safe: the fiber never changes threads. */
static void *errno_keeper_pinned(void *arg)
{
	int mine = 2000 + (int)(uintptr_t)arg;

	for (int r = 0; r < 2000; r++) {
		errno = mine;
		switch_somehow(r);
		if (errno != mine)
			xf_test_fail("fiber errno %d, expected %d after a switch", errno, mine);
	}
	return NULL;
}

static xf_key key;
static atomic_int destructed;

static void count_destructor(void *value)
{
	CHECK(value != NULL);
	atomic_fetch_add(&destructed, 1);
}

static void *fls_user(void *arg)
{
	CHECK(xf_getspecific(key) == NULL);
	CHECK_ERR(xf_setspecific(key, arg), 0);
	for (int i = 0; i < 100; i++) {
		xf_yield();
		if (xf_getspecific(key) != arg)
			xf_test_fail("fiber-local value changed under a switch");
	}
	return NULL;
}

int main(void)
{
	xf_fiber *f[FIBERS];
	uint32_t mxcsr0 = get_mxcsr();
	uint16_t fcw0 = get_fcw();
	xf_key k2;

	CHECK_ERR(xf_init(&(xf_config){.workers = 2}), 0);
	/* Until some fiber has changed workers mid-run (an idle worker's
	 * steal): whether one does in a given round depends on timing. */
	for (int tries = 0; tries < 200 && (!tries || !atomic_load(&migrations)); tries++) {
		for (int i = 0; i < FIBERS; i++)
			CHECK_ERR(xf_spawn(&f[i], control_words, (void *)(uintptr_t)i, NULL), 0);
		for (int i = 0; i < FIBERS; i++)
			CHECK_ERR(xf_join(f[i], NULL), 0);
	}
	CHECK((get_mxcsr() & MXCSR_CONTROL) == (mxcsr0 & MXCSR_CONTROL) && get_fcw() == fcw0);
	printf("MXCSR and x87 CW intact in %d fibers; %u migrations seen\n", FIBERS,
	       atomic_load(&migrations));
	if (!atomic_load(&migrations))
		xf_test_fail("no fiber migrated: the migration case went untested");

	errno = 7;
	for (int i = 0; i < FIBERS; i++) {
		xf_attr attr = XF_ATTR_INIT;
		attr.pinned = i % 2;
		attr.worker = i % 4 < 2 ? 0 : 1;
		CHECK_ERR(xf_spawn(&f[i], attr.pinned ? errno_keeper_pinned : errno_keeper,
				   (void *)(uintptr_t)i, &attr),
			  0);
	}
	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK(errno == 7);
	printf("errno kept per fiber across yield, sleep and semaphore waits\n");

	CHECK_ERR(xf_key_create(&key, count_destructor), 0);
	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_spawn(&f[i], fls_user, (void *)(uintptr_t)(i + 1), NULL), 0);
	for (int i = 0; i < FIBERS; i++)
		CHECK_ERR(xf_join(f[i], NULL), 0);
	CHECK(atomic_load(&destructed) == FIBERS);
	CHECK_ERR(xf_setspecific(key, &k2), 0); /* the first fiber too */
	CHECK(xf_getspecific(key) == &k2);
	CHECK_ERR(xf_key_delete(key), 0);
	CHECK(xf_getspecific(key) == NULL); /* deleted: the old value is gone */
	CHECK_ERR(xf_key_delete(key), EINVAL);
	CHECK_ERR(xf_setspecific(key, &k2), EINVAL);
	CHECK_ERR(xf_key_delete(XF_KEYS_MAX), EINVAL);
	CHECK_ERR(xf_key_create(NULL, NULL), EINVAL);
	CHECK_ERR(xf_shutdown(), 0);
	CHECK_ERR(xf_setspecific(key, &k2), EPERM);
	printf("fiber-local storage: %d destructors ran\n", FIBERS);
	return 0;
}
