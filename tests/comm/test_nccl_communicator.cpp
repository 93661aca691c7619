// The NCCL communicator against serial computations: every collective x wire type x size,
// tagged point-to-point groups, split, order_before_compute, errors, and Topology on NCCL.
// Runs at 1 and 2 ranks; without a CUDA device per rank every rank skips (all together, so the
// MPI job still exits cleanly). The backend choice (comm = mpi | nccl | auto) is checked always.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "dplab/comm/local_device.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/nccl_communicator.h"
#include "dplab/comm/topology.h"
#include "dplab/comm/world.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/device.h"
#include "dplab/core/ops/elementwise.h"
#include "nccl_test_world.h"

namespace dplab {
namespace {

std::shared_ptr<Communicator> world() {
  return test::nccl_test_world();
}

#define SKIP_WITHOUT_DEVICES() DPLAB_NCCL_TEST_GATE()

// This rank's device (not a collective: issue #19 item 4).
Device dev() {
  return Device::cuda(nccl_local_device());
}

// A host tensor copied to this rank's device; the device synchronisation makes the copy land
// before the comm stream (which does not order against the legacy stream) reads it. It must be
// the rank's device: cudaDeviceSynchronize acts on the thread's current device, which is device
// 0 here (issue #19 item 6: rank 1 synchronised device 0 and not its own).
Tensor on_device(const Tensor& host) {
  Tensor d = host.to(dev());
  cuda::ScopedDevice on(dev().index);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return d;
}

// Positive, distinct per (rank, i), exact in bf16 and f16 (the MPI collectives test's values).
float value(int rank, int64_t i) {
  return 0.5f + static_cast<float>((rank * 37 + i * 11) % 96) / 64.0f;
}

Tensor make_input(int rank, int64_t n, DType dtype = DType::f32) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = value(rank, i);
  return on_device(Tensor::from_vector(v, {n}, dtype));
}

double serial_reduce(ReduceOp op, int size, int64_t i) {
  double acc = op == ReduceOp::max ? -1e30 : 0.0;
  for (int r = 0; r < size; ++r)
    acc = op == ReduceOp::max ? std::max(acc, double(value(r, i))) : acc + value(r, i);
  return op == ReduceOp::average ? acc / size : acc;
}

// Each reduction hop rounds once to the wire type (NCCL's 16-bit kernels as the MPI op).
double tolerance(DType wire, int size) {
  switch (wire) {
    case DType::bf16:
      return (size + 1) * std::ldexp(1.0, -8);
    case DType::f16:
      return (size + 1) * std::ldexp(1.0, -11);
    default:
      return 1e-6;
  }
}

const int64_t kSizes[] = {0, 1, 17, (1 << 19) + 3};
const DType kWires[] = {DType::f32, DType::bf16, DType::f16};
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::average, ReduceOp::max};

template <typename F>
void expect_all(const Tensor& got, int64_t n, F expected, double rtol, const std::string& what) {
  auto v = got.to_vector();
  ASSERT_EQ(static_cast<int64_t>(v.size()), n) << what;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected(i);
    if (std::abs(v[i] - e) > rtol * std::abs(e) + 1e-30) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": first mismatch at " << first << ": got "
                    << (first >= 0 ? v[first] : 0.f) << " expected "
                    << (first >= 0 ? expected(first) : 0);
}

std::string label(const char* coll, ReduceOp op, DType w, int64_t n) {
  return fmt::format("nccl {}({}) wire {} n {}", coll, reduce_op_name(op), dtype_name(w), n);
}

