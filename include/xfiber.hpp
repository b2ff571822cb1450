// xfiber.hpp - the C++17 face of xfiber.h: fibers, channels of any movable
// type, select, wait groups, mutexes, condition variables and timers, with
// errors as exceptions.  Header-only; link with xfiber as for C.
//
//     #include <xfiber.hpp>
//
//     int main()
//     {
//             xf::runtime rt;                      // xf_init; its destructor shuts down
//             xf::channel<std::string> ch(8);
//             xf::fiber producer([&] {
//                     for (int i = 0; i < 3; i++)
//                             ch.send("message " + std::to_string(i));
//                     ch.close();
//             });
//             while (auto m = ch.recv())          // empty once closed and drained
//                     std::puts(m->c_str());
//     }                                           // producer joins, rt shuts down
//
// Errors come as std::system_error carrying the errno value; a blocking call
// of a cancelled fiber (xf::fiber::cancel, xf_cancel) throws one whose code
// is std::errc::operation_canceled.  An exception that escapes a fiber's
// callable is rethrown by join(); one that escapes a detached fiber's ends
// the process (std::terminate, the runtime names it), except that
// cancellation, which only ends the fiber.
#ifndef XFIBER_HPP
#define XFIBER_HPP

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

#include "xfiber.h"

namespace xf {

// Throws std::system_error for a non-zero errno value.
inline void check(int err, const char *what)
{
	if (err)
		throw std::system_error(err, std::generic_category(), what);
}

namespace detail {

template <class Rep, class Period>
std::uint64_t to_ns(std::chrono::duration<Rep, Period> d)
{
	if (d <= d.zero())
		return 0;
	// Beyond what nanoseconds hold (292 years; hours::max() and the like):
	// forever, for all practical purposes, and no overflow in the cast.
	if (std::chrono::duration<long double, std::nano>(d).count() >=
	    static_cast<long double>(std::numeric_limits<std::int64_t>::max()))
		return XF_FOREVER - 1;
	auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
	if (ns <= 0)
		return 0;
	return static_cast<std::uint64_t>(ns) == XF_FOREVER ? XF_FOREVER - 1
							     : static_cast<std::uint64_t>(ns);
}

// Whether e is the error a cancelled wait throws: how xf_cancel_all stops
// detached fibers and timers before a shutdown, not an error to report.
inline bool is_cancellation(const std::exception_ptr &e)
{
	try {
		std::rethrow_exception(e);
	} catch (const std::system_error &x) {
		return x.code() == std::errc::operation_canceled;
	} catch (...) {
		return false;
	}
}

// std::terminate, with e as the exception it names (noexcept: rethrown
// here it cannot leave).
[[noreturn]] inline void terminate_with(std::exception_ptr e) noexcept
{
	std::fputs("xfiber: an exception escaped a detached fiber; std::terminate() follows\n",
		   stderr);
	std::rethrow_exception(e);
}

} // namespace detail

// The runtime, for the scope of an object: xf_init, then xf_shutdown.
class runtime {
public:
	explicit runtime(const xf_config &cfg = {}) { check(xf_init(&cfg), "xf_init"); }
	~runtime() { xf_shutdown(); }
	runtime(const runtime &) = delete;
	runtime &operator=(const runtime &) = delete;
	// xf_shutdown_timeout: false after the timeout (the fibers still alive
	// are on stderr), with the runtime still running.
	template <class Rep, class Period>
	bool shutdown_for(std::chrono::duration<Rep, Period> d)
	{
		int err = xf_shutdown_timeout(detail::to_ns(d));
		if (err == ETIMEDOUT)
			return false;
		check(err, "xf_shutdown_timeout");
		return true;
	}
};

// A fiber running a callable, as std::jthread runs one on a thread: the
// destructor joins a joinable fiber - and in a cancelled fiber cancels it
// first (as jthread requests a stop), then joins it all the same: the
// fiber may use what its owner's frame holds.
class fiber {
	struct state_base {
		std::exception_ptr error;
		std::atomic<bool> released{false}; // the fiber ended, or its owner let go
		virtual ~state_base() = default;
		virtual void run() = 0;
	};
	template <class F, class... Args> struct state : state_base {
		std::tuple<std::decay_t<F>, std::decay_t<Args>...> call;
		explicit state(F &&f, Args &&...a) : call(std::forward<F>(f), std::forward<Args>(a)...) {}
		// As std::thread: the copies are passed as rvalues, run once (a
		// move-only argument works; an lvalue reference parameter does
		// not compile rather than bind to the copy).
		void run() override
		{
			std::apply(
			    [](auto &fn, auto &...args) {
				    std::invoke(std::move(fn), std::move(args)...);
			    },
			    call);
		}
	};

