// Runs the built `dplab` command in tests and captures exit status, stdout and stderr.
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace dplab::test {

struct CliResult {
  int status = -1;
  std::string out, err;
};

inline std::string dplab_exe() {
#ifdef DPLAB_CLI_PATH
  return DPLAB_CLI_PATH;
#endif
  const char* b = std::getenv("DPLAB_BINARY_DIR");
  return std::string(b ? b : ".") + "/bin/dplab";
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `args` is appended to the command line as is (the caller quotes).
inline CliResult run_dplab(const std::string& args, const std::filesystem::path& scratch) {
  std::filesystem::create_directories(scratch);
  const auto out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const std::string cmd = dplab_exe() + " " + args + " >" + out.string() + " 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace dplab::test
