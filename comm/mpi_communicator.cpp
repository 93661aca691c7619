// The MPI backend of Communicator (MPICH, MPI_THREAD_MULTIPLE). Every operation is a
// non-blocking MPI call wrapped in a Request; blocking forms wait on it politely.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>
#include <utility>

#include "dplab/comm/backend_communicator.h"
#include "dplab/comm/cluster/cluster_option.h"
#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/comm_options.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/node_port.h"
#include "dplab/comm/stall_report.h"
#include "dplab/comm/virtual_communicator.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

// ---- the MPI backend ---------------------------------------------------------------------------

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::bf16:
    case DType::f16:
      return MPI_UINT16_T;  // reduced by dplab's own ops (see MpiEnv)
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op, DType wire) {
  const MpiEnv& env = MpiEnv::get();
  const bool max = op == ReduceOp::max;
  switch (wire) {
    case DType::bf16:
      return max ? env.op_max_bf16() : env.op_sum_bf16();
    case DType::f16:
      return max ? env.op_max_f16() : env.op_sum_f16();
    case DType::f32:
      return max ? MPI_MAX : MPI_SUM;
    case DType::i32:
    case DType::i64:
      return max ? MPI_MAX : MPI_SUM;  // average of integers: refused by the base's checks
    case DType::u8:
      break;
  }
  DPLAB_FAIL("no reduction for wire dtype {}", dtype_name(wire));  // refused by the base too
}

int checked_count(int64_t n, const std::string& where) {
  DPLAB_CHECK(n >= 0 && n <= INT_MAX, "{}: {} elements exceed MPI's int count", where, n);
  return static_cast<int>(n);
}

// dst[i] = src[i] * factor, converting dtypes (either may be f32, bf16, f16, ...).
void convert_scale(const Tensor& dst, const Tensor& src, double factor) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.dtype() == src.dtype() && factor == 1.0) {
    if (dst.raw_data() != src.raw_data()) std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
    return;
  }
  if (dst.dtype() == DType::f32 && src.dtype() == DType::f32) {
    float* d = dst.data<float>();
    const float* s = src.data<float>();
    const float f = static_cast<float>(factor);
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] * f;
    return;
  }
  void* d = dst.raw_data();
  const void* s = src.raw_data();
  const float f = static_cast<float>(factor);
  for (int64_t i = 0; i < n; ++i)
    store_from_f32(d, dst.dtype(), i, load_as_f32(s, src.dtype(), i) * f);
}

// A posted MPI operation: complete when MPI_Testall says so; then `finish` converts/scales the
// result into the caller's tensor.
struct MpiRequest : BackendRequest {
  std::vector<MPI_Request> reqs;
  std::function<void()> finish;
  bool mpi_done = false;

  bool progress() override {
    if (!mpi_done) {
      int flag = 0;
      mpi_check(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE),
                "MPI_Testall", desc);
      if (!flag) return false;
      mpi_done = true;
    }
    if (finish) finish();
    keep_alive.clear();
    return true;
  }
};

// Who an MPI communicator is: its rank and size, and its members as world ranks (a timeout asks
// exactly them which did not arrive). Sets MPI_ERRORS_RETURN first, so errors become exceptions.
BackendCommunicator::Identity mpi_identity(MPI_Comm comm, std::string name,
                                           std::vector<int> node_of_rank, WaitOptions wait) {
  BackendCommunicator::Identity id;
  mpi_check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", name);
  mpi_check(MPI_Comm_rank(comm, &id.rank), "MPI_Comm_rank", name);
  mpi_check(MPI_Comm_size(comm, &id.size), "MPI_Comm_size", name);
  MPI_Group g, world;
  mpi_check(MPI_Comm_group(comm, &g), "MPI_Comm_group", name);
  mpi_check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group", name);
  std::vector<int> mine(id.size), in_world(id.size);
  for (int i = 0; i < id.size; ++i) mine[i] = i;
  mpi_check(MPI_Group_translate_ranks(g, id.size, mine.data(), world, in_world.data()),
            "MPI_Group_translate_ranks", name);
  MPI_Group_free(&g);
  MPI_Group_free(&world);
  id.world_members = std::make_shared<const std::vector<int>>(std::move(in_world));
  id.name = std::move(name);
  id.wait = wait;
  id.node_of = std::move(node_of_rank);
  return id;
}

