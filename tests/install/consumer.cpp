// consumer.cpp - the README's C++ example, built against an installed
// xfiber (xfiber.hpp) as a user would.
#include <cstdio>
#include <string>
#include <xfiber.hpp>

int main()
{
	xf::runtime rt;
	xf::channel<std::string> ch(8);
	xf::fiber producer([&] {
		for (int i = 0; i < 3; i++)
			ch.send("message " + std::to_string(i));
		ch.close();
	});
	int n = 0;
	while (auto m = ch.recv()) {
		std::puts(m->c_str());
		n++;
	}
	return n == 3 ? 0 : 1;
}
