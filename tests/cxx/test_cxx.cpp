// test_cxx.cpp - ordinary C++ inside preempted fibers: once-objects, static
// guards, std::call_once, std::mutex, pthread mutexes, condition variables
// and exceptions, with time slices that end inside every one of them.
//
// usage: test_cxx CASE WORKERS SLICE_US
//   once       several fibers call pthread_once; its routine runs 3 slices
//   guard      several fibers reach a function-local static whose
//              constructor runs 3 slices (__cxa_guard_acquire)
//   call_once  the same through std::call_once, two flags at once
//   once_throw a std::call_once routine and a static's constructor that
//              throw twice, across slices, then succeed: each runs 3
//              times, the others wait and retry, nothing is lost
//   mutex      pinned fibers on worker 0 hold a std::mutex across slices
//   pmutex     the same with pthread mutexes: normal, error-checking, and a
//              rwlock
//   condvar    a std::condition_variable hand-off between pinned fibers on
//              worker 0, the waiter timing out now and then
//   timed_beside_spinner  (run at 200 ms slices, one worker) timed
//              waits that nobody ends - std::condition_variable::wait_for,
//              std::timed_mutex::try_lock_for, sem_timedwait - beside a
//              CPU-bound fiber: each returns after about a quarter slice
//              (50 ms), as a sleep does, not when the spinner's slice
//              ends (~200 ms): the bound is 120 ms
//   odd_deadlines  timed waits made as a fiber (another fiber ready)
//              with an absolute time past 64-bit nanoseconds ({LONG_MAX,
//              0}: it timed out at once) wait until released, and one with
//              tv_nsec out of range fails with EINVAL, as glibc's do:
//              pthread_cond_timedwait and _clockwait, pthread_mutex_timedlock,
//              pthread_rwlock_timedrdlock, sem_timedwait
//   rethrow    `throw;` and std::current_exception in catch blocks that
//              yield, sleep, are preempted and (unpinned) migrate, with
//              other fibers throwing their own exceptions meanwhile
//   uncaught   std::uncaught_exceptions in destructors that switch during
//              unwinding
//   escape     an exception no frame of a fiber catches: the fiber is
//              named, then std::terminate says what was thrown (a child
//              process, whose stderr and death are checked)
//   owned      locks the thread owns - std::recursive_mutex, an error-
//              checking pthread mutex, std::shared_mutex - taken flat out by
//              fibers of one worker, preempted anywhere in between: never
//              two inside, never a spurious EDEADLK; and one fiber holding
//              ten of them at once
//   waits      C++20 waits libstdc++ builds on raw futexes: std::future,
//              std::counting_semaphore, std::latch, std::barrier,
//              std::atomic::wait, the waker queued behind the waiter on
//              one worker
//   c11        C11 threads: a recursive mtx_t with cnd_wait and
//              mtx_trylock, between fibers of one worker
//   stdio      flockfile() keeps out the other fibers of its thread
//
// Every case ends with the runtime shut down; a hang is a failure (CTest's
// TIMEOUT, and an alarm of our own that names the case).
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>
#include <latch>
#include <mutex>
#include <pthread.h>
#include <semaphore.h>
#include <semaphore>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#include "xfiber.h"

