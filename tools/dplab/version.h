// `dplab --version`: what this binary was built from (train/report/build_info.h).
#pragma once
#include <string>

namespace dplab::cli {

// "dplab VERSION (commit HASH[, modified])\n" then one line each for the compiler, oneDNN, MPI
// and, in a CUDA build, the CUDA toolkit it was built with.
std::string version_text();

}  // namespace dplab::cli
