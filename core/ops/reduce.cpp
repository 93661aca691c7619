// Reductions. Every sum-like reduction runs the backend's keepdim-shaped sum kernel; backward
// broadcasts the (keepdim-shaped) gradient back over the input's shape.
#include "dplab/core/ops/reduce.h"

#include <algorithm>
#include <cmath>

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"

namespace dplab {
namespace {

void check_float(const Tensor& t, const char* what) {
  DPLAB_CHECK(t.defined(), "{}: undefined input tensor", what);
  DPLAB_CHECK(is_floating(t.dtype()), "{}: input {} must be a float tensor", what, t.str());
}

// scale · g broadcast from keep_shape (rank of out_shape, 1 on reduced dims) to out_shape:
// one broadcast multiply against a stride-0 view of the scale.
Tensor expand_scaled(const Tensor& g, const Shape& keep_shape, const Shape& out_shape,
                     float scale) {
  Tensor gk = g.contiguous().view(keep_shape);
  Tensor s = Tensor::full({1}, scale, DType::f32, g.device());
  Tensor s_wide =
      Tensor::view_of(s.storage(), s.offset(), out_shape, DType::f32, Shape(out_shape.size(), 0));
  Tensor y = Tensor::empty(out_shape, DType::f32, g.device());
  backend_for(g.device()).ew.binary(BinaryOp::mul, gk, s_wide, y);
  return y;
}

class SumBackward : public Node {
 public:
  SumBackward(Shape keep, Shape in, float scale)
      : keep_(std::move(keep)), in_(std::move(in)), scale_(scale) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {expand_scaled(grads[0], keep_, in_, scale_)};
  }
  std::string name() const override { return "SumBackward"; }

 private:
  Shape keep_, in_;
  float scale_;
};

// Sorted, de-duplicated, wrapped dims.
std::vector<int> normalise_dims(const std::vector<int>& dims, int ndim, const char* what) {
  std::vector<int> r;
  for (int d : dims) {
    const int w = d < 0 ? d + ndim : d;
    DPLAB_CHECK(w >= 0 && w < ndim, "{}: dim {} out of range for a {}-d tensor", what, d, ndim);
    r.push_back(w);
  }
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

Tensor reduce_sum(const Tensor& x, const std::vector<int>& dims_in, bool keepdim, bool mean,
                  const char* what) {
  check_float(x, what);
  const std::vector<int> dims = normalise_dims(dims_in, x.dim(), what);
  Shape keep = x.shape(), out;
  int64_t count = 1;
  for (int d : dims) {
    count *= x.shape()[d];
    keep[d] = 1;
  }
  for (int d = 0; d < x.dim(); ++d)
    if (keepdim || !std::binary_search(dims.begin(), dims.end(), d)) out.push_back(keep[d]);
  const float scale = mean ? (count > 0 ? 1.f / static_cast<float>(count) : NAN) : 1.f;
  Tensor y = Tensor::empty(keep, DType::f32, x.device());
  backend_for(x.device()).reduce.sum(x.contiguous_if_blocked(), y, scale);
  y = y.view(out);
  if (any_requires_grad({&x}))
    set_history(std::make_shared<SumBackward>(keep, x.shape(), scale), {&x}, {&y});
  return y;
}

std::vector<int> all_dims(const Tensor& x) {
  std::vector<int> d(x.dim());
  for (int i = 0; i < x.dim(); ++i) d[i] = i;
  return d;
}

class MaxBackward : public Node {
 public:
  MaxBackward(Shape in, int64_t index) : in_(std::move(in)), index_(index) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    Tensor dx = Tensor::zeros(in_, DType::f32, grads[0].device());
    Tensor slot = dx.flat_range(index_, index_ + 1);
    slot.copy_(grads[0].contiguous().view({1}));
    return {dx};
  }
  std::string name() const override { return "MaxBackward"; }

 private:
  Shape in_;
  int64_t index_;
};

class L2NormBackward : public Node {
 public:
  L2NormBackward(const Tensor& x, float norm) : x_(x.detach()), norm_(norm) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    // d sqrt(Σx²)/dx = x / ||x||; the gradient at x = 0 is taken as 0 (PyTorch's choice).
    const float s = norm_ > 0.f ? grads[0].item() / norm_ : 0.f;
    Tensor dx = Tensor::empty(x_.shape(), DType::f32, x_.device());
    backend_for(x_.device()).ew.unary(UnaryOp::mul_scalar, s, x_, dx);
    return {dx};
  }
  std::string name() const override { return "L2NormBackward"; }
  void release() override { x_ = Tensor(); }

