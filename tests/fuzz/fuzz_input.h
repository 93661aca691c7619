// Shared pieces of the fuzz targets (tests/fuzz/fuzz_*.cpp): the input-size bound and a private
// directory to write the fuzzed bytes into, for the parsers whose product entry point takes a
// path (index_tar, read_idx_*, load_safetensors, load_toml_options).
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace dplab::fuzz {

// Inputs above this are ignored: libFuzzer runs pass -max_len well below it, and the bound keeps a
// replayed file from making a target slow. Real files are larger, but the parsers' logic does
// not depend on size beyond what a megabyte shows (memory bounds are checked with small inputs
// whose headers claim large sizes).
constexpr size_t kMaxInputBytes = size_t(1) << 20;

// A directory of this process (the fuzzer runs one input at a time, and parallel jobs are
// separate processes), removed when the process exits normally.
class ScratchDir {
 public:
  ScratchDir() {
    const std::filesystem::path base = std::filesystem::temp_directory_path();
    std::string templ = (base / "dplab-fuzz-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr) {
      std::perror("dplab fuzz: mkdtemp");
      std::abort();
    }
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Writes `data` to `name` inside the directory (replacing what was there) and returns the path.
  std::string write(const std::string& name, const uint8_t* data, size_t size) const {
    const std::string p = (path_ / name).string();
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) ||
        std::fclose(f) != 0) {
      std::perror(("dplab fuzz: writing " + p).c_str());
      std::abort();  // the harness's own failure, not a finding in the parser
    }
    return p;
  }

 private:
  std::filesystem::path path_;
};

// The fuzz entry point is a plain C function that libFuzzer calls once per input, with no
// context argument: the directory lives in a function-local static, created on the first call.
inline const ScratchDir& scratch() {
  static const ScratchDir dir;
  return dir;
}

}  // namespace dplab::fuzz
