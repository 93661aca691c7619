#include "dplab/train/report/build_info.h"

#include <dnnl.h>
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>

#include "dplab/core/cpu_isa.h"
#include "dplab_git_info.h"  // generated at build time (cmake/BuildInfo.cmake)

#ifdef DPLAB_WITH_CUDA
#include <cuda_runtime_api.h>
#if __has_include(<cudnn_version.h>)
#include <cudnn_version.h>
#endif
#if __has_include(<nccl.h>)
#include <nccl.h>
#endif
#endif

namespace dplab {
namespace {

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  // Callable before MPI_Init (MPI 3.0), so one-process runs report it too.
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "unknown";
  std::string s(text, size_t(std::max(0, len)));
  // MPICH prints a multi-line configuration dump: its first line names library and version.
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  std::replace(s.begin(), s.end(), '\t', ' ');  // MPICH: "MPICH Version:\t4.0.2"
  return s;
}

#ifdef DPLAB_WITH_CUDA
// CUDA encodes versions as 1000 * major + 10 * minor.
std::string cuda_version_text(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}
#endif

std::string onednn_version() {
  const dnnl_version_t* d = dnnl_version();
  const std::string hash = d->hash ? d->hash : "";
  const std::string v = fmt::format("{}.{}.{}", d->major, d->minor, d->patch);
  return hash.empty() || hash == "N/A" ? v : fmt::format("{} ({})", v, hash);
}

}  // namespace

nlohmann::json build_info(bool cuda_device) {
  nlohmann::json j = {{"dplab_version", DPLAB_VERSION},  {"git_commit", DPLAB_GIT_COMMIT},
                      {"git_dirty", DPLAB_GIT_DIRTY},    {"compiler", DPLAB_COMPILER},
                      {"onednn", onednn_version()},      {"mpi", mpi_library_version()},
                      {"cpu_kernels", cpu_isa_summary()}};
#ifdef DPLAB_WITH_CUDA
  nlohmann::json c = {{"built_with", cuda_version_text(CUDART_VERSION)}};
#ifdef CUDNN_MAJOR
  c["cudnn"] = fmt::format("{}.{}.{}", CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
#endif
#ifdef NCCL_MAJOR
  c["nccl"] = fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
#endif
  if (cuda_device) {  // runtime versions only where the run has a device (no driver needed else)
    int rt = 0, drv = 0;
    if (cudaRuntimeGetVersion(&rt) == cudaSuccess) c["runtime"] = cuda_version_text(rt);
    if (cudaDriverGetVersion(&drv) == cudaSuccess) c["driver"] = cuda_version_text(drv);
  }
  j["cuda"] = c;
#else
  (void)cuda_device;
  j["cuda"] = nullptr;
#endif
  return j;
}

}  // namespace dplab
