// Every collective x wire type x size against a serial computation, tagged point-to-point,
// split, error reporting and link emulation. Runs at 1, 2 and 4 ranks.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"

namespace dplab {
namespace {

std::shared_ptr<Communicator> world() {
  // One world per test binary (communicators are cheap, but MPI_Comm_dup is collective).
  static std::shared_ptr<Communicator> w = mpi_world();
  return w;
}

// Positive, distinct per (rank, i), exactly representable in bf16 and f16 (multiples of 1/64 in
// [0.5, 2)): the serial reference then sees the same inputs as the wire.
float value(int rank, int64_t i) {
  return 0.5f + static_cast<float>((rank * 37 + i * 11) % 96) / 64.0f;
}

Tensor make_input(int rank, int64_t n, DType dtype = DType::f32) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = value(rank, i);
  return Tensor::from_vector(v, {n}, dtype);
}

double serial_reduce(ReduceOp op, int size, int64_t i) {
  double acc = op == ReduceOp::max ? -1e30 : 0.0;
  for (int r = 0; r < size; ++r)
    acc = op == ReduceOp::max ? std::max(acc, double(value(r, i))) : acc + value(r, i);
  return op == ReduceOp::average ? acc / size : acc;
}

// Relative tolerance: each reduction hop rounds once to the wire type.
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

const int64_t kSizes[] = {0, 1, 17, (1 << 19) + 3};  // the last is 2 MiB of f32
const DType kWires[] = {DType::f32, DType::bf16, DType::f16};
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::average, ReduceOp::max};

// Compares n elements of `got` with expected(i), counting mismatches (one failure message).
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
  return fmt::format("{}({}) wire {} n {}", coll, reduce_op_name(op), dtype_name(w), n);
}

TEST(Collectives, AllreduceEveryOpWireAndSize) {
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

TEST(Collectives, AllreduceOfNative16BitTensors) {
  auto c = world();
  for (DType dt : {DType::bf16, DType::f16})
    for (int64_t n : {int64_t(1), int64_t(1001)}) {
      Tensor t = make_input(c->rank(), n, dt);
      c->allreduce(t, ReduceOp::sum);  // wire = the tensor's own dtype
      EXPECT_EQ(t.dtype(), dt);
      expect_all(
          t, n, [&](int64_t i) { return serial_reduce(ReduceOp::sum, c->size(), i); },
          tolerance(dt, c->size()), label("allreduce native", ReduceOp::sum, dt, n));
    }
}

TEST(Collectives, ReduceToLastRank) {
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
        else  // non-roots keep their input
          expect_all(
              t, n, [&](int64_t i) { return value(c->rank(), i); }, 0, "reduce non-root");
      }
}

TEST(Collectives, BroadcastFromRankOne) {
  auto c = world();
  const int root = 1 % c->size();
  for (DType w : kWires)
    for (int64_t n : kSizes) {
      Tensor t = make_input(c->rank(), n);
      c->broadcast(t, root, w);
      // The inputs are exact in every wire type, so the result is exact.
      expect_all(
          t, n, [&](int64_t i) { return value(root, i); }, 0,
          label("broadcast", ReduceOp::sum, w, n));
    }
}

