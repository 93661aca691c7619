// The NCCL backend of Communicator (see nccl_communicator.h for the design).
#include "dplab/comm/nccl_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include "dplab/comm/abortable_lock.h"
#include "dplab/comm/backend_communicator.h"
#include "dplab/comm/local_device.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/nccl_check.h"
#include "dplab/comm/p2p_order.h"
#include "dplab/comm/stall_report.h"
#include "dplab/core/backend.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/event.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
#include "dplab/core/device.h"
#include "dplab/core/error.h"
#include "dplab/core/host_wait.h"

namespace dplab {
namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32:
      return ncclFloat32;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f16:
      return ncclFloat16;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
      return ncclUint8;
  }
  DPLAB_FAIL("no NCCL type for dtype {}", dtype_name(t));
}

// The NCCL reduction for `op` (the wire dtype can be reduced: BackendCommunicator checked it).
ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::average:
      return ncclAvg;
  }
  DPLAB_FAIL("unknown reduce op");
}

// What one communicator shares with its in-flight requests: they may outlive the Communicator
// object (a dropped communicator with a pending request), so the NCCL handle lives here.
struct NcclState;

struct NcclRequest : BackendRequest {
  std::shared_ptr<NcclState> state;
  // Set when the operation has been enqueued on the comm stream (point-to-point requests are
  // queued first and issued with their group; the flag is set after `comm_done`).
  std::atomic<bool> issued{false};
  std::shared_ptr<cuda::Event> comm_done;  // recorded on the comm stream after the NCCL call(s)
  // Conversion of the wire buffer back into the caller's tensor, enqueued on the compute stream
  // once `comm_done` is seen (or by order_before_compute), or, for an operation posted inside a
  // CommStreamScope, on the comm stream right behind the collective; `finished` is recorded
  // after it, on the stream it ran on.
  std::function<void()> post;
  bool post_enqueued = false;
  std::optional<cuda::Event> finished;

  bool progress() override;
  void order_before_compute() override;
  bool device_ordered() const override { return true; }
  void on_wait_failed(const std::string& why) override;
  ~NcclRequest() override;
  void enqueue_post();  // on the stream this thread launches on (core/cuda/stream.h)

 private:
  void ensure_issued();
  void check_async_error() const;
};

struct P2pOp {
  bool is_send = false;
  Tensor t;
  int peer = 0, tag = 0;
  std::shared_ptr<NcclRequest> req;  // req->state: the communicator it was posted on
};

// What the communicators of one family (a world and everything split from it) share: they post
// to the same comm stream, so one lock serialises their NCCL calls (NCCL communicators are not
// thread-safe, and GradSync's communication thread and the training thread may post at once),
// and one queue holds the point-to-point operations of all of them, issued by the family's next
// operation of any kind (comm/p2p_order.h, issue #19, item 7). On a failure or timeout every
// member is aborted: a collective stuck on the shared stream blocks them all.
// The family's lock is an AbortableLock (comm/abortable_lock.h): the communicators are
// non-blocking (ncclConfig_t::blocking = 0), so no NCCL call blocks; the holder polls each
// call's completion (NcclState::await_locked) with comm.timeout_s, and another thread can abort
// the family without waiting for a call stuck in NCCL (issue #31, item 2).
struct NcclFamily {
  AbortableLock lock{[this](const std::string& why) { abort_all_locked(why); }};
  std::vector<P2pOp> pending;
  std::vector<std::weak_ptr<NcclState>> members;
  int next_id = 0;
  void flush_p2p_locked();
  void abort_all_locked(const std::string& why);
};

struct NcclState {
  ncclComm_t comm = nullptr;  // null once aborted
  int device = 0;
  int id = 0;                     // within the family
  cudaStream_t stream = nullptr;  // cuda::comm_stream(device)
  std::string name;
  double timeout_s = 0;  // comm.timeout_s (0: none)
  std::string aborted_why;
  std::shared_ptr<NcclFamily> family;

