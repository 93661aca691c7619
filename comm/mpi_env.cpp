#include "dplab/comm/mpi_env.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dplab/comm/death_watch.h"
#include "dplab/comm/pipe_drain.h"
#include "dplab/core/dtype.h"
#include "dplab/core/error.h"

namespace dplab {

namespace {

// MPI user functions: inout[i] = round16(f32(in[i]) (+|max) f32(inout[i])). Each reduction hop
// accumulates in f32 and rounds once to the wire type (see comm/communicator.h for why).
template <float (*Load)(uint16_t), uint16_t (*Store)(float), bool Max>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = Load(a[i]), y = Load(b[i]);
    b[i] = Store(Max ? (x > y || y != y ? x : y) : x + y);
  }
}

}  // namespace

void mpi_check(int rc, const char* call, const std::string& context) {
  if (rc == MPI_SUCCESS) return;
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) len = 0;
  std::string msg(buf, static_cast<size_t>(len));
  throw Error(fmt::format("{} failed: {}{}", call, msg.empty() ? "unknown MPI error" : msg,
                          context.empty() ? "" : " (" + context + ")"));
}

MpiEnv& MpiEnv::get() {
  // A function-local static: constructed once (thread-safe), destroyed at normal exit, which
  // finalises MPI after every communicator owned by main() is gone.
  static MpiEnv env;
  return env;
}

MpiEnv::MpiEnv() {
  int inited = 0;
  DPLAB_MPI(MPI_Initialized, &inited);
  if (!inited) {
    DeathWatch::start();  // before MPI starts its threads: names this rank if it dies silently
    // MPICH 4.0.2's "pairwise" MPI_Ireduce_scatter_block (its choice for long messages) gives
    // wrong results with user-defined ops such as our 16-bit sums (tests/comm caught it);
    // recursive halving is correct for every commutative op. A user's own setting wins.
    setenv("MPIR_CVAR_IREDUCE_SCATTER_BLOCK_INTRA_ALGORITHM", "sched_recursive_halving", 0);
    int provided = 0;
    DPLAB_MPI(MPI_Init_thread, nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    we_initialised_ = true;
    thread_level_ = provided;
  } else {
    DPLAB_MPI(MPI_Query_thread, &thread_level_);
  }
  DPLAB_CHECK(thread_level_ == MPI_THREAD_MULTIPLE,
              "MPI provides thread level {}, dplab needs MPI_THREAD_MULTIPLE ({})", thread_level_,
              MPI_THREAD_MULTIPLE);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  DPLAB_MPI(MPI_Comm_rank, MPI_COMM_WORLD, &world_rank_);
  DPLAB_MPI(MPI_Comm_size, MPI_COMM_WORLD, &world_size_);
  DPLAB_MPI(MPI_Op_create, &reduce16<bf16_to_f32, f32_to_bf16, false>, 1, &sum_bf16_);
  DPLAB_MPI(MPI_Op_create, &reduce16<f16_to_f32, f32_to_f16, false>, 1, &sum_f16_);
  DPLAB_MPI(MPI_Op_create, &reduce16<bf16_to_f32, f32_to_bf16, true>, 1, &max_bf16_);
  DPLAB_MPI(MPI_Op_create, &reduce16<f16_to_f32, f32_to_f16, true>, 1, &max_f16_);
  // Only when we initialised MPI: every rank is constructing MpiEnv then, so the collective
  // dup cannot hang (a process that started MPI itself may construct MpiEnv on one rank only).
  if (we_initialised_) {
    DPLAB_MPI(MPI_Comm_dup, MPI_COMM_WORLD, &stall_comm_);
    MPI_Comm_set_errhandler(stall_comm_, MPI_ERRORS_RETURN);
    // The host placement is a collective too: done here, where every rank is.
    std::call_once(placement_once_, [this] { compute_placement(); });
  }
}

void MpiEnv::compute_placement() const {
  MPI_Comm shm = MPI_COMM_NULL;
  DPLAB_MPI(MPI_Comm_split_type, MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL,
            &shm);
  DPLAB_MPI(MPI_Comm_rank, shm, &local_rank_);
  DPLAB_MPI(MPI_Comm_size, shm, &local_size_);
  DPLAB_MPI(MPI_Comm_free, &shm);
}

int MpiEnv::local_rank() const {
  std::call_once(placement_once_, [this] { compute_placement(); });
  return local_rank_;
}

int MpiEnv::local_size() const {
  std::call_once(placement_once_, [this] { compute_placement(); });
  return local_size_;
}

MpiEnv::~MpiEnv() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Op* op : {&sum_bf16_, &sum_f16_, &max_bf16_, &max_f16_})
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
  if (stall_comm_ != MPI_COMM_NULL) MPI_Comm_free(&stall_comm_);
  if (we_initialised_) MPI_Finalize();
  DeathWatch::start().stop();
}

