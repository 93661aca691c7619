#include "dplab/tools/dplab/bench_virtual.h"

#include <fmt/format.h>
#include <mpi.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "dplab/comm/cluster/bus_bandwidth.h"
#include "dplab/comm/cluster/cost_p2p.h"
#include "dplab/comm/cluster/presets.h"
#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/error.h"

namespace dplab::cli {

int run_virtual_allreduce_bench(const VirtualBenchArgs& a) {
  const cluster::Platform p = cluster::resolve_platform(a.cluster);
  MpiEnv& env = MpiEnv::get();
  const int W = env.world_size();
  const cluster::Shape shape = cluster::shape_of(p, W, a.ranks_per_node);
  // Manual compute: the benchmark times communication alone, so the loop's own CPU time (and
  // the host's load) is not charged.
  CommConfig cfg;
  cfg.virtual_time =
      std::make_shared<cluster::VirtualTime>(p, shape, cluster::VirtualClock::Compute::manual);
  cfg.nic_sharing = a.nic_sharing;
  cluster::VirtualClock& clock = cfg.virtual_time->clock;
  auto world = mpi_world(cfg);
  const int rank = world->rank();
  // Exchange partners half a world apart: on other nodes whenever there are 2 or more nodes
  // of which an even number; an odd world leaves its last rank out.
  const int half = W / 2;
  const int partner = W >= 2 && rank < 2 * half ? (rank + half) % (2 * half) : -1;
  const bool partner_same_node = partner >= 0 && shape.node_of(partner) == shape.node_of(rank);
  int off_node_sharing = 1;
  if (world->shares_node_interfaces()) {
    std::vector<int> active;  // local ranks of this node exchanging off-node
    for (int l = 0; l < shape.ranks_per_node; ++l) {
      const int r = shape.node_of(rank) * shape.ranks_per_node + l;
      const int q = W >= 2 && r < 2 * half ? (r + half) % (2 * half) : -1;
      if (q >= 0 && shape.node_of(q) != shape.node_of(r)) active.push_back(l);
    }
    off_node_sharing = cluster::nic_sharing(p, active, shape.local_rank(rank));
  }

  nlohmann::json rows = nlohmann::json::array();
  if (rank == 0 && !a.json) {
    std::cout << fmt::format(
        "dplab bench allreduce on cluster {}: {} ranks = {} node{} x {}, virtual time (the "
        "model), f32 sum\n",
        p.name, W, shape.nodes, shape.nodes == 1 ? "" : "s", shape.ranks_per_node);
    std::cout << fmt::format("{:>8} {:>6} {:>14} {:>14} {:>13} {:>11} {:>14} {:>14}\n", "size",
                             "iters", "allreduce us", "formula us", "algorithm", "busbw GB/s",
                             "exchange us", "formula us");
  }
  for (int64_t bytes : a.sizes) {
    const int64_t elems = bytes / 4;
    Tensor t = Tensor::ones({elems});
    double t0 = clock.now();
    for (int64_t i = 0; i < a.iters; ++i) world->allreduce(t);
    const double allreduce_s = (clock.now() - t0) / double(a.iters);
    const cluster::Group g = cluster::world_group(shape);
    const double nbytes = double(elems * 4);
    const double formula_s = cluster::collective_time(p, cluster::Op::allreduce, g, nbytes);
    const cluster::Algorithm algo =
        cluster::resolve_algorithm(p, cluster::Op::allreduce, g, nbytes, p.algorithm);
    // The exchange: both partners send n bytes to each other at once.
    Tensor out = Tensor::ones({elems}), in = Tensor::zeros({elems});
    t0 = clock.now();
    for (int64_t i = 0; i < a.iters && partner >= 0; ++i) {
      Request s = world->isend(out, partner, 11), r = world->irecv(in, partner, 11);
      s.wait();
      r.wait();
    }
    double exchange_s = partner >= 0 ? (clock.now() - t0) / double(a.iters) : 0.0, slowest = 0;
    DPLAB_MPI(MPI_Allreduce, &exchange_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    exchange_s = slowest;
    // The ranks of a node on this rank's interface whose partners are off-node send at once and
    // share it (comm/node_port.h; each rank's own interface when the ranks span hosts).
    const double exchange_formula_s =
        W >= 2 ? cluster::p2p_time(p, nbytes, partner_same_node, off_node_sharing) : 0;
    const double busbw =
        allreduce_s > 0 ? cluster::bus_bandwidth(cluster::Op::allreduce, W, nbytes, allreduce_s)
                        : 0.0;
    rows.push_back({{"bytes", elems * 4},
                    {"iters", a.iters},
                    {"allreduce_virtual_us", allreduce_s * 1e6},
                    {"allreduce_formula_us", formula_s * 1e6},
                    {"algorithm", cluster::algorithm_name(algo)},
                    {"busbw_gb_per_s", busbw / 1e9},
                    {"exchange_virtual_us", exchange_s * 1e6},
                    {"exchange_formula_us", exchange_formula_s * 1e6},
                    {"exchange_same_node", partner_same_node}});
    if (rank == 0 && !a.json)
      std::cout << fmt::format(
                       "{:>8} {:>6} {:>14.2f} {:>14.2f} {:>13} {:>11.2f} {:>14.2f} {:>14.2f}\n",
                       elems * 4, a.iters, allreduce_s * 1e6, formula_s * 1e6,
                       cluster::algorithm_name(algo), busbw / 1e9, exchange_s * 1e6,
                       exchange_formula_s * 1e6)
                << std::flush;
  }
  if (rank == 0 && a.json)
    std::cout << nlohmann::json{{"cluster", p.name},
                                {"ranks", W},
                                {"nodes", shape.nodes},
                                {"ranks_per_node", shape.ranks_per_node},
                                {"rows", rows}}
                     .dump()
              << "\n";
  if (rank == 0 && !a.json && shape.ranks_per_node > p.nics && shape.nodes > 1 &&
      !world->shares_node_interfaces())
    std::cout << "note: each rank has its own network interface in the exchange (without "
                 "--nic-sharing, or ranks on several hosts; docs/virtual_cluster.md)\n";
  return 0;
}

}  // namespace dplab::cli