namespace {

const char *case_name;
unsigned nr_workers;
unsigned slice_us;

[[noreturn]] void fail(const char *what)
{
	std::fprintf(stderr, "FAIL %s (%u workers, %u us): %s\n", case_name, nr_workers, slice_us,
		     what);
	std::exit(1);
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail("check failed: " #cond);                                              \
	} while (0)

uint64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// CPU work that the compiler cannot remove, long enough to span slices.
void spin_for_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	volatile uint64_t sink = 0;
	while (now_ns() < end)
		for (int i = 0; i < 100; i++)
			sink = sink + uint64_t(i);
}

uint64_t slices(unsigned n)
{
	return uint64_t(n) * slice_us * 1000u;
}

xf_attr pinned_to(int worker)
{
	xf_attr a = XF_ATTR_INIT;
	a.pinned = true;
	a.worker = worker;
	return a;
}

template <typename F> void run_fibers(int n, F body, bool pin = false)
{
	struct Arg {
		F *body;
		int index;
	};
	std::vector<xf_fiber *> f(size_t(n), nullptr);
	std::vector<Arg> args{size_t(n)};
	for (int i = 0; i < n; i++) {
		args[size_t(i)] = Arg{&body, i};
		xf_attr a = pin ? pinned_to(0) : xf_attr(XF_ATTR_INIT);
		int err = xf_spawn(
		    &f[size_t(i)],
		    [](void *p) -> void * {
			    Arg *arg = static_cast<Arg *>(p);
			    (*arg->body)(arg->index);
			    return nullptr;
		    },
		    &args[size_t(i)], &a);
		CHECK(err == 0);
	}
	for (int i = 0; i < n; i++)
		CHECK(xf_join(f[size_t(i)], nullptr) == 0);
}

// --- once-objects ---

pthread_once_t once = PTHREAD_ONCE_INIT;
std::atomic<int> once_runs, once_done;

void once_init()
{
	once_runs++;
	spin_for_ns(slices(3));
	once_done = 1;
}

void test_once()
{
	run_fibers(4, [](int) {
		CHECK(pthread_once(&once, once_init) == 0);
		CHECK(once_done == 1);
	});
	CHECK(once_runs == 1);
}

struct Slow {
	int value;
	Slow()
	{
		guard_runs++;
		spin_for_ns(slices(3));
		value = 42;
	}
	static std::atomic<int> guard_runs;
};
std::atomic<int> Slow::guard_runs;

int slow_value()
{
	static Slow s;
	return s.value;
}

void test_guard()
{
	run_fibers(4, [](int) { CHECK(slow_value() == 42); });
	CHECK(Slow::guard_runs == 1);
}

std::once_flag flag_a, flag_b;
std::atomic<int> call_runs_a, call_runs_b;

void test_call_once()
{
	run_fibers(6, [](int i) {
		if (i & 1) {
			std::call_once(flag_a, [] {
				call_runs_a++;
				spin_for_ns(slices(3));
			});
		} else {
			std::call_once(flag_b, [](int x) {
				call_runs_b += x;
				spin_for_ns(slices(2));
			}, 1);
		}
	});
	CHECK(call_runs_a == 1 && call_runs_b == 1);
}

std::once_flag flag_throws;
std::atomic<int> once_tries, ctor_tries, once_throw_ok, once_throw_caught;

struct ThrowsTwice {
	int v;
	ThrowsTwice()
	{
		spin_for_ns(slices(2));
		if (ctor_tries++ < 2)
			throw std::runtime_error("ctor");
		v = 7;
	}
};

int throws_twice_value()
{
	static ThrowsTwice s;
	return s.v;
}

void test_once_throw()
{
	run_fibers(6, [](int) {
		for (int r = 0; r < 3; r++) {
			try {
				std::call_once(flag_throws, [] {
					spin_for_ns(slices(2));
					if (once_tries++ < 2)
						throw std::runtime_error("once");
				});
				once_throw_ok++;
			} catch (const std::runtime_error &) {
				once_throw_caught++;
			}
			try {
				CHECK(throws_twice_value() == 7);
			} catch (const std::runtime_error &) {
				once_throw_caught++;
			}
		}
	});
	CHECK(once_tries == 3 && ctor_tries == 3 && once_throw_caught == 4);
	CHECK(once_throw_ok == 6 * 3 - 2);
}

// --- mutexes ---

std::mutex mtx;
long counter;

void test_mutex()
{
	counter = 0;
	run_fibers(
	    3,
	    [](int) {
		    for (int r = 0; r < 3; r++) {
			    std::lock_guard<std::mutex> g(mtx);
			    long before = counter;
			    spin_for_ns(slices(2));
			    counter = before + 1;
		    }
	    },
	    true);
	CHECK(counter == 9);
}

pthread_mutex_t pm_normal = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t pm_check = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

void test_pmutex()
{
	counter = 0;
	run_fibers(
	    4,
	    [](int i) {
		    for (int r = 0; r < 2; r++) {
			    pthread_mutex_t *m = (i + r) & 1 ? &pm_normal : &pm_check;
			    CHECK(pthread_mutex_lock(m) == 0);
			    spin_for_ns(slices(2));
			    CHECK(pthread_mutex_unlock(m) == 0);
			    CHECK(pthread_rwlock_wrlock(&rw) == 0);
			    long before = counter;
			    spin_for_ns(slices(1));
			    counter = before + 1;
			    CHECK(pthread_rwlock_unlock(&rw) == 0);
		    }
	    },
	    true);
	CHECK(counter == 8);
}

// --- condition variables ---

std::mutex cv_mtx;
std::condition_variable cv;
int cv_turn;
std::atomic<int> cv_timeouts;

void test_condvar()
{
	cv_turn = 0;
	const int rounds = 6;
	run_fibers(
	    2,
	    [](int me) {
		    for (int r = 0; r < rounds; r++) {
			    std::unique_lock<std::mutex> lk(cv_mtx);
			    while (cv_turn % 2 != me) {
				    if (cv.wait_for(lk, std::chrono::microseconds(slice_us * 3)) ==
					std::cv_status::timeout)
					    cv_timeouts++;
			    }
			    spin_for_ns(slices(1) + slices(1) / 2); // across a slice, lock held
			    cv_turn++;
			    cv.notify_all();
		    }
	    },
	    true);
	CHECK(cv_turn == 2 * rounds);
}

// --- timed waits beside a CPU-bound fiber ---

const uint64_t timed_wait_late_max_ns = 120000000;

void test_timed_beside_spinner()
{
	static std::atomic<bool> stop;
	static uint64_t worst;
	stop = false;
	worst = 0;
	run_fibers(
	    2,
	    [](int me) {
		    if (me == 1) {
			    while (!stop)
				    ;
			    return;
		    }
		    std::mutex m;
		    std::condition_variable c;
		    std::timed_mutex held;
		    sem_t sem;
		    CHECK(sem_init(&sem, 0, 0) == 0);
		    CHECK(held.try_lock());
		    xf_yield(); // the spinner runs from now on
		    for (int i = 0; i < 3; i++) {
			    uint64_t t0 = now_ns();
			    std::unique_lock<std::mutex> lk(m);
			    while (c.wait_for(lk, std::chrono::milliseconds(2)) !=
				   std::cv_status::timeout)
				    ;
			    lk.unlock();
			    uint64_t t1 = now_ns();
			    CHECK(!held.try_lock_for(std::chrono::milliseconds(2)));
			    uint64_t t2 = now_ns();
			    timespec abs;
			    clock_gettime(CLOCK_REALTIME, &abs);
			    abs.tv_nsec += 2000000;
			    if (abs.tv_nsec >= 1000000000) {
				    abs.tv_sec++;
				    abs.tv_nsec -= 1000000000;
			    }
			    CHECK(sem_timedwait(&sem, &abs) == -1 && errno == ETIMEDOUT);
			    uint64_t t3 = now_ns();
			    for (uint64_t d : {t1 - t0, t2 - t1, t3 - t2})
				    worst = d > worst ? d : worst;
		    }
		    held.unlock();
		    sem_destroy(&sem);
		    stop = true;
	    },
	    true);
	std::printf("timed_beside_spinner: 2 ms waits beside a CPU-bound fiber, the longest "
		    "%.1f ms\n",
		    double(worst) / 1e6);
	if (worst > timed_wait_late_max_ns)
		fail("a 2 ms timed wait lasted until the spinner's slice ended");
}

// --- timed waits with odd absolute times ---

enum OddKind { ODD_COND, ODD_CLOCK, ODD_MUTEX, ODD_RWLOCK, ODD_SEM, ODD_KINDS };
const char *const odd_names[] = {"pthread_cond_timedwait", "pthread_cond_clockwait",
				 "pthread_mutex_timedlock", "pthread_rwlock_timedrdlock",
				 "sem_timedwait"};
pthread_mutex_t odd_m = PTHREAD_MUTEX_INITIALIZER, odd_held = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t odd_c = PTHREAD_COND_INITIALIZER;
pthread_rwlock_t odd_rw = PTHREAD_RWLOCK_INITIALIZER;
sem_t odd_sem;
std::atomic<bool> odd_released;

// One wait of kind k until t: its error number (0: it got what it waited for).
int odd_wait(int k, const timespec &t)
{
	int r = 0;
	switch (k) {
	case ODD_COND:
	case ODD_CLOCK:
		pthread_mutex_lock(&odd_m);
		while (!odd_released && r == 0)
			r = k == ODD_COND
				? pthread_cond_timedwait(&odd_c, &odd_m, &t)
				: pthread_cond_clockwait(&odd_c, &odd_m, CLOCK_MONOTONIC, &t);
		pthread_mutex_unlock(&odd_m);
		return r;
	case ODD_MUTEX:
		r = pthread_mutex_timedlock(&odd_held, &t);
		if (!r)
			pthread_mutex_unlock(&odd_held);
		return r;
	case ODD_RWLOCK:
		r = pthread_rwlock_timedrdlock(&odd_rw, &t);
		if (!r)
			pthread_rwlock_unlock(&odd_rw);
		return r;
	default: return sem_timedwait(&odd_sem, &t) ? errno : 0;
	}
}

void test_odd_deadlines()
{
	CHECK(sem_init(&odd_sem, 0, 0) == 0);
	for (int k = 0; k < ODD_KINDS; k++) {
		static int kind;
		static std::atomic<int> result;
		static std::atomic<bool> stop;
		kind = k;
		odd_released = stop = false;
		result = -1;
		// A plain thread holds the mutex and the rwlock until released.
		pthread_t holder;
		std::atomic<bool> holding{false};
		CHECK(pthread_create(
			  &holder, nullptr,
			  [](void *arg) -> void * {
				  auto *h = static_cast<std::atomic<bool> *>(arg);
				  pthread_mutex_lock(&odd_held);
				  pthread_rwlock_wrlock(&odd_rw);
				  *h = true;
				  while (!odd_released)
					  usleep(1000);
				  pthread_rwlock_unlock(&odd_rw);
				  pthread_mutex_unlock(&odd_held);
				  return nullptr;
			  },
			  &holding) == 0);
		while (!holding)
			usleep(1000);
		run_fibers(
		    3,
		    [](int me) {
			    if (me == 0) { // ready beside the waiter: its waits yield
				    while (!stop)
					    xf_yield();
				    return;
			    }
			    if (me == 1) {
				    timespec bad = {0, 1000000000};
				    CHECK(odd_wait(kind, bad) == EINVAL);
				    timespec far = {LONG_MAX, 0};
				    result = odd_wait(kind, far);
				    stop = true;
				    return;
			    }
			    xf_sleep_ns(100000000);
			    if (result != -1) {
				    std::fprintf(stderr,
						 "%s: a deadline of {LONG_MAX, 0} ended at "
						 "once (%s)\n",
						 odd_names[kind], std::strerror(result));
				    fail("a far deadline timed out at once");
			    }
			    pthread_mutex_lock(&odd_m);
			    odd_released = true;
			    pthread_cond_broadcast(&odd_c);
			    pthread_mutex_unlock(&odd_m);
			    CHECK(sem_post(&odd_sem) == 0);
		    },
		    true);
		CHECK(pthread_join(holder, nullptr) == 0);
		if (result != 0) {
			std::fprintf(stderr, "%s: %s\n", odd_names[k], std::strerror(result));
			fail("a far deadline's wait did not end with what it waited for");
		}
		while (sem_trywait(&odd_sem) == 0)
			;
	}
	sem_destroy(&odd_sem);
}

// --- exceptions ---

struct Tagged : std::runtime_error {
	int tag;
	explicit Tagged(int t) : std::runtime_error("tagged " + std::to_string(t)), tag(t) {}
};

std::atomic<int> migrations;

// Switches in every way a fiber can: a yield, a sleep, a spin across
// slices (preemption), and - unpinned, with two workers - a migration.
void switch_every_way()
{
	int w0 = xf_worker_id();
	xf_yield();
	xf_sleep_ns(20000);
	spin_for_ns(slices(2));
	for (int i = 0; i < 20 && xf_worker_id() == w0; i++)
		xf_yield();
	if (xf_worker_id() != w0)
		migrations++;
}

void test_rethrow()
{
	migrations = 0;
	run_fibers(6, [](int me) {
		for (int r = 0; r < 3; r++) {
			int tag = me * 100 + r;
			try {
				try {
					throw Tagged(tag);
				} catch (const Tagged &t) {
					CHECK(t.tag == tag);
					std::exception_ptr held = std::current_exception();
					switch_every_way();
					CHECK(std::current_exception() == held);
					CHECK(std::uncaught_exceptions() == 0);
					throw; // must rethrow this fiber's exception
				}
			} catch (const Tagged &t) {
				if (t.tag != tag)
					fail("caught another fiber's exception");
				std::exception_ptr p = std::current_exception();
				switch_every_way();
				try {
					std::rethrow_exception(p);
				} catch (const Tagged &again) {
					CHECK(again.tag == tag);
				}
			}
			CHECK(std::current_exception() == nullptr);
		}
	});
	if (nr_workers > 1)
		std::printf("rethrow: %d catch blocks migrated\n", migrations.load());
}

struct CountsDuringUnwind {
	int *seen;
	~CountsDuringUnwind()
	{
		switch_every_way();
		*seen = std::uncaught_exceptions();
	}
};

void test_uncaught()
{
	run_fibers(6, [](int me) {
		for (int r = 0; r < 2; r++) {
			int seen = -1;
			if (me & 1) {
				// Another fiber's unwinding must not count here.
				switch_every_way();
				CHECK(std::uncaught_exceptions() == 0);
				continue;
			}
			try {
				CountsDuringUnwind c{&seen};
				throw Tagged(me);
			} catch (const Tagged &t) {
				CHECK(t.tag == me);
			}
			CHECK(seen == 1);
			CHECK(std::uncaught_exceptions() == 0);
		}
	});
}

void *throws_uncaught(void *)
{
	switch_every_way();
	throw std::runtime_error("nobody catches this");
}

void test_escape()
{
	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], 2);
		xf_fiber *f;
		xf_spawn(&f, throws_uncaught, nullptr, nullptr);
		xf_join(f, nullptr);
		_exit(0); // not reached: the process terminates
	}
	close(pipefd[1]);
	std::string err;
	char buf[512];
	for (ssize_t r; (r = read(pipefd[0], buf, sizeof(buf))) > 0;)
		err.append(buf, size_t(r));
	close(pipefd[0]);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	std::fprintf(stderr, "the child said:\n%s", err.c_str());
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	CHECK(err.find("xfiber: fiber 2: an exception escaped the fiber's function") !=
	      std::string::npos);
	CHECK(err.find("nobody catches this") != std::string::npos);
}