  // After a NCCL call on this (non-blocking) communicator, caller holding the family's lock:
  // throws on an error result, then polls the communicator's state until the call has finished
  // (ncclInProgress -> ncclSuccess), with comm.timeout_s, aborting the family when another
  // thread asks or the limit passes.
  void await_locked(ncclResult_t rc, const char* call, const std::string& what) {
    if (rc != ncclSuccess && rc != ncclInProgress) fail_locked(rc, call, what);
    try {
      poll_until(
          [&] {
            family->lock.abort_if_requested(what);
            ncclResult_t state = ncclInProgress;
            const ncclResult_t q = ncclCommGetAsyncError(comm, &state);
            if (q != ncclSuccess) fail_locked(q, "ncclCommGetAsyncError", what);
            if (state == ncclInProgress) return false;
            if (state != ncclSuccess) fail_locked(state, call, what);
            return true;
          },
          fmt::format("{} ({} on NCCL communicator '{}')", what, call, name), timeout_s);
    } catch (const Error& e) {
      family->abort_all_locked(e.what());
      throw;
    }
  }
  [[noreturn]] void fail_locked(ncclResult_t rc, const char* call, const std::string& what) {
    const char* last = comm ? ncclGetLastError(comm) : nullptr;
    const std::string msg =
        fmt::format("{}: NCCL call {} failed on communicator '{}': {} (last error: {})", what, call,
                    name, ncclGetErrorString(rc), last && *last ? last : "none");
    family->abort_all_locked(msg);
    DPLAB_FAIL("{}", msg);
  }

  ~NcclState() {
    // Every request holds this state, so no operation of ours is still to be issued; some may
    // still run on the device. ncclCommDestroy finalises, which waits for the communicator to be
    // quiescent (nccl.h: ncclCommFinalize "flushes all issued communications"; the state changes
    // "when the communicator is globally quiescent"): with a stalled peer, teardown would hang.
    // So the comm stream gets comm.timeout_s to drain (polled, never blocking without limit),
    // and the communicator is destroyed only when it drained without an error; otherwise it is
    // aborted, which never waits for peers (nccl.h: ncclCommAbort "aborts any operations that
    // might still be running on the device"). PyTorch's ProcessGroupNCCL likewise aborts its
    // communicators in its destructor rather than risk a blocking destroy. Cannot throw.
    if (!comm) return;
    int prev = -1;
    if (cudaGetDevice(&prev) == cudaSuccess && prev != device) cudaSetDevice(device);
    // Non-blocking communicator: finalising returns at once and is polled, with the same limit.
    if (drained() && no_async_error() && finalized())
      ncclCommDestroy(comm);
    else
      ncclCommAbort(comm);
    if (prev >= 0 && prev != device) cudaSetDevice(prev);
  }

  bool drained() const {
    const auto start = Clock::now();
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaSuccess) return true;
      (void)cudaGetLastError();  // NotReady (or an error) must not stay in the record
      if (e != cudaErrorNotReady) return false;
      if (timeout_s > 0 && std::chrono::duration<double>(Clock::now() - start).count() > timeout_s)
        return false;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  bool finalized() const {
    const ncclResult_t rc = ncclCommFinalize(comm);
    if (rc != ncclSuccess && rc != ncclInProgress) return false;
    return poll_quietly(
        [this] {
          ncclResult_t state = ncclInProgress;
          if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) throw std::runtime_error("");
          if (state != ncclSuccess && state != ncclInProgress) throw std::runtime_error("");
          return state == ncclSuccess;
        },
        timeout_s);
  }
  bool no_async_error() const {
    ncclResult_t async = ncclSuccess;
    return ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess;
  }

  void check_usable() const {
    DPLAB_CHECK(comm != nullptr,
                "NCCL communicator '{}' was aborted ({}); no further operation can run on it", name,
                aborted_why);
  }

  // Makes the comm stream wait for the work enqueued on the compute stream so far.
  void order_after_compute() {
    cuda::Event ready(device);
    ready.record(cuda::compute_stream(device));
    ready.make_wait(stream);
  }

  // Issues `ops` (all on this communicator, in issue order) as one NCCL group. Caller holds the
  // family's lock.
  void issue_group_locked(const std::vector<P2pOp>& ops) {
    check_usable();
    cuda::ScopedDevice on(device);
    order_after_compute();
    const std::string ctx =
        fmt::format("group of {} send/recv on NCCL communicator '{}'", ops.size(), name);
    DPLAB_NCCL_CHECK_CTX(ncclGroupStart(), ctx);
    try {
      for (const P2pOp& op : ops) {
        const size_t n = static_cast<size_t>(op.t.numel());
        if (n == 0) continue;
        if (op.is_send)
          DPLAB_NCCL_CHECK_CTX(
              ncclSend(op.t.raw_data(), n, nccl_type(op.t.dtype()), op.peer, comm, stream),
              op.req->desc);
        else
          DPLAB_NCCL_CHECK_CTX(
              ncclRecv(op.t.raw_data(), n, nccl_type(op.t.dtype()), op.peer, comm, stream),
              op.req->desc);
      }
    } catch (...) {
      ncclGroupEnd();  // close the group so the communicator stays usable for the report
      throw;
    }
    await_locked(ncclGroupEnd(), "ncclGroupEnd", ctx);
    auto done = std::make_shared<cuda::Event>(device);
    done->record(stream);
    for (const P2pOp& op : ops) {
      op.req->comm_done = done;
      op.req->issued.store(true, std::memory_order_release);
    }
  }
};

