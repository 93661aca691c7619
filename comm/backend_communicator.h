// BackendCommunicator: what the MPI and NCCL backends of Communicator (comm/communicator.h) have
// in common, so that both check, name and report their operations alike.
//
// A backend derives from it and implements only its posting (post_allreduce, ..., post_p2p) and
// its requests' progress. Everything else is here, once:
//  - identity: rank, size, name, wait options, the node of each rank, and the members as world
//    ranks (a timeout asks exactly them which did not arrive, comm/stall_report.h);
//  - the argument checks, the same for every backend, before anything is posted or numbered: the
//    tensor is defined, on the backend's device and contiguous; a reduction's wire dtype can be
//    reduced (no u8; no average of an integer dtype); allgather's and reduce_scatter's send and
//    recv have one dtype and sizes in the ratio size() : 1; roots and peers are ranks of the
//    communicator; tags lie in [0, 32767]. Every failure throws an Error whose message names the
//    operation and the communicator ("allgather on communicator 'world': ...");
//  - request naming: the "what" of timeout and stall messages. Collectives and barriers carry
//    their number on the communicator ("allreduce(average) #6 of ... on communicator 'world' (4
//    ranks)"), the same on every member, so a stall report shows a rank one collective behind;
//  - request bookkeeping (BackendRequest): the description, wait options, members and the
//    buffers kept alive until completion.
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dplab/comm/communicator.h"
#include "dplab/core/device.h"

namespace dplab {

// The request of a backend operation: its description and the buffers the backend reads or
// writes until completion. The backend adds its handles and progress().
struct BackendRequest : Request::Impl {
  std::string desc;
  std::vector<Tensor> keep_alive;
  std::string describe() const override { return desc; }
};

class BackendCommunicator : public Communicator {
 public:
  // Who the communicator is; a backend fills it before constructing the base.
  struct Identity {
    int rank = 0, size = 1;
    std::string name;
    WaitOptions wait;
    std::vector<int> node_of;  // per rank of this communicator
    // The members as world ranks (null: unknown; a timeout then asks every rank).
    std::shared_ptr<const std::vector<int>> world_members;
  };
  // How a backend names itself and which tensors it takes.
  struct Traits {
    std::string label;      // "communicator" (MPI), "NCCL communicator"
    std::string backend;    // "MPI", "NCCL"
    Device device;          // where its tensors live
    std::string device_of;  // the device in words ("CPU", "this rank's device cuda:0")
    std::string suffix;     // after the rank count in collective names (", cuda:0"), or ""
  };

  int rank() const final { return id_.rank; }
  int size() const final { return id_.size; }
  std::string name() const final { return id_.name; }
  const WaitOptions& wait_options() const final { return id_.wait; }
  int node_of(int r) const final;
  std::shared_ptr<const std::vector<int>> world_members() const final { return id_.world_members; }

  // Communicator's operations: the checks and the request's name here, the posting in post_*.
  Request iallreduce(const Tensor& t, ReduceOp op, std::optional<DType> wire) final;
  Request ireduce(const Tensor& t, int root, ReduceOp op, std::optional<DType> wire) final;
  Request ibroadcast(const Tensor& t, int root, std::optional<DType> wire) final;
  Request iallgather(const Tensor& send, const Tensor& recv, std::optional<DType> wire) final;
  Request ireduce_scatter(const Tensor& send, const Tensor& recv, ReduceOp op,
                          std::optional<DType> wire) final;
  Request ibarrier() final;
  Request isend(const Tensor& t, int dst, int tag) final;
  Request irecv(const Tensor& t, int src, int tag) final;

  // "allgather on communicator 'world'": how every error of an operation begins.
  std::string where(const std::string& op) const;

 protected:
  BackendCommunicator(Traits traits, Identity id);

  // A backend's posting, called after the checks with the request's description (`desc`).
  // `wire` is resolved (the tensor's dtype when the caller gave none).
  virtual Request post_allreduce(const Tensor& t, ReduceOp op, DType wire, std::string desc) = 0;
  virtual Request post_reduce(const Tensor& t, int root, ReduceOp op, DType wire,
                              std::string desc) = 0;
  virtual Request post_broadcast(const Tensor& t, int root, DType wire, std::string desc) = 0;
  virtual Request post_allgather(const Tensor& send, const Tensor& recv, DType wire,
                                 std::string desc) = 0;
  virtual Request post_reduce_scatter(const Tensor& send, const Tensor& recv, ReduceOp op,
                                      DType wire, std::string desc) = 0;
  virtual Request post_barrier(std::string desc) = 0;
  virtual Request post_p2p(const Tensor& t, int peer, int tag, bool is_send, std::string desc) = 0;

  // A request of this communicator: description, wait options and members (world ranks: all of
  // this communicator's, or only `peer`'s for point-to-point).
  template <typename R>
  std::shared_ptr<R> make_request(std::string desc, int peer = -1) const {
    auto r = std::make_shared<R>();
    r->desc = std::move(desc);
    r->wait = id_.wait;
    r->world_members = members_for(peer);
    return r;
  }
  const Traits& traits() const { return traits_; }
  const std::vector<int>& node_map() const { return id_.node_of; }

 private:
  std::shared_ptr<const std::vector<int>> members_for(int peer) const;
  void check_tensor(const Tensor& t, const std::string& op) const;
  void check_rank(int r, const char* op, const char* role) const;
  void check_reduction(const std::string& op, ReduceOp rop, DType wire) const;
  // Names a collective and takes its number on this communicator.
  std::string collective_name(const std::string& what, const Tensor& t, std::optional<ReduceOp> op,
                              DType wire);

  Traits traits_;
  Identity id_;
  std::atomic<uint64_t> collectives_{0};  // collectives posted so far (see collective_name)
};

}  // namespace dplab