// --- locks the thread owns ---

std::recursive_mutex rmtx;
pthread_mutex_t echeck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
std::shared_mutex smtx;
std::atomic<int> inside, violations;
std::atomic<int> in_rmtx, in_echeck, in_smtx;

// Short sections, now and then one across a slice: preemption lands in the
// wrappers' own code too, between a look at the owner and the lock.
template <typename Lock, typename Unlock>
void hammer(int iterations, std::atomic<int> &in, Lock lock, Unlock unlock)
{
	for (int i = 0; i < iterations; i++) {
		lock();
		if (in.fetch_add(1))
			violations++;
		spin_for_ns(i % 8 == 0 ? slices(1) : 1000);
		in--;
		unlock();
	}
}

void test_owned()
{
	const int n = slice_us < 100 ? 400 : 40;

	violations = 0;
	run_fibers(
	    3,
	    [n](int) {
		    hammer(n, in_rmtx, [] { rmtx.lock(); rmtx.lock(); },
			   [] { rmtx.unlock(); rmtx.unlock(); });
		    hammer(n, in_echeck, [] { CHECK(pthread_mutex_lock(&echeck) == 0); },
			   [] { CHECK(pthread_mutex_unlock(&echeck) == 0); });
		    hammer(n, in_smtx, [] { smtx.lock(); }, [] { smtx.unlock(); });
		    for (int i = 0; i < n; i++) {
			    std::shared_lock<std::shared_mutex> r(smtx);
			    if (in_smtx.load())
				    violations++;
		    }
	    },
	    true);
	CHECK(violations == 0);
	// Ten at once, past the fiber's table of eight.
	run_fibers(1, [](int) {
		std::recursive_mutex many[10];
		for (auto &m : many)
			m.lock();
		for (auto &m : many) {
			m.lock();
			m.unlock();
		}
		for (int i = 9; i >= 0; i--)
			many[i].unlock();
		for (auto &m : many) {
			CHECK(m.try_lock());
			m.unlock();
		}
	});
}