BackendCommunicator::Traits mpi_traits() {
  return {"communicator", "MPI", Device::cpu(), "CPU", ""};
}

class MpiCommunicator : public BackendCommunicator {
 public:
  MpiCommunicator(MPI_Comm comm, std::string name, std::vector<int> node_of_rank, WaitOptions wait)
      : BackendCommunicator(mpi_traits(),
                            mpi_identity(comm, std::move(name), std::move(node_of_rank), wait)),
        comm_(comm) {}
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    MPI_Comm nc = MPI_COMM_NULL;
    mpi_check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &nc), "MPI_Comm_split",
              this->name());
    if (nc == MPI_COMM_NULL) return nullptr;
    // The node of each new rank: translate new ranks to ours through the groups.
    MPI_Group g_new, g_old;
    mpi_check(MPI_Comm_group(nc, &g_new), "MPI_Comm_group", this->name());
    mpi_check(MPI_Comm_group(comm_, &g_old), "MPI_Comm_group", this->name());
    int n = 0;
    mpi_check(MPI_Comm_size(nc, &n), "MPI_Comm_size", this->name());
    std::vector<int> new_ranks(n), old_ranks(n);
    for (int i = 0; i < n; ++i) new_ranks[i] = i;
    mpi_check(MPI_Group_translate_ranks(g_new, n, new_ranks.data(), g_old, old_ranks.data()),
              "MPI_Group_translate_ranks", this->name());
    MPI_Group_free(&g_new);
    MPI_Group_free(&g_old);
    std::vector<int> nodes(n);
    for (int i = 0; i < n; ++i) nodes[i] = node_map()[old_ranks[i]];
    std::string nm = name.empty() ? fmt::format("{}/split({},{})", this->name(), color, key) : name;
    return std::make_shared<MpiCommunicator>(nc, nm, std::move(nodes), wait_options());
  }

 protected:
  Request post_allreduce(const Tensor& t, ReduceOp op, DType w, std::string desc) override {
    auto r = make_request<MpiRequest>(std::move(desc));
    Tensor buf = wire_buffer(t, w);
    const int n = checked_count(t.numel(), where("allreduce"));
    post(r, "MPI_Iallreduce", [&](MPI_Request* q) {
      return MPI_Iallreduce(MPI_IN_PLACE, buf.raw_data(), n, mpi_type(w), mpi_op(op, w), comm_, q);
    });
    finish_into(r, t, buf, op == ReduceOp::average ? 1.0 / size() : 1.0);
    return Request(r);
  }

  Request post_reduce(const Tensor& t, int root, ReduceOp op, DType w, std::string desc) override {
    auto r = make_request<MpiRequest>(std::move(desc));
    Tensor buf = wire_buffer(t, w);
    const int n = checked_count(t.numel(), where("reduce"));
    const bool is_root = rank() == root;
    post(r, "MPI_Ireduce", [&](MPI_Request* q) {
      return MPI_Ireduce(is_root ? MPI_IN_PLACE : buf.raw_data(),
                         is_root ? buf.raw_data() : nullptr, n, mpi_type(w), mpi_op(op, w), root,
                         comm_, q);
    });
    if (is_root) finish_into(r, t, buf, op == ReduceOp::average ? 1.0 / size() : 1.0);
    return Request(r);
  }

  Request post_broadcast(const Tensor& t, int root, DType w, std::string desc) override {
    auto r = make_request<MpiRequest>(std::move(desc));
    Tensor buf = wire_buffer(t, w);
    const int n = checked_count(t.numel(), where("broadcast"));
    post(r, "MPI_Ibcast", [&](MPI_Request* q) {
      return MPI_Ibcast(buf.raw_data(), n, mpi_type(w), root, comm_, q);
    });
    // The root also takes the wire-rounded values, so every rank ends with identical data.
    finish_into(r, t, buf, 1.0);
    return Request(r);
  }

  Request post_allgather(const Tensor& send, const Tensor& recv, DType w,
                         std::string desc) override {
    auto r = make_request<MpiRequest>(std::move(desc));
    Tensor sbuf = wire_buffer(send, w);
    Tensor rbuf = w == recv.dtype() ? recv : Tensor::empty({recv.numel()}, w);
    r->keep_alive.push_back(rbuf);
    const int n = checked_count(send.numel(), where("allgather"));
    post(r, "MPI_Iallgather", [&](MPI_Request* q) {
      return MPI_Iallgather(sbuf.raw_data(), n, mpi_type(w), rbuf.raw_data(), n, mpi_type(w), comm_,
                            q);
    });
    finish_into(r, recv, rbuf, 1.0);
    return Request(r);
  }

  Request post_reduce_scatter(const Tensor& send, const Tensor& recv, ReduceOp op, DType w,
                              std::string desc) override {
    auto r = make_request<MpiRequest>(std::move(desc));
    Tensor sbuf = wire_buffer(send, w);
    Tensor rbuf = w == recv.dtype() ? recv : Tensor::empty({recv.numel()}, w);
    r->keep_alive.push_back(rbuf);
    const int n = checked_count(recv.numel(), where("reduce_scatter"));
    post(r, "MPI_Ireduce_scatter_block", [&](MPI_Request* q) {
      return MPI_Ireduce_scatter_block(sbuf.raw_data(), rbuf.raw_data(), n, mpi_type(w),
                                       mpi_op(op, w), comm_, q);
    });
    finish_into(r, recv, rbuf, op == ReduceOp::average ? 1.0 / size() : 1.0);
    return Request(r);
  }

  Request post_barrier(std::string desc) override {
    auto r = make_request<MpiRequest>(std::move(desc));
    post(r, "MPI_Ibarrier", [&](MPI_Request* q) { return MPI_Ibarrier(comm_, q); });
    return Request(r);
  }

  Request post_p2p(const Tensor& t, int peer, int tag, bool is_send, std::string desc) override {
    auto r = make_request<MpiRequest>(std::move(desc), peer);
    r->keep_alive.push_back(t);
    const int n = checked_count(t.numel(), where(is_send ? "send" : "recv"));
    r->reqs.resize(1);
    if (is_send)
      mpi_check(MPI_Isend(t.raw_data(), n, mpi_type(t.dtype()), peer, tag, comm_, &r->reqs[0]),
                "MPI_Isend", r->desc);
    else
      mpi_check(MPI_Irecv(t.raw_data(), n, mpi_type(t.dtype()), peer, tag, comm_, &r->reqs[0]),
                "MPI_Irecv", r->desc);
    return Request(r);
  }

 private:
  // The tensor itself when it already has the wire dtype, else a converted copy.
  static Tensor wire_buffer(const Tensor& t, DType wire) {
    if (t.dtype() == wire) return t;
    Tensor b = Tensor::empty({t.numel()}, wire);
    convert_scale(b, t, 1.0);
    return b;
  }
  void finish_into(const std::shared_ptr<MpiRequest>& r, const Tensor& dst, const Tensor& buf,
                   double factor) {
    r->keep_alive.push_back(buf);
    if (dst.raw_data() == buf.raw_data() && factor == 1.0) return;
    r->finish = [dst, buf, factor] { convert_scale(dst, buf, factor); };
  }
  template <typename F>
  void post(const std::shared_ptr<MpiRequest>& r, const char* call, F&& f) {
    r->reqs.resize(1);
    mpi_check(f(&r->reqs[0]), call, r->desc);
  }

  MPI_Comm comm_;
};

}  // namespace

