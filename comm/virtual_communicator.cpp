// The virtual cluster as a layer around a communicator (comm/virtual_communicator.h).
#include "dplab/comm/virtual_communicator.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "dplab/comm/cluster/cost_collectives.h"
#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/node_port.h"
#include "dplab/comm/stall_report.h"
#include "dplab/comm/wire_bytes.h"
#include "dplab/core/error.h"

namespace dplab {

namespace {

// A virtual time as header bits (see the header comment) and back.
int64_t bits_of(double t) {
  DPLAB_CHECK(t >= 0.0, "virtual time {} is negative", t);
  int64_t b = 0;
  std::memcpy(&b, &t, sizeof b);
  return b;
}
double time_of(int64_t b) {
  double t = 0;
  std::memcpy(&t, &b, sizeof t);
  return t;
}

// An operation of the layer: the inner communicator's request for the payload, and the header's
// on the header communicator. Complete when both are; its virtual end comes from the model.
struct VirtualRequest : Request::Impl {
  Request payload, header_req;
  Tensor header;  // i64: a collective's post time; a message's {start or interface number, post}
  // The end, once known (a send through its own port knows it when posted).
  std::optional<double> vend;
  bool same_node = false;
  int node = 0, peer_node = 0;  // a message's ends (link events)
  double bytes = 0;
  bool collective = false;
  cluster::Op op = cluster::Op::barrier;
  cluster::Group group;
  std::shared_ptr<const std::vector<int>> nodes;  // a collective's nodes (link events)
  // The previous collective of the same communicator: this one starts after it ends. Dropped
  // once the end is known.
  std::shared_ptr<VirtualRequest> prev;
  std::mutex vend_mu;  // guards vend and prev while the end is computed
  // An off-node message through the node's shared interface (comm/node_port.h): the sender's
  // world rank and sequence number there (a receive learns the number from the header).
  std::shared_ptr<NodePort> nic;
  bool via_nic = false, nic_send = false;
  int nic_sender = -1;
  uint64_t nic_seq = 0;
  // While the clock's owner waits for this request: its clock when the wait began; it raises
  // its floor with lower bounds of the end as they become known.
  bool owner_waiting = false;
  double wait_began = 0;

  bool progress() override { return payload.test() && header_req.test(); }
  std::string describe() const override { return payload.describe(); }
  void order_before_compute() override { payload.order_before_compute(); }
  bool device_ordered() const override { return payload.device_ordered(); }
  void on_wait_failed(const std::string& why) override { payload.wait_failed(why); }

  void owner_wait_begins(double now) override {
    std::lock_guard<std::mutex> vlock(vend_mu);
    owner_waiting = true;
    wait_began = now;
    if (nic) nic->raise_floor(vend ? std::max(now, *vend) : now);
  }
  void owner_wait_ends() override {
    std::lock_guard<std::mutex> vlock(vend_mu);
    owner_waiting = false;
  }
  // The end of an off-node message through the node's interface, final (node_port.h); a
  // waiting owner raises its floor meanwhile (its clock will be at least `lag` past the
  // interface's end of the message when the wait returns).
  double nic_end(int sender, uint64_t seq, double lag) {
    return nic->end(sender, seq, describe(), [this, lag](double lower) {
      if (owner_waiting) nic->raise_floor(std::max(wait_began, lower + lag));
    });
  }

