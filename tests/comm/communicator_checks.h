// One table of bad calls, run against every Communicator backend (issue #32 item 5): the MPI
// backend (communicator_checks_test.cpp) and NCCL (test_nccl_communicator_checks.cpp) share
// their checks (comm/backend_communicator.h), so each call below must throw an Error whose
// message begins with the operation ("allgather on communicator 'checks': ...") and names the
// communicator, and must post nothing: the next collective is still number 1 and computes the
// right sum. The good calls after the table check the names the requests carry into timeout and
// stall messages, the same on both backends.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dplab/comm/communicator.h"
#include "dplab/core/error.h"
#include "dplab/core/tensor.h"

namespace dplab::test {

// How a backend's test makes tensors: on the backend's device from host values, and (when the
// machine has one) a tensor on a device the backend does not take. Results are read back with
// Tensor::to_vector (any device).
struct CheckTensors {
  std::function<Tensor(const Tensor& host)> to_backend;
  std::optional<Tensor> foreign;
};

struct BadCall {
  std::string label;      // what the case is, for failure messages
  std::string operation;  // the operation the message must begin with
  std::function<void()> call;
};

// The table (every entry invalid on any communicator of `c`'s size).
inline std::vector<BadCall> bad_calls(Communicator& c, const CheckTensors& k) {
  const int P = c.size();
  auto make = [&](const Shape& shape, DType dtype) {
    return k.to_backend(Tensor::zeros(shape, dtype));
  };
  const Tensor f4 = make({4}, DType::f32);
  const Tensor gathered = make({4 * P}, DType::f32);
  // A transposed 4 x 3 matrix: a view whose strides are not row-major.
  const Tensor strided = make({4, 3}, DType::f32).transpose(0, 1);
  std::vector<BadCall> t = {
      {"undefined tensor", "allreduce", [&c] { c.iallreduce(Tensor()); }},
      {"u8 is not reducible", "allreduce", [&c, u = make({4}, DType::u8)] { c.iallreduce(u); }},
      {"u8 wire for a reduction", "allreduce",
       [&c, f4] { c.iallreduce(f4, ReduceOp::sum, DType::u8); }},
      {"average of i32", "allreduce",
       [&c, i = make({4}, DType::i32)] { c.iallreduce(i, ReduceOp::average); }},
      {"non-contiguous", "allreduce", [&c, strided] { c.iallreduce(strided); }},
      {"reduce root = size", "reduce", [&c, f4, P] { c.ireduce(f4, P); }},
      {"reduce root -1", "reduce", [&c, f4] { c.ireduce(f4, -1); }},
      {"reduce of u8", "reduce", [&c, u = make({4}, DType::u8)] { c.ireduce(u, 0); }},
      {"broadcast root = size", "broadcast", [&c, f4, P] { c.ibroadcast(f4, P); }},
      {"broadcast of undefined", "broadcast", [&c] { c.ibroadcast(Tensor(), 0); }},
      {"broadcast non-contiguous", "broadcast", [&c, strided] { c.ibroadcast(strided, 0); }},
      {"allgather recv too large", "allgather",
       [&c, f4, r = make({4 * P + 1}, DType::f32)] { c.iallgather(f4, r); }},
      {"allgather recv too small", "allgather",
       [&c, f4, r = make({4 * P - 1}, DType::f32)] { c.iallgather(f4, r); }},
      {"allgather dtypes differ", "allgather",
       [&c, f4, r = make({4 * P}, DType::bf16)] { c.iallgather(f4, r); }},
      {"allgather undefined recv", "allgather", [&c, f4] { c.iallgather(f4, Tensor()); }},
      {"allgather non-contiguous send", "allgather",
       [&c, strided, r = make({12 * P}, DType::f32)] { c.iallgather(strided, r); }},
      {"reduce_scatter send too large", "reduce_scatter",
       [&c, f4, s = make({4 * P + 1}, DType::f32)] { c.ireduce_scatter(s, f4); }},
      {"reduce_scatter dtypes differ", "reduce_scatter",
       [&c, gathered, r = make({4}, DType::bf16)] { c.ireduce_scatter(gathered, r); }},
      {"reduce_scatter of u8", "reduce_scatter",
       [&c, s = make({4 * P}, DType::u8), r = make({4}, DType::u8)] { c.ireduce_scatter(s, r); }},
      {"reduce_scatter average of i64", "reduce_scatter",
       [&c, s = make({4 * P}, DType::i64), r = make({4}, DType::i64)] {
         c.ireduce_scatter(s, r, ReduceOp::average);
       }},
      {"reduce_scatter undefined send", "reduce_scatter",
       [&c, f4] { c.ireduce_scatter(Tensor(), f4); }},
      {"send destination = size", "send", [&c, f4, P] { c.isend(f4, P, 0); }},
      {"send destination -1", "send", [&c, f4] { c.isend(f4, -1, 0); }},
      {"send tag 40000", "send", [&c, f4] { c.isend(f4, 0, 40000); }},
      {"send tag -1", "send", [&c, f4] { c.isend(f4, 0, -1); }},
      {"send undefined", "send", [&c] { c.isend(Tensor(), 0, 0); }},
      {"recv source = size", "recv", [&c, f4, P] { c.irecv(f4, P, 0); }},
      {"recv tag 32768", "recv", [&c, f4] { c.irecv(f4, 0, 32768); }},
      {"recv non-contiguous", "recv", [&c, strided] { c.irecv(strided, 0, 0); }},
  };
  if (k.foreign) {
    const Tensor x = *k.foreign;
    t.push_back({"tensor on another device", "allreduce", [&c, x] { c.iallreduce(x); }});
    t.push_back(
        {"allgather recv on another device", "allgather", [&c, f4, x] { c.iallgather(f4, x); }});
    t.push_back({"send from another device", "send", [&c, x] { c.isend(x, 0, 0); }});
  }
  return t;
}

// Runs the table on `c` (a fresh communicator: no collective posted on it yet), then checks that
// nothing was posted or numbered and that good calls are named alike on every backend.
inline void expect_bad_calls_refused(Communicator& c, const CheckTensors& k) {
  const std::string quoted = fmt::format("'{}'", c.name());
  for (const BadCall& b : bad_calls(c, k)) {
    try {
      b.call();
      ADD_FAILURE() << b.label << ": did not throw";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(b.operation + " ", 0), 0u)
          << b.label << ": the message does not begin with '" << b.operation << " ': " << m;
      EXPECT_NE(m.find(quoted), std::string::npos)
          << b.label << ": the message does not name communicator " << quoted << ": " << m;
    } catch (const std::exception& e) {
      ADD_FAILURE() << b.label << ": threw something else than dplab::Error: " << e.what();
    }
  }

