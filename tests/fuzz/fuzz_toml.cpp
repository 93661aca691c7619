// Fuzz target: the TOML configuration (train/config/config.h) through load_toml_options, what
// `dplab train CONFIG.toml` runs first, then the typed reads of core/options.h on every key (the
// driver reads each option as a string, integer, number or boolean) and the unknown-key check.
#include "dplab/core/error.h"
#include "dplab/core/options.h"
#include "dplab/train/config/config.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  const std::string path = dplab::fuzz::scratch().write("fuzz.toml", data, size);
  dplab::Options opt;
  try {
    dplab::load_toml_options(path, opt);
  } catch (const dplab::Error&) {
    return 0;
  }
  for (const auto& [key, value] : opt.values()) {
    opt.get_string(key, "");
    try {
      opt.get_int(key, 0);
    } catch (const dplab::Error&) {
    }
    try {
      opt.get_double(key, 0.0);
    } catch (const dplab::Error&) {
    }
    try {
      opt.get_bool(key, false);
    } catch (const dplab::Error&) {
    }
  }
  try {
    dplab::check_no_unknown_options(opt);
  } catch (const dplab::Error&) {
  }
  return 0;
}
