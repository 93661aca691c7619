// A communicator of its own kind that only passes each call on to another (tests: the virtual
// cluster as a layer around any communicator, virtual_world.h; a communicator that records what
// GradSync posts, grad_sync_wire_overlap_test.cpp). Not an MPI backend.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dplab/comm/communicator.h"

namespace dplab::test {

// Passes every call on to `inner`; splits are forwarded too. What a researcher's own
// communicator, or another layer, looks like to the code around it.
class Forwarding : public Communicator {
 public:
  explicit Forwarding(std::shared_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return "forwarding(" + inner_->name() + ")"; }
  const WaitOptions& wait_options() const override { return inner_->wait_options(); }
  Request iallreduce(const Tensor& t, ReduceOp op, std::optional<DType> wire) override {
    return inner_->iallreduce(t, op, wire);
  }
  Request ireduce(const Tensor& t, int root, ReduceOp op, std::optional<DType> wire) override {
    return inner_->ireduce(t, root, op, wire);
  }
  Request ibroadcast(const Tensor& t, int root, std::optional<DType> wire) override {
    return inner_->ibroadcast(t, root, wire);
  }
  Request iallgather(const Tensor& s, const Tensor& r, std::optional<DType> wire) override {
    return inner_->iallgather(s, r, wire);
  }
  Request ireduce_scatter(const Tensor& s, const Tensor& r, ReduceOp op,
                          std::optional<DType> wire) override {
    return inner_->ireduce_scatter(s, r, op, wire);
  }
  Request ibarrier() override { return inner_->ibarrier(); }
  Request isend(const Tensor& t, int dst, int tag) override { return inner_->isend(t, dst, tag); }
  Request irecv(const Tensor& t, int src, int tag) override { return inner_->irecv(t, src, tag); }
  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    auto c = inner_->split(color, key, name);
    return c ? std::make_shared<Forwarding>(std::move(c)) : nullptr;
  }
  int node_of(int r) const override { return inner_->node_of(r); }
  std::shared_ptr<const std::vector<int>> world_members() const override {
    return inner_->world_members();
  }

 private:
  std::shared_ptr<Communicator> inner_;
};

}  // namespace dplab::test
