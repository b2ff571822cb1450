// kv.cpp - a key-value server in C++17 on xfiber.hpp: a fiber per
// connection, a std::unordered_map under an xf::mutex, and a compute
// command that runs AVX-512 code in the middle of other clients' requests
// (preemption keeps its ZMM registers, and its neighbours' latency).
//
//   example_kv [PORT]     (default: any free port, printed at start)
//
// One command per line, one answer per line:
//   SET key value    OK
//   GET key          the value, or (nil)
//   DEL key          1 or 0
//   SUM key N        the sum of s, s+1, ..., s+N-1 with s the value's
//                    length + 0.5: a heavy command (N up to 10^8), in
//                    AVX-512 where the CPU has it, printed as %.6e
//   QUIT             closes the connection
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unordered_map>

#include <immintrin.h>

#include "xfiber.hpp"

namespace {

xf::mutex table_lock;
std::unordered_map<std::string, std::string> table;

// The sum of x_i = seed + i for i < n: the heavy command, in AVX-512 where
// the CPU has it.  Double accumulators, so the answer does not depend on
// which path ran.
__attribute__((target("avx512f"))) double sum_avx512(double seed, std::uint64_t n)
{
	__m512d acc = _mm512_setzero_pd();
	__m512d x = _mm512_add_pd(_mm512_set1_pd(seed), _mm512_set_pd(7, 6, 5, 4, 3, 2, 1, 0));
	const __m512d step = _mm512_set1_pd(8);
	std::uint64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		acc = _mm512_add_pd(acc, x);
		x = _mm512_add_pd(x, step);
	}
	alignas(64) double lanes[8];
	_mm512_store_pd(lanes, acc); /* not _mm512_reduce_add_pd: gcc 12 warns inside it */
	double s = 0;
	for (double l : lanes)
		s += l;
	for (; i < n; i++)
		s += seed + double(i);
	return s;
}

double sum_scalar(double seed, std::uint64_t n)
{
	double s = 0;
	for (std::uint64_t i = 0; i < n; i++)
		s += seed + double(i);
	return s;
}

std::string answer(const std::string &line, bool &quit)
{
	std::string cmd = line.substr(0, line.find(' '));
	std::string rest = line.size() > cmd.size() ? line.substr(cmd.size() + 1) : "";
	std::string key = rest.substr(0, rest.find(' '));
	std::string arg = rest.size() > key.size() ? rest.substr(key.size() + 1) : "";

	if (cmd == "QUIT") {
		quit = true;
		return "BYE";
	}
	if (cmd == "SET" && !key.empty()) {
		std::lock_guard<xf::mutex> g(table_lock);
		table[key] = arg;
		return "OK";
	}
	if (cmd == "GET" && !key.empty()) {
		std::lock_guard<xf::mutex> g(table_lock);
		auto it = table.find(key);
		return it == table.end() ? "(nil)" : it->second;
	}
	if (cmd == "DEL" && !key.empty()) {
		std::lock_guard<xf::mutex> g(table_lock);
		return table.erase(key) ? "1" : "0";
	}
	if (cmd == "SUM" && !key.empty()) {
		std::size_t len;
		{
			std::lock_guard<xf::mutex> g(table_lock);
			auto it = table.find(key);
			if (it == table.end())
				return "(nil)";
			len = it->second.size();
		}
		std::uint64_t n = std::strtoull(arg.c_str(), nullptr, 10);
		if (n > 100000000)
			return "ERR N too large";
		// No lock held while it computes: other fibers run around it.
		double seed = double(len) + 0.5;
		double s = __builtin_cpu_supports("avx512f") ? sum_avx512(seed, n) : sum_scalar(seed, n);
		char out[64];
		std::snprintf(out, sizeof(out), "%.6e", s);
		return out;
	}
	return "ERR unknown command";
}

void serve(int fd)
{
	std::string pending;
	char buf[4096];
	bool quit = false;

	while (!quit) {
		ssize_t n = xf_read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		pending.append(buf, std::size_t(n));
		std::size_t eol;
		while (!quit && (eol = pending.find('\n')) != std::string::npos) {
			std::string line = pending.substr(0, eol);
			pending.erase(0, eol + 1);
			if (!line.empty() && line.back() == '\r')
				line.pop_back();
			std::string out = answer(line, quit) + "\n";
			if (xf_write(fd, out.data(), out.size()) != ssize_t(out.size()))
				quit = true;
		}
	}
	xf_close(fd);
}

} // namespace

int main(int argc, char **argv)
{
	xf::runtime rt;
	sockaddr_in addr{};
	socklen_t len = sizeof(addr);

	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons(argc > 1 ? std::uint16_t(std::atoi(argv[1])) : 0);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (bind(lfd, reinterpret_cast<sockaddr *>(&addr), len) || listen(lfd, 128) ||
	    getsockname(lfd, reinterpret_cast<sockaddr *>(&addr), &len)) {
		std::perror("listen");
		return 1;
	}
	std::printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
	std::fflush(stdout);
	int fd;
	while ((fd = xf_accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0)
		xf::fiber(serve, fd).detach();
	std::perror("accept");
	return 0;
}
