#include "dplab/comm/comm_options.h"

namespace dplab {

const OptionTable& communicator_option_table() {
  static const OptionTable t({
      // Its value names a registry entry (comm/registry.h; the training driver's
      // train/config/registry.h): checked there.
      {"algo", "local", "distributed algorithm (comm/registry.h)", text()},
      {"comm", "auto",
       "communicator backend of distributed algorithms: mpi, nccl (CUDA tensors, one GPU per "
       "rank; with device = cuda each rank takes its own GPU) or auto (nccl when device is "
       "cuda, else mpi); comm/world.h",
       choice({"mpi", "nccl", "auto"})},
      {"device", "cpu",
       "where the model trains: cpu, cuda or cuda:N (parameters, optimizer state, batches and "
       "evaluation on that device)",
       text()},
      {"ranks_per_node", "0",
       "virtual nodes of N consecutive ranks (0: nodes are the hosts, or the cluster "
       "platform's); the node level of every hierarchical algorithm and of the virtual cluster",
       integer(0)},
      {"link.intra", "",
       "shorthand for a virtual cluster (instead of cluster): the link between the ranks of a "
       "node, \"LATENCY,BANDWIDTH\" per direction (e.g. 2us,20GB/s); unset: free; empty or "
       "off: none (docs/virtual_cluster.md, \"The link shorthand\")",
       text()},
      {"link.inter", "",
       "shorthand for a virtual cluster (instead of cluster): one network interface per node, "
       "\"LATENCY,BANDWIDTH\" per direction (e.g. 20us,1.25GB/s), shared by the node's ranks; "
       "nodes from ranks_per_node (unset: one node); unset: free; empty or off: none",
       text()},
      {"cluster", "",
       "virtual cluster (issue #20, docs/virtual_cluster.md): a preset (dplab cluster list) or "
       "a TOML cluster file; empty or off: none. Training then runs in virtual time: every "
       "time figure (metrics, trace, exposed wait, the algorithms' timers) is the rank's "
       "virtual clock, with wall_s beside it; MPI backend on the CPU, threads = 1",
       text()},
      {"cluster.compute_scale", "0",
       "virtual cluster: virtual compute time = thread CPU time x this (0: the platform's "
       "compute_scale); x the rank's slowdown factor",
       number(0)},
      {"cluster.compute", "measured",
       "virtual cluster: compute time from the compute thread's CPU time during each step "
       "(measured) or replayed from a profile (profile:FILE, as dplab bench train --profile-out "
       "writes it for the same model and per-rank batch)",
       text()},
      {"cluster.nic_sharing", "false",
       "virtual cluster: the ranks of a node share its network interface in point-to-point "
       "messages (comm/node_port.h; deterministic, but a rank that lags in virtual time and "
       "waits in real time outside the cluster's operations stalls its node's messages for a "
       "real-time deadline; docs/virtual_cluster.md, \"Point to point\"); false: each rank "
       "has its own interface",
       boolean()},
      {"cluster.events", "",
       "virtual cluster: a TOML file of [[event]] tables (stragglers: kind = slow; degraded "
       "interfaces: kind = link), added to the cluster file's own; docs/virtual_cluster.md, "
       "\"Events\"",
       text()},
      {"slowdown", "",
       "RANK=FACTOR[,RANK=FACTOR...]: that rank sleeps so its iterations last FACTOR times "
       "their compute time (comm/slowdown.h); under a virtual cluster its virtual compute is "
       "multiplied by FACTOR instead (no sleeping)",
       text()},
      {"comm.wait", "auto",
       "waiting in MPI: spin, backoff (test, then sleep comm.backoff_sleep_us) or auto (backoff "
       "when ranks outnumber cores); under spin, GradSync's communication thread spins only while "
       "the compute thread waits for it, and sleeps between tests (growing from "
       "comm.backoff_sleep_us to 16x it) while that thread computes",
       choice({"spin", "backoff", "auto"}), false},
      {"comm.timeout_s", "60",
       "a communication wait longer than this fails, naming the ranks that did not arrive "
       "(0: never); with comm = nccl also a host wait for the GPU, and the NCCL communicators "
       "are aborted",
       number(0), false},
      {"comm.backoff_sleep_us", "20",
       "sleep between tests of a pending request (comm.wait = backoff; the first sleep of a "
       "communication thread beside a computing one)",
       number(0), false},
  });
  return t;
}

}  // namespace dplab
