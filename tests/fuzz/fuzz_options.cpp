// Fuzz target: a config file through what `dplab train --config FILE` runs on it
// (tools/dplab/cmd_train.cpp): load_config_file (TOML, or a run record when the input starts
// with '{'), the value checks of train/config/option_values.h (the file's values, then all), the
// typed reads of core/options.h and the unknown-key check. A config problem must be a
// UsageError (exit status 2) with a short message: any other exception, or a message longer
// than kMaxMessageBytes, is a finding.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dplab/core/options.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/run_config.h"
#include "fuzz_input.h"

namespace {

// A few hundred characters per problem (the unknown-key error lists 10 keys): far above what a
// message of a bounded number of cut names and values reaches, far below the input's size.
constexpr size_t kMaxMessageBytes = 4096;

void check_message(const dplab::UsageError& e) {
  const size_t n = std::strlen(e.what());
  if (n <= kMaxMessageBytes) return;
  std::fprintf(stderr, "usage error of %zu bytes (limit %zu): %.300s...\n", n, kMaxMessageBytes,
               e.what());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  const bool json = size > 0 && data[0] == '{';
  const std::string path =
      dplab::fuzz::scratch().write(json ? "fuzz.json" : "fuzz.toml", data, size);
  dplab::Options opt;
  try {
    dplab::Options from_file;
    dplab::load_config_file(path, from_file);
    opt = from_file;
    dplab::apply_set_option("seed=1", opt);
    dplab::check_config_values(from_file, opt, path);
    dplab::check_option_values(opt);
  } catch (const dplab::UsageError& e) {
    check_message(e);
    return 0;
  }
  // What the driver reads of every key: text, and where it parses, a typed value.
  for (const auto& [key, value] : opt.values()) {
    opt.get_string(key, "");
    try {
      opt.get_int(key, 0);
    } catch (const dplab::UsageError& e) {
      check_message(e);
    }
    try {
      opt.get_double(key, 0.0);
    } catch (const dplab::UsageError& e) {
      check_message(e);
    }
    try {
      opt.get_bool(key, false);
    } catch (const dplab::UsageError& e) {
      check_message(e);
    }
  }
  // Half the keys read: the rest are unknown, with suggestions among the read ones.
  dplab::Options half;
  size_t i = 0;
  for (const auto& [key, value] : opt.values()) {
    half.set(key, value);
    if (i++ % 2 == 0) half.get_string(key, "");
  }
  try {
    dplab::check_no_unknown_options(half);
  } catch (const dplab::UsageError& e) {
    check_message(e);
  }
  return 0;
}
