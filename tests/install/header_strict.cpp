// header_strict.cpp - xfiber.hpp (and with it xfiber.h) as a strict C++17
// compiler reads it: built with -std=c++17 -pedantic -Werror by every build.
#include <xfiber.hpp>

int xf_header_strict_cxx17();

int xf_header_strict_cxx17()
{
	return sizeof(xf::channel<int>) > 0;
}
