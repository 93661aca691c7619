#include "dplab/train/config/usage_agreement.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "dplab/comm/mpi_env.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab::cli {
namespace {

bool several_ranks() {
  return mpi_active() && MpiEnv::get().world_size() > 1;
}

}  // namespace

void agree_on_usage(const std::function<void()>& f) {
  if (!several_ranks()) return f();
  std::string why;
  bool failed = false;
  try {
    f();
  } catch (const UsageError& e) {
    why = e.what();
    failed = true;
  }
  const MpiEnv& env = MpiEnv::get();
  const int size = env.world_size();
  int mine[2] = {failed ? env.world_rank() : size, failed ? 1 : 0}, all[2] = {0, 0};
  DPLAB_MPI(MPI_Allreduce, &mine[0], &all[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  DPLAB_MPI(MPI_Allreduce, &mine[1], &all[1], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const int first = all[0], failures = all[1];
  if (first == size) return;
  // The first failing rank's message, to every rank (rank 0 prints it).
  int length = int(why.size());
  DPLAB_MPI(MPI_Bcast, &length, 1, MPI_INT, first, MPI_COMM_WORLD);
  why.resize(size_t(length));
  DPLAB_MPI(MPI_Bcast, why.data(), length, MPI_CHAR, first, MPI_COMM_WORLD);
  throw UsageError(failures == size ? why : fmt::format("rank {}: {}", first, why));
}

bool reports_usage_errors() {
  if (several_ranks()) return MpiEnv::get().world_rank() == 0;
  if (!launched_with_peers()) return true;
  // Before MPI (a flag CLI11 refused): every rank parsed the same command line and fails
  // alike, so the launcher's rank number picks the one that prints.
  const char* rank = std::getenv("PMI_RANK");
  if (!rank) rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return !rank || std::string(rank) == "0";
}

}  // namespace dplab::cli