void NcclFamily::flush_p2p_locked() {
  if (pending.empty()) return;
  std::vector<P2pOp> ops = std::move(pending);
  pending.clear();
  std::vector<QueuedP2p> queued;
  queued.reserve(ops.size());
  for (const P2pOp& op : ops) queued.push_back({op.req->state->id, op.peer, op.tag});
  for (const std::vector<size_t>& g : p2p_issue_groups(queued)) {
    std::vector<P2pOp> group;
    for (size_t i : g) group.push_back(ops[i]);
    group.front().req->state->issue_group_locked(group);
  }
}

void NcclFamily::abort_all_locked(const std::string& why) {
  // PyTorch's watchdog does the same on a timeout: abort the communicators (ncclCommAbort never
  // blocks), then let the error end the process; here run_mpi_main aborts every rank.
  for (const auto& w : members)
    if (auto st = w.lock(); st && st->comm) {
      ncclCommAbort(st->comm);
      st->comm = nullptr;
      st->aborted_why = why;
    }
}

void NcclRequest::ensure_issued() {
  if (issued.load(std::memory_order_acquire)) return;
  AbortableLock::Guard lock(state->family->lock, desc, state->timeout_s);
  state->family->flush_p2p_locked();
  DPLAB_CHECK(issued.load(std::memory_order_acquire), "{}: queued but not issued by its group",
              desc);
}

void NcclRequest::check_async_error() const {
  AbortableLock::Guard lock(state->family->lock, desc,
                            state->timeout_s);  // abort may clear `comm` meanwhile
  state->check_usable();
  ncclResult_t async = ncclSuccess;
  DPLAB_NCCL_CHECK_CTX(ncclCommGetAsyncError(state->comm, &async), desc);
  if (async != ncclSuccess && async != ncclInProgress)
    DPLAB_FAIL("{}: NCCL reports an asynchronous error on communicator '{}': {} (last error: {})",
               desc, state->name, ncclGetErrorString(async), ncclGetLastError(state->comm));
}

void NcclRequest::enqueue_post() {
  cuda::ScopedDevice on(state->device);
  post();
  finished.emplace(state->device);
  finished->record(cuda::launch_stream(state->device));
  post_enqueued = true;
}

bool NcclRequest::progress() {
  ensure_issued();
  if (!post_enqueued) {
    if (!comm_done->query()) {
      check_async_error();
      return false;
    }
    if (!post) {
      keep_alive.clear();
      return true;
    }
    enqueue_post();
  }
  if (!finished->query()) return false;
  keep_alive.clear();
  return true;
}

void NcclRequest::order_before_compute() {
  ensure_issued();
  // The request may never be tested again (complete_before_compute drops it): report what NCCL
  // knows of a failure now, without waiting.
  check_async_error();
  if (post_enqueued) {  // the conversion is enqueued: on the compute stream, or on the comm stream
    finished->make_wait(cuda::compute_stream(state->device));
    return;
  }
  comm_done->make_wait(cuda::compute_stream(state->device));
  if (post) enqueue_post();
}

