// Communicator: collectives and point-to-point messages over a group of ranks, on tensors.
//
// Every operation works in place on contiguous CPU tensors of dtype f32, bf16 or f16 (i32, i64
// and u8 too for broadcast, allgather and point-to-point), and has a non-blocking form returning
// a Request and a blocking form (= the non-blocking call + Request::wait).
//
// Wire type: collectives take an optional wire dtype. When it differs from the tensor's dtype
// the data is converted into a wire buffer, communicated, and converted back (average scaling
// is applied in f32 during that conversion). 16-bit reductions accumulate in f32: MPICH has no
// bf16 sum, so dplab registers its own MPI_Op on 2-byte elements that widens both operands to
// f32, adds (or takes the max), and rounds once to the wire type. We chose this "f32 per hop"
// op over "convert to f32, reduce-scatter, allgather in f32" because it keeps the wire at 2
// bytes per element (the point of compressing) and works with every MPICH collective algorithm;
// the price is one 16-bit rounding per reduction hop, so the error grows like (hops) * 2^-9
// (bf16) or 2^-12 (f16) relative, which tests bound by n * eps.
//
// Device tensors: the NCCL backend (comm/nccl_communicator.h) implements this interface for
// CUDA tensors; its requests complete on the device, and Request::order_before_compute() lets
// the compute stream wait for one without a host synchronisation.
//
// Waiting: MPICH busy-polls inside MPI_Wait and blocking collectives, and oversubscribed ranks
// then starve each other; every wait here is MPI_Test in a loop with a short spin and then a
// ~20 us nanosleep (WaitPolicy::backoff), or pure spinning (WaitPolicy::spin).
//
// Failures: every wait has a timeout (default 60 s). When it expires, the wait throws an Error
// naming the operation, the communicator and (for point-to-point) the peer; an exception that
// reaches run_mpi_main() aborts all ranks (comm/mpi_env.h).
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dplab/core/options.h"
#include "dplab/core/tensor.h"