// --- C++20 waits on raw futexes ---

void test_waits()
{
	for (int mode = 0; mode < 5; mode++) {
		std::promise<int> pr;
		std::future<int> fu = pr.get_future();
		std::counting_semaphore<2> sem{0};
		std::latch la{2};
		std::atomic<int> aw{0};
		std::barrier<> ba{2};
		// The waiter first, the waker queued behind it on worker 0.
		run_fibers(
		    2,
		    [&](int me) {
			    if (me == 1)
				    spin_for_ns(slices(2));
			    switch (mode * 2 + me) {
			    case 0: CHECK(fu.get() == 42); break;
			    case 1: pr.set_value(42); break;
			    case 2: sem.acquire(); break;
			    case 3: sem.release(); break;
			    case 4:
			    case 5: la.arrive_and_wait(); break;
			    case 6: aw.wait(0); break;
			    case 7:
				    aw.store(1);
				    aw.notify_all();
				    break;
			    default: ba.arrive_and_wait(); break;
			    }
		    },
		    true);
	}
}

// --- C11 threads ---

mtx_t c11m;
cnd_t c11c;
int c11_ready;
std::atomic<int> c11_done;

void test_c11()
{
	violations = 0;
	CHECK(mtx_init(&c11m, mtx_plain | mtx_recursive) == thrd_success);
	CHECK(cnd_init(&c11c) == thrd_success);
	c11_ready = 0;
	c11_done = 0;
	run_fibers(
	    3,
	    [](int me) {
		    if (me == 2) { // a try while another fiber of the thread holds it
			    while (!inside.load() && c11_done < 2)
				    xf_yield();
			    int r = mtx_trylock(&c11m);
			    if (r == thrd_success) {
				    if (inside.load())
					    violations++;
				    mtx_unlock(&c11m);
			    }
			    return;
		    }
		    CHECK(mtx_lock(&c11m) == thrd_success);
		    if (me == 0)
			    while (!c11_ready)
				    CHECK(cnd_wait(&c11c, &c11m) == thrd_success);
		    if (inside.fetch_add(1))
			    violations++;
		    if (me == 1) {
			    c11_ready = 1;
			    cnd_broadcast(&c11c);
		    }
		    spin_for_ns(slices(2));
		    inside--;
		    CHECK(mtx_unlock(&c11m) == thrd_success);
		    c11_done++;
	    },
	    true);
	CHECK(violations == 0);
	mtx_destroy(&c11m);
	cnd_destroy(&c11c);
}

