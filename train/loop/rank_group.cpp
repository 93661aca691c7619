#include "dplab/train/loop/rank_group.h"

#include <mpi.h>

#include <algorithm>
#include <numeric>

#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/error.h"
#include "dplab/train/loop/run_stopped.h"

namespace dplab {
namespace {

void wait_for(MPI_Request& req, double timeout_s, const char* what) {
  WaitOptions w;
  w.timeout_s = timeout_s;
  polite_wait(
      [&] {
        int flag = 0;
        DPLAB_MPI(MPI_Test, &req, &flag, MPI_STATUS_IGNORE);
        return flag != 0;
      },
      w, [&] { return std::string(what); });
}

}  // namespace

RankGroup::RankGroup(int rank, int size, double timeout_s)
    : rank_(rank), size_(size), timeout_s_(timeout_s) {
  DPLAB_CHECK(size >= 1 && rank >= 0 && rank < size, "RankGroup: rank {} of {}", rank, size);
  if (size > 1) {
    const MpiEnv& env = MpiEnv::get();
    DPLAB_CHECK(env.world_size() == size && env.world_rank() == rank,
                "RankGroup: rank {} of {} but MPI's world is rank {} of {}", rank, size,
                env.world_rank(), env.world_size());
  }
}

std::vector<std::string> RankGroup::allgather(const std::string& mine) const {
  if (size_ == 1) return {mine};
  int len = int(mine.size());
  std::vector<int> lens(size_);
  MPI_Request req;
  DPLAB_MPI(MPI_Iallgather, &len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &req);
  wait_for(req, timeout_s_,
           "the driver's status exchange (allgather of lengths) over MPI_COMM_WORLD");
  std::vector<int> displs(size_, 0);
  for (int r = 1; r < size_; ++r) displs[r] = displs[r - 1] + lens[r - 1];
  std::string all(size_t(displs.back() + lens.back()), '\0');
  DPLAB_MPI(MPI_Iallgatherv, mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(),
            MPI_CHAR, MPI_COMM_WORLD, &req);
  wait_for(req, timeout_s_, "the driver's status exchange (allgather) over MPI_COMM_WORLD");
  std::vector<std::string> r(size_);
  for (int i = 0; i < size_; ++i) r[i] = all.substr(size_t(displs[i]), size_t(lens[i]));
  return r;
}

void RankGroup::fail_together(const std::string& why) const {
  throw RunStopped(why, kExitError, rank_ == 0);
}

void RankGroup::agree(const std::function<void()>& f) const {
  std::string mine;
  try {
    f();
  } catch (const std::exception& e) {
    mine = e.what();
    if (mine.empty()) mine = "failed";  // an empty status means success
  }
  const std::vector<std::string> all = allgather(mine);
  // The same failure on every rank (a refusal all of them reached) is named once, without a rank.
  if (std::all_of(all.begin(), all.end(), [&](const std::string& s) { return s == all[0]; })) {
    if (!all[0].empty()) fail_together(all[0]);
    return;
  }
  for (int r = 0; r < size_; ++r)
    if (!all[size_t(r)].empty()) fail_together("rank " + std::to_string(r) + ": " + all[size_t(r)]);
}

}  // namespace dplab