namespace dplab {

using Clock = std::chrono::steady_clock;

namespace cluster {
struct VirtualTime;  // comm/cluster/virtual_time.h
struct Platform;     // comm/cluster/platform.h
enum class Op;       // comm/cluster/cost_collectives.h
}  // namespace cluster

enum class ReduceOp { sum, average, max };
enum class WaitPolicy { spin, backoff };

struct WaitOptions {
  WaitPolicy policy = WaitPolicy::backoff;
  int spin_tests = 64;      // MPI_Test calls before the first sleep (backoff)
  double sleep_s = 20e-6;   // nanosleep between tests (backoff)
  double timeout_s = 60.0;  // a wait longer than this throws (0 = never)
};

// Sleeps/spins until done() is true; throws after opt.timeout_s with `what()` in the message,
// and the ranks among `members` (world ranks; null: all) that did not arrive: while waiting, a
// rank answers other ranks' "what are you waiting in?" queries, and at the timeout it asks the
// members itself (comm/stall_report.h).
void polite_wait(const std::function<bool()>& done, const WaitOptions& opt,
                 const std::function<std::string()>& what,
                 const std::shared_ptr<const std::vector<int>>& members = nullptr);

// A helper thread's waits (GradSync's communication thread) share the cores with the rank's
// compute thread, and spinning beside a computing thread takes its cycles (measured: backward
// 10-25% longer on a 2-core host with a spinning communication thread per rank). Within a
// HelperWaits scope, the thread's polite_waits under WaitPolicy::spin spin only while
// *compute_waiting is true (the compute thread is blocked on this thread's work); otherwise they
// sleep after every test, each sleep twice the last, from WaitOptions::sleep_s up to 16 times it:
// a completion is then seen up to one sleep late, but only while the compute has other work.
class HelperWaits {
 public:
  explicit HelperWaits(const std::atomic<bool>* compute_waiting);
  ~HelperWaits();
  HelperWaits(const HelperWaits&) = delete;
  HelperWaits& operator=(const HelperWaits&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// How the communicators of a process are set up (options in brackets).
struct CommConfig {
  int ranks_per_node = 0;  // [ranks_per_node] 0: real nodes from MPI_Comm_split_type(SHARED)
  WaitOptions wait;        // [comm.wait = auto|spin|backoff], [comm.timeout_s]
  std::string wait_name = "auto";
  // Virtual cluster (comm/cluster/virtual_time.h): when set, the world's nodes are its shape's
  // and its operations are timed in virtual time. Tests set it directly; from options, mpi_world
  // builds it from `platform` (option cluster) on the calling thread, which becomes the rank's
  // compute thread (its CPU time is the rank's compute).
  std::shared_ptr<cluster::VirtualTime> virtual_time;
  // [cluster] or the [link.intra] / [link.inter] shorthand, with cluster.compute_scale
  // (comm/cluster/cluster_option.h platform_from_options).
  std::shared_ptr<const cluster::Platform> platform;
  bool manual_compute = false;  // [cluster.compute] = profile:FILE: the driver adds compute
  // [cluster.nic_sharing] the ranks of a node share its network interface in point-to-point
  // messages (comm/node_port.h); off: each rank's interface is its own.
  bool nic_sharing = false;
  // Reads the options above. "auto" wait = backoff when ranks on this node outnumber its cores
  // (resolved once the world communicator knows the node size).
  static CommConfig from_options(const Options& opt);
};

// One in-flight operation. Copyable handle; an empty Request is complete.
class Request {
 public:
  struct Impl {
    virtual ~Impl() = default;
    // Advances the operation without blocking; true once complete (MPI done and the result
    // converted back into the caller's tensor).
    virtual bool progress() = 0;
    virtual std::string describe() const = 0;
    // Makes later work on the compute stream of the request's device wait for the operation
    // (and its conversion back into the caller's tensor) without blocking the host. Backends
    // whose results are complete once the host sees them (MPI) have nothing to do.
    virtual void order_before_compute() {}
    // True for backends whose operations complete on a device (NCCL): complete_before_compute()
    // orders them before later compute instead of waiting on the host.
    virtual bool device_ordered() const { return false; }
    // Called when wait() fails (timeout, or an error the operation reported), before the error
    // propagates: a device backend aborts what is stuck (NCCL: ncclCommAbort) so teardown
    // cannot hang on it.
    virtual void on_wait_failed(const std::string& /*why*/) {}
    std::mutex mu;
    bool done = false;
    WaitOptions wait;
    // World ranks taking part (asked at a timeout which of them did not arrive); null: all.
    std::shared_ptr<const std::vector<int>> world_members;
    Clock::time_point posted = Clock::now();
    Clock::time_point completed{};
    // Virtual time (null without a cluster): the post time on this rank's virtual clock, and
    // whether wait() has moved the clock to the end already.
    std::shared_ptr<cluster::VirtualTime> vt;
    double virtual_post = 0;
    bool virtual_done = false;
    // The operation's end in virtual time. May wait (politely) until the peers' times have
    // arrived, never for the payload. Called only with vt set.
    virtual double virtual_end() { return virtual_post; }
    // Around a wait by the clock's owner thread (clock reading `now` when it began): the rank
    // cannot post anything before the wait returns, which the backend may publish
    // (comm/node_port.h: floors).
    virtual void owner_wait_begins(double /*now*/) {}
    virtual void owner_wait_ends() {}
  };
  Request() = default;
  explicit Request(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  // Non-blocking. Under virtual time it answers by the virtual clock, so that the answer does
  // not depend on host load: true iff the operation's virtual end is not after now (it then
  // waits for the real completion); learning the end waits for the peers' post times, so under
  // virtual time a test() must not come before a post its peers wait for (a receive tested
  // before this rank's own send to that peer would deadlock; no algorithm here does that).
  bool test();
  // Polite; throws on timeout naming the operation. Under virtual time the clock then moves to
  // the operation's virtual end if that is later.
  void wait();
  // Device backends (NCCL): kernels enqueued on the compute stream after this call see the
  // result, and the host does not wait. The request still has to be waited or tested to
  // completion (or dropped) before its buffers are released. No-op for MPI and empty requests.
  void order_before_compute() {
    if (!impl_) return;
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->done) impl_->order_before_compute();
  }
  // Completes the request as far as the program can tell: afterwards kernels enqueued on the
  // compute stream, later operations of any communicator and host reads of the result (which go
  // through a Tensor copy on the compute stream) all see the result. A device backend (NCCL)
  // does this without a host wait: the compute stream waits for the operation on the device
  // (order_before_compute) and the request counts as done, so its buffers may be released at
  // once (every later user of their memory is ordered after the operation: compute waits for it,
  // the comm stream runs in order, the batch prefetcher's copy stream waits for compute). Errors
  // NCCL has reported so far are thrown here; there is no timeout, a collective that never
  // completes shows at the next host synchronisation. Host backends (MPI) wait(), as before.
  // This is how a step consumes its communication on a device without stalling the host.
  void complete_before_compute();
  // Whether the request completes on a device (see complete_before_compute).
  bool device_ordered() const { return impl_ && impl_->device_ordered(); }
  // Tells the operation that a wait for it failed (wait() does this itself): a layer around a
  // communicator (comm/virtual_communicator.h) forwards its own wait's failure to the inner one.
  void wait_failed(const std::string& why) {
    if (impl_) impl_->on_wait_failed(why);
  }
  bool valid() const { return impl_ != nullptr; }
  // Under virtual time: the operation's virtual end (may wait for the peers' post times).
  double virtual_end() const;
  // Seconds from posting to completion (0 before completion or for an empty request); virtual
  // seconds under virtual time.
  double seconds_in_flight() const;
  std::string describe() const { return impl_ ? impl_->describe() : "empty request"; }

 private:
  bool test_real();  // the real completion, whatever virtual time says
  std::shared_ptr<Impl> impl_;
};

// Waits for all requests (each politely).
void wait_all(std::vector<Request>& reqs);
// complete_before_compute() on every request: MPI requests are waited for, NCCL requests are
// ordered before later compute without a host wait.
void complete_all_before_compute(std::vector<Request>& reqs);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Human name for messages ("world", "node", "cross", "world/split(1,0)").
  virtual std::string name() const = 0;
  virtual const WaitOptions& wait_options() const = 0;

  // In place. `wire` defaults to the tensor's dtype.
  virtual Request iallreduce(const Tensor& t, ReduceOp op = ReduceOp::sum,
                             std::optional<DType> wire = {}) = 0;
  // Result on `root` (other ranks' tensors are left unchanged).
  virtual Request ireduce(const Tensor& t, int root, ReduceOp op = ReduceOp::sum,
                          std::optional<DType> wire = {}) = 0;
  virtual Request ibroadcast(const Tensor& t, int root, std::optional<DType> wire = {}) = 0;
  // recv.numel() == size() * send.numel(); block i of recv comes from rank i.
  virtual Request iallgather(const Tensor& send, const Tensor& recv,
                             std::optional<DType> wire = {}) = 0;
  // send.numel() == size() * recv.numel(); rank i receives the reduction of block i.
  virtual Request ireduce_scatter(const Tensor& send, const Tensor& recv,
                                  ReduceOp op = ReduceOp::sum, std::optional<DType> wire = {}) = 0;
  virtual Request ibarrier() = 0;
  virtual Request isend(const Tensor& t, int dst, int tag) = 0;
  virtual Request irecv(const Tensor& t, int src, int tag) = 0;
  // Ranks with the same color form a new communicator, ordered by (key, old rank).
  virtual std::shared_ptr<Communicator> split(int color, int key, const std::string& name = {}) = 0;
  // The (virtual) node of each rank of this communicator, and this rank's.
  virtual int node_of(int rank) const = 0;
  // The members as world ranks, in this communicator's rank order (null: unknown; a timeout
  // then asks every rank which did not arrive).
  virtual std::shared_ptr<const std::vector<int>> world_members() const { return nullptr; }
  // The virtual cluster's time this communicator's operations are timed in; null without one.
  virtual std::shared_ptr<cluster::VirtualTime> virtual_time() const { return nullptr; }
  // Under virtual time: whether the ranks of a node share its network interfaces in
  // point-to-point messages (comm/node_port.h; false when each rank has its own).
  virtual bool shares_node_interfaces() const { return false; }
  // The bytes this rank puts on its links for collective `op` over `bytes` (the cost model's
  // convention, comm/wire_bytes.h): the ring's figure for size() ranks, or, on a virtual
  // cluster, the figure of the algorithm the cost model times the operation with.
  virtual double wire_bytes(cluster::Op op, double bytes) const;

  // Blocking forms.
  void allreduce(const Tensor& t, ReduceOp op = ReduceOp::sum, std::optional<DType> wire = {}) {
    iallreduce(t, op, wire).wait();
  }
  void reduce(const Tensor& t, int root, ReduceOp op = ReduceOp::sum,
              std::optional<DType> wire = {}) {
    ireduce(t, root, op, wire).wait();
  }
  void broadcast(const Tensor& t, int root, std::optional<DType> wire = {}) {
    ibroadcast(t, root, wire).wait();
  }
  void allgather(const Tensor& send, const Tensor& recv, std::optional<DType> wire = {}) {
    iallgather(send, recv, wire).wait();
  }
  void reduce_scatter(const Tensor& send, const Tensor& recv, ReduceOp op = ReduceOp::sum,
                      std::optional<DType> wire = {}) {
    ireduce_scatter(send, recv, op, wire).wait();
  }
  void barrier() { ibarrier().wait(); }
  void send(const Tensor& t, int dst, int tag) { isend(t, dst, tag).wait(); }
  void recv(const Tensor& t, int src, int tag) { irecv(t, src, tag).wait(); }
};

// The MPI world communicator (initialising MPI if needed), configured by `cfg`.
std::shared_ptr<Communicator> mpi_world(const CommConfig& cfg = {});

std::string reduce_op_name(ReduceOp op);

}  // namespace dplab