void NcclRequest::on_wait_failed(const std::string& why) {
  // A timeout (comm.timeout_s) or an error NCCL reported: abort the family's communicators now,
  // so neither this rank's teardown nor anything queued behind the stuck operation on the shared
  // stream waits for it (issue #19, item 3).
  // Not under the family's lock: another thread may hold it, polling a call that cannot finish.
  state->family->lock.request_abort(fmt::format("{} failed: {}", desc, why));
}

NcclRequest::~NcclRequest() {
  // Dropped before its completion was seen: later compute-stream work (which may reuse the
  // freed buffers through the caching allocator, or read the result) must not overtake the
  // communication, nor the conversion that follows it.
  if (!state || done) return;
  const cudaEvent_t last = post_enqueued && finished ? finished->get()
                           : comm_done               ? comm_done->get()
                                                     : nullptr;
  if (last) cudaStreamWaitEvent(cuda::compute_stream(state->device), last, 0);
}

// Who an NCCL communicator is: the MPI communicator it bootstraps from, as that one says.
BackendCommunicator::Identity nccl_identity(const Communicator& mpi) {
  BackendCommunicator::Identity id;
  id.rank = mpi.rank();
  id.size = mpi.size();
  id.name = mpi.name();
  id.wait = mpi.wait_options();
  id.node_of.resize(static_cast<size_t>(id.size));
  for (int r = 0; r < id.size; ++r) id.node_of[r] = mpi.node_of(r);
  id.world_members = mpi.world_members();
  return id;
}

BackendCommunicator::Traits nccl_traits(int device) {
  return {"NCCL communicator", "NCCL", Device::cuda(device),
          fmt::format("this rank's device cuda:{}", device), fmt::format(", cuda:{}", device)};
}

// The MPI communicator to bootstrap from, checked before anything is built on it.
const Communicator& bootstrap(const std::shared_ptr<Communicator>& mpi) {
  DPLAB_CHECK(mpi != nullptr, "NCCL communicator: no MPI communicator to bootstrap from");
  return *mpi;
}