 private:
  Tensor x_;
  float norm_;
};

}  // namespace

Tensor sum(const Tensor& x) {
  return reduce_sum(x, all_dims(x), false, false, "sum");
}
Tensor sum(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  return reduce_sum(x, dims, keepdim, false, "sum");
}
Tensor mean(const Tensor& x) {
  return reduce_sum(x, all_dims(x), false, true, "mean");
}
Tensor mean(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  return reduce_sum(x, dims, keepdim, true, "mean");
}

Tensor max(const Tensor& x) {
  check_float(x, "max");
  DPLAB_CHECK(x.numel() > 0, "max of an empty tensor {}", x.str());
  Tensor flat = x.contiguous().view({x.numel()});
  Tensor idx = Tensor::empty({1}, DType::i64, x.device());
  backend_for(x.device()).reduce.argmax(flat, 0, idx);
  const int64_t i = idx.to_vector_i64()[0];
  Tensor y = flat.flat_range(i, i + 1).to(DType::f32).clone().view({});
  if (any_requires_grad({&x})) set_history(std::make_shared<MaxBackward>(x.shape(), i), {&x}, {&y});
  return y;
}

Tensor l2_norm(const Tensor& x) {
  check_float(x, "l2_norm");
  const Tensor xs = x.contiguous_if_blocked();
  const float norm =
      static_cast<float>(std::sqrt(backend_for(x.device()).reduce.sum_of_squares(xs)));
  Tensor y = Tensor::full({}, norm, DType::f32, x.device());
  if (any_requires_grad({&x})) set_history(std::make_shared<L2NormBackward>(xs, norm), {&x}, {&y});
  return y;
}

Tensor argmax(const Tensor& x, int dim) {
  DPLAB_CHECK(x.defined() && x.dim() > 0, "argmax needs a tensor with at least one dim");
  const int d = dim < 0 ? dim + x.dim() : dim;
  DPLAB_CHECK(d >= 0 && d < x.dim(), "argmax: dim {} out of range for {}", dim, x.str());
  DPLAB_CHECK(x.shape()[d] > 0, "argmax over empty dim {} of {}", dim, x.str());
  Shape keep = x.shape(), out = x.shape();
  keep[d] = 1;
  out.erase(out.begin() + d);
  Tensor idx = Tensor::empty(keep, DType::i64, x.device());
  backend_for(x.device()).reduce.argmax(x.contiguous_if_blocked(), d, idx);
  return idx.view(out);
}

double sum_of_squares(const Tensor& x) {
  check_float(x, "sum_of_squares");
  return backend_for(x.device()).reduce.sum_of_squares(x.contiguous_if_blocked());
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  DPLAB_CHECK(shape.size() <= static_cast<size_t>(x.dim()), "sum_to: cannot reduce {} to {}",
              x.str(), shape_str(shape));
  const size_t lead = x.dim() - shape.size();
  Shape keep(x.dim(), 1);
  for (size_t d = 0; d < shape.size(); ++d) {
    DPLAB_CHECK(shape[d] == x.shape()[lead + d] || shape[d] == 1,
                "sum_to: {} does not broadcast to {}", shape_str(shape), x.str());
    keep[lead + d] = shape[d];
  }
  Tensor y = Tensor::empty(keep, DType::f32, x.device());
  backend_for(x.device()).reduce.sum(x.contiguous_if_blocked(), y, 1.f);
  return y.view(shape);
}

}  // namespace dplab
