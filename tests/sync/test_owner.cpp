// test_owner.cpp - locks the C library records a thread as the owner of,
// held by fibers that preemption and stealing move between workers.
//
// glibc writes the owner's thread id into recursive, error-checking, robust
// and priority-inheritance mutexes and into a write-locked rwlock (and the
// thread's pointer into a FILE's lock); it decides recursion, EDEADLK and
// which unlock to do by comparing that with the caller's.  A fiber holding
// one must stay on that thread until it lets go (sync/pthread.c): if it
// moved, its next nested lock would wait in the kernel for itself - SQLite's
// per-connection mutex hung that way - and its unlock would fail with EPERM.
//
// A storm: FIBERS fibers on 2 workers at 50 us slices, each with a lock of
// its own, lock (twice where it may recurse), check glibc's owner against
// the thread the fiber runs on now, work a little (now and then across a
// slice), unlock, and now and then sleep, so that the workers' queues
// differ and an idle one steals.  It fails at the first fiber that holds a
// lock another thread owns, and also if no fiber ever changed workers while
// it held nothing (the run proved nothing).
//
// usage: test_owner KIND [SECONDS]
//   recursive errorcheck robust pi    pthread mutexes of that kind
//   rwlock                            pthread_rwlock_wrlock / trywrlock
//   mtx_recursive mtx_timed           C11 mtx_t (recursive; timed, recursive)
//   recursive_mutex                   std::recursive_mutex, lock and try_lock
//   recursive_timed_mutex             std::recursive_timed_mutex, try_lock_for
//   flockfile                         stdio's FILE lock
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <pthread.h>
#include <string>
#include <threads.h>
#include <unistd.h>

#include "xfiber.h"

namespace {

constexpr int FIBERS = 16;
constexpr unsigned SLICE_US = 50;

const char *kind;
double seconds = 2.0;
std::atomic<bool> stop;
std::atomic<unsigned long> pairs, moves;

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "FAIL %s: %s\n", kind, what.c_str());
	std::fflush(stderr);
	_exit(1);
}

double now()
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

void spin_ns(long ns)
{
	double end = now() + double(ns) * 1e-9;
	while (now() < end) {
	}
}

// One lock of the kind under test: take, take again nested (where it may
// recurse; else the call that must refuse), say which thread glibc records
// as its owner, release both.
struct Lock {
	virtual ~Lock() = default;
	virtual void take() = 0;
	virtual void take_nested() = 0;
	virtual void release() = 0;
	virtual bool owned_by_caller() = 0; // glibc's owner is the calling thread
	virtual std::string owner() = 0;
};

std::string tid_string(long tid)
{
	return "thread " + std::to_string(tid);
}

void check(int err, const char *call)
{
	if (err)
		fail(std::string(call) + " returned " + std::strerror(err));
}

struct PthreadMutex : Lock {
	pthread_mutex_t m;
	bool recursive;
	explicit PthreadMutex(const char *k)
	{
		pthread_mutexattr_t a;
		pthread_mutexattr_init(&a);
		recursive = !std::strcmp(k, "recursive") || !std::strcmp(k, "pi");
		if (recursive)
			pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
		if (!std::strcmp(k, "errorcheck") || !std::strcmp(k, "robust"))
			pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
		if (!std::strcmp(k, "robust"))
			pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
		if (!std::strcmp(k, "pi"))
			check(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), "setprotocol");
		check(pthread_mutex_init(&m, &a), "pthread_mutex_init");
		pthread_mutexattr_destroy(&a);
	}
	~PthreadMutex() override { pthread_mutex_destroy(&m); }
	void take() override { check(pthread_mutex_lock(&m), "pthread_mutex_lock"); }
	void take_nested() override
	{
		if (recursive) // the nested lock that hung SQLite
			check(pthread_mutex_lock(&m), "pthread_mutex_lock (nested)");
		else if (pthread_mutex_lock(&m) != EDEADLK)
			fail("an error-checking mutex locked again by its holder did not say EDEADLK");
	}
	void release() override
	{
		if (recursive)
			check(pthread_mutex_unlock(&m), "pthread_mutex_unlock (nested)");
		check(pthread_mutex_unlock(&m), "pthread_mutex_unlock");
	}
	bool owned_by_caller() override { return m.__data.__owner == gettid(); }
	std::string owner() override { return tid_string(m.__data.__owner); }
};

