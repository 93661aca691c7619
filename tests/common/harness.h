// Shared test harness: normalised error between tensors, and finite-difference gradient checks
// of any differentiable function of tensors (Caffe's gradient checker, ggml's normalised error).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops.h"
#include "dplab/core/philox.h"

namespace dplab::test {

// Fills v with deterministic pseudo-random pixel values in [0, 1) from an xorshift64 stream
// whose state is `h` (advanced in place): multi-rank tests use it to build any rank's batch
// from a key, so a serial reference can recompute every rank's data.
inline void fill_xorshift(std::vector<float>& v, uint64_t& h) {
  for (auto& x : v) {
    h ^= h << 13;
    h ^= h >> 7;
    h ^= h << 17;
    x = static_cast<float>(h % 1000) / 1000.0f;
  }
}

// Random f32 tensor with values uniform in [lo, hi), deterministic in (seed, stream).
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f);

// ||a - b||^2 / ||b||^2 (0 when both are zero): ggml's normalised mean squared error.
double nmse(const Tensor& a, const Tensor& b);
// max |a - b|
double max_abs_diff(const Tensor& a, const Tensor& b);

// Expects nmse(actual, expected) <= tol, with a readable message.
void expect_close(const Tensor& actual, const Tensor& expected, double tol,
                  const std::string& what);

// Checks the analytic gradient of `f` against central finite differences (in double-precision
// bookkeeping over f32 evaluations). `f` maps the inputs to a tensor; the scalar checked is
// sum(f(inputs) * w) with a fixed random weight w, so every output element matters.
// Inputs with requires_grad set are checked. Returns true on success (and adds failures).
struct GradCheckOptions {
  double eps = 1e-2;
  double atol = 1e-2;
  double rtol = 1e-2;
  int max_elements = 64;  // checks at most this many (evenly spread) elements per input
};
void expect_gradients_match(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                            std::vector<Tensor> inputs, const GradCheckOptions& opt = {});

// The same check with `f` evaluated on `device`: `host_inputs` are CPU tensors (contiguous where
// they require grad; undefined allowed) that stay on the host. Every evaluation copies them to
// the device as fresh leaves (requires_grad as on the host) and brings the output back, and each
// finite-difference perturbation is made on the host copy, so the device kernels compute both
// the analytic gradient and every objective value. Inputs are never modified (in-place updates
// an op makes, such as batch-norm running statistics, land on the per-evaluation copies).
void expect_gradients_match_on(Device device,
                               const std::function<Tensor(const std::vector<Tensor>&)>& f,
                               std::vector<Tensor> host_inputs, const GradCheckOptions& opt = {});

// Copies a CPU tensor to `device` as a new leaf (a clone even for the CPU, so the copy shares no
// storage or history with `t`) that requires grad when `t` does. Undefined stays undefined.
Tensor leaf_on(const Tensor& t, Device device);

// The message of the dplab::Error that `f` throws, or "(no error)" when it throws none.
std::string error_of(const std::function<void()>& f);
// The message of the dplab::UsageError (exit status 2) that `f` throws, or "(no UsageError)"
// when it throws none (another error propagates).
std::string usage_error_of(const std::function<void()>& f);

}  // namespace dplab::test
