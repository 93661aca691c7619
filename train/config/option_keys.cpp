// The option keys the training driver's parts read beyond its own (train/config/config.cpp):
// the communicator, the learning-rate schedule and each distributed algorithm. The help texts
// summarise the headers that define them (comm/communicator.h, optim/schedule.h,
// comm/algorithms/*.h); a test (tests/tools/test_cli_options.cpp) fails when a key read in the
// sources is missing here.
#include "dplab/train/config/option_keys.h"

#include <algorithm>

#include <string>

namespace dplab {
namespace {

// GradSync's bucket keys under `prefix` ("allreduce.", "hybrid.", "daso.local.", ...).
void add_grad_sync(std::vector<OptionSpec>& v, const std::string& prefix, const std::string& what) {
  v.push_back({prefix + "first_bucket_mb", "1",
               what + ": size of the first gradient bucket, MiB (small: communication starts "
                      "early in the backward pass; comm/grad_sync.h)"});
  v.push_back({prefix + "bucket_cap_mb", "25",
               what + ": size of the later gradient buckets, MiB (0: one allreduce per tensor)"});
  v.push_back(
      {prefix + "wire", "f32",
       what + ": wire type of the gradient allreduce: f32, bf16 or f16 (f32 accumulation)"});
  // Gradient compression (comm/grad_compress.h, docs/algorithms/compression.md).
  v.push_back({prefix + "compress", "none",
               what + ": gradient compression: none, powersgd (low rank, Vogels et al. 2019) or "
                      "topk (sparse, error feedback); CPU arenas, wire f32 (hierarchical: across "
                      "nodes only)"});
  v.push_back({prefix + "powersgd.rank", "1",
               what + ": PowerSGD rank r (each matrix is approximated at min(n, m, r))"});
  v.push_back({prefix + "powersgd.start_step", "1000",
               what + ": PowerSGD: synchronised steps of plain allreduce before compression "
                      "starts (PyTorch's start_powerSGD_iter; a run with fewer steps gets a "
                      "warning: it never compresses)"});
  v.push_back({prefix + "powersgd.min_compression_rate", "2",
               what + ": PowerSGD: an n x m matrix is compressed only if n m > (n + m) r times "
                      "this; others travel uncompressed"});
  v.push_back({prefix + "powersgd.warm_start", "true",
               what + ": PowerSGD: keep Q between steps (false: a fresh Q from the seed every "
                      "step)"});
  v.push_back({prefix + "topk.ratio", "0.01",
               what + ": top-k: fraction of each bucket's elements sent, k = max(1, ratio n), "
                      "in (0, 1]"});
  v.push_back({prefix + "reducer", "",
               what + ": bucket reducer registered by name (comm/bucket_reducer.h), e.g. an "
                      "experiment's own; empty: the built-in one the keys above select (flat, "
                      "hierarchical, powersgd or topk)"});
}

std::vector<OptionSpec> make_specs() {
  std::vector<OptionSpec> v = {
      // ---- communicator (comm/communicator.h, comm/cluster/cluster_option.h) ----
      {"ranks_per_node", "0",
       "virtual nodes of N consecutive ranks (0: nodes are the hosts, or the cluster "
       "platform's); the node level of every hierarchical algorithm and of the virtual cluster"},
      {"link.intra", "",
       "shorthand for a virtual cluster (instead of cluster): the link between the ranks of a "
       "node, \"LATENCY,BANDWIDTH\" per direction (e.g. 2us,20GB/s); unset: free; empty or "
       "off: none (docs/virtual_cluster.md, \"The link shorthand\")"},
      {"link.inter", "",
       "shorthand for a virtual cluster (instead of cluster): one network interface per node, "
       "\"LATENCY,BANDWIDTH\" per direction (e.g. 20us,1.25GB/s), shared by the node's ranks; "
       "nodes from ranks_per_node (unset: one node); unset: free; empty or off: none"},
      {"cluster", "",
       "virtual cluster (issue #20, docs/virtual_cluster.md): a preset (dplab cluster list) or "
       "a TOML cluster file; empty or off: none. Training then runs in virtual time: every "
       "time figure (metrics, trace, exposed wait, the algorithms' timers) is the rank's "
       "virtual clock, with wall_s beside it; MPI backend on the CPU, threads = 1"},
      {"cluster.compute_scale", "0",
       "virtual cluster: virtual compute time = thread CPU time x this (0: the platform's "
       "compute_scale); x the rank's slowdown factor"},
      {"cluster.compute", "measured",
       "virtual cluster: compute time from the compute thread's CPU time during each step "
       "(measured) or replayed from a profile (profile:FILE, as dplab bench train --profile-out "
       "writes it for the same model and per-rank batch)"},
      {"cluster.nic_sharing", "false",
       "virtual cluster: the ranks of a node share its network interface in point-to-point "
       "messages (comm/node_port.h; deterministic, but a rank that lags in virtual time and "
       "waits in real time outside the cluster's operations stalls its node's messages for a "
       "real-time deadline; docs/virtual_cluster.md, \"Point to point\"); false: each rank "
       "has its own interface"},
      {"cluster.events", "",
       "virtual cluster: a TOML file of [[event]] tables (stragglers: kind = slow; degraded "
       "interfaces: kind = link), added to the cluster file's own; docs/virtual_cluster.md, "
       "\"Events\""},
      {"cluster.data_rate", "0",
       "virtual cluster: samples/s one rank's loader delivers in virtual time: batch k of an "
       "epoch is ready at max(when asked, batch k-1's + batch/rate), the first at the epoch's "
       "start + batch/rate (0: loading is hidden by prefetch)"},
      {"cluster.failure_data", "reassign",
       "virtual cluster with fail events, an algorithm going on with the live ranks: reassign "
       "(at each step the down ranks' batches are split among the live ranks, which train on "
       "their own batch and their share: every sample is seen, their compute grows) or drop "
       "(the down ranks' batches are not seen); docs/virtual_cluster.md, \"Failures\""},
      {"comm.wait", "auto",
       "waiting in MPI: spin, backoff (test, then sleep comm.backoff_sleep_us) or auto (backoff "
       "when ranks outnumber cores)",
       false},
      {"comm.timeout_s", "60",
       "a communication wait longer than this fails, naming the ranks that did not arrive "
       "(0: never); with comm = nccl also a host wait for the GPU, and the NCCL communicators "
       "are aborted",
       false},
      {"comm.backoff_sleep_us", "20",
       "sleep between tests of a pending request (comm.wait = backoff)", false},
      // ---- learning-rate schedule (optim/schedule.h; lr.schedule is in the driver's table) ----
      {"lr.warmup_epochs", "0", "linear warm-up over this many epochs (fractional allowed)"},
      {"lr.warmup_start_factor", "0", "lr factor at the start of the warm-up"},
      {"lr.step_size", "30", "step: epochs between decays"},
      {"lr.gamma", "0.1", "step and multistep: decay factor"},
      {"lr.milestones", "30,60,80", "multistep: epochs at which the lr decays by lr.gamma"},
      {"lr.power", "2", "poly: factor (1 - t/T)^power"},
      {"lr.min_factor", "0", "cosine, poly and plateau: floor of the lr factor"},
      {"lr.patience", "10",
       "plateau: epochs without improvement of the world's mean training loss before a decay"},
      {"lr.factor", "0.1", "plateau: decay factor"},
      {"lr.threshold", "0.0001", "plateau: relative improvement that counts"},
      {"lr.mode", "min", "plateau: min (the epoch loss) or max"},
      // ---- hybrid (comm/algorithms/hybrid.h) ----
      {"hybrid.mode", "hybrid",
       "hybrid (three stages), each_iter (P-SGD every iteration) or only_end (local steps, one "
       "final average)"},
      {"hybrid.W", "8", "stage-2 accumulation length (>= 1)"},
      {"hybrid.R", "12", "stage-3 sync interval (>= 1)"},
      {"hybrid.split", "ceil", "stage boundaries: ceil (thesis code, S = ceil(E/3)) or thirds"},
      {"hybrid.counter", "global",
       "iteration counter of stages 2 and 3: global (thesis code) or epoch (Algorithm 4)"},
      {"hybrid.carry_grad", "true",
       "stage 2 starts on top of the last stage-1 gradient (thesis code)"},
      {"hybrid.final_average", "true", "average the parameters once at the end"},
      {"hybrid.accumulate", "sum",
       "stage-2 step on the sum of the W gradients (thesis code) or their mean"},
      {"hybrid.hierarchical", "false", "GradSync: reduce within nodes first, then across"},
      // ---- daso (comm/algorithms/daso.h) ----
      {"daso.B_max", "4", "batches between global syncs at the start of a cycle"},
      {"daso.S", "1", "batches between sending and merging at the start of a cycle"},
      {"daso.warmup_epochs", "4", "blocking bf16 phase at the start (epochs)"},
      {"daso.cooldown_epochs", "4", "blocking bf16 phase at the end (epochs)"},
      {"daso.plateau_threshold", "0.05",
       "relative improvement of the epoch loss that counts as progress"},
      {"daso.plateau_patience", "2",
       "a plateau is the (patience+1)-th consecutive epoch without progress"},
      {"daso.S_reduction", "halve", "on a plateau: halve (paper) or decrement (authors' code)"},
      {"daso.phases", "true",
       "false: fixed B = B_max and S, no warm-up, cool-down or plateau cycle (Table 2)"},
      {"daso.epoch_end_sync", "true", "blocking plain-average sync at each epoch's last batch"},
      {"daso.blocking_wire", "bf16", "wire type of the warm-up and cool-down syncs"},
      {"daso.global_wire", "f32", "wire type of the cycling-phase syncs"},
      // ---- dcs3gd (comm/algorithms/dcs3gd.h) ----
      {"dcs3gd.lambda0", "0.2", "λ0 of eq. 17; 0: no delay compensation"},
      {"dcs3gd.norm", "per_tensor", "norms of eq. 17: per_tensor or global"},
      {"dcs3gd.correct_from", "start", "apply the correction from start or from warmup_end"},
      {"dcs3gd.schedule", "warmup_linear",
       "warmup_linear (the paper's) or loop (the lr.* schedule, wd scaled with it)"},
      {"dcs3gd.warmup_epochs", "-1", "warm-up length in epochs; < 0: dcs3gd.warmup_frac"},
      {"dcs3gd.warmup_frac", "0.16666666666666666",
       "warm-up as a fraction of all iterations (1/6)"},
      {"dcs3gd.wd_mult", "2.3", "multiplier of wd"},
      {"dcs3gd.wd_exclude", "bn", "parameters without weight decay: bn, bn_bias or none"},
      {"dcs3gd.momentum", "-1", "momentum μ; < 0: the optimizer's momentum"},
      {"dcs3gd.wire", "f32", "wire type of the update allreduce: f32, bf16 or f16"},
      {"dcs3gd.progress_us", "200",
       "a helper thread tests the in-flight allreduce this often (us); 0: no helper"},
      // ---- crossover (comm/algorithms/crossover.h) ----
      {"crossover.segments", "blocks",
       "how the parameters are cut: blocks, layers, tensors, model or \"p1,p2|p3|...\" groups "
       "of name prefixes"},
      {"crossover.sampler", "balanced", "derangement sampler: balanced (the paper's) or uniform"},
      {"crossover.interval", "1", "communication interval: micro-batches per step"},
      {"crossover.hierarchical", "false",
       "gradient allreduce inside a node's group, gossip among group leaders"},
      {"crossover.seed", "(seed)", "seed of the shared topology stream (default: seed)"},
      {"crossover.check_maps", "false", "allgather every drawn map and fail if ranks disagree"},
      // ---- sgp (comm/algorithms/sgp.h) ----
      {"sgp.interval", "1",
       "communication interval I: gossip every I-th step, local steps between (1: every step)"},
      // ---- oscars (comm/algorithms/oscars.h) ----
      {"oscars.M", "4", "step-gap bound of Eq. 3 (tau_fast - tau_slow < M)"},
      {"oscars.tau_max", "0",
       "largest tau a worker may get; 0: no cap (Eq. 3 as written; a cap departs from it)"},
      {"oscars.search", "exact", "exact, alg1 (Algorithm 1 literally) or text (T += step)"},
      {"oscars.text_step_us", "1000", "the T increment of search = text (us)"},
      {"oscars.profile_discard", "5", "profiling iterations discarded (warm-up)"},
      {"oscars.profile_measure", "20", "profiling iterations measured (median)"},
      {"oscars.reprofile_rounds", "0", "re-measure and re-search every N rounds (0: never)"},
      {"oscars.t_us", "", "fixed iteration times \"t0,t1,...\" (us) instead of profiling"},
      {"oscars.resolution_us", "measured",
       "waits and times within this many us count as equal in the search; measured: the largest "
       "10th-to-90th-percentile range of any rank's profiled times, at least "
       "oscars.resolution_rel of the fastest time (0 with oscars.t_us)"},
      {"oscars.resolution_rel", "0.1",
       "with resolution_us = measured: the least resolution, as a fraction of the fastest "
       "profiled time (profiles of identical ranks on a loaded host differ by several percent)"},
      // ---- local_sgd, post_local_sgd (comm/algorithms/local_sgd.h) ----
      {"local_sgd.H", "4", "local steps between parameter averages"},
      {"local_sgd.round_spans_epochs", "false",
       "true: a period continues across epoch boundaries (the epoch's test_acc then evaluates "
       "the ranks' average); false: every epoch ends with an average"},
      {"post_local_sgd.switch_epoch", "1",
       "epochs of allreduce SGD before local SGD (at or after epochs: a warning, the local phase "
       "never starts)"},
      // ---- diloco (comm/algorithms/diloco.h) ----
      {"diloco.H", "50",
       "inner steps per round (the paper's 500 is for language models; 50, the smallest H of "
       "its ablation, gives several rounds per epoch of this project's models)"},
      {"diloco.outer_optim", "nesterov",
       "outer optimizer on the averaged outer gradient: nesterov (the paper's), sgd (momentum "
       "without Nesterov) or adam (torch.optim.Adam)"},
      {"diloco.outer_lr", "0.7",
       "outer learning rate (the paper's 0.7); with outer_optim = adam 0.001 (PyTorch's)"},
      {"diloco.outer_momentum", "0.9",
       "momentum of the outer SGD, nesterov or sgd (0: plain SGD); refused with adam"},
      {"diloco.outer_beta1", "0.9", "outer Adam's beta1 (PyTorch's default); adam only"},
      {"diloco.outer_beta2", "0.999", "outer Adam's beta2 (PyTorch's default); adam only"},
      {"diloco.outer_eps", "1e-08", "outer Adam's eps (PyTorch's default); adam only"},
      {"diloco.round_spans_epochs", "false",
       "true: a round continues across epoch boundaries (the epoch's test_acc then evaluates "
       "the global model of the last outer step); false: every epoch ends with an outer step"},
      // ---- streaming_diloco (comm/algorithms/streaming_diloco.h) ----
      {"streaming_diloco.H", "50", "inner steps between two syncs of the same fragment"},
      {"streaming_diloco.fragments", "2",
       "P: fragments (cut at tensor boundaries), synchronised on a staggered schedule"},
      {"streaming_diloco.fragment_pattern", "contiguous",
       "contiguous: P ranges of the arena of about equal size; strided: the model's blocks dealt "
       "round-robin to the P fragments (the paper's pattern)"},
      {"streaming_diloco.fragment_sync_delay", "1",
       "tau: inner steps a fragment's allreduce overlaps before it is applied (< H / P)"},
      {"streaming_diloco.fragment_update_alpha", "0.5",
       "alpha: local share when mixing, local = (1 - alpha) global + alpha local"},
      {"streaming_diloco.wire", "f32",
       "wire type of the outer gradients' allreduce: f32, bf16 or f16 (f32 accumulation)"},
      {"streaming_diloco.quantize", "none",
       "none, int8, int4 (linear codes), fp8_e4m3 or fp4_e2m1 (floats): outer gradients "
       "quantised per block (one f32 scale each) and averaged by a quantised reduce-scatter and "
       "allgather, summed in f32 (replaces the allreduce; wire must be f32)"},
      {"streaming_diloco.quantize_block", "256",
       "elements per quantisation scale (streaming_diloco.quantize)"},
      {"streaming_diloco.outer_lr", "0.7", "learning rate of the outer SGD"},
      {"streaming_diloco.outer_momentum", "0.9", "momentum of the outer SGD (0: plain SGD)"},
      {"streaming_diloco.outer_nesterov", "true",
       "Nesterov outer momentum (ignored when momentum is 0)"},
      {"streaming_diloco.round_spans_epochs", "true",
       "true: the fragment schedule runs across epochs (the epoch's test_acc evaluates the "
       "global model, test_acc_rank0 rank 0's mixed local one); false: every epoch ends with a "
       "full sync of all fragments"},
      // ---- slowmo (comm/algorithms/slowmo.h) ----
      {"slowmo.frequency", "48", "tau: local steps between exact averages with slow momentum"},
      {"slowmo.lr", "1", "alpha: slow learning rate (1 with momentum 0: plain local SGD)"},
      {"slowmo.momentum", "0.5", "beta: slow momentum (0: none)"},
      {"slowmo.base", "local",
       "base algorithm: local (local SGD) or sgp (an SGP gossip every step, sgp.interval "
       "applies; the exact average is the push-sum average)"},
      {"slowmo.localsgd_frequency", "3",
       "k: with base local, the workers average their parameters every k base steps of a round "
       "(fairscale's localsgd_frequency; 0: no averaging inside a round)"},
      {"slowmo.node_workers", "(true with base local, false with sgp)",
       "true: the ranks of a node (the host's, or --ranks-per-node) average their gradients every "
       "step and form one worker (fairscale's nprocs_per_node); false: every rank is a worker"},
      {"slowmo.round_spans_epochs", "false",
       "true: a round continues across epoch boundaries (the epoch's test_acc then evaluates "
       "the ranks' average); false: every epoch ends with a slow step"},
  };
  add_grad_sync(v, "allreduce.", "allreduce (and post_local_sgd's first phase)");
  v.push_back({"allreduce.hierarchical", "false",
               "allreduce: reduce within nodes first, then across nodes"});
  v.push_back({"allreduce.ft", "none",
               "allreduce on a virtual cluster with fail events: none (a failure stops the job) "
               "or quorum (go on with the live ranks, the gradient averaged over them, as "
               "torchft's fault-tolerant DDP; a returning rank is healed from a live peer; "
               "docs/virtual_cluster.md, \"Failures\")"});
  add_grad_sync(v, "hybrid.", "hybrid");
  add_grad_sync(v, "daso.local.", "daso: node-local syncs");
  add_grad_sync(v, "crossover.sync.", "crossover.hierarchical: the group allreduce");
  return v;
}

}  // namespace

const std::vector<OptionSpec>& component_option_specs() {
  static const std::vector<OptionSpec> specs = make_specs();
  return specs;
}

std::string option_area(const std::string& key) {
  const std::string head = key.substr(0, key.find('.'));
  const bool dotted = key.find('.') != std::string::npos;
  if (head == "model") return "model";
  if (head == "data" || key == "eval.batch") return "data";
  if (key == "lr.schedule" || (head == "lr" && dotted)) return "schedule";
  for (const char* k : {"lr", "momentum", "nesterov", "dampening", "wd", "optim", "lars", "adamw",
                        "accumulate_steps", "label_smoothing", "amp"})
    if (head == k) return "optimizer";
  for (const char* k : {"algo", "comm", "ranks_per_node", "link", "slowdown", "cluster"})
    if (head == k) return "comm";
  for (const char* k : {"checkpoint", "out", "resume", "init_from", "nonfinite", "preempt"})
    if (head == k) return "checkpoint";
  for (const char* k : {"trace", "metrics", "progress"})
    if (head == k) return "reporting";
  if (head == "post_local_sgd") return "local_sgd";
  if (dotted) return head;  // an algorithm's own keys: daso, hybrid, allreduce, ...
  return "run";
}

const std::vector<std::string>& option_areas() {
  static const std::vector<std::string> a = {
      "run",    "model",     "data",   "optimizer", "schedule",        "checkpoint", "reporting",
      "comm",   "allreduce", "hybrid", "daso",      "dcs3gd",          "crossover",  "sgp",
      "oscars", "local_sgd", "diloco", "slowmo",    "streaming_diloco"};
  return a;
}

// Every area of option_areas() after the driver's own (run ... comm) is an algorithm's.
bool is_algorithm_area(const std::string& area) {
  const std::vector<std::string>& a = option_areas();
  const auto first_algo = std::find(a.begin(), a.end(), "allreduce");
  return std::find(first_algo, a.end(), area) != a.end();
}

bool algorithm_reads_area(const std::string& algo, const std::string& area) {
  if (area == algo) return true;
  if (algo == "post_local_sgd" || algo == "local_sgd")
    return area == "local_sgd" || area == "allreduce";
  return false;
}

std::vector<std::string> algorithm_option_keys(const std::string& algo) {
  std::vector<std::string> keys;
  for (const OptionSpec& s : train_option_specs()) {
    const std::string area = option_area(s.key);
    // post_local_sgd.* sits in the local_sgd area, but plain local_sgd never reads it.
    if (algo == "local_sgd" && s.key.starts_with("post_local_sgd.")) continue;
    // allreduce.ft is allreduce's own (local_sgd and post_local_sgd read the GradSync keys only).
    if (algo != "allreduce" && s.key == "allreduce.ft") continue;
    if (is_algorithm_area(area) && algorithm_reads_area(algo, area)) keys.push_back(s.key);
  }
  return keys;
}

}  // namespace dplab