	static void *trampoline(void *p)
	{
		auto *st = static_cast<state_base *>(p);
		try {
			st->run();
		} catch (...) {
			st->error = std::current_exception();
		}
		// Detached: nobody will join; whoever comes second frees.  A
		// cancellation that ended it is how a detached fiber is stopped
		// (xf_cancel_all before a shutdown), not an error to report.
		if (st->released.exchange(true)) {
			std::exception_ptr e = st->error;
			delete st;
			if (e && !detail::is_cancellation(e))
				std::rethrow_exception(e); // escapes the fiber: the runtime names it
		}
		return nullptr;
	}

	template <class F, class... Args> void spawn(const xf_attr *attr, F &&f, Args &&...args)
	{
		auto *st = new state<F, Args...>(std::forward<F>(f), std::forward<Args>(args)...);
		int err = xf_spawn(&handle_, trampoline, st, attr);
		if (err) {
			delete st;
			check(err, "xf_spawn");
		}
		state_ = st;
	}

	xf_fiber *handle_ = nullptr;
	state_base *state_ = nullptr;

public:
	fiber() noexcept = default;

	template <class F, class... Args,
		  class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, fiber> &&
					   !std::is_same_v<std::decay_t<F>, xf_attr>>>
	explicit fiber(F &&f, Args &&...args)
	{
		spawn(nullptr, std::forward<F>(f), std::forward<Args>(args)...);
	}

	// With xf_spawn's attributes: stack size, pinning, name, batch.  Not
	// detached (detach() is the handle's): that is EINVAL.
	template <class F, class... Args> fiber(const xf_attr &attr, F &&f, Args &&...args)
	{
		if (attr.detached)
			check(EINVAL, "xf_spawn");
		spawn(&attr, std::forward<F>(f), std::forward<Args>(args)...);
	}

	fiber(fiber &&o) noexcept
	    : handle_(std::exchange(o.handle_, nullptr)), state_(std::exchange(o.state_, nullptr))
	{
	}
	fiber &operator=(fiber &&o) noexcept
	{
		if (this != &o) {
			if (joinable())
				std::terminate(); // as std::thread: a running fiber dropped
			handle_ = std::exchange(o.handle_, nullptr);
			state_ = std::exchange(o.state_, nullptr);
		}
		return *this;
	}
	fiber(const fiber &) = delete;
	fiber &operator=(const fiber &) = delete;

	~fiber()
	{
		if (joinable()) {
			if (xf_cancelled())
				xf_cancel(handle_); // the owner unwinds: so does what it owns
			xf_cancel_disable();	    // a cancelled owner's join must still wait
			try {
				join();
			} catch (...) {
				// A destructor must not throw: the fiber's exception ends here.
			}
			xf_cancel_enable();
		}
	}

	bool joinable() const noexcept { return handle_ != nullptr; }

	// Waits for the fiber; rethrows what escaped its callable.
	void join()
	{
		if (!joinable())
			throw std::system_error(EINVAL, std::generic_category(), "xf::fiber::join");
		check(xf_join(handle_, nullptr), "xf_join");
		handle_ = nullptr;
		std::unique_ptr<state_base> st(state_);
		state_ = nullptr;
		if (st->error)
			std::rethrow_exception(st->error);
	}

	void detach()
	{
		if (!joinable())
			throw std::system_error(EINVAL, std::generic_category(), "xf::fiber::detach");
		check(xf_detach(handle_), "xf_detach");
		handle_ = nullptr;
		if (state_->released.exchange(true)) {
			// It had ended: an exception that escaped it ends the process
			// now, as it would have had it ended after the detach.
			std::exception_ptr e = state_->error;

			delete state_;
			state_ = nullptr;
			if (e && !detail::is_cancellation(e))
				detail::terminate_with(e);
		}
		state_ = nullptr;
	}

