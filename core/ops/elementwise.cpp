#include "dplab/core/ops/elementwise.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"

namespace dplab {
namespace {

class AddBackward : public Node {
 public:
  std::vector<Tensor> apply(std::vector<Tensor>& g) override { return {g[0], g[0]}; }
  std::string name() const override { return "AddBackward"; }
};

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  check_same_device(a, b, "add");
  DPLAB_CHECK(a.shape() == b.shape(), "add: shapes {} and {} differ", shape_str(a.shape()),
              shape_str(b.shape()));
  Tensor y = a.to(DType::f32).clone();
  backend_for(a.device()).ew.axpy(1.0f, b, y);
  if (any_requires_grad({&a, &b})) set_history(std::make_shared<AddBackward>(), {&a, &b}, {&y});
  return y;
}

void add_(Tensor& acc, const Tensor& g, float alpha) {
  check_same_device(acc, g, "add_");
  backend_for(acc.device()).ew.axpy(alpha, g, acc);
}

}  // namespace dplab