TEST(CommBackend, ChoiceFromOptions) {
  Options o;
  EXPECT_EQ(comm_backend(o), "mpi");
  o.set("device", "cuda");
  EXPECT_EQ(comm_backend(o), "nccl");
  o.set("device", "cuda:1");
  EXPECT_EQ(comm_backend(o), "nccl");
  o.set("comm", "mpi");
  EXPECT_EQ(comm_backend(o), "mpi");
  Options n;
  n.set("comm", "nccl");
  EXPECT_EQ(comm_backend(n), "nccl");
  n.set("comm", "gloo");
  try {
    comm_backend(n);
    ADD_FAILURE() << "comm = gloo accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("option comm"), std::string::npos) << e.what();
  }
  // NCCL has no virtual time: a cluster (here the link.inter shorthand's) is an error, not a
  // silent fallback to real time.
  Options lo;
  lo.set("link.inter", "1ms,1GB/s");
  const CommConfig cfg = CommConfig::from_options(lo);
  ASSERT_TRUE(cfg.platform);
  EXPECT_THROW(nccl_world(cfg), Error);
}

TEST(NcclCollectives, AllreduceEveryOpWireAndSize) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  for (DType w : kWires)
    for (ReduceOp op : kOps)
      for (int64_t n : kSizes) {
        Tensor t = make_input(c->rank(), n);
        Request r = c->iallreduce(t, op, w);
        r.wait();
        EXPECT_TRUE(r.test());
        expect_all(
            t, n, [&](int64_t i) { return serial_reduce(op, c->size(), i); },
            tolerance(w, c->size()), label("allreduce", op, w, n));
      }
}

TEST(NcclCollectives, AllreduceOfNative16BitTensors) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  for (DType dt : {DType::bf16, DType::f16})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::average}) {
      const int64_t n = 1001;
      Tensor t = make_input(c->rank(), n, dt);
      c->allreduce(t, op);
      EXPECT_EQ(t.dtype(), dt);
      expect_all(
          t, n, [&](int64_t i) { return serial_reduce(op, c->size(), i); },
          // ncclAvg rounds the 1/n product in the 16-bit type too: one more rounding.
          tolerance(dt, c->size() + 1), label("allreduce native", op, dt, n));
    }
}

TEST(NcclCollectives, ReduceToLastRank) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  const int root = c->size() - 1;
  for (DType w : kWires)
    for (ReduceOp op : kOps)
      for (int64_t n : kSizes) {
        Tensor t = make_input(c->rank(), n);
        c->reduce(t, root, op, w);
        if (c->rank() == root)
          expect_all(
              t, n, [&](int64_t i) { return serial_reduce(op, c->size(), i); },
              tolerance(w, c->size()), label("reduce", op, w, n));
        else
          expect_all(
              t, n, [&](int64_t i) { return value(c->rank(), i); }, 0, "reduce non-root");
      }
}

TEST(NcclCollectives, BroadcastFromRankOne) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  const int root = 1 % c->size();
  for (DType w : kWires)
    for (int64_t n : kSizes) {
      Tensor t = make_input(c->rank(), n);
      c->broadcast(t, root, w);
      expect_all(
          t, n, [&](int64_t i) { return value(root, i); }, 0,
          label("broadcast", ReduceOp::sum, w, n));
    }
}

TEST(NcclCollectives, Allgather) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  for (DType w : kWires)
    for (int64_t n : kSizes) {
      Tensor send = make_input(c->rank(), n);
      Tensor recv = on_device(Tensor::zeros({n * c->size()}));
      c->allgather(send, recv, w);
      expect_all(
          recv, n * c->size(),
          [&](int64_t j) {
            return value(static_cast<int>(j / std::max<int64_t>(n, 1)),
                         j % std::max<int64_t>(n, 1));
          },
          0, label("allgather", ReduceOp::sum, w, n));
    }
}

TEST(NcclCollectives, ReduceScatter) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  for (DType w : kWires)
    for (ReduceOp op : kOps)
      for (int64_t n : kSizes) {
        Tensor send = make_input(c->rank(), n * c->size());
        Tensor recv = on_device(Tensor::zeros({n}));
        c->reduce_scatter(send, recv, op, w);
        const int64_t base = c->rank() * n;
        expect_all(
            recv, n, [&](int64_t i) { return serial_reduce(op, c->size(), base + i); },
            tolerance(w, c->size()), label("reduce_scatter", op, w, n));
      }
}