	// xf_cancel: its cancellable calls throw operation_canceled from now on.
	void cancel() { check(xf_cancel(handle_), "xf_cancel"); }

	// xf_fiber_set_batch: batch work (true) or latency-critical (false).
	void set_batch(bool batch) { check(xf_fiber_set_batch(handle_, batch), "xf_fiber_set_batch"); }

	xf_fiber *native_handle() const noexcept { return handle_; }
};

namespace this_fiber {

inline void yield() noexcept { xf_yield(); }

template <class Rep, class Period> void sleep_for(std::chrono::duration<Rep, Period> d)
{
	check(xf_sleep_ns(detail::to_ns(d)), "xf_sleep_ns");
}

template <class Clock, class Duration>
void sleep_until(const std::chrono::time_point<Clock, Duration> &t)
{
	auto now = Clock::now();
	if (t > now)
		sleep_for(t - now);
}

inline bool cancelled() noexcept { return xf_cancelled(); }

inline xf_fiber *self() noexcept { return xf_self(); }

// The calling fiber as batch work (true) or latency-critical (false):
// xf_fiber_set_batch.  std::system_error outside a fiber.
inline void set_batch(bool batch) { check(xf_fiber_set_batch(xf_self(), batch), "xf_fiber_set_batch"); }

} // namespace this_fiber

// A mutex for fibers (and plain threads); Lockable, for std::lock_guard
// and std::unique_lock.  Not cancellable, as std::mutex is not.
class mutex {
	xf_mutex m_ = XF_MUTEX_INITIALIZER;

public:
	mutex() = default;
	mutex(const mutex &) = delete;
	mutex &operator=(const mutex &) = delete;
	void lock() { check(xf_mutex_lock(&m_), "xf_mutex_lock"); }
	bool try_lock() { return xf_mutex_trylock(&m_) == 0; }
	void unlock() { check(xf_mutex_unlock(&m_), "xf_mutex_unlock"); }
	xf_mutex *native_handle() noexcept { return &m_; }
};

class condition_variable {
	xf_cond c_ = XF_COND_INITIALIZER;

public:
	condition_variable() = default;
	condition_variable(const condition_variable &) = delete;
	condition_variable &operator=(const condition_variable &) = delete;

	void notify_one() noexcept { xf_cond_signal(&c_); }
	void notify_all() noexcept { xf_cond_broadcast(&c_); }

