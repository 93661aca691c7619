// A mistake in how dplab was invoked: an unknown option key or flag, a value of the wrong type
// or out of range (core/options.h), a malformed --set, an unreadable config file. The `dplab`
// command exits with status 2 for these, 1 for other errors (tools/dplab/main.cpp). The message
// names the option, the value and what was expected, with no source location.
#pragma once
#include <fmt/format.h>

#include "dplab/core/error.h"

namespace dplab {

class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace dplab

// A check of an option's value, as DPLAB_CHECK but throwing UsageError (exit status 2): for
// values the user gave that are out of range, malformed or inconsistent with other options,
// wherever the option is read (an algorithm's constructor, a schedule's factory).
#define DPLAB_CHECK_OPTION(cond, ...)                                   \
  do {                                                                  \
    if (!(cond)) throw ::dplab::UsageError(::fmt::format(__VA_ARGS__)); \
  } while (0)
#define DPLAB_FAIL_OPTION(...) throw ::dplab::UsageError(::fmt::format(__VA_ARGS__))
