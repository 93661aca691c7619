// dropout: inverted dropout with a Philox mask (kept for backward as u8).
#include "dplab/core/ops/random.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {
namespace {

class DropoutBackward : public Node {
 public:
  DropoutBackward(Tensor mask, float p) : mask_(std::move(mask)), p_(p) {}
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    const Tensor g = grads[0].to(DType::f32).contiguous();
    Tensor dx = Tensor::empty(g.shape(), DType::f32, g.device());
    backend_for(g.device()).random.dropout_backward(g, mask_, p_, dx);
    return {dx};
  }
  std::string name() const override { return "DropoutBackward"; }
  void release() override { mask_ = Tensor(); }

 private:
  Tensor mask_;
  float p_;
};

}  // namespace

Tensor dropout(const Tensor& x_in, float p, bool training, uint64_t seed, uint64_t stream) {
  DPLAB_CHECK(x_in.defined() && is_floating(x_in.dtype()), "dropout: input {} must be float",
              x_in.str());
  DPLAB_CHECK(p >= 0.f && p <= 1.f, "dropout: p = {} must be in [0, 1]", p);
  if (!training || p == 0.f) return x_in;
  if (p == 1.f) return mul_scalar(x_in, 0.f);  // everything dropped; gradient 0
  const Tensor x = x_in.to(DType::f32).contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  Tensor mask = Tensor::empty(x.shape(), DType::u8, x.device());
  backend_for(x.device()).random.dropout_forward(x, p, seed, stream, y, mask);
  if (any_requires_grad({&x_in}))
    set_history(std::make_shared<DropoutBackward>(mask, p), {&x_in}, {&y});
  return y;
}

}  // namespace dplab
