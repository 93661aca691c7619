// gtest main for tests run under mpiexec: initialises MPI once (MpiEnv), lets only rank 0 print
// the usual progress, makes every other rank print its own failures prefixed with its rank,
// and makes all ranks agree on pass/fail. Exceptions are not caught by gtest: one escaping a
// test aborts every rank (run_mpi_main) rather than leaving the others in a collective.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "dplab/comm/mpi_env.h"

namespace {

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::GTEST_FLAG(catch_exceptions) = false;
  return dplab::run_mpi_main([] {
    const int rank = dplab::MpiEnv::get().world_rank();
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    if (rank != 0) {
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new RankFailurePrinter(rank));
    }
    int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (failed && rank == 0) std::fprintf(stderr, "some rank failed (see [rank N] lines)\n");
    return failed;
  });
}
