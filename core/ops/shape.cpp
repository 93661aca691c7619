// Shape ops: views where the layout allows (no copy), with backward nodes that undo the view
// on the gradient.
#include "dplab/core/ops/shape.h"

#include "dplab/core/autograd.h"

namespace dplab {
namespace {

class ReshapeBackward : public Node {
 public:
  explicit ReshapeBackward(Shape in) : in_(std::move(in)) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {grads[0].contiguous().view(in_)};
  }
  std::string name() const override { return "ReshapeBackward"; }

 private:
  Shape in_;
};

class TransposeBackward : public Node {
 public:
  TransposeBackward(int d0, int d1) : d0_(d0), d1_(d1) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {grads[0].contiguous_if_blocked().transpose(d0_, d1_)};
  }
  std::string name() const override { return "TransposeBackward"; }

 private:
  int d0_, d1_;
};

class IdentityBackward : public Node {
 public:
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override { return {grads[0]}; }
  std::string name() const override { return "ContiguousBackward"; }
};

int wrap(int d, int n, const char* what, const Tensor& x) {
  const int w = d < 0 ? d + n : d;
  DPLAB_CHECK(w >= 0 && w < n, "{}: dim {} out of range for {}", what, d, x.str());
  return w;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  DPLAB_CHECK(x.defined(), "reshape of an undefined tensor");
  // A view (a fresh handle, so history is not written onto x) when x is contiguous, else one
  // copy.
  Tensor y = x.contiguous().view(shape);
  if (any_requires_grad({&x}))
    set_history(std::make_shared<ReshapeBackward>(x.shape()), {&x}, {&y});
  return y;
}

Tensor flatten(const Tensor& x, int start_dim, int end_dim) {
  DPLAB_CHECK(x.defined(), "flatten of an undefined tensor");
  if (x.dim() == 0) return reshape(x, {1});
  const int s = wrap(start_dim, x.dim(), "flatten start_dim", x);
  const int e = wrap(end_dim, x.dim(), "flatten end_dim", x);
  DPLAB_CHECK(s <= e, "flatten: start_dim {} after end_dim {} for {}", start_dim, end_dim, x.str());
  Shape out;
  for (int d = 0; d < s; ++d) out.push_back(x.shape()[d]);
  int64_t m = 1;
  for (int d = s; d <= e; ++d) m *= x.shape()[d];
  out.push_back(m);
  for (int d = e + 1; d < x.dim(); ++d) out.push_back(x.shape()[d]);
  return reshape(x, out);
}

Tensor transpose(const Tensor& x, int d0, int d1) {
  DPLAB_CHECK(x.defined(), "transpose of an undefined tensor");
  const int a = wrap(d0, x.dim(), "transpose", x), b = wrap(d1, x.dim(), "transpose", x);
  Tensor y = x.contiguous_if_blocked().transpose(a, b);
  if (any_requires_grad({&x})) set_history(std::make_shared<TransposeBackward>(a, b), {&x}, {&y});
  return y;
}

Tensor to_layout(const Tensor& x, Layout layout) {
  DPLAB_CHECK(x.defined(), "to_layout of an undefined tensor");
  if (layout == Layout::strided) return contiguous(x);
  if (x.layout() == layout) return x;
  // nChw16c is a CPU memory format: a device tensor keeps its (strided) layout, as
  // channels-last hints do on the CPU.
  if (layout == Layout::nChw16c && !x.device().is_cpu()) return contiguous(x);
  Tensor y = x.to(layout);
  if (any_requires_grad({&x})) set_history(std::make_shared<IdentityBackward>(), {&x}, {&y});
  return y;
}

Tensor contiguous(const Tensor& x) {
  DPLAB_CHECK(x.defined(), "contiguous of an undefined tensor");
  if (x.is_contiguous()) return x;
  Tensor y = x.clone();
  if (any_requires_grad({&x})) set_history(std::make_shared<IdentityBackward>(), {&x}, {&y});
  return y;
}

}  // namespace dplab