class NcclCommunicator : public BackendCommunicator {
 public:
  // `family`: the communicator this one was split from shares its family (null: a new one).
  NcclCommunicator(std::shared_ptr<Communicator> mpi, int device,
                   std::shared_ptr<NcclFamily> family = nullptr)
      : BackendCommunicator(nccl_traits(device), nccl_identity(bootstrap(mpi))),
        mpi_(std::move(mpi)) {
    DPLAB_CHECK(cuda_available(), "NCCL communicator '{}': {}", mpi_->name(),
                cuda_unavailable_reason());
    DPLAB_CHECK(device >= 0 && device < cuda_device_count(),
                "NCCL communicator '{}': CUDA device {} out of range [0, {})", mpi_->name(), device,
                cuda_device_count());
    st_ = std::make_shared<NcclState>();
    st_->device = device;
    st_->name = mpi_->name();
    st_->stream = cuda::comm_stream(device);
    st_->timeout_s = mpi_->wait_options().timeout_s;
    st_->family = family ? std::move(family) : std::make_shared<NcclFamily>();
    // Rank 0 makes the unique id; MPI carries it to the others as 128 raw bytes.
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (mpi_->rank() == 0)
      DPLAB_NCCL_CHECK_CTX(ncclGetUniqueId(&id), fmt::format("communicator '{}'", st_->name));
    Tensor bytes = Tensor::empty({static_cast<int64_t>(sizeof(id))}, DType::u8);
    std::memcpy(bytes.raw_data(), &id, sizeof(id));
    mpi_->broadcast(bytes, 0);
    std::memcpy(&id, bytes.raw_data(), sizeof(id));
    cuda::ScopedDevice on(device);
    const std::string what = fmt::format("communicator '{}', rank {} of {}, CUDA device {}",
                                         st_->name, mpi_->rank(), mpi_->size(), device);
    // Non-blocking (see NcclFamily): the set-up and the connections made at the first
    // collective are polled with comm.timeout_s instead of blocking inside NCCL.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    AbortableLock::Guard lock(st_->family->lock, what, st_->timeout_s);
    st_->family->members.push_back(st_);  // first: a failed set-up is aborted with the family
    st_->await_locked(ncclCommInitRankConfig(&st_->comm, mpi_->size(), id, mpi_->rank(), &config),
                      "ncclCommInitRankConfig", what);
    st_->id = st_->family->next_id++;
  }

  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    {
      // Anything queued goes out before the (collective) split, as it would before a collective.
      AbortableLock::Guard lock(st_->family->lock, fmt::format("split of '{}'", mpi_->name()),
                                st_->timeout_s);
      st_->family->flush_p2p_locked();
    }
    auto sub = mpi_->split(color, key, name);
    if (!sub) return nullptr;
    return std::make_shared<NcclCommunicator>(std::move(sub), st_->device, st_->family);
  }

 protected:
  Request post_allreduce(const Tensor& t, ReduceOp op, DType w, std::string desc) override {
    auto r = make(std::move(desc));
    const bool scale_after = needs_scale_after(t, w, op);
    const ncclRedOp_t nop = reduction(op, scale_after);
    Tensor buf = to_wire(t, w);
    const size_t n = static_cast<size_t>(t.numel());
    post(r, [&](cudaStream_t s) {
      if (n > 0)
        st_->await_locked(
            ncclAllReduce(buf.raw_data(), buf.raw_data(), n, nccl_type(w), nop, st_->comm, s),
            "ncclAllReduce", r->desc);
    });
    finish_into(r, t, buf, scale_after ? 1.0 / size() : 1.0);
    return Request(r);
  }

  Request post_reduce(const Tensor& t, int root, ReduceOp op, DType w, std::string desc) override {
    auto r = make(std::move(desc));
    const bool scale_after = needs_scale_after(t, w, op);
    const ncclRedOp_t nop = reduction(op, scale_after);
    const bool is_root = rank() == root;
    // Non-roots send from a wire copy so their own tensor stays unchanged.
    Tensor buf = to_wire(t, w);
    const size_t n = static_cast<size_t>(t.numel());
    post(r, [&](cudaStream_t s) {
      if (n > 0)
        st_->await_locked(
            ncclReduce(buf.raw_data(), buf.raw_data(), n, nccl_type(w), nop, root, st_->comm, s),
            "ncclReduce", r->desc);
    });
    if (is_root)
      finish_into(r, t, buf, scale_after ? 1.0 / size() : 1.0);
    else
      r->keep_alive.push_back(buf);
    return Request(r);
  }

  Request post_broadcast(const Tensor& t, int root, DType w, std::string desc) override {
    auto r = make(std::move(desc));
    Tensor buf = to_wire(t, w);
    const size_t n = static_cast<size_t>(t.numel());
    post(r, [&](cudaStream_t s) {
      if (n > 0)
        st_->await_locked(
            ncclBroadcast(buf.raw_data(), buf.raw_data(), n, nccl_type(w), root, st_->comm, s),
            "ncclBroadcast", r->desc);
    });
    // The root also takes the wire-rounded values, so every rank ends with identical data.
    finish_into(r, t, buf, 1.0);
    return Request(r);
  }

  Request post_allgather(const Tensor& send, const Tensor& recv, DType w,
                         std::string desc) override {
    auto r = make(std::move(desc));
    Tensor sbuf = to_wire(send, w);
    Tensor rbuf = w == recv.dtype() ? recv : Tensor::empty({recv.numel()}, w, recv.device());
    r->keep_alive.push_back(sbuf);
    const size_t n = static_cast<size_t>(send.numel());
    post(r, [&](cudaStream_t s) {
      if (n > 0)
        st_->await_locked(
            ncclAllGather(sbuf.raw_data(), rbuf.raw_data(), n, nccl_type(w), st_->comm, s),
            "ncclAllGather", r->desc);
    });
    finish_into(r, recv, rbuf, 1.0);
    return Request(r);
  }

  Request post_reduce_scatter(const Tensor& send, const Tensor& recv, ReduceOp op, DType w,
                              std::string desc) override {
    auto r = make(std::move(desc));
    const bool scale_after = needs_scale_after(recv, w, op);
    const ncclRedOp_t nop = reduction(op, scale_after);
    Tensor sbuf = to_wire(send, w);
    Tensor rbuf = w == recv.dtype() ? recv : Tensor::empty({recv.numel()}, w, recv.device());
    r->keep_alive.push_back(sbuf);
    const size_t n = static_cast<size_t>(recv.numel());
    post(r, [&](cudaStream_t s) {
      if (n > 0)
        st_->await_locked(
            ncclReduceScatter(sbuf.raw_data(), rbuf.raw_data(), n, nccl_type(w), nop, st_->comm, s),
            "ncclReduceScatter", r->desc);
    });
    finish_into(r, recv, rbuf, scale_after ? 1.0 / size() : 1.0);
    return Request(r);
  }

  // A one-byte max-allreduce: complete on a rank only once every rank has posted it.
  Request post_barrier(std::string desc) override {
    auto r = make(std::move(desc));
    Tensor token = Tensor::empty({1}, DType::u8, Device::cuda(st_->device));
    r->keep_alive.push_back(token);
    post(r, [&](cudaStream_t s) {
      st_->await_locked(
          ncclAllReduce(token.raw_data(), token.raw_data(), 1, ncclUint8, ncclMax, st_->comm, s),
          "ncclAllReduce", r->desc);
    });
    return Request(r);
  }

  // Queued until the family's next operation (comm/p2p_order.h).
  Request post_p2p(const Tensor& t, int peer, int tag, bool is_send, std::string desc) override {
    DPLAB_CHECK(peer != rank(), "{}: NCCL point-to-point to oneself (rank {}) is not supported",
                where(is_send ? "send" : "recv"), peer);
    auto r = make(std::move(desc), peer);
    r->keep_alive.push_back(t);
    AbortableLock::Guard lock(st_->family->lock, r->desc, st_->timeout_s);
    st_->check_usable();
    st_->family->pending.push_back(P2pOp{is_send, t, peer, tag, r});
    return Request(r);
  }

 private:
  // Average with a conversion into an f32 tensor: sum in the wire type, 1/n in f32 on the way
  // back (the MPI backend's arithmetic). Otherwise NCCL averages itself (ncclAvg).
  static bool needs_scale_after(const Tensor& dst, DType wire, ReduceOp op) {
    return op == ReduceOp::average && wire != dst.dtype() && dst.dtype() == DType::f32;
  }
  // The NCCL operation: the sum when the average is scaled afterwards, and at one rank, where
  // the average is the sum (the input itself). NCCL before 2.29.7 leaves the last elements of a
  // one-rank ncclAvg unwritten when the count is not a multiple of its block count
  // (NVIDIA/nccl#1950); the first H200 run (2026-11-28, NCCL 2.28) showed it: reduce_scatter
  // average of 524,291 f32 left elements 524,288 to 524,290 at 0.
  ncclRedOp_t reduction(ReduceOp op, bool scale_after) const {
    if (op == ReduceOp::average && (scale_after || size() == 1)) return ncclSum;
    return nccl_op(op);
  }
  std::shared_ptr<NcclRequest> make(std::string desc, int peer = -1) const {
    auto r = make_request<NcclRequest>(std::move(desc), peer);
    r->state = st_;
    return r;
  }
  // The tensor itself (flat) when it already has the wire dtype, else a converted copy made on
  // the stream this thread launches on: the compute stream, ordered before the collective by
  // post(), or, inside a CommStreamScope, the comm stream itself (in stream order).
  Tensor to_wire(const Tensor& t, DType wire) const {
    Tensor flat = t.view({t.numel()});
    if (t.dtype() == wire) return flat;
    cuda::ScopedDevice on(st_->device);
    Tensor b = Tensor::empty({t.numel()}, wire, t.device());
    backend_for(t.device()).ew.copy(flat, b);
    return b;
  }
  // After the collective: `buf` back into `dst` (times `factor`), on the compute stream.
  void finish_into(const std::shared_ptr<NcclRequest>& r, const Tensor& dst, const Tensor& buf,
                   double factor) const {
    r->keep_alive.push_back(buf);
    r->keep_alive.push_back(dst);
    if (dst.raw_data() == buf.raw_data() && factor == 1.0) return;
    const Backend& be = backend_for(dst.device());
    if (factor != 1.0)
      DPLAB_CHECK(be.ew.unary != nullptr && dst.dtype() == DType::f32,
                  "NCCL average of {}: scaling needs the CUDA unary kernel and an f32 tensor",
                  dst.str());
    Tensor flat = dst.view({dst.numel()});
    r->post = [flat, buf, factor, &be]() mutable {
      if (factor != 1.0)
        be.ew.unary(UnaryOp::mul_scalar, static_cast<float>(factor), buf, flat);
      else
        be.ew.copy(buf, flat);
    };
    // Inside a CommStreamScope the conversion follows the collective on the comm stream at once:
    // nothing waits for the host to see the collective end, and no compute work queues before it.
    if (cuda::in_comm_scope(st_->device)) r->enqueue_post();
  }
  // Enqueues `nccl` on the comm stream after the compute stream's work so far, then the
  // completion event. Queued point-to-point operations go first.
  template <typename F>
  void post(const std::shared_ptr<NcclRequest>& r, F&& nccl) {
    cuda::ScopedDevice on(st_->device);
    AbortableLock::Guard lock(st_->family->lock, r->desc, st_->timeout_s);
    // Every queued send/recv of the family first (comm/p2p_order.h).
    st_->family->flush_p2p_locked();
    st_->check_usable();
    // Inside a CommStreamScope the comm stream waited for compute when the scope began (the
    // bucket's gradients), and the scope's own kernels before this are on the comm stream.
    // Waiting again here would queue the collective behind the backward enqueued since.
    if (!cuda::in_comm_scope(st_->device)) st_->order_after_compute();
    nccl(st_->stream);
    r->comm_done = std::make_shared<cuda::Event>(st_->device);
    r->comm_done->record(st_->stream);
    r->issued.store(true, std::memory_order_release);
  }
  std::shared_ptr<Communicator> mpi_;
  std::shared_ptr<NcclState> st_;
};

}  // namespace

