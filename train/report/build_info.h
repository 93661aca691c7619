// What this dplab binary was built from and with, for the run record (OUT/run.json): version,
// git commit (read at build time; "unknown" outside a git checkout), compiler, and the versions
// of oneDNN, MPI and, in CUDA builds, CUDA, cuDNN and NCCL.
#pragma once
#include <nlohmann/json.hpp>

namespace dplab {

// {"dplab_version", "git_commit", "git_dirty" ("true"/"false"/"unknown"), "compiler",
//  "onednn", "mpi", "cuda": {"built_with", "cudnn", "nccl", and with `cuda_device` also the
// runtime and driver versions} or "cuda": null in a build without CUDA}.
// oneDNN's is the library's own (dnnl_version()), MPI's MPI_Get_library_version's first line.
nlohmann::json build_info(bool cuda_device);

}  // namespace dplab