  // Nothing was posted: the first real collective is number 1 on every rank and sums right.
  const int P = c.size(), me = c.rank();
  std::vector<float> v(5);
  for (int i = 0; i < 5; ++i) v[i] = static_cast<float>(me * 10 + i);
  Tensor x = k.to_backend(Tensor::from_vector(v, {5}));
  Request r = c.iallreduce(x);
  const std::string d = r.describe();
  EXPECT_EQ(d.rfind("allreduce(sum) #1 of ", 0), 0u) << d;
  EXPECT_NE(d.find(" as f32 on "), std::string::npos) << d;
  EXPECT_NE(d.find(quoted + " (" + std::to_string(P) + " ranks"), std::string::npos) << d;
  r.wait();
  const std::vector<float> got = x.to_vector();
  for (int i = 0; i < 5; ++i) {
    // sum over ranks q of (10 q + i)
    const double want = 10.0 * P * (P - 1) / 2 + double(P) * i;
    EXPECT_EQ(got[i], static_cast<float>(want)) << "element " << i;
  }
  Request b = c.ibarrier();
  EXPECT_EQ(b.describe().rfind("barrier #2 on ", 0), 0u) << b.describe();
  b.wait();
  // A reduce_scatter whose dtypes agree passes the checks and computes the block sums.
  Tensor send = k.to_backend(Tensor::full({3 * P}, 1.0 + me));
  Tensor recv = k.to_backend(Tensor::zeros({3}));
  Request rs = c.ireduce_scatter(send, recv, ReduceOp::average);
  EXPECT_EQ(rs.describe().rfind("reduce_scatter(average) #3 of ", 0), 0u) << rs.describe();
  rs.wait();
  const std::vector<float> avg = recv.to_vector();  // mean over ranks q of (1 + q)
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(avg[i], (P + 1) / 2.0f) << "element " << i;

  // Point to point around a ring: named by peer and tag, delivered.
  if (P < 2) return;
  const int dst = (me + 1) % P, src = (me + P - 1) % P;
  Tensor out = k.to_backend(Tensor::full({6}, 100.0 + me));
  Tensor in = k.to_backend(Tensor::zeros({6}));
  std::vector<Request> reqs = {c.isend(out, dst, 7), c.irecv(in, src, 7)};
  EXPECT_EQ(reqs[0].describe().rfind("send of ", 0), 0u) << reqs[0].describe();
  EXPECT_NE(reqs[0].describe().find("to rank " + std::to_string(dst) + " (tag 7) on "),
            std::string::npos)
      << reqs[0].describe();
  EXPECT_NE(reqs[1].describe().find("from rank " + std::to_string(src) + " (tag 7) on "),
            std::string::npos)
      << reqs[1].describe();
  EXPECT_NE(reqs[1].describe().find(quoted), std::string::npos) << reqs[1].describe();
  wait_all(reqs);
  const std::vector<float> msg = in.to_vector();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(msg[i], 100.0f + src) << "element " << i;
}

}  // namespace dplab::test
