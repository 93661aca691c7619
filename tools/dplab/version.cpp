#include "dplab/tools/dplab/version.h"

#include <fmt/format.h>

#include "dplab/train/report/build_info.h"

namespace dplab::cli {

std::string version_text() {
  const nlohmann::json b = build_info(false);  // no CUDA device touched
  const std::string dirty = b.value("git_dirty", "unknown");
  std::string r =
      fmt::format("dplab {} (commit {}{})\n", b.value("dplab_version", "?"),
                  b.value("git_commit", "unknown"), dirty == "true" ? ", modified" : "");
  r += fmt::format("compiler: {}\noneDNN: {}\nMPI: {}\nCPU kernels: {}\n", b.value("compiler", "?"),
                   b.value("onednn", "?"), b.value("mpi", "?"), b.value("cpu_kernels", "?"));
  if (b.contains("cuda") && b["cuda"].is_object())
    r += fmt::format("CUDA: {} (built with)\n", b["cuda"].value("built_with", "?"));
  return r;
}

}  // namespace dplab::cli
