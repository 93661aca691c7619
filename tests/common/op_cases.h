// One table of op cases shared by the CPU and CUDA tests (ggml's test-backend-ops): each case
// builds deterministic CPU inputs, runs the public differentiable ops on them and names its
// tolerance. A case is checked on a device in two ways:
//   - parity: outputs and input gradients (backward of sum(outputs[0] * w), w fixed) against
//     the same case run on the reference kernels (BackendOverride(ref_backend()) on the CPU), by
//     normalised error <= tol;
//   - finite differences: the analytic input gradients on the device against central
//     differences of device evaluations (harness expect_gradients_match_on).
// tests/core/test_op_cases.cpp runs every case on the CPU; tests/cuda/test_cuda_ops.cpp runs the
// same cases, with the same assertions, on cuda:0.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "common/harness.h"

namespace dplab::test {

struct OpCase {
  // Unique, [A-Za-z0-9_] only: it names the parameterized gtest ("CpuOps.MatchesRef/<name>").
  std::string name;
  // The functions declared in core/ops/*.h this case exercises (the coverage test checks that
  // every declared op appears in some case).
  std::vector<std::string> ops;
  // Deterministic CPU inputs, contiguous; inputs that require grad (f32) are differentiated.
  // Non-contiguous operands are made inside `fn` (transpose views), so gradients reach leaves.
  std::function<std::vector<Tensor>()> inputs;
  // The ops under test applied to the inputs (which the runner has put on the device). Every
  // output is compared against ref; outputs[0] is the one differentiated.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  // Largest normalised error of each output and each input gradient against ref.
  double tol = 1e-7;
  // False only where the output is piecewise constant in the inputs (rounding casts), which
  // central differences cannot see; their gradients are still compared against ref.
  bool finite_differences = true;
  GradCheckOptions grad{};
  // The case relies on autocast keeping bf16 activations (Backend::bf16_activations), or
  // hands bf16 tensors to the kernels itself (Backend::bf16_kernels): a backend without that
  // skips it, saying so.
  bool bf16_activations = false;
  bool bf16_kernels = false;
};

// The reason `c` cannot run on `device`'s backend, or "" when it can (the runners GTEST_SKIP
// with it).
std::string op_case_unsupported(const OpCase& c, Device device);

// gtest prints parameters with this (the case name, not the bytes of the struct).
void PrintTo(const OpCase& c, std::ostream* os);

// The table.
const std::vector<OpCase>& op_cases();

// The op names declared in the core/ops/*.h headers under `source_dir` (free functions
// returning Tensor, void or double), for the coverage test.
std::vector<std::string> declared_ops(const std::string& source_dir);

struct OpCaseResult {
  std::vector<Tensor> outputs;  // on the CPU
  std::vector<Tensor> grads;    // one per input, on the CPU; undefined where none was asked
};

// Runs `c` on `device` with whatever backend backend_for(device) gives now: inputs copied there
// as fresh leaves, backward of sum(outputs[0] * w) when outputs[0] requires grad, results
// brought back to the CPU.
OpCaseResult evaluate_op_case(const OpCase& c, Device device);
// The same on the reference kernels (CPU, under BackendOverride(ref_backend())).
OpCaseResult evaluate_op_case_on_ref(const OpCase& c);

// Parity of `c` on `device` against ref (gtest expectations).
void expect_op_case_matches_ref(const OpCase& c, Device device);
// Finite-difference gradient check of `c` on `device` (nothing to do when no input requires
// grad or the case has finite_differences off).
void expect_op_case_gradients(const OpCase& c, Device device);

}  // namespace dplab::test
