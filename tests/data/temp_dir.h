// A per-test temporary directory, removed at the end of the test.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace dplab::test {

struct ScopedTempDir {
  std::filesystem::path path;
  explicit ScopedTempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("dplab-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace dplab::test
