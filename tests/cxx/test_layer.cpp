// test_layer.cpp - include/xfiber.hpp, C++17, as a user writes it: fibers
// with arguments, exceptions rethrown by join, move-only values through
// channels (and none leaked), select with callbacks and a timeout, wait
// groups, mutexes with std::lock_guard and std::unique_lock, condition
// variables, timers, cancellation as std::errc::operation_canceled; and
// what a cancelled owner's destructors must still do (join its fibers,
// stop its timers), a timer destroyed from its own callback, a select
// callback that throws, durations too long for nanoseconds, move-only
// callbacks, a channel of a type without a default constructor, a timer's
// callback cancelled by xf_cancel_all, an exception of a fiber detached
// after it ended.
//
// usage: test_layer WORKERS
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

#include "xfiber.hpp"

using namespace std::chrono_literals;

namespace {

[[noreturn]] void fail(const char *what, int line)
{
	std::fprintf(stderr, "FAIL test_layer.cpp:%d: %s\n", line, what);
	std::exit(1);
}
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			fail("check failed: " #c, __LINE__);                                       \
	} while (0)

// Counts its lives: every one made is destroyed exactly once.
struct tracked {
	static std::atomic<long> alive;
	std::unique_ptr<int> v; // move-only
	explicit tracked(int x) : v(std::make_unique<int>(x)) { alive++; }
	tracked(tracked &&o) noexcept : v(std::move(o.v)) { alive++; }
	tracked &operator=(tracked &&o) noexcept
	{
		v = std::move(o.v);
		return *this;
	}
	~tracked() { alive--; }
};
std::atomic<long> tracked::alive{0};

void test_fiber()
{
	int result = 0;
	{
		xf::fiber f([](int a, int b, int *out) { *out = a + b; }, 2, 3, &result);
		CHECK(f.joinable());
		f.join();
		CHECK(!f.joinable() && result == 5);
	}
	// An exception escaping the callable comes back from join().
	xf::fiber bad([] { throw std::runtime_error("from a fiber"); });
	try {
		bad.join();
		fail("join did not rethrow", __LINE__);
	} catch (const std::runtime_error &e) {
		CHECK(std::string(e.what()) == "from a fiber");
	}
	// Moved, then joined by the destructor, like std::jthread.
	std::atomic<int> ran{0};
	{
		std::vector<xf::fiber> many;
		for (int i = 0; i < 20; i++)
			many.emplace_back([&ran] {
				xf::this_fiber::sleep_for(1ms);
				ran++;
			});
		xf::fiber moved = std::move(many.back());
		many.pop_back();
	}
	CHECK(ran == 20);
	// Detached: nobody joins.
	std::atomic<bool> done{false};
	xf::fiber d([&done] { done = true; });
	d.detach();
	CHECK(!d.joinable());
	while (!done)
		xf::this_fiber::yield();
	try {
		d.join();
		fail("join of a detached fiber", __LINE__);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
}

void test_cancel()
{
	xf::channel<int> never(0);
	std::atomic<int> outcome{0};
	xf::fiber f([&] {
		try {
			never.recv();
			outcome = 1;
		} catch (const std::system_error &e) {
			outcome = e.code() == std::errc::operation_canceled ? 2 : 3;
		}
		CHECK(xf::this_fiber::cancelled());
		try {
			xf::this_fiber::sleep_for(1s); // and every later call
			outcome = 4;
		} catch (const std::system_error &e) {
			if (e.code() != std::errc::operation_canceled)
				outcome = 5;
		}
	});
	xf::this_fiber::sleep_for(2ms);
	f.cancel();
	f.join();
	CHECK(outcome == 2);
	// A detached fiber that its cancellation ends - the exception escapes
	// its callable - just ends: xf_cancel_all then a shutdown is how a
	// program stops such fibers (std::terminate before).
	std::atomic<bool> waiting{false};
	xf::channel<int> none(0);
	xf::fiber d([&] {
		waiting = true;
		none.recv();
	});
	xf_fiber *handle = d.native_handle();
	d.detach();
	while (!waiting)
		xf::this_fiber::yield();
	xf::this_fiber::sleep_for(2ms);
	CHECK(xf_cancel(handle) == 0);
	xf::this_fiber::sleep_for(20ms); // it ends; the process goes on
}

// xf_spawn's attributes from C++: a name, a worker, a stack; detached is
// the handle's to say (EINVAL).
void test_attr()
{
	xf_attr attr = XF_ATTR_INIT;
	std::atomic<int> worker{-1};
	attr.name = "named";
	attr.pinned = true;
	attr.worker = 0;
	attr.stack_size = 2u << 20;
	xf::fiber f(
	    attr,
	    [&worker](int n) {
		    volatile char big[1 << 20]; // more than the default stack's 256 KiB
		    big[n] = 1;
		    xf::this_fiber::sleep_for(1ms);
		    worker = xf_worker_id() + big[n] - 1;
	    },
	    5);
	CHECK(std::string(xf_fiber_name(f.native_handle())) == "named");
	f.join();
	CHECK(worker == 0);
	attr.detached = true;
	try {
		xf::fiber d(attr, [] {});
		fail("a detached xf::fiber", __LINE__);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
}

// As std::thread: the callable and its arguments are passed as rvalues, so
// move-only arguments and rvalue-qualified callables work.
struct once_callable {
	std::atomic<int> *ran;
	void operator()(std::unique_ptr<int> p) &&
	{
		*ran = *p;
	}
};

void test_move_only_arguments()
{
	std::atomic<int> ran{0};
	xf::fiber f(once_callable{&ran}, std::make_unique<int>(7));
	f.join();
	CHECK(ran == 7);
}

// Batch work: a spinner that marks itself batch steps aside for a
// latency-critical one (xf_stats counts it); the handle's setter works on
// a live fiber and refuses a joined one.
void test_batch()
{
	std::atomic<bool> stop{false};
	xf_stats before{}, after{};
	CHECK(xf_stats_get(&before) == 0);
	auto spin = [&](bool batch) {
		if (batch)
			xf::this_fiber::set_batch(true);
		while (!stop.load(std::memory_order_relaxed))
			;
	};
	// Both on the last worker: apart, nothing would step aside, and the
	// wait below ran its 10 s in one run of two on two workers.
	xf_stats workers{};
	CHECK(xf_stats_get(&workers) == 0);
	xf_attr together{};
	together.pinned = true;
	together.worker = int(workers.nr_workers) - 1;
	xf::fiber b(together, spin, true), l(together, spin, false);
	l.set_batch(false);
	// Until the batch spinner has stepped aside once (a loaded machine may
	// give the worker few slices in 50 ms), 10 s at most.
	for (int i = 0; i < 200; i++) {
		xf::this_fiber::sleep_for(50ms);
		CHECK(xf_stats_get(&after) == 0);
		if (after.total.batch_stepped_aside > before.total.batch_stepped_aside)
			break;
	}
	stop = true;
	b.join();
	l.join();
	CHECK(xf_stats_get(&after) == 0);
	CHECK(after.total.batch_stepped_aside > before.total.batch_stepped_aside);
	try {
		b.set_batch(true);
		fail("set_batch on a joined fiber", __LINE__);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL || e.code().value() == ESRCH);
	}
}

// A cancelled fiber unwinds: its xf::fiber members are cancelled and
// joined, its timers stopped after the callback that runs - neither
// outlives the frame it uses.
void test_cancelled_owner()
{
	std::atomic<int> child_saw{0}, callback_done{0};
	xf::fiber parent([&] {
		int local = 0;
		xf::fiber child([&] {
			try {
				xf::this_fiber::sleep_for(10s);
				child_saw = 1;
			} catch (const std::system_error &e) {
				child_saw = e.code() == std::errc::operation_canceled ? 2 : 3;
			}
			xf_sleep_ns(5000000); // cancelled: returns at once, or waits
			local = 42;
		});
		std::string s(64, 's');
		xf::timer t(0ms, [s, &callback_done] {
			xf_sleep_ns(10000000); // not cancelled: the timer's own fiber
			callback_done = s.size() == 64 ? 1 : 2;
		});
		xf::this_fiber::sleep_for(2ms); // the callback runs
		xf_cancel(xf_self());
		xf::this_fiber::sleep_for(10s); // throws: ~timer, then ~fiber
	});
	try {
		parent.join();
		fail("the cancelled parent returned", __LINE__);
	} catch (const std::system_error &e) {
		CHECK(e.code() == std::errc::operation_canceled);
	}
	CHECK(child_saw == 2);	   // cancelled by the owner's destructor
	CHECK(callback_done == 1); // stopped after the callback ended
}

// Destroyed from its own callback: the callback ends first.
void test_timer_self_destroy()
{
	struct job {
		std::unique_ptr<xf::timer> t;
		std::string text = "still here";
		std::atomic<int> n{0};
	} j;
	std::atomic<bool> read_after{false};
	j.t = std::make_unique<xf::timer>(1ms, 1ms, [&j, &read_after, keep = std::string(80, 'k')] {
		if (++j.n == 3) {
			j.t.reset();
			read_after = keep.size() == 80; // this closure outlives reset()
		}
	});
	xf::this_fiber::sleep_for(30ms);
	CHECK(j.n == 3 && read_after && !j.t);
}

// Select: a callback that throws leaves no case's value behind (ASan's
// leak check, in make check); move-only callbacks.
void test_select_throw()
{
	{
		xf::channel<int> a(1);
		xf::channel<tracked> b(0);
		a.send(1);
		try {
			xf::select(xf::on_recv(a, [](std::optional<int>) { throw std::runtime_error("x"); }),
				   xf::on_send(b, tracked(3), [] {}));
			fail("the callback's exception was lost", __LINE__);
		} catch (const std::runtime_error &) {
		}
	}
	CHECK(tracked::alive == 0);
	xf::channel<int> c(1);
	c.send(5);
	auto owned = std::make_unique<int>(0);
	xf::select(xf::on_recv(c, [p = std::move(owned)](std::optional<int> v) { *p = *v; }),
		   xf::on_timeout(1s, [q = std::make_unique<int>(1)] {}));
}

// Durations past what nanoseconds hold: forever, not an overflow.
void test_long_durations()
{
	xf::mutex m;
	xf::condition_variable cv;
	std::atomic<bool> go{false};
	xf::fiber waker([&] {
		xf::this_fiber::sleep_for(5ms);
		{
			std::lock_guard<xf::mutex> g(m);
			go = true;
		}
		cv.notify_all();
	});
	std::unique_lock<xf::mutex> lk(m);
	CHECK(cv.wait_for(lk, std::chrono::hours::max(), [&] { return go.load(); }));
	lk.unlock();
	waker.join();
	xf::wait_group wg;
	wg.add(1);
	xf::fiber done([&] {
		xf::this_fiber::sleep_for(5ms);
		wg.done();
	});
	CHECK(wg.wait_for(std::chrono::seconds::max()));
	done.join();
}

// A trivially copyable type without a default constructor.
struct point {
	int x, y;
	point(int a, int b) : x(a), y(b) {}
};

void test_channel()
{
	{
		xf::channel<point> pts(2);
		pts.send(point(1, 2));
		auto got = pts.recv();
		CHECK(got && got->x == 1 && got->y == 2);
		CHECK(!pts.try_recv() && !pts.recv_for(1ms));
	}
	{
		xf::channel<tracked> ch(4);
		xf::fiber p([&] {
			for (int i = 0; i < 100; i++)
				ch.send(tracked(i));
			ch.close();
		});
		int expect = 0;
		while (auto v = ch.recv()) {
			CHECK(*v->v == expect);
			expect++;
		}
		CHECK(expect == 100);
		p.join();
		try {
			ch.send(tracked(7));
			fail("send on a closed channel", __LINE__);
		} catch (const std::system_error &e) {
			CHECK(e.code().value() == EPIPE);
		}
	}
	CHECK(tracked::alive == 0);
	// Destroyed with values still buffered: none leaks.
	{
		xf::channel<tracked> ch(8);
		for (int i = 0; i < 5; i++)
			CHECK(ch.try_send(tracked(i)));
		tracked t(99);
		CHECK(ch.send_for(t, 1ms));
		CHECK(!t.v); // moved in
		CHECK(tracked::alive == 7);
	}
	CHECK(tracked::alive == 0);
	// Full: try_send and send_for keep the value.
	{
		xf::channel<tracked> ch(1);
		tracked a(1), b(2);
		CHECK(ch.try_send(a));
		CHECK(!ch.try_send(b) && b.v && *b.v == 2);
		CHECK(!ch.send_for(b, 1ms) && b.v && *b.v == 2);
		auto got = ch.try_recv();
		CHECK(got && *got->v == 1);
		CHECK(!ch.try_recv());
		CHECK(!ch.recv_for(1ms));
	}
	CHECK(tracked::alive == 0);
	// A trivially copyable type travels by value.
	xf::channel<double> nums(0);
	xf::fiber s([&] { nums.send(2.5); });
	CHECK(nums.recv() == 2.5);
}

void test_select()
{
	xf::channel<std::string> words(1);
	xf::channel<int> nums(0);
	std::string got;
	int which = -1;

	words.send("hello");
	std::size_t i = xf::select(xf::on_recv(nums, [&](std::optional<int>) { which = 0; }),
				   xf::on_recv(words, [&](std::optional<std::string> w) {
					   which = 1;
					   got = *w;
				   }));
	CHECK(i == 1 && which == 1 && got == "hello");
	// Nothing ready: the timeout case.
	i = xf::select(xf::on_recv(nums, [&](std::optional<int>) { which = 0; }),
		       xf::on_timeout(2ms, [&] { which = 9; }));
	CHECK(i == 1 && which == 9);
	// A send case meets a receiver.
	xf::fiber r([&] { CHECK(nums.recv() == 42); });
	i = xf::select(xf::on_send(nums, 42, [&] { which = 3; }), xf::on_timeout(5s, [] {}));
	CHECK(i == 0 && which == 3);
	r.join();
	// A closed channel's receive case: an empty value.
	words.close();
	std::optional<std::string> last = std::string("x");
	xf::select(xf::on_recv(words, [&](std::optional<std::string> w) { last = w; }));
	CHECK(!last);
	// A send case that loses frees its moved value.
	{
		xf::channel<tracked> full(0);
		xf::select(xf::on_send(full, tracked(5)), xf::on_timeout(1ms, [] {}));
	}
	CHECK(tracked::alive == 0);
}

void test_sync()
{
	xf::mutex m;
	xf::condition_variable cv;
	xf::wait_group wg;
	long counter = 0;
	bool ready = false;

	wg.add(10);
	std::vector<xf::fiber> fs;
	for (int i = 0; i < 10; i++)
		fs.emplace_back([&] {
			{
				std::unique_lock<xf::mutex> lk(m);
				cv.wait(lk, [&] { return ready; });
			}
			for (int k = 0; k < 1000; k++) {
				std::lock_guard<xf::mutex> g(m);
				counter++;
			}
			wg.done();
		});
	xf::this_fiber::sleep_for(1ms);
	{
		std::lock_guard<xf::mutex> g(m);
		ready = true;
	}
	cv.notify_all();
	CHECK(wg.wait_for(10s));
	CHECK(counter == 10000);
	{
		std::unique_lock<xf::mutex> lk(m);
		CHECK(cv.wait_for(lk, 1ms) == std::cv_status::timeout);
		CHECK(!cv.wait_for(lk, 1ms, [] { return false; }));
	}
	xf::wait_group never;
	never.add(1);
	CHECK(!never.wait_for(1ms));
	never.done();
	try {
		never.done();
		fail("a wait group below zero", __LINE__);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
}

void test_timer()
{
	std::atomic<int> ticks{0};
	{
		xf::timer t(1ms, 2ms, [&] { ticks++; });
		// 20 ms, or longer on a loaded machine: until 3 ticks, 10 s at most.
		xf::this_fiber::sleep_for(20ms);
		for (int i = 0; i < 1000 && ticks < 3; i++)
			xf::this_fiber::sleep_for(10ms);
	}
	int seen = ticks;
	CHECK(seen >= 3);
	xf::this_fiber::sleep_for(10ms);
	CHECK(ticks == seen); // stopped by its destructor
	std::atomic<bool> once{false};
	xf::timer o(1ms, [&] { once = true; });
	xf::this_fiber::sleep_for(20ms);
	CHECK(once);
	// Destroyed in a plain thread, where no fiber runs the callback: its
	// state goes with it (a plain thread's null xf_self() was taken for
	// the callback's own fiber, and the state leaked).
	auto captured = std::make_shared<int>(7);
	std::thread([captured] {
		for (int i = 0; i < 10; i++)
			xf::timer never(1h, [captured] { (void)captured; });
	}).join();
	CHECK(captured.use_count() == 1);
}

// xf_cancel_all before a shutdown, while a timer's callback blocks: the
// callback's wait throws operation_canceled, which ends it quietly, as it
// ends a detached fiber (it escaped the timer's fiber: std::terminate).
// Last: it cancels every fiber but this one.
void test_timer_cancelled()
{
	xf::channel<int> nobody_reads(0);
	std::atomic<bool> blocked{false}, threw{false};
	{
		xf::timer t(0ms, [&] {
			blocked = true;
			try {
				nobody_reads.send(1);
			} catch (const std::system_error &) {
				threw = true;
				throw;
			}
		});
		for (int i = 0; i < 1000 && !blocked; i++)
			xf::this_fiber::sleep_for(1ms);
		CHECK(blocked);
		xf::this_fiber::sleep_for(2ms); // in its send
		CHECK(xf_cancel_all() == 0);
		for (int i = 0; i < 1000 && !threw; i++)
			xf::this_fiber::sleep_for(1ms);
		CHECK(threw);
	} // stops it: after the callback has ended
}

// A fiber that ended by an exception, detached afterwards: the exception
// ends the process, as it does when the fiber ends after its detach (it
// was dropped).  In a child process, before the runtime of the rest.
void test_detach_after_throw()
{
	pid_t pid = fork();
	int status = 0;

	CHECK(pid >= 0);
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stderr)) // std::terminate's words: expected
			_exit(3);
		xf::runtime rt;
		xf::fiber f([] { throw std::runtime_error("thrown before the detach"); });
		xf::this_fiber::sleep_for(20ms); // it has ended
		f.detach();
		_exit(0); // not reached
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: test_layer WORKERS\n");
		return 2;
	}
	alarm(50);
	test_detach_after_throw();
	xf_config cfg{};
	cfg.workers = unsigned(std::atoi(argv[1]));
	cfg.slice_us = 100;
	{
		xf::runtime rt(cfg);
		test_fiber();
		test_cancel();
		test_move_only_arguments();
		test_attr();
		test_batch();
		test_channel();
		test_select();
		test_sync();
		test_timer();
		test_cancelled_owner();
		test_timer_self_destroy();
		test_select_throw();
		test_long_durations();
		test_timer_cancelled();
		CHECK(rt.shutdown_for(5s));
	}
	try {
		xf_config bad{};
		bad.slice_us = 1; // below XF_SLICE_US_MIN
		xf::runtime rt(bad);
		fail("a bad config made a runtime", __LINE__);
	} catch (const std::system_error &e) {
		CHECK(e.code().value() == EINVAL);
	}
	std::printf("xfiber.hpp: ok\n");
	return 0;
}
