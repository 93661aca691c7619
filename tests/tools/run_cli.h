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

// The build tree's binary by default; DPLAB_CLI in the environment names another one (the
// device kit runs test binaries far from the tree they were built in: device-check.sh).
inline std::string dplab_exe() {
  if (const char* e = std::getenv("DPLAB_CLI"); e && *e) return e;
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

// Runs `launcher` + the dplab binary + `args` (appended as is: the caller quotes) in a shell,
// its output in files under `scratch`.
inline CliResult run_dplab_with(const std::string& launcher, const std::string& args,
                                const std::filesystem::path& scratch) {
  std::filesystem::create_directories(scratch);
  const auto out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const std::string cmd =
      launcher + dplab_exe() + " " + args + " >" + out.string() + " 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline CliResult run_dplab(const std::string& args, const std::filesystem::path& scratch) {
  return run_dplab_with("", args, scratch);
}

#ifdef DPLAB_MPIEXEC
// `dplab ARGS` under mpiexec -n `ranks`; `env` ("K=V K2=V2") set for every rank.
inline CliResult run_dplab_mpi(int ranks, const std::string& args,
                               const std::filesystem::path& scratch, const std::string& env = "") {
  return run_dplab_with((env.empty() ? "" : "env " + env + " ") + DPLAB_MPIEXEC + " -n " +
                            std::to_string(ranks) + " ",
                        args, scratch);
}
#endif

}  // namespace dplab::test
