// The rank's virtual clock as the run's TimeSource (core/time_source.h): what the driver hands
// to the algorithms (TrainContext::time) and the tracer when a virtual cluster is given.
#pragma once
#include <memory>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/core/time_source.h"

namespace dplab::cluster {

class VirtualTimeSource final : public TimeSource {
 public:
  explicit VirtualTimeSource(std::shared_ptr<VirtualTime> vt) : vt_(std::move(vt)) {}
  double now() override { return vt_->clock.now(); }
  bool is_virtual() const override { return true; }
  VirtualTime& virtual_time() { return *vt_; }

 private:
  std::shared_ptr<VirtualTime> vt_;
};

}  // namespace dplab::cluster