// --- stdio ---

void test_stdio()
{
	FILE *fp = std::fopen("/dev/null", "w");

	violations = 0;
	run_fibers(
	    3,
	    [fp](int) {
		    for (int i = 0; i < 60; i++) {
			    flockfile(fp);
			    if (inside.fetch_add(1))
				    violations++;
			    std::fprintf(fp, "line %d\n", i);
			    spin_for_ns(i % 4 == 0 ? slices(1) : 1000);
			    inside--;
			    funlockfile(fp);
		    }
	    },
	    true);
	std::fclose(fp);
	CHECK(violations == 0);
}

struct Case {
	const char *name;
	void (*run)();
} cases[] = {
    {"once", test_once},
    {"guard", test_guard},
    {"call_once", test_call_once},
    {"once_throw", test_once_throw},
    {"mutex", test_mutex},
    {"pmutex", test_pmutex},
    {"condvar", test_condvar},
    {"rethrow", test_rethrow},
    {"uncaught", test_uncaught},
    {"escape", test_escape},
    {"owned", test_owned},
    {"waits", test_waits},
    {"c11", test_c11},
    {"stdio", test_stdio},
    {"timed_beside_spinner", test_timed_beside_spinner},
    {"odd_deadlines", test_odd_deadlines},
};

void on_alarm(int)
{
	static const char msg[] = "FAIL: the case hung (watchdog alarm)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	_exit(1);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 4) {
		std::fprintf(stderr, "usage: test_cxx CASE WORKERS SLICE_US\n");
		return 2;
	}
	case_name = argv[1];
	nr_workers = unsigned(std::atoi(argv[2]));
	slice_us = unsigned(std::atoi(argv[3]));
	std::signal(SIGALRM, on_alarm);
	alarm(40);
	for (const Case &c : cases) {
		if (std::strcmp(c.name, case_name))
			continue;
		xf_config cfg{};
		cfg.workers = nr_workers;
		cfg.slice_us = slice_us;
		if (xf_init(&cfg))
			fail("xf_init");
		c.run();
		if (xf_shutdown())
			fail("xf_shutdown");
		std::printf("%s: ok (%u workers, %u us slices)\n", case_name, nr_workers, slice_us);
		return 0;
	}
	std::fprintf(stderr, "unknown case %s\n", case_name);
	return 2;
}