TEST(Collectives, Allgather) {
  auto c = world();
  for (DType w : kWires)
    for (int64_t n : kSizes) {
      Tensor send = make_input(c->rank(), n);
      Tensor recv = Tensor::zeros({n * c->size()});
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

TEST(Collectives, ReduceScatter) {
  auto c = world();
  for (DType w : kWires)
    for (ReduceOp op : kOps)
      for (int64_t n : kSizes) {
        Tensor send = make_input(c->rank(), n * c->size());
        Tensor recv = Tensor::zeros({n});
        c->reduce_scatter(send, recv, op, w);
        const int64_t base = c->rank() * n;
        expect_all(
            recv, n, [&](int64_t i) { return serial_reduce(op, c->size(), base + i); },
            tolerance(w, c->size()), label("reduce_scatter", op, w, n));
      }
}

TEST(Collectives, NonBlockingTestEventuallyCompletes) {
  auto c = world();
  Tensor t = make_input(c->rank(), 1000);
  std::vector<Request> reqs = {c->iallreduce(t, ReduceOp::sum), c->ibarrier()};
  int spins = 0;
  while (!(reqs[0].test() && reqs[1].test())) {
    ++spins;
    timespec ts{0, 20000};
    nanosleep(&ts, nullptr);
  }
  EXPECT_GT(reqs[0].seconds_in_flight(), 0.0);
  expect_all(
      t, 1000, [&](int64_t i) { return serial_reduce(ReduceOp::sum, c->size(), i); }, 1e-6,
      "iallreduce with test()");
  Request empty;
  EXPECT_TRUE(empty.test());
}

TEST(PointToPoint, TagsMatchOutOfOrder) {
  auto c = world();
  if (c->size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int next = (c->rank() + 1) % c->size(), prev = (c->rank() + c->size() - 1) % c->size();
  Tensor a = Tensor::full({5}, 100 + c->rank()), b = Tensor::full({3}, 200 + c->rank());
  std::vector<Request> reqs = {c->isend(a, next, 7), c->isend(b, next, 9)};
  // Receive tag 9 first: matching must be by tag, not by arrival order.
  Tensor rb = Tensor::zeros({3}), ra = Tensor::zeros({5});
  c->recv(rb, prev, 9);
  Request ra_req = c->irecv(ra, prev, 7);
  ra_req.wait();
  wait_all(reqs);
  expect_all(
      ra, 5, [&](int64_t) { return 100.0 + prev; }, 0, "tag 7 payload");
  expect_all(
      rb, 3, [&](int64_t) { return 200.0 + prev; }, 0, "tag 9 payload");
  // 16-bit tensors travel as their own dtype.
  Tensor h = Tensor::full({4}, 1.5 + c->rank(), DType::bf16), hr = Tensor::zeros({4}, DType::bf16);
  Request s = c->isend(h, next, 3);
  c->recv(hr, prev, 3);
  s.wait();
  expect_all(
      hr, 4, [&](int64_t) { return 1.5 + prev; }, 0, "bf16 p2p");
}

TEST(Split, ColorAndKeyOrder) {
  auto c = world();
  const int color = c->rank() % 2;
  // key = -rank reverses the order inside each group.
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
  Tensor t = Tensor::full({1}, c->rank());
  sub->allreduce(t, ReduceOp::sum);
  double sum = 0;
  for (int r = color; r < c->size(); r += 2) sum += r;
  EXPECT_EQ(t.item(), sum);
  // Excluded ranks get no communicator.
  auto none = c->split(c->rank() == 0 ? 0 : -1, 0);
  EXPECT_EQ(none != nullptr, c->rank() == 0);
}

TEST(Errors, BadArgumentsAndMpiErrorsThrowWithContext) {
  auto c = world();
  Tensor t = Tensor::zeros({4});
  try {
    c->broadcast(t, c->size());
    ADD_FAILURE() << "broadcast with a bad root did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broadcast root"), std::string::npos) << e.what();
  }
  Tensor small = Tensor::zeros({3});
  EXPECT_THROW(c->allgather(t, small), Error);
  EXPECT_THROW(c->isend(t, 0, 40000), Error);
  // An MPI error code becomes an exception naming the call.
  try {
    mpi_check(MPI_ERR_COUNT, "MPI_Isend", "send of 4 floats");
    ADD_FAILURE() << "mpi_check did not throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("MPI_Isend failed"), std::string::npos) << m;
    EXPECT_NE(m.find("send of 4 floats"), std::string::npos) << m;
  }
  // A real MPI call failing on a communicator with MPI_ERRORS_RETURN.
  int rc = MPI_Send(nullptr, -1, MPI_FLOAT, 0, 0, MPI_COMM_WORLD);
  EXPECT_NE(rc, MPI_SUCCESS);
  EXPECT_THROW(mpi_check(rc, "MPI_Send"), Error);
}

}  // namespace
}  // namespace dplab
