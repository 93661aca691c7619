// The backends' common skeleton (comm/backend_communicator.h): identity, checks, naming.
#include "dplab/comm/backend_communicator.h"

#include <fmt/format.h>

#include "dplab/core/error.h"

namespace dplab {

BackendCommunicator::BackendCommunicator(Traits traits, Identity id)
    : traits_(std::move(traits)), id_(std::move(id)) {
  DPLAB_CHECK(static_cast<int>(id_.node_of.size()) == id_.size, "{} '{}': node map size {} != {}",
              traits_.label, id_.name, id_.node_of.size(), id_.size);
  DPLAB_CHECK(!id_.world_members || static_cast<int>(id_.world_members->size()) == id_.size,
              "{} '{}': {} world ranks for {} members", traits_.label, id_.name,
              id_.world_members->size(), id_.size);
}

int BackendCommunicator::node_of(int r) const {
  DPLAB_CHECK(r >= 0 && r < id_.size, "communicator {}: rank {} out of range [0, {})", id_.name, r,
              id_.size);
  return id_.node_of[r];
}

std::string BackendCommunicator::where(const std::string& op) const {
  return fmt::format("{} on {} '{}'", op, traits_.label, id_.name);
}

std::shared_ptr<const std::vector<int>> BackendCommunicator::members_for(int peer) const {
  if (peer < 0 || !id_.world_members) return id_.world_members;
  return std::make_shared<const std::vector<int>>(1, (*id_.world_members)[peer]);
}

// ---- checks ----------------------------------------------------------------------------------

void BackendCommunicator::check_tensor(const Tensor& t, const std::string& op) const {
  DPLAB_CHECK(t.defined(), "{}: undefined tensor", where(op));
  DPLAB_CHECK(t.device() == traits_.device, "{}: the {} backend takes tensors on {}, got {} on {}",
              where(op), traits_.backend, traits_.device_of, t.str(), t.device().str());
  DPLAB_CHECK(t.is_contiguous(), "{}: tensor {} must be contiguous", where(op), t.str());
}

void BackendCommunicator::check_rank(int r, const char* op, const char* role) const {
  DPLAB_CHECK(r >= 0 && r < id_.size, "{} {} {} out of range for {} '{}' of {} ranks", op, role, r,
              traits_.label, id_.name, id_.size);
}

void BackendCommunicator::check_reduction(const std::string& op, ReduceOp rop, DType wire) const {
  DPLAB_CHECK(wire != DType::u8, "{}: no reduction for wire dtype {}", where(op), dtype_name(wire));
  DPLAB_CHECK(rop != ReduceOp::average || is_floating(wire),
              "{}: average reduction of integer dtype {}", where(op), dtype_name(wire));
}

// ---- naming ----------------------------------------------------------------------------------

std::string BackendCommunicator::collective_name(const std::string& what, const Tensor& t,
                                                 std::optional<ReduceOp> op, DType wire) {
  // #N: the collective's number on this communicator, the same on every member (collectives are
  // posted in one order), so a timeout report shows a rank that is one collective behind.
  return fmt::format("{}{} #{} of {} as {} on {} '{}' ({} ranks{})", what,
                     op ? fmt::format("({})", reduce_op_name(*op)) : std::string(), ++collectives_,
                     t.str(), dtype_name(wire), traits_.label, id_.name, id_.size, traits_.suffix);
}

// ---- operations ------------------------------------------------------------------------------

Request BackendCommunicator::iallreduce(const Tensor& t, ReduceOp op, std::optional<DType> wire) {
  check_tensor(t, "allreduce");
  const DType w = wire.value_or(t.dtype());
  check_reduction("allreduce", op, w);
  return post_allreduce(t, op, w, collective_name("allreduce", t, op, w));
}

Request BackendCommunicator::ireduce(const Tensor& t, int root, ReduceOp op,
                                     std::optional<DType> wire) {
  check_tensor(t, "reduce");
  check_rank(root, "reduce", "root");
  const DType w = wire.value_or(t.dtype());
  check_reduction("reduce", op, w);
  return post_reduce(t, root, op, w,
                     collective_name(fmt::format("reduce(root {})", root), t, op, w));
}

Request BackendCommunicator::ibroadcast(const Tensor& t, int root, std::optional<DType> wire) {
  check_tensor(t, "broadcast");
  check_rank(root, "broadcast", "root");
  const DType w = wire.value_or(t.dtype());
  return post_broadcast(t, root, w,
                        collective_name(fmt::format("broadcast(root {})", root), t, {}, w));
}

Request BackendCommunicator::iallgather(const Tensor& send, const Tensor& recv,
                                        std::optional<DType> wire) {
  check_tensor(send, "allgather send");
  check_tensor(recv, "allgather recv");
  DPLAB_CHECK(recv.numel() == send.numel() * id_.size,
              "{}: recv has {} elements, expected size {} x send {} = {}", where("allgather"),
              recv.numel(), id_.size, send.numel(), send.numel() * id_.size);
  DPLAB_CHECK(recv.dtype() == send.dtype(), "{}: send {} and recv {} dtypes differ",
              where("allgather"), send.str(), recv.str());
  const DType w = wire.value_or(send.dtype());
  return post_allgather(send, recv, w, collective_name("allgather", send, {}, w));
}

Request BackendCommunicator::ireduce_scatter(const Tensor& send, const Tensor& recv, ReduceOp op,
                                             std::optional<DType> wire) {
  check_tensor(send, "reduce_scatter send");
  check_tensor(recv, "reduce_scatter recv");
  DPLAB_CHECK(send.numel() == recv.numel() * id_.size,
              "{}: send has {} elements, expected size {} x recv {} = {}", where("reduce_scatter"),
              send.numel(), id_.size, recv.numel(), recv.numel() * id_.size);
  DPLAB_CHECK(recv.dtype() == send.dtype(), "{}: send {} and recv {} dtypes differ",
              where("reduce_scatter"), send.str(), recv.str());
  const DType w = wire.value_or(send.dtype());
  check_reduction("reduce_scatter", op, w);
  return post_reduce_scatter(send, recv, op, w, collective_name("reduce_scatter", send, op, w));
}

Request BackendCommunicator::ibarrier() {
  return post_barrier(fmt::format("barrier #{} on {} '{}' ({} ranks{})", ++collectives_,
                                  traits_.label, id_.name, id_.size, traits_.suffix));
}

Request BackendCommunicator::isend(const Tensor& t, int dst, int tag) {
  check_tensor(t, "send");
  check_rank(dst, "send", "destination");
  DPLAB_CHECK(tag >= 0 && tag <= 32767, "{}: tag {} outside [0, 32767]", where("send"), tag);
  return post_p2p(t, dst, tag, true,
                  fmt::format("send of {} to rank {} (tag {}) on {} '{}'", t.str(), dst, tag,
                              traits_.label, id_.name));
}

Request BackendCommunicator::irecv(const Tensor& t, int src, int tag) {
  check_tensor(t, "recv");
  check_rank(src, "recv", "source");
  DPLAB_CHECK(tag >= 0 && tag <= 32767, "{}: tag {} outside [0, 32767]", where("recv"), tag);
  return post_p2p(t, src, tag, false,
                  fmt::format("recv of {} from rank {} (tag {}) on {} '{}'", t.str(), src, tag,
                              traits_.label, id_.name));
}

}  // namespace dplab