TEST(NcclCollectives, NonBlockingTestAndBarrier) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  Tensor t = make_input(c->rank(), 1000);
  std::vector<Request> reqs = {c->iallreduce(t, ReduceOp::sum), c->ibarrier()};
  const auto start = Clock::now();
  while (!(reqs[0].test() && reqs[1].test()))
    ASSERT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30.0) << "no progress";
  EXPECT_GT(reqs[0].seconds_in_flight(), 0.0);
  expect_all(
      t, 1000, [&](int64_t i) { return serial_reduce(ReduceOp::sum, c->size(), i); }, 1e-6,
      "iallreduce with test()");
  c->barrier();
}

// order_before_compute: the compute stream (not the host) waits for the collective and for the
// conversion of the bf16 wire back into the f32 tensor. Synchronising only the compute stream
// then shows the final values although the request was never tested or waited.
TEST(NcclCollectives, OrderBeforeComputeWithoutHostWait) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  const int64_t n = 4099;
  Tensor t = make_input(c->rank(), n);
  Request r = c->iallreduce(t, ReduceOp::average, DType::bf16);
  r.order_before_compute();
  ASSERT_EQ(cudaStreamSynchronize(cuda::compute_stream(dev().index)), cudaSuccess);
  expect_all(
      t, n, [&](int64_t i) { return serial_reduce(ReduceOp::average, c->size(), i); },
      tolerance(DType::bf16, c->size()), "allreduce after order_before_compute");
  r.wait();
  Request empty;
  empty.order_before_compute();  // no-op
}

// complete_before_compute retires device requests without a host wait: the request reports
// done at once, the buffers it held may be dropped, and compute-stream work (a kernel, then the
// host copy made through the compute stream) sees the result. MPI-style blocking is not needed.
TEST(NcclCollectives, CompleteBeforeComputeRetiresWithoutHostWait) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  const int64_t n = 3001;
  Tensor t = make_input(c->rank(), n);
  {
    Request r = c->iallreduce(t, ReduceOp::average, DType::bf16);  // a wire buffer to release
    EXPECT_TRUE(r.device_ordered());
    r.complete_before_compute();
    EXPECT_TRUE(r.test());
  }  // dropped: its wire buffer goes back to the caching allocator
  Tensor scratch = Tensor::zeros({n}, DType::bf16, dev());  // may reuse that block
  Tensor doubled = mul_scalar(t, 2.0f);                     // a compute-stream kernel
  expect_all(
      doubled, n, [&](int64_t i) { return 2 * serial_reduce(ReduceOp::average, c->size(), i); },
      2 * tolerance(DType::bf16, c->size()), "kernel after complete_before_compute");
  // Point-to-point groups and empty requests too.
  if (c->size() >= 2) {
    const int next = (c->rank() + 1) % c->size(), prev = (c->rank() + c->size() - 1) % c->size();
    Tensor s = on_device(Tensor::full({6}, 10 + c->rank())), r = on_device(Tensor::zeros({6}));
    std::vector<Request> reqs = {c->irecv(r, prev, 4), c->isend(s, next, 4)};
    complete_all_before_compute(reqs);
    expect_all(
        r, 6, [&](int64_t) { return 10.0 + prev; }, 0, "p2p after complete_all_before_compute");
  }
  Request empty;
  EXPECT_FALSE(empty.device_ordered());
  empty.complete_before_compute();  // no-op
}