namespace {

// "dplab: rank R of N failed[ before MPI started]: WHY" or, when a rank of this host died
// silently before (the death watch's order, comm/death_watch.h), that rank first: a failure seen
// after a peer's death (an MPI error, a timeout) is most likely its consequence, and naming this
// rank as the one that failed would blame a survivor.
void print_failure(const std::string& rank, const std::string& size, const std::string& why,
                   const char* when, const char* then) {
  const int first = DeathWatch::start().first_silent_death();
  if (first >= 0 && std::to_string(first) != rank)
    std::fprintf(stderr,
                 "dplab: rank %d of %s died without reporting an error (killed by a signal or "
                 "crashed); rank %s then stopped%s: %s; %s\n",
                 first, size.c_str(), rank.c_str(), when, why.c_str(), then);
  else
    std::fprintf(stderr, "dplab: rank %s of %s failed%s: %s; %s\n", rank.c_str(), size.c_str(),
                 when, why.c_str(), then);
  std::fflush(stderr);
  wait_until_pipe_is_read(STDERR_FILENO, std::chrono::seconds(2));  // pipe_drain.h: why
}

}  // namespace

void MpiEnv::abort(const std::string& why, int code) const {
  print_failure(std::to_string(world_rank_), std::to_string(world_size_), why, "",
                "aborting all ranks");
  DeathWatch::start().aborting();  // this rank named itself: other watchers stay quiet
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this satisfies [[noreturn]] regardless
}

bool mpi_active() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

int local_ranks_hint() {
  for (const char* var : {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return 1;
}

bool launched_with_peers() {
  for (const char* var : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"})
    if (const char* v = std::getenv(var)) return std::atoi(v) > 1;
  return false;
}

void start_mpi_if_launched() {
  if (launched_with_peers()) MpiEnv::get();
}

void abort_if_distributed(const std::string& why) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MpiEnv::get().abort(why);
    return;
  }
  if (init || !launched_with_peers()) return;
  // Before MPI: no MPI_Abort, and an ordinary exit would leave the other ranks waiting in
  // MPI_Init. Dying of a signal makes the launcher stop them all.
  const char* rank = std::getenv("PMI_RANK");
  const char* size = std::getenv("PMI_SIZE");
  if (!rank) rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!size) size = std::getenv("OMPI_COMM_WORLD_SIZE");
  print_failure(rank ? rank : "?", size ? size : "?", why, " before MPI started",
                "stopping all ranks");
  DeathWatch::start().aborting();  // this rank named itself: other watchers stay quiet
  std::raise(SIGKILL);
  std::_Exit(1);  // not reached
}

int run_mpi_main(const std::function<int()>& body) {
  MpiEnv& env = MpiEnv::get();
  try {
    return body();
  } catch (const std::exception& e) {
    env.abort(e.what());
  } catch (...) {
    env.abort("unknown exception");
  }
}

}  // namespace dplab