  double virtual_end() override {
    std::lock_guard<std::mutex> vlock(vend_mu);
    if (vend) return *vend;
    if (nic_send) {
      // The last byte leaves the sender's share of the interface (eager: the buffer is free).
      vend = nic_end(nic_sender, nic_seq, 0.0);
      return *vend;
    }
    // A receive: wait for the sender's header (the sender posts it with the payload), never for
    // the payload itself; a collective: for the max-allreduce of the members' post times.
    polite_wait([this] { return header_req.test(); }, wait,
                [this] { return describe() + " (virtual-time header)"; }, world_members);
    const int64_t* h = header.data<int64_t>();
    if (collective) {
      // Starts at the latest post time among the members, after the communicator's previous
      // operation; lasts what the platform's model says (cost_collectives.h).
      double start = time_of(h[0]);
      if (prev) start = std::max(start, prev->virtual_end());
      prev.reset();
      vend = start + cluster::collective_time(vt->platform_at(start, *nodes), op, group, bytes);
      return *vend;
    }
    // The link events as the sender met them: at its post time (h[1]).
    const cluster::LinkFactor f = vt->link_factor(same_node, time_of(h[1]), node, peer_node);
    if (via_nic) {
      // The sender's share of its node's interface decides when the last byte leaves; it then
      // enters through this rank's ingress (its own queue) and arrives one latency later.
      const double alpha = vt->platform.nic.latency_s * f.latency;
      const double left = nic_end(nic_sender, static_cast<uint64_t>(h[0]), alpha);
      const double ser = bytes / (vt->rate(false) * f.bandwidth);
      std::lock_guard<std::mutex> lock(vt->port_mu);
      vend = std::max(vt->net_port.arrive(left - ser, alpha, ser), virtual_post);
      return *vend;
    }
    std::lock_guard<std::mutex> lock(vt->port_mu);
    const double ser = bytes / (vt->rate(same_node) * f.bandwidth);
    const double arrival =
        vt->port(same_node).arrive(time_of(h[0]), vt->link(same_node).latency_s * f.latency, ser);
    // Eager: data that arrives before the receive is posted completes at the post.
    vend = std::max(arrival, virtual_post);
    return *vend;
  }
};

class VirtualCommunicator final : public Communicator {
 public:
  VirtualCommunicator(std::shared_ptr<Communicator> inner, std::shared_ptr<cluster::VirtualTime> vt,
                      std::shared_ptr<NodePort> nic, bool owns_nic)
      : inner_(std::move(inner)), vt_(std::move(vt)), nic_(std::move(nic)), owns_nic_(owns_nic) {
    DPLAB_CHECK(inner_ && vt_, "with_virtual_time: needs a communicator and a virtual time");
    // Same members in the same order: MPI's non-overtaking order per (source, tag,
    // communicator) pairs each header with its payload.
    headers_ = inner_->split(0, inner_->rank(), inner_->name() + " (virtual-time headers)");
    group_ = virtual_group();
    std::vector<int> nodes;
    for (int r = 0; r < size(); ++r) nodes.push_back(node_of(r));
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    nodes_ = std::make_shared<const std::vector<int>>(std::move(nodes));
  }
  ~VirtualCommunicator() override {
    // The world communicator's end is the same program point on every rank: the node's
    // interface (a collective free of shared memory) goes with it, not with its last user.
    if (owns_nic_ && nic_) nic_->release();
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  const WaitOptions& wait_options() const override { return inner_->wait_options(); }
  int node_of(int r) const override { return inner_->node_of(r); }
  std::shared_ptr<const std::vector<int>> world_members() const override {
    return inner_->world_members();
  }
  std::shared_ptr<cluster::VirtualTime> virtual_time() const override { return vt_; }
  bool shares_node_interfaces() const override { return nic_ != nullptr; }
  double wire_bytes(cluster::Op op, double bytes) const override {
    if (group_.size() != size()) return inner_->wire_bytes(op, bytes);  // ragged: the ring
    const auto algo =
        cluster::resolve_algorithm(vt_->platform, op, group_, bytes, vt_->platform.algorithm);
    return dplab::wire_bytes(op, group_, algo, bytes);
  }

  Request iallreduce(const Tensor& t, ReduceOp op, std::optional<DType> wire) override {
    return collective(cluster::Op::allreduce, payload_bytes(t.numel(), t, wire),
                      [&] { return inner_->iallreduce(t, op, wire); });
  }
  Request ireduce(const Tensor& t, int root, ReduceOp op, std::optional<DType> wire) override {
    return collective(cluster::Op::reduce, payload_bytes(t.numel(), t, wire),
                      [&] { return inner_->ireduce(t, root, op, wire); });
  }
  Request ibroadcast(const Tensor& t, int root, std::optional<DType> wire) override {
    return collective(cluster::Op::broadcast, payload_bytes(t.numel(), t, wire),
                      [&] { return inner_->ibroadcast(t, root, wire); });
  }
  Request iallgather(const Tensor& send, const Tensor& recv, std::optional<DType> wire) override {
    return collective(cluster::Op::allgather, payload_bytes(recv.numel(), send, wire),
                      [&] { return inner_->iallgather(send, recv, wire); });
  }
  Request ireduce_scatter(const Tensor& send, const Tensor& recv, ReduceOp op,
                          std::optional<DType> wire) override {
    return collective(cluster::Op::reduce_scatter, payload_bytes(send.numel(), send, wire),
                      [&] { return inner_->ireduce_scatter(send, recv, op, wire); });
  }
  Request ibarrier() override {
    return collective(cluster::Op::barrier, 0.0, [&] { return inner_->ibarrier(); });
  }
  Request isend(const Tensor& t, int dst, int tag) override { return message(t, dst, tag, true); }
  Request irecv(const Tensor& t, int src, int tag) override { return message(t, src, tag, false); }

  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    auto c = inner_->split(color, key, name);
    if (!c) return nullptr;
    return std::make_shared<VirtualCommunicator>(std::move(c), vt_, nic_, false);
  }

