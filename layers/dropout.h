// nn.Dropout (inverted dropout; identity in eval). Masks come from Philox keyed by (seed, call
// number): the k-th training forward of a Dropout with seed s draws stream k, so a run is
// repeatable and independent of thread count. Give each rank its own seed for independent masks.
#pragma once
#include "dplab/layers/module.h"

namespace dplab {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, uint64_t seed = 0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Dropout"; }
  std::string extra_repr() const override;
  void set_seed(uint64_t seed, uint64_t next_call = 0) {
    seed_ = seed;
    calls_ = next_call;
  }
  uint64_t calls() const { return calls_; }  // training forwards so far (resume state)

 private:
  double p_;
  uint64_t seed_;
  uint64_t calls_ = 0;
};

}  // namespace dplab
