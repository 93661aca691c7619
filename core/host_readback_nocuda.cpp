// HostReadback without the CUDA backend: every tensor is on the CPU, copied at start().
#include "dplab/core/host_readback.h"

#include "dplab/core/error.h"

namespace dplab {

struct HostReadback::Device {};

HostReadback::HostReadback() = default;
HostReadback::~HostReadback() = default;

void HostReadback::start(const Tensor& t) {
  DPLAB_CHECK(t.dtype() == DType::f32 && t.is_contiguous(),
              "HostReadback: {} must be a contiguous f32 tensor", t.str());
  host_ = t.to_vector();
  n_ = host_.size();
  pending_ = true;
}

std::vector<float> HostReadback::take() {
  DPLAB_CHECK(pending_, "HostReadback::take: nothing was started");
  pending_ = false;
  return host_;
}

}  // namespace dplab