struct Rwlock : Lock {
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	unsigned n = 0;
	~Rwlock() override { pthread_rwlock_destroy(&rw); }
	void take() override
	{
		if (n++ % 2 || pthread_rwlock_trywrlock(&rw))
			check(pthread_rwlock_wrlock(&rw), "pthread_rwlock_wrlock");
	}
	void take_nested() override
	{
		if (pthread_rwlock_wrlock(&rw) != EDEADLK)
			fail("a write lock taken again by its holder did not say EDEADLK");
	}
	void release() override { check(pthread_rwlock_unlock(&rw), "pthread_rwlock_unlock"); }
	bool owned_by_caller() override { return rw.__data.__cur_writer == gettid(); }
	std::string owner() override { return tid_string(rw.__data.__cur_writer); }
};

// C11's mtx_t is glibc's pthread_mutex_t under another name.
struct C11Mutex : Lock {
	mtx_t m;
	bool timed;
	explicit C11Mutex(bool t) : timed(t)
	{
		if (mtx_init(&m, (t ? mtx_timed : mtx_plain) | mtx_recursive) != thrd_success)
			fail("mtx_init");
	}
	~C11Mutex() override { mtx_destroy(&m); }
	pthread_mutex_t *pm() { return reinterpret_cast<pthread_mutex_t *>(&m); }
	void take() override
	{
		timespec t;
		if (!timed) {
			if (mtx_lock(&m) != thrd_success)
				fail("mtx_lock");
			return;
		}
		timespec_get(&t, TIME_UTC);
		t.tv_sec += 10;
		if (mtx_timedlock(&m, &t) != thrd_success)
			fail("mtx_timedlock");
	}
	void take_nested() override { take(); }
	void release() override
	{
		for (int i = 0; i < 2; i++)
			if (mtx_unlock(&m) != thrd_success)
				fail("mtx_unlock");
	}
	bool owned_by_caller() override { return pm()->__data.__owner == gettid(); }
	std::string owner() override { return tid_string(pm()->__data.__owner); }
};

template <typename M> struct CxxRecursive : Lock {
	M m;
	unsigned n = 0;
	void take() override
	{
		if constexpr (std::is_same_v<M, std::recursive_timed_mutex>) {
			if (!m.try_lock_for(std::chrono::seconds(10)))
				fail("try_lock_for timed out on a lock nobody else holds");
		} else {
			if (n++ % 2 || !m.try_lock())
				m.lock();
		}
	}
	void take_nested() override { m.lock(); }
	void release() override
	{
		m.unlock();
		m.unlock();
	}
	bool owned_by_caller() override { return m.native_handle()->__data.__owner == gettid(); }
	std::string owner() override { return tid_string(m.native_handle()->__data.__owner); }
};

// glibc's _IO_lock_t: the owner is the thread's descriptor, pthread_self().
struct IoLock {
	int lock;
	int cnt;
	void *owner;
};

struct FileLock : Lock {
	FILE *fp;
	FileLock() : fp(std::fopen("/dev/null", "w"))
	{
		if (!fp)
			fail("fopen /dev/null");
	}
	~FileLock() override { std::fclose(fp); }
	IoLock *io() { return static_cast<IoLock *>(fp->_lock); }
	void take() override { flockfile(fp); }
	void take_nested() override { flockfile(fp); }
	void release() override
	{
		std::fputs("x\n", fp);
		funlockfile(fp);
		funlockfile(fp);
	}
	bool owned_by_caller() override { return io()->owner == (void *)pthread_self(); }
	std::string owner() override
	{
		char s[40];
		std::snprintf(s, sizeof(s), "thread descriptor %p", io()->owner);
		return s;
	}
};

