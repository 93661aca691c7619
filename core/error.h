// Errors as exceptions with context. DPLAB_CHECK(cond, fmt, args...) throws dplab::Error whose
// message names the source location and the formatted explanation.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace dplab {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& msg);

}  // namespace dplab

#define DPLAB_CHECK(cond, ...)                                                         \
  do {                                                                                 \
    if (!(cond)) ::dplab::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

#define DPLAB_FAIL(...) ::dplab::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
