#include "common/harness.h"

#include <cmath>

#include "dplab/core/usage_error.h"

namespace dplab::test {

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  PhiloxStream rng(seed, 0x7e57);
  std::vector<float> v(shape_numel(shape));
  for (auto& x : v) x = rng.uniform(lo, hi);
  return Tensor::from_vector(v, shape);
}

double nmse(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  EXPECT_EQ(va.size(), vb.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    double d = static_cast<double>(va[i]) - vb[i];
    num += d * d;
    den += static_cast<double>(vb[i]) * vb[i];
  }
  if (den == 0) return num;
  return num / den;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector(), vb = b.to_vector();
  EXPECT_EQ(va.size(), vb.size());
  double m = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i)
    m = std::max(m, std::fabs(static_cast<double>(va[i]) - vb[i]));
  return m;
}

void expect_close(const Tensor& actual, const Tensor& expected, double tol,
                  const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what << ": shapes differ";
  double e = nmse(actual, expected);
  EXPECT_LE(e, tol) << what << ": normalised error " << e << " (max abs diff "
                    << max_abs_diff(actual, expected) << ")";
}

void expect_gradients_match(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                            std::vector<Tensor> inputs, const GradCheckOptions& opt) {
  // Analytic: backward of sum(y * w) is backward(y, w).
  for (auto& x : inputs)
    if (x.defined() && x.requires_grad()) x.set_grad(Tensor());
  Tensor y = f(inputs);
  ASSERT_TRUE(y.requires_grad()) << "output does not require grad";
  Tensor w = random_tensor(y.shape(), 991, 0.5f, 1.5f);
  backward(y, w);
  auto wv = w.to_vector();
  auto objective = [&]() {
    NoGradGuard ng;
    auto yv = f(inputs).to_vector();
    double s = 0;
    for (size_t i = 0; i < yv.size(); ++i) s += static_cast<double>(yv[i]) * wv[i];
    return s;
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    ASSERT_TRUE(x.grad().defined()) << "input " << k << " got no gradient";
    auto g = x.grad().to_vector();
    ASSERT_TRUE(x.is_contiguous());
    float* p = x.data<float>();
    const int64_t n = x.numel();
    const int64_t step = std::max<int64_t>(1, n / opt.max_elements);
    for (int64_t i = 0; i < n; i += step) {
      const float orig = p[i];
      p[i] = orig + static_cast<float>(opt.eps);
      double up = objective();
      p[i] = orig - static_cast<float>(opt.eps);
      double down = objective();
      p[i] = orig;
      double numeric = (up - down) / (2 * opt.eps);
      double tol = opt.atol + opt.rtol * std::fabs(numeric);
      EXPECT_NEAR(g[i], numeric, tol) << "input " << k << " element " << i;
    }
  }
}

Tensor leaf_on(const Tensor& t, Device device) {
  if (!t.defined()) return Tensor();
  Tensor d = device.is_cpu() ? t.clone() : t.to(device);
  d = d.detach();
  if (t.requires_grad()) d.set_requires_grad(true);
  return d;
}

void expect_gradients_match_on(Device device,
                               const std::function<Tensor(const std::vector<Tensor>&)>& f,
                               std::vector<Tensor> host_inputs, const GradCheckOptions& opt) {
  // Private host copies: perturbing them never touches the caller's tensors.
  for (Tensor& h : host_inputs) {
    if (!h.defined()) continue;
    ASSERT_TRUE(h.device().is_cpu()) << "host input on " << h.device().str();
    h = leaf_on(h, Device::cpu());
  }
  auto to_device = [&]() {
    std::vector<Tensor> d;
    d.reserve(host_inputs.size());
    for (const Tensor& h : host_inputs) d.push_back(leaf_on(h, device));
    return d;
  };
  // Analytic: backward of sum(y * w) is backward(y, w), all on the device.
  std::vector<Tensor> dev = to_device();
  Tensor y = f(dev);
  ASSERT_TRUE(y.requires_grad()) << "output does not require grad";
  ASSERT_EQ(y.device(), device) << "output on " << y.device().str();
  const Tensor w = random_tensor(y.shape(), 991, 0.5f, 1.5f);
  backward(y, y.device().is_cpu() ? w : w.to(device));
  const std::vector<float> wv = w.to_vector();
  auto objective = [&]() {
    NoGradGuard ng;
    const std::vector<float> yv = f(to_device()).to(Device::cpu()).to_vector();
    double s = 0;
    for (size_t i = 0; i < yv.size(); ++i) s += static_cast<double>(yv[i]) * wv[i];
    return s;
  };
  for (size_t k = 0; k < host_inputs.size(); ++k) {
    Tensor& x = host_inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    ASSERT_TRUE(dev[k].grad().defined()) << "input " << k << " got no gradient";
    ASSERT_EQ(dev[k].grad().device(), device) << "input " << k << "'s gradient is elsewhere";
    ASSERT_EQ(dev[k].grad().shape(), x.shape()) << "input " << k << "'s gradient shape";
    const std::vector<float> g = dev[k].grad().to(Device::cpu()).to_vector();
    ASSERT_TRUE(x.is_contiguous() && x.dtype() == DType::f32)
        << "input " << k << " must be contiguous f32 to be perturbed: " << x.str();
    float* p = x.data<float>();
    const int64_t n = x.numel();
    const int64_t step = std::max<int64_t>(1, n / opt.max_elements);
    for (int64_t i = 0; i < n; i += step) {
      const float orig = p[i];
      p[i] = orig + static_cast<float>(opt.eps);
      const double up = objective();
      p[i] = orig - static_cast<float>(opt.eps);
      const double down = objective();
      p[i] = orig;
      const double numeric = (up - down) / (2 * opt.eps);
      const double tol = opt.atol + opt.rtol * std::fabs(numeric);
      EXPECT_NEAR(g[i], numeric, tol)
          << "input " << k << " element " << i << " on " << device.str();
    }
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

}  // namespace dplab::test