CommConfig CommConfig::from_options(const Options& opt) {
  const OptionTable& t = communicator_option_table();
  CommConfig c;
  if (auto p = cluster::platform_from_options(opt)) {
    c.platform = std::make_shared<const cluster::Platform>(std::move(*p));
    c.manual_compute = cluster::compute_is_profile(opt);
    c.nic_sharing = t.get_bool(opt, "cluster.nic_sharing");
  }
  c.ranks_per_node = static_cast<int>(t.get_int(opt, "ranks_per_node"));
  c.wait_name = t.get_string(opt, "comm.wait");
  c.wait.timeout_s = t.get_double(opt, "comm.timeout_s");
  c.wait.sleep_s = t.get_double(opt, "comm.backoff_sleep_us") * 1e-6;
  return c;
}

std::shared_ptr<Communicator> mpi_world(const CommConfig& cfg) {
  MpiEnv& env = MpiEnv::get();
  const int rank = env.world_rank(), size = env.world_size();
  // Every rank arrives here first, through a wait with the timeout (the calls below block in MPI
  // with none): a rank stuck or stopped during start-up, say in reading its data, is named as
  // the one that did not arrive instead of hanging the others forever.
  {
    MPI_Request arrived = MPI_REQUEST_NULL;
    DPLAB_MPI(MPI_Ibarrier, MPI_COMM_WORLD, &arrived);
    WaitOptions w = cfg.wait;
    w.policy = WaitPolicy::backoff;  // once per run: no need to spin
    polite_wait(
        [&] {
          int done = 0;
          mpi_check(MPI_Test(&arrived, &done, MPI_STATUS_IGNORE), "MPI_Test", "start-up barrier");
          return done != 0;
        },
        w, [] { return std::string("start-up barrier (creating the world communicator)"); });
  }
  std::vector<int> node_of(size);
  // Ranks sharing this host: they share its cores (decides the "auto" wait policy) and, unless
  // virtual nodes are asked for, form one node.
  MPI_Comm shm = MPI_COMM_NULL;
  DPLAB_MPI(MPI_Comm_split_type, MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
  int ranks_on_my_host = 1;
  MPI_Comm_size(shm, &ranks_on_my_host);
  int leader = rank;
  DPLAB_MPI(MPI_Allreduce, MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shm);
  MPI_Comm_free(&shm);
  std::shared_ptr<cluster::VirtualTime> vt = cfg.virtual_time;
  if (!vt && cfg.platform)
    vt = std::make_shared<cluster::VirtualTime>(
        *cfg.platform, cluster::shape_of(*cfg.platform, size, cfg.ranks_per_node),
        cfg.manual_compute ? cluster::VirtualClock::Compute::manual
                           : cluster::VirtualClock::Compute::measured);
  if (vt) {
    // The platform's nodes (comm/cluster/platform.h shape_of): the cost model and the node
    // communicators must agree.
    const cluster::Shape& s = vt->shape;
    DPLAB_CHECK(s.world() == size, "virtual cluster {}: shape {} x {} for a world of {} ranks",
                vt->platform.name, s.nodes, s.ranks_per_node, size);
    for (int r = 0; r < size; ++r) node_of[r] = s.node_of(r);
  } else if (cfg.ranks_per_node > 0) {
    DPLAB_CHECK(size % cfg.ranks_per_node == 0,
                "ranks_per_node (--ranks-per-node) = {} does not divide the world size {}: virtual "
                "nodes need equal sizes",
                cfg.ranks_per_node, size);
    for (int r = 0; r < size; ++r) node_of[r] = r / cfg.ranks_per_node;
  } else {
    // The node id is the index of the node's lowest world rank among all nodes' lowest ranks.
    std::vector<int> leaders(size);
    DPLAB_MPI(MPI_Allgather, &leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> sorted = leaders;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (int r = 0; r < size; ++r)
      node_of[r] = static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), leaders[r]) -
                                    sorted.begin());
  }
  WaitOptions wait = cfg.wait;
  if (cfg.wait_name == "spin")
    wait.policy = WaitPolicy::spin;
  else if (cfg.wait_name == "backoff")
    wait.policy = WaitPolicy::backoff;
  else {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    wait.policy =
        static_cast<unsigned>(ranks_on_my_host) > cores ? WaitPolicy::backoff : WaitPolicy::spin;
  }
  MPI_Comm dup = MPI_COMM_NULL;
  DPLAB_MPI(MPI_Comm_dup, MPI_COMM_WORLD, &dup);
  auto world = std::make_shared<MpiCommunicator>(dup, "world", std::move(node_of), wait);
  if (!vt) return world;
  // Collective: every rank with a cluster (the same platform) creates the node port.
  return with_virtual_time(
      world, vt, cfg.nic_sharing ? NodePort::create(vt->platform, vt->shape, wait) : nullptr);
}

}  // namespace dplab
