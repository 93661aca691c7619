// A mistake in how dplab was invoked: an unknown option key or flag, a value of the wrong type
// or out of range (core/options.h), a malformed --set, an unreadable config file. The `dplab`
// command exits with status 2 for these, 1 for other errors (tools/dplab/main.cpp). The message
// names the option, the value and what was expected, with no source location.
#pragma once
#include "dplab/core/error.h"

namespace dplab {

class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace dplab