	void wait(std::unique_lock<mutex> &lk)
	{
		check(xf_cond_wait(&c_, lk.mutex()->native_handle()), "xf_cond_wait");
	}
	template <class Pred> void wait(std::unique_lock<mutex> &lk, Pred pred)
	{
		while (!pred())
			wait(lk);
	}
	template <class Rep, class Period>
	std::cv_status wait_for(std::unique_lock<mutex> &lk, std::chrono::duration<Rep, Period> d)
	{
		std::uint64_t ns = detail::to_ns(d);
		int err = xf_cond_timedwait(&c_, lk.mutex()->native_handle(), ns ? ns : 1);
		if (err == ETIMEDOUT)
			return std::cv_status::timeout;
		check(err, "xf_cond_timedwait");
		return std::cv_status::no_timeout;
	}
	template <class Rep, class Period, class Pred>
	bool wait_for(std::unique_lock<mutex> &lk, std::chrono::duration<Rep, Period> d, Pred pred)
	{
		// A deadline no clock arithmetic overflows (hours::max() included).
		auto room = std::chrono::nanoseconds(std::numeric_limits<std::int64_t>::max() / 2);
		auto ns = detail::to_ns(d);
		auto until = std::chrono::steady_clock::now() +
			     (ns > static_cast<std::uint64_t>(room.count()) ? room
									      : std::chrono::nanoseconds(ns));
		while (!pred()) {
			auto left = until - std::chrono::steady_clock::now();
			if (left <= left.zero())
				return pred();
			wait_for(lk, left);
		}
		return true;
	}
	xf_cond *native_handle() noexcept { return &c_; }
};

// Go's sync.WaitGroup.
class wait_group {
	xf_wg wg_ = XF_WG_INITIALIZER;

public:
	wait_group() = default;
	wait_group(const wait_group &) = delete;
	wait_group &operator=(const wait_group &) = delete;
	void add(std::int64_t n = 1) { check(xf_wg_add(&wg_, n), "xf_wg_add"); }
	void done() { check(xf_wg_done(&wg_), "xf_wg_done"); }
	void wait() { check(xf_wg_wait(&wg_), "xf_wg_wait"); }
	template <class Rep, class Period> bool wait_for(std::chrono::duration<Rep, Period> d)
	{
		int err = xf_wg_timedwait(&wg_, detail::to_ns(d));
		if (err == ETIMEDOUT)
			return false;
		check(err, "xf_wg_timedwait");
		return true;
	}
};

// A bounded channel of T, which need only be movable: values move in and
// out (a trivially copyable T travels in the channel itself, any other as
// a pointer to a moved copy).  Values still buffered when the channel is
// destroyed are destroyed with it.
template <class T> class channel {
	static constexpr bool inline_ = std::is_trivially_copyable_v<T>;

public:
	// What the C channel carries: the value itself, or a pointer to it.
	using slot = std::conditional_t<inline_, T, T *>;

private:
	xf_chan *ch_ = nullptr;

public:
	// Room for a slot the C channel writes into: no default constructor
	// of T needed.
	union slot_buf {
		char none;
		slot s;
		slot_buf() noexcept : none(0) {}
	};
	// How a value travels (for select's cases): wrap before a send, unwrap
	// after a receive.
	static slot wrap(T &&v)
	{
		if constexpr (inline_)
			return v;
		else
			return new T(std::move(v));
	}
	static T unwrap(slot s)
	{
		if constexpr (inline_) {
			return s;
		} else {
			std::unique_ptr<T> p(s);
			return std::move(*p);
		}
	}
private:
	// A value that did not go: back into v, its wrapper freed.
	static void unwrap_back(slot s, T &v)
	{
		if constexpr (!inline_) {
			v = std::move(*s);
			delete s;
		} else {
			(void)s;
			(void)v;
		}
	}
	void destroy() noexcept
	{
		if (!ch_)
			return;
		xf_chan_close(ch_);
		slot_buf b;
		while (xf_chan_try_recv(ch_, &b.s) == 0)
			(void)unwrap(b.s);
		while (xf_chan_destroy(ch_) == EBUSY)
			xf_yield(); // waiters woken by the close are still leaving
		ch_ = nullptr;
	}

public:
	explicit channel(std::size_t capacity = 0)
	{
		check(xf_chan_create(&ch_, sizeof(slot), capacity), "xf_chan_create");
	}
	~channel() { destroy(); }
	channel(const channel &) = delete;
	channel &operator=(const channel &) = delete;
	channel(channel &&o) noexcept : ch_(std::exchange(o.ch_, nullptr)) {}
	channel &operator=(channel &&o) noexcept
	{
		if (this != &o) {
			destroy();
			ch_ = std::exchange(o.ch_, nullptr);
		}
		return *this;
	}

	// Waits for room; throws EPIPE once the channel is closed.
	void send(T v)
	{
		slot s = wrap(std::move(v));
		int err = xf_chan_send(ch_, &s);
		if (err) {
			unwrap_back(s, v);
			check(err, "xf_chan_send");
		}
	}
	// False when full (or closed); v is kept then.
	bool try_send(T &v)
	{
		slot s = wrap(std::move(v));
		if (xf_chan_try_send(ch_, &s) == 0)
			return true;
		unwrap_back(s, v);
		return false;
	}
	bool try_send(T &&v) { return try_send(v); }
	// False after the timeout; v is kept then.
	template <class Rep, class Period> bool send_for(T &v, std::chrono::duration<Rep, Period> d)
	{
		slot s = wrap(std::move(v));
		int err = xf_chan_timed_send(ch_, &s, detail::to_ns(d));
		if (!err)
			return true;
		unwrap_back(s, v);
		if (err == ETIMEDOUT)
			return false;
		check(err, "xf_chan_timed_send");
		return false;
	}
	template <class Rep, class Period> bool send_for(T &&v, std::chrono::duration<Rep, Period> d)
	{
		return send_for(v, d);
	}

	// The next value; empty once the channel is closed and drained.
	std::optional<T> recv()
	{
		slot_buf b;
		int err = xf_chan_recv(ch_, &b.s);
		if (err == EPIPE)
			return std::nullopt;
		check(err, "xf_chan_recv");
		return unwrap(b.s);
	}
	std::optional<T> try_recv()
	{
		slot_buf b;
		if (xf_chan_try_recv(ch_, &b.s))
			return std::nullopt;
		return unwrap(b.s);
	}
	// Empty after the timeout, or once closed and drained.
	template <class Rep, class Period> std::optional<T> recv_for(std::chrono::duration<Rep, Period> d)
	{
		slot_buf b;
		int err = xf_chan_timed_recv(ch_, &b.s, detail::to_ns(d));
		if (err == ETIMEDOUT || err == EPIPE)
			return std::nullopt;
		check(err, "xf_chan_timed_recv");
		return unwrap(b.s);
	}

	void close() { check(xf_chan_close(ch_), "xf_chan_close"); }
	xf_chan *native_handle() noexcept { return ch_; }
};

// Cases of xf::select: a receive, whose callback gets the value (an empty
// optional once the channel is closed and drained); a send, whose callback
// runs once the value went (a send on a closed channel throws EPIPE); and
// a timeout.  select() performs exactly one, each of those ready as likely
// as the others, and returns its index.  Callbacks may be move-only.  A
// send case owns its value: when another case is chosen, it is destroyed
// with the case - a move-only value that must not be lost goes through
// channel::send_for or try_send, which give it back, or in a select as a
// copy (a shared_ptr, say).
template <class T, class F> struct recv_case {
	channel<T> *ch;
	F fn;
	typename channel<T>::slot_buf buf{};
	xf_select_case make() { return {ch->native_handle(), XF_SELECT_RECV, &buf.s, 0}; }
	void done(int result)
	{
		if (result == EPIPE)
			fn(std::nullopt);
		else
			fn(channel<T>::unwrap(buf.s));
	}
	void dropped() {}
};

namespace detail {
struct no_callback {
	void operator()() const noexcept {}
};
} // namespace detail

template <class T, class F> struct send_case {
	channel<T> *ch;
	typename channel<T>::slot buf;
	F fn;
	bool sent = false;
	xf_select_case make() { return {ch->native_handle(), XF_SELECT_SEND, &buf, 0}; }
	void done(int result)
	{
		if (result) {
			dropped();
			check(result, "xf::select: send");
		}
		sent = true;
		fn();
	}
	void dropped()
	{
		if constexpr (!std::is_trivially_copyable_v<T>) {
			if (!sent)
				delete buf;
			sent = true;
		}
	}
};

template <class F> struct timeout_case {
	std::uint64_t ns;
	F fn;
};

template <class T, class F> recv_case<T, std::decay_t<F>> on_recv(channel<T> &ch, F &&fn)
{
	return {&ch, std::forward<F>(fn)};
}

template <class T, class F> send_case<T, std::decay_t<F>> on_send(channel<T> &ch, T v, F &&fn)
{
	return {&ch, channel<T>::wrap(std::move(v)), std::forward<F>(fn)};
}

template <class T> send_case<T, detail::no_callback> on_send(channel<T> &ch, T v)
{
	return {&ch, channel<T>::wrap(std::move(v)), {}};
}

template <class Rep, class Period, class F>
timeout_case<std::decay_t<F>> on_timeout(std::chrono::duration<Rep, Period> d, F &&fn)
{
	return {detail::to_ns(d), std::forward<F>(fn)};
}

namespace detail {
template <class C> struct is_timeout_case : std::false_type {};
template <class F> struct is_timeout_case<timeout_case<F>> : std::true_type {};
template <class C> using is_timeout = is_timeout_case<std::decay_t<C>>;
} // namespace detail

template <class... Cases> std::size_t select(Cases &&...cases)
{
	constexpr std::size_t n = sizeof...(Cases);
	xf_select_case raw[n ? n : 1];
	std::uint64_t timeout = XF_FOREVER;
	std::size_t k = 0, chosen = 0, timeout_index = n;

	auto fill = [&](auto &c) {
		if constexpr (detail::is_timeout<decltype(c)>::value) {
			raw[k] = xf_select_case{nullptr, XF_SELECT_RECV, nullptr, 0};
			timeout = c.ns;
			timeout_index = k;
		} else {
			raw[k] = c.make();
		}
		k++;
	};
	(fill(cases), ...);
	int err = xf_select(raw, n, timeout, &chosen);
	if (err == ETIMEDOUT && timeout_index < n)
		chosen = timeout_index;
	else if (err)
		chosen = n; // none: every case lets go, then the error is thrown
	// Every case but the chosen one lets its value go first, so that a
	// callback that throws leaves nothing behind.
	k = 0;
	auto drop = [&](auto &c) {
		if constexpr (!detail::is_timeout<decltype(c)>::value) {
			if (k != chosen)
				c.dropped();
		}
		k++;
	};
	(drop(cases), ...);
	if (chosen == n)
		check(err, "xf_select");
	k = 0;
	auto run = [&](auto &c) {
		if (k++ != chosen)
			return;
		if constexpr (detail::is_timeout<decltype(c)>::value)
			c.fn();
		else
			c.done(raw[chosen].result);
	};
	(run(cases), ...);
	return chosen;
}

// A callback after a delay, then every period (zero: once), run in a fiber
// of its own; stopped (waiting for a callback that runs) when destroyed -
// also from its own callback, which then ends first.
class timer {
	struct state {
		std::function<void()> fn;
		std::atomic<xf_fiber *> calling{nullptr}; // the timer's fiber, in fn
		bool orphaned = false; // stopped from fn: call() frees it after fn
	};
	xf_timer *t_ = nullptr;
	std::unique_ptr<state> st_;