Lock *make_lock()
{
	const std::string k = kind;
	if (k == "recursive" || k == "errorcheck" || k == "robust" || k == "pi")
		return new PthreadMutex(kind);
	if (k == "rwlock")
		return new Rwlock;
	if (k == "mtx_recursive" || k == "mtx_timed")
		return new C11Mutex(k == "mtx_timed");
	if (k == "recursive_mutex")
		return new CxxRecursive<std::recursive_mutex>;
	if (k == "recursive_timed_mutex")
		return new CxxRecursive<std::recursive_timed_mutex>;
	if (k == "flockfile")
		return new FileLock;
	return nullptr;
}

// The worker the fiber runs on, read where no preemption can move it.
int worker_now()
{
	xf_preempt_disable();
	int w = xf_worker_id();
	xf_preempt_enable();
	return w;
}

// Fails unless glibc records the thread the fiber runs on as the owner.
void check_owner(Lock *lock, long index, const char *what)
{
	if (!lock->owned_by_caller())
		fail("fiber " + std::to_string(index) + " " + what + " its lock and runs on thread " +
		     std::to_string(gettid()) + " (worker " + std::to_string(xf_worker_id()) +
		     "), but glibc's owner is " + lock->owner() + ", after " +
		     std::to_string(pairs.load()) + " lock/unlock pairs");
}

void *storm(void *arg)
{
	const long index = long(reinterpret_cast<intptr_t>(arg));
	Lock *lock = make_lock();
	int last = worker_now();

	for (unsigned long i = 0; !stop.load(std::memory_order_relaxed); i++) {
		int w = worker_now();
		if (w != last)
			moves++;
		last = w;
		lock->take();
		check_owner(lock, index, "took");
		lock->take_nested();
		// Preemption lands while it is held: most sections are short, some
		// run past a slice.
		spin_ns(i % 64 == 0 ? 2 * SLICE_US * 1000 : 200);
		check_owner(lock, index, "held");
		lock->release();
		pairs++;
		if ((i + unsigned(index)) % 97 == 0)
			usleep(50); // the queues differ: an idle worker steals
	}
	delete lock;
	return nullptr;
}

void on_alarm(int)
{
	static const char msg[] = "FAIL: hung (a fiber waits for a lock it holds itself?)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	_exit(1);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		std::fprintf(stderr, "usage: test_owner KIND [SECONDS]\n");
		return 2;
	}
	kind = argv[1];
	if (argc == 3)
		seconds = std::atof(argv[2]);
	Lock *probe = make_lock();
	if (!probe) {
		std::fprintf(stderr, "test_owner: unknown kind '%s'\n", kind);
		return 2;
	}
	delete probe;
	std::signal(SIGALRM, on_alarm);
	alarm(unsigned(seconds) + 30);

	xf_config cfg{};
	cfg.workers = 2;
	cfg.slice_us = SLICE_US;
	if (int err = xf_init(&cfg))
		fail(std::string("xf_init: ") + std::strerror(err));
	xf_fiber *f[FIBERS];
	for (long i = 0; i < FIBERS; i++)
		if (xf_spawn(&f[i], storm, reinterpret_cast<void *>(i), nullptr))
			fail("xf_spawn");
	// The time asked, and on (up to 20 s more on a loaded machine) until
	// some fiber has changed workers: a run without moves proves nothing.
	double t0 = now();
	while (now() - t0 < seconds || (moves.load() == 0 && now() - t0 < seconds + 20))
		xf_sleep_ns(10 * 1000 * 1000);
	stop = true;
	for (auto *fb : f)
		if (xf_join(fb, nullptr))
			fail("xf_join");
	xf_stats st;
	xf_stats_get(&st);
	if (xf_shutdown())
		fail("xf_shutdown");
	std::printf("%s: %lu lock/unlock pairs, %lu moves between workers, %lu preemptions "
		    "(%lu deferred)\n",
		    kind, pairs.load(), moves.load(), (unsigned long)st.total.preemptions,
		    (unsigned long)st.total.preemptions_deferred);
	if (!moves.load())
		fail("no fiber ever changed workers: the storm proved nothing");
	if (!st.total.preemptions)
		fail("no preemption: the storm proved nothing");
	return 0;
}