TEST(NcclPointToPoint, TaggedGroupOutOfOrder) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int next = (c->rank() + 1) % c->size(), prev = (c->rank() + c->size() - 1) % c->size();
  Tensor a = on_device(Tensor::full({5}, 100 + c->rank()));
  Tensor b = on_device(Tensor::full({3}, 200 + c->rank()));
  Tensor ra = on_device(Tensor::zeros({5})), rb = on_device(Tensor::zeros({3}));
  Tensor h = on_device(Tensor::full({4}, 1.5 + c->rank(), DType::bf16));
  Tensor hr = on_device(Tensor::zeros({4}, DType::bf16));
  // Posted in different tag orders on the two sides of each pair; all posted before any wait.
  std::vector<Request> reqs = {c->isend(b, next, 9),  c->isend(a, next, 7), c->irecv(ra, prev, 7),
                               c->irecv(rb, prev, 9), c->isend(h, next, 3), c->irecv(hr, prev, 3)};
  wait_all(reqs);
  expect_all(
      ra, 5, [&](int64_t) { return 100.0 + prev; }, 0, "tag 7 payload");
  expect_all(
      rb, 3, [&](int64_t) { return 200.0 + prev; }, 0, "tag 9 payload");
  expect_all(
      hr, 4, [&](int64_t) { return 1.5 + prev; }, 0, "bf16 p2p");
  // A collective issues any queued messages first.
  Tensor s2 = on_device(Tensor::full({2}, 7 + c->rank())), r2 = on_device(Tensor::zeros({2}));
  Request qs = c->isend(s2, next, 1), qr = c->irecv(r2, prev, 1);
  c->barrier();
  qr.wait();
  qs.wait();
  expect_all(
      r2, 2, [&](int64_t) { return 7.0 + prev; }, 0, "p2p issued by a collective");
}

TEST(NcclSplit, ColorAndKeyOrder) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  const int color = c->rank() % 2;
  auto sub = c->split(color, -c->rank());
  ASSERT_TRUE(sub);
  int expected_size = 0, expected_rank = 0;
  for (int r = c->size() - 1; r >= 0; --r)
    if (r % 2 == color) {
      if (r == c->rank()) expected_rank = expected_size;
      ++expected_size;
    }
  EXPECT_EQ(sub->size(), expected_size);
  EXPECT_EQ(sub->rank(), expected_rank);
  Tensor t = on_device(Tensor::full({3}, c->rank()));
  sub->allreduce(t, ReduceOp::sum);
  double sum = 0;
  for (int r = color; r < c->size(); r += 2) sum += r;
  expect_all(
      t, 3, [&](int64_t) { return sum; }, 0, "allreduce on a split");
  auto none = c->split(c->rank() == 0 ? 0 : -1, 0);
  EXPECT_EQ(none != nullptr, c->rank() == 0);
}

TEST(NcclTopology, GroupsFromOptions) {
  SKIP_WITHOUT_DEVICES();
  const int W = MpiEnv::get().world_size(), R = MpiEnv::get().world_rank();
  Options o;
  o.set("comm", "nccl");
  o.set("ranks_per_node", W % 2 == 0 ? "2" : "1");
  Topology topo = Topology::from_options(o);
  EXPECT_EQ(topo.world().size(), W);
  Tensor t = on_device(Tensor::full({2}, R));
  topo.node().allreduce(t, ReduceOp::sum);
  double node_sum = 0;
  for (int r = 0; r < W; ++r)
    if (topo.world().node_of(r) == topo.node_id()) node_sum += r;
  expect_all(
      t, 2, [&](int64_t) { return node_sum; }, 0, "node allreduce");
  Tensor u = on_device(Tensor::full({2}, 1));
  topo.cross().allreduce(u, ReduceOp::sum);
  expect_all(
      u, 2, [&](int64_t) { return double(topo.num_nodes()); }, 0, "cross allreduce");
}