int nccl_local_device() {
  DPLAB_CHECK(cuda_available(), "NCCL: {}", cuda_unavailable_reason());
  // Placement computed once at MPI start (MpiEnv), so this is not a collective (item 4).
  const MpiEnv& env = MpiEnv::get();
  const LocalDeviceChoice c =
      choose_local_device(env.local_rank(), env.local_size(), cuda_device_count());
  DPLAB_CHECK(c.device >= 0, "rank {}: {}", env.world_rank(), c.error);
  return c.device;
}

std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> mpi,
                                                     int device) {
  return std::make_shared<NcclCommunicator>(std::move(mpi), device);
}

std::shared_ptr<Communicator> nccl_world(const CommConfig& cfg) {
  DPLAB_CHECK(!cfg.platform && !cfg.virtual_time,
              "the virtual cluster (option cluster, or its link.intra / link.inter shorthand) "
              "times a communicator whose operations complete on the host "
              "(comm/virtual_communicator.h); NCCL's complete on the GPU, so use comm = mpi to "
              "time a run on a modelled cluster");
  auto mpi = mpi_world(cfg);
  DPLAB_CHECK(cuda_available(), "comm = nccl: {}", cuda_unavailable_reason());
  // comm.timeout_s also bounds the host's waits for the device (stream_wait.h, item 3); those
  // waits take part in the stall report like every MPI wait (comm/stall_report.h).
  cuda::HostWaitHooks hooks;
  hooks.idle = [](const std::string& what, double waited) {
    answer_stall_queries(
        [&] { return fmt::format("{} (waiting for the GPU for {:.1f} s)", what, waited); });
  };
  const double grace_s = stall_grace_s(cfg.wait.timeout_s, cfg.wait.timeout_s);  // as polite_wait
  hooks.on_timeout = [grace_s](const std::string& what) {
    note_communication_timeout();
    return ask_who_did_not_arrive(what, {}, grace_s);
  };
  cuda::set_host_wait_timeout(cfg.wait.timeout_s, std::move(hooks));
  return make_nccl_communicator(std::move(mpi), nccl_local_device());
}

}  // namespace dplab