	// A callback that a cancellation ended (xf_cancel_all before a
	// shutdown: a blocking call in it threw operation_canceled) ends
	// quietly, as a detached fiber does; anything else that escapes it
	// leaves through the runtime's C frames, which end the process.
	static void call(void *p)
	{
		auto *st = static_cast<state *>(p);
		std::exception_ptr error;

		st->calling.store(xf_self(), std::memory_order_relaxed);
		try {
			st->fn();
		} catch (...) {
			error = std::current_exception();
		}
		st->calling.store(nullptr, std::memory_order_relaxed);
		if (st->orphaned)
			delete st;
		if (error && !detail::is_cancellation(error))
			std::rethrow_exception(error);
	}

public:
	template <class R1, class P1, class R2 = long, class P2 = std::ratio<1>, class F>
	timer(std::chrono::duration<R1, P1> after, std::chrono::duration<R2, P2> period, F &&fn)
	    : st_(new state{std::function<void()>(std::forward<F>(fn))})
	{
		check(xf_timer_start(&t_, detail::to_ns(after), detail::to_ns(period), call,
				     st_.get()),
		      "xf_timer_start");
	}
	template <class R1, class P1, class F>
	timer(std::chrono::duration<R1, P1> after, F &&fn)
	    : timer(after, std::chrono::nanoseconds(0), std::forward<F>(fn))
	{
	}
	~timer() { stop(); }
	timer(const timer &) = delete;
	timer &operator=(const timer &) = delete;
	void stop() noexcept
	{
		if (!t_)
			return;
		// Only a fiber runs the callback: in a plain thread xf_self() is
		// null, as calling is while no callback runs, and that is no
		// self-stop (the state leaked: a reviewer's program).
		xf_fiber *self = xf_self();
		bool from_callback = self && st_->calling.load(std::memory_order_relaxed) == self;
		xf_timer_stop(std::exchange(t_, nullptr));
		if (from_callback) {
			// The callback runs on in this very fiber: it frees its state.
			st_->orphaned = true;
			st_.release();
		}
	}
};

} // namespace xf

#endif // XFIBER_HPP
