// The decoder tests' way to read an error: the DecodeError message of f(), or "" when it does
// not throw (any other exception fails the test), and EXPECT_HAS for a part of that message.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "dplab/data/decode.h"

namespace dplab::test {

template <typename F>
std::string decode_error(F f) {
  try {
    f();
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace dplab::test

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)