TEST(NcclErrors, BadTensorsAndArgumentsNameTheProblem) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  Tensor host = Tensor::zeros({4}, DType::f32);
  try {
    c->allreduce(host);
    ADD_FAILURE() << "allreduce of a CPU tensor did not throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("allreduce"), std::string::npos) << m;
    EXPECT_NE(m.find(host.str()), std::string::npos) << m;
  }
  Tensor t = on_device(Tensor::zeros({4}));
  EXPECT_THROW(c->broadcast(t, c->size()), Error);
  Tensor small = on_device(Tensor::zeros({3}));
  EXPECT_THROW(c->allgather(t, small), Error);
  EXPECT_THROW(c->isend(t, 0, 40000), Error);
  EXPECT_THROW(c->isend(t, c->rank(), 1), Error);
  Tensor bytes = on_device(Tensor::zeros({4}, DType::u8));
  EXPECT_THROW(c->allreduce(bytes), Error);
}

}  // namespace
}  // namespace dplab

namespace dplab {
namespace {

// Issue #19 item 1, the setup path it describes (broadcast_model -> wait_all -> the next fill):
// polling an unfinished NCCL operation leaves cudaErrorNotReady behind in the runtime's record,
// which the next kernel launch reported as its own failure. After polling to completion, kernels
// must launch, and the record must be clean.
TEST(NcclStickyError, KernelsLaunchAfterPollingAnUnfinishedCollective) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  const int64_t n = (1 << 22) + 5;  // large enough to be polled while in flight
  Tensor t = make_input(c->rank(), n);
  std::vector<Request> reqs = {c->ibroadcast(t, 0)};
  int polls = 0;
  while (!reqs[0].test()) ++polls;
  wait_all(reqs);
  {
    cuda::ScopedDevice on(dev().index);
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess) << "after " << polls << " polls";
  }
  Tensor f = Tensor::zeros({n}, DType::f32, dev());
  EXPECT_NO_THROW(f.fill_(2.0f)) << "after " << polls << " polls";
  expect_all(
      mul_scalar(f, 1.5f), n, [](int64_t) { return 3.0; }, 0, "fill after polling");
  expect_all(
      t, n, [&](int64_t i) { return double(value(0, i)); }, 0, "broadcast from rank 0");
}

// Issue #19 item 7: rank 0 posts a send on the world, then a collective on a communicator split
// from it, and only then waits; rank 1 waits for its receive before posting the collective.
// Issuing queued point-to-point only by the same communicator's next operation put the
// collective before the send on rank 0 and after the receive on rank 1 (a deadlock, shown as a
// timeout); the family-wide rule issues the send first on both.
TEST(NcclPointToPoint, QueuedSendGoesOutBeforeAnotherCommunicatorsCollective) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  auto other = c->split(0, c->rank(), "other");
  Tensor msg = on_device(Tensor::full({8}, 42.0f));
  Tensor got = on_device(Tensor::zeros({8}));
  Tensor sum = make_input(c->rank(), 1000);
  if (c->rank() == 0) {
    Request s = c->isend(msg, 1, 3);
    other->allreduce(sum);
    s.wait();
  } else if (c->rank() == 1) {
    c->irecv(got, 0, 3).wait();
    other->allreduce(sum);
    expect_all(
        got, 8, [](int64_t) { return 42.0; }, 0, "message from rank 0");
  } else {
    other->allreduce(sum);
  }
  expect_all(
      sum, 1000, [&](int64_t i) { return serial_reduce(ReduceOp::sum, c->size(), i); }, 1e-6,
      "allreduce on the split communicator");
}

