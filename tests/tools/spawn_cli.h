// Runs a command in the background for tests that signal it while it works: spawn, find the
// ranks of an mpiexec job by their command line, wait with a deadline.
#pragma once
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace dplab::test {

struct Spawned {
  pid_t pid = -1;
  std::filesystem::path out, err;
};

// `cmd` runs through /bin/sh with `exec`, so the pid is the command's own (dplab or mpiexec).
inline Spawned spawn(const std::string& cmd, const std::filesystem::path& scratch) {
  std::filesystem::create_directories(scratch);
  Spawned s;
  s.out = scratch / "stdout.txt";
  s.err = scratch / "stderr.txt";
  const std::string line = "exec " + cmd + " >" + s.out.string() + " 2>" + s.err.string();
  s.pid = fork();
  if (s.pid == 0) {
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return s;
}

// The exit status (WEXITSTATUS), 128 + signal when killed by one, or -1 when the deadline
// passed (the process is then killed).
inline int wait_exit(pid_t pid, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    int st = 0;
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Polls `ready` every 20 ms until it holds (true) or the deadline passes (false).
inline bool wait_until(const std::function<bool()>& ready, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

inline std::string read_proc(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Processes whose command line contains every string of `needles`, with the environment
// variable `env` (e.g. "PMI_RANK=1"), excluding children of such processes (dplab's death
// watchers are forks of their rank, with the same command line and environment).
inline std::vector<pid_t> find_processes(const std::vector<std::string>& needles,
                                         const std::string& env) {
  std::vector<pid_t> match;
  std::vector<pid_t> parents;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmd = read_proc(e.path().string() + "/cmdline");
    bool all = !cmd.empty();
    for (const auto& n : needles) all = all && cmd.find(n) != std::string::npos;
    if (!all) continue;
    // environ: NUL-separated NAME=VALUE entries.
    const std::string nul(1, '\0');
    const std::string env_block = nul + read_proc(e.path().string() + "/environ") + nul;
    if (!env.empty() && env_block.find(nul + env + nul) == std::string::npos) continue;
    // stat: "pid (comm) state ppid ..."; comm may hold spaces, so parse after the last ')'.
    const std::string stat = read_proc(e.path().string() + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    match.push_back(pid_t(std::stol(name)));
    parents.push_back(ppid);
  }
  std::vector<pid_t> r;
  for (size_t i = 0; i < match.size(); ++i) {
    bool child_of_match = false;
    for (pid_t m : match) child_of_match = child_of_match || parents[i] == m;
    if (!child_of_match) r.push_back(match[i]);
  }
  return r;
}

}  // namespace dplab::test