 private:
  // Bytes as the cost model counts them: elements in the wire dtype.
  static double payload_bytes(int64_t n, const Tensor& t, std::optional<DType> wire) {
    return double(n) * dtype_size(wire.value_or(t.dtype()));
  }

  // The communicator as the cost model sees it: the nodes it spans, its members per node (the
  // most on any node), and how many communicators of its shape run at once on those nodes: a
  // group with fewer members per node than the node has ranks (DASO's cross-node groups, one
  // per local rank) is taken to run beside the others of its kind, sharing the interfaces.
  cluster::Group virtual_group() const {
    std::map<int, int> per_node;
    for (int r = 0; r < size(); ++r) ++per_node[node_of(r)];
    cluster::Group g;
    g.nodes = static_cast<int>(per_node.size());
    for (const auto& [node, count] : per_node) g.ranks_per_node = std::max(g.ranks_per_node, count);
    g.concurrent = g.nodes > 1 ? std::max(1, vt_->shape.ranks_per_node / g.ranks_per_node) : 1;
    return g;
  }

  std::shared_ptr<VirtualRequest> make_request(Request payload, int peer) const {
    auto r = std::make_shared<VirtualRequest>();
    r->wait = wait_options();
    auto members = world_members();
    if (members && peer >= 0)
      members = std::make_shared<const std::vector<int>>(1, (*members)[peer]);
    r->world_members = std::move(members);
    r->payload = std::move(payload);
    r->vt = vt_;
    r->virtual_post = vt_->post_time();
    if (nic_ && vt_->clock.is_owner()) nic_->raise_floor(r->virtual_post);
    return r;
  }
  int world_rank_of(int r) const {
    const auto members = world_members();
    DPLAB_CHECK(members, "{}: a node's shared interface needs the members' world ranks", name());
    return (*members)[r];
  }

  // A collective: the payload first (the inner communicator's checks run before anything is
  // posted), then the max-allreduce of the post times, both under one lock so that the header
  // communicator sees the payloads' order (a communicator used by two threads, as GradSync's and
  // the compute thread may, still orders both alike on every rank). Non-blocking: no new
  // blocking point, so no new deadlock (docs/virtual_cluster.md).
  template <typename Post>
  Request collective(cluster::Op op, double bytes, Post&& post_payload) {
    std::lock_guard<std::mutex> lock(post_mu_);
    std::shared_ptr<VirtualRequest> r = make_request(post_payload(), -1);
    r->collective = true;
    r->op = op;
    r->bytes = bytes;
    r->group = group_;
    r->nodes = nodes_;
    r->header = Tensor::empty({1}, DType::i64);
    r->header.data<int64_t>()[0] = bits_of(r->virtual_post);
    r->header_req = headers_->iallreduce(r->header, ReduceOp::max);
    // Operations of one communicator queue behind each other on its links.
    r->prev = std::exchange(last_collective_, r);
    vt_->clock.discard_cpu();  // posting is communication, not compute
    return Request(r);
  }