// Issue #19 item 3, the watchdog: a collective a peer never joins fails its wait after
// comm.timeout_s, and the communicator is aborted (ncclCommAbort) instead of hanging; later
// operations on it say so. Rank 0 times out first while rank 1 waits on MPI, then rank 1.
TEST(NcclWatchdog, TimedOutWaitAbortsTheCommunicator) {
  SKIP_WITHOUT_DEVICES();
  if (world()->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  CommConfig cfg, calm_cfg;
  cfg.wait.timeout_s = 2;
  calm_cfg.wait.timeout_s = 60;
  auto calm = mpi_world(calm_cfg);  // where the other rank waits meanwhile
  auto mpi = mpi_world(cfg);        // a new NCCL family, so the shared test world stays usable
  auto c = make_nccl_communicator(mpi, dev().index);
  Tensor t = make_input(c->rank(), 64);
  // Warm-up: NCCL (2.28) connects the ranks at a communicator's first collective, so a one-sided
  // first collective would wait in the connection, not on the device (issue #31; that case is
  // NcclWatchdog.ColdOneSidedCollectiveEndsWithinTheLimit).
  c->allreduce(t);
  t = make_input(c->rank(), 64);
  for (int turn = 0; turn < 2; ++turn) {
    if (c->rank() == turn) {
      Request r = c->iallreduce(t);
      try {
        r.wait();
        ADD_FAILURE() << "rank " << turn << ": an allreduce nobody else joined completed";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("did not complete within 2 s"), std::string::npos)
            << e.what();
      }
      try {
        c->iallreduce(t);
        ADD_FAILURE() << "an aborted communicator accepted an allreduce";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("was aborted"), std::string::npos) << e.what();
      }
    }
    calm->barrier();  // the other rank waits here, answering the stall report
  }
}

// Issue #31 item 2: on a communicator that has not connected yet, a one-sided collective waits in
// NCCL's connection set-up. The communicators are non-blocking, so the call returns to dplab,
// which polls it with comm.timeout_s: rank 0's post ends with an error within the limit, and a
// second thread that meanwhile wants the same family (a barrier) is not left waiting for the
// lock: it ends too, saying the communicators were aborted.
TEST(NcclWatchdog, ColdOneSidedCollectiveEndsWithinTheLimit) {
  SKIP_WITHOUT_DEVICES();
  if (world()->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  CommConfig cfg, calm_cfg;
  cfg.wait.timeout_s = 2;
  calm_cfg.wait.timeout_s = 60;
  auto calm = mpi_world(calm_cfg);
  auto mpi = mpi_world(cfg);
  auto c = make_nccl_communicator(mpi, dev().index);  // no collective yet: not connected
  if (c->rank() == 0) {
    Tensor t = make_input(0, 64);
    const auto t0 = std::chrono::steady_clock::now();
    std::string other_error;
    std::thread other([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      try {
        c->ibarrier().wait();
      } catch (const Error& e) {
        other_error = e.what();
      }
    });
    try {
      c->iallreduce(t).wait();
      ADD_FAILURE() << "a one-sided first allreduce completed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("2 s"), std::string::npos) << e.what();
    }
    other.join();
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(took, 2 + 5.0) << "the limit is 2 s";
    EXPECT_NE(other_error.find("abort"), std::string::npos) << other_error;
  }
  calm->barrier();  // rank 1 waits here, answering the stall report
}

}  // namespace
}  // namespace dplab

namespace dplab {
namespace {

// Issue #19 item 4 with NCCL: the device query on one rank only, several times, then a
// collective (a hidden MPI_Comm_split_type per query left rank 0 blocked there, and the others
// in the collective, forever). Item 2: the device is the one comm/local_device.h chooses.
TEST(NcclPlacement, DeviceQueryOnOneRankOnlyDoesNotDeadlock) {
  SKIP_WITHOUT_DEVICES();
  auto c = world();
  if (c->rank() == 0) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(nccl_local_device(), dev().index);
  }
  Tensor t = make_input(c->rank(), 10);
  c->allreduce(t);
  expect_all(
      t, 10, [&](int64_t i) { return serial_reduce(ReduceOp::sum, c->size(), i); }, 1e-6,
      "allreduce after the one-sided queries");
  const MpiEnv& env = MpiEnv::get();
  EXPECT_EQ(dev().index,
            choose_local_device(env.local_rank(), env.local_size(), cuda_device_count()).device);
}

}  // namespace
}  // namespace dplab
