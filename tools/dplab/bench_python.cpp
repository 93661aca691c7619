#include "dplab/tools/dplab/bench_python.h"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>

#include "dplab/core/error.h"

namespace dplab::cli {

namespace fs = std::filesystem;

fs::path bench_script(const std::string& file, const char* env_var, const std::string& flag) {
  if (const char* e = std::getenv(env_var)) return e;
  // The checkout's tools/bench (a compile definition: __FILE__ cannot say where the checkout is,
  // ccache's CCACHE_BASEDIR makes it relative).
  const fs::path in_tree = fs::path(DPLAB_BENCH_SCRIPTS_IN_TREE) / file;
  if (fs::exists(in_tree)) return in_tree;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path installed = exe.parent_path().parent_path() / "share/dplab/bench" / file;
  DPLAB_CHECK(!ec && fs::exists(installed),
              "{}: {} not found (looked at {} and {}); set {} to its path", flag, file,
              in_tree.string(), installed.string(), env_var);
  return installed;
}

std::string shell_quote(const std::string& text) {
  std::string r = "'";
  for (char c : text) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

nlohmann::json run_python_json(const fs::path& script, const std::string& args,
                               const std::string& flag) {
  const char* py = std::getenv("DPLAB_PYTHON");
  const std::string cmd = fmt::format("{} {} {} 2>&1", shell_quote(py ? py : "/usr/bin/python3"),
                                      shell_quote(script.string()), args);
  FILE* f = popen(cmd.c_str(), "r");
  DPLAB_CHECK(f != nullptr, "{}: cannot run '{}'", flag, cmd);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), f)) out.append(buf.data(), n);
  const int rc = pclose(f);
  std::string last;
  for (size_t b = 0, e; b < out.size(); b = e + 1) {
    e = out.find('\n', b);
    if (e == std::string::npos) e = out.size();
    if (e > b) last = out.substr(b, e - b);
  }
  DPLAB_CHECK(rc == 0 && !last.empty() && last.front() == '{', "{}: '{}' failed (status {}):\n{}",
              flag, cmd, rc, out);
  try {
    return nlohmann::json::parse(last);
  } catch (const nlohmann::json::exception& e) {
    DPLAB_FAIL("{}: unreadable output of '{}': {}\n{}", flag, cmd, e.what(), out);
  }
}

}  // namespace dplab::cli