  // A point-to-point message in virtual time (docs/virtual_cluster.md, "Point to point"): the
  // sender takes its post time from the clock, starts transmitting when its port's egress is
  // free and sends that start in a header beside the payload; its request ends when the last
  // byte has left (eager). The receiver ends at max(its post, arrival through its port's
  // ingress + latency). Full duplex: egress and ingress queue separately.
  Request message(const Tensor& t, int peer, int tag, bool is_send) {
    Request payload = is_send ? inner_->isend(t, peer, tag) : inner_->irecv(t, peer, tag);
    auto r = make_request(std::move(payload), peer);
    r->node = node_of(rank());
    r->peer_node = node_of(peer);
    r->same_node = r->node == r->peer_node;
    const cluster::LinkFactor f =
        vt_->link_factor(r->same_node, r->virtual_post, r->node, r->peer_node);
    r->bytes = double(t.nbytes());
    r->header = Tensor::empty({2}, DType::i64);
    int64_t* h = r->header.data<int64_t>();
    // Off-node with a node-wide interface (comm/node_port.h): both ends decide alike.
    if (nic_ && !r->same_node) {
      r->nic = nic_;
      r->via_nic = true;
      r->nic_send = is_send;
      r->nic_sender = world_rank_of(is_send ? rank() : peer);
    }
    if (is_send && r->via_nic) {
      // The header carries the message's number on the interface; its end is known once no
      // other rank of the node can still share the interface with it (virtual_end).
      r->nic_seq = nic_->add(r->virtual_post, r->bytes / (vt_->rate(false) * f.bandwidth));
      h[0] = static_cast<int64_t>(r->nic_seq);
      h[1] = bits_of(r->virtual_post);
      r->header_req = headers_->isend(r->header, peer, tag);
    } else if (is_send) {
      const double ser = r->bytes / (vt_->rate(r->same_node) * f.bandwidth);
      double start = 0;
      {
        std::lock_guard<std::mutex> lock(vt_->port_mu);
        start = vt_->port(r->same_node).depart(r->virtual_post, ser);
      }
      r->vend = start + ser;
      h[0] = bits_of(start);
      h[1] = bits_of(r->virtual_post);
      r->header_req = headers_->isend(r->header, peer, tag);
    } else {
      r->header_req = headers_->irecv(r->header, peer, tag);
    }
    vt_->clock.discard_cpu();  // posting is communication, not compute
    return Request(r);
  }

  std::shared_ptr<Communicator> inner_;
  std::shared_ptr<cluster::VirtualTime> vt_;
  std::shared_ptr<NodePort> nic_;          // the node's shared interface (null: each rank its own)
  bool owns_nic_ = false;                  // the world communicator: releases nic_
  std::shared_ptr<Communicator> headers_;  // virtual-time headers and post-time allreduces
  std::mutex post_mu_;                     // a collective's header and payload posts
  std::shared_ptr<VirtualRequest> last_collective_;  // guarded by post_mu_
  cluster::Group group_;                             // this communicator on the platform
  std::shared_ptr<const std::vector<int>> nodes_;    // the nodes it spans
};

}  // namespace

std::shared_ptr<Communicator> with_virtual_time(std::shared_ptr<Communicator> inner,
                                                std::shared_ptr<cluster::VirtualTime> vt,
                                                std::shared_ptr<NodePort> nic) {
  return std::make_shared<VirtualCommunicator>(std::move(inner), std::move(vt), std::move(nic),
                                               true);
}

}  // namespace dplab
