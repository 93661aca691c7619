// MpiEnv: the one owner of MPI's lifetime in a process. MPI is initialised once, on first use,
// with MPI_THREAD_MULTIPLE (GradSync's communication thread calls MPI while the main thread
// computes), and finalised when the process exits normally. A process started without mpiexec
// becomes an MPICH singleton (world size 1).
//
// run_mpi_main() is the failure policy of every distributed binary: an exception that escapes a
// rank prints "rank R of N failed: ..." and calls MPI_Abort, so mpiexec tears the other ranks
// down at once (exit status non-zero) instead of letting them hang in a collective.
//
// Before MPI starts there is no MPI_Abort, and MPICH's launcher (hydra) does not stop a job
// when a rank merely exits with an error before MPI_Init: the others wait in MPI_Init forever
// (measured: 203 s until killed by hand). So under a launcher, start MPI first
// (start_mpi_if_launched(), before reading data), and a rank that fails before MPI is up ends
// the job by dying of SIGKILL after reporting (abort_if_distributed): hydra stops every rank
// when one is killed by a signal; the job's exit status is then 9.
#pragma once
#include <mpi.h>

#include <functional>
#include <mutex>
#include <string>

namespace dplab {

class MpiEnv {
 public:
  // Initialises MPI on the first call (thread-safe); later calls return the same object.
  static MpiEnv& get();
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  // The provided thread level (MPI_THREAD_MULTIPLE is required; init throws otherwise).
  int thread_level() const { return thread_level_; }
  // User-defined reductions on 2-byte floats (MPI_UINT16_T payload), accumulating in f32.
  MPI_Op op_sum_bf16() const { return sum_bf16_; }
  MPI_Op op_sum_f16() const { return sum_f16_; }
  MPI_Op op_max_bf16() const { return max_bf16_; }
  MPI_Op op_max_f16() const { return max_f16_; }
  // A dup of MPI_COMM_WORLD for the timeout diagnosis only (comm/stall_report.h); MPI_COMM_NULL
  // when MPI was initialised by someone else.
  MPI_Comm stall_comm() const { return stall_comm_; }
  // This rank's place among the world ranks on its host (MPI_Comm_split_type(SHARED)): its local
  // rank and their number. Computed once, while every rank constructs MpiEnv in MPI_Init's wake,
  // so asking is never a collective and any subset of ranks may ask, any number of times (issue
  // #19, item 4: asking per tensor on some ranks only deadlocked). When someone else initialised
  // MPI, MpiEnv may be constructed on one rank only; the placement is then computed on the first
  // call, which every rank of the world must make (nccl_world() does).
  int local_rank() const;
  int local_size() const;
  // Prints "dplab: rank R of N failed: <why>; aborting all ranks" to stderr and MPI_Abort()s.
  [[noreturn]] void abort(const std::string& why, int code = 1) const;

  MpiEnv(const MpiEnv&) = delete;
  MpiEnv& operator=(const MpiEnv&) = delete;
  ~MpiEnv();

 private:
  MpiEnv();
  int world_rank_ = 0, world_size_ = 1, thread_level_ = 0;
  bool we_initialised_ = false;
  MPI_Op sum_bf16_ = MPI_OP_NULL, sum_f16_ = MPI_OP_NULL;
  MPI_Op max_bf16_ = MPI_OP_NULL, max_f16_ = MPI_OP_NULL;
  MPI_Comm stall_comm_ = MPI_COMM_NULL;
  void compute_placement() const;
  mutable std::once_flag placement_once_;
  mutable int local_rank_ = 0, local_size_ = 1;
};

// Throws dplab::Error "MPI_<call> failed: <MPI error string> (<context>)" when rc != MPI_SUCCESS.
void mpi_check(int rc, const char* call, const std::string& context = {});
#define DPLAB_MPI(call, ...) ::dplab::mpi_check(call(__VA_ARGS__), #call)

// True once MPI is initialised (by MpiEnv or anyone else) and not yet finalised.
bool mpi_active();
// Ranks of this job on this host, from the launcher's environment (hydra's MPI_LOCALNRANKS,
// Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, Slurm's SLURM_NTASKS_PER_NODE), without touching MPI;
// 1 when started alone. The training driver divides the cores by it.
int local_ranks_hint();
// True when an MPI launcher started this process as one of several ranks (PMI_SIZE or
// OMPI_COMM_WORLD_SIZE > 1), whether or not MPI is initialised yet.
bool launched_with_peers();
// Under a launcher with peers, initialises MPI now (MpiEnv::get(), which starts the DeathWatch
// first), so that every later failure of this rank takes the MPI_Abort path and names it.
void start_mpi_if_launched();
// For a top-level error handler: when MPI is active with more than one rank, prints the rank's
// failure and aborts every rank (never returns). Under a launcher with peers but before MPI
// started, prints "dplab: rank R of N failed before MPI started: <why>; stopping all ranks" and
// kills this process with SIGKILL (never returns; see above). Otherwise returns and the caller
// reports.
void abort_if_distributed(const std::string& why);

// Runs `body` on an initialised MPI; any escaping exception aborts every rank (see above).
// Returns body's exit code.
int run_mpi_main(const std::function<int()>& body);

}  // namespace dplab
