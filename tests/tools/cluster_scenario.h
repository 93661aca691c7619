// What the `dplab train --cluster` tests share (test_cluster_train.cpp: virtual times, their
// arithmetic and events; test_cluster_failures.cpp: fail events): a test platform with round
// numbers, a compute profile of mnist_cnn with round times, and a training run of mnist_cnn on
// Fashion-MNIST under mpiexec with its records read back. Each expected time in the tests is
// written as its arithmetic on these round numbers, never read from the code under test.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/temp_dir.h"
#include "dplab/comm/cluster/compute_profile.h"
#include "run_cli.h"

namespace dplab::cluster_test {

namespace fs = std::filesystem;
using test::ScopedTempDir;

// The test platform: network 100 us, 100 MB/s per direction; intra-node 10 us, 1 GB/s; ring
// collectives; no protocol efficiency, no oversubscription, compute_scale 1.
constexpr double kNetAlpha = 100e-6, kNetRate = 100e6;
inline std::string platform_toml(int ranks_per_node) {
  return fmt::format(
      "name = \"testlab\"\nranks_per_node = {}\nalgorithm = \"ring\"\ncompute_scale = 1.0\n"
      "[intra]\nlatency = \"10us\"\nbandwidth = \"1GB/s\"\n"
      "[network]\nlatency = \"100us\"\nbandwidth = \"100MB/s\"\n",
      ranks_per_node);
}

// The profile's round numbers: forward, backward, the non-finite check (between the gradients'
// averaging and the optimizer), optimizer per step.
constexpr double kF = 0.010, kB = 0.020, kC = 0.002, kO = 0.005;
constexpr int64_t kBatch = 16;

// A compute profile of mnist_cnn at batch kBatch with the round times above and every tensor's
// gradient ready at `fraction` of backward. The tensor list (names, sizes) comes from a real
// recording so that it matches the model; its times are replaced. `bucket_bytes`: the bytes of
// one gradient bucket holding every tensor: the arena keeps each tensor in a slot of a multiple
// of 16 values (core/param_arena.h, align_elems), and a bucket is the arena's range from its
// first tensor to the end of its last, padding included, in f32.
inline std::string write_profile(const ScopedTempDir& dir, double fraction, double* bucket_bytes) {
  const std::string recorded = dir.file("recorded.profile.json");
  const auto r = test::run_dplab(fmt::format("bench train --model mnist_cnn --batch {} --steps 1 "
                                             "--warmup 1 --threads 1 --profile-out {}",
                                             kBatch, recorded),
                                 dir.path / "bench");
  EXPECT_EQ(r.status, 0) << r.err;
  cluster::ComputeProfile p = cluster::load_compute_profile(recorded);
  p.device = "test";
  p.forward_s = kF;
  p.backward_s = kB;
  p.optimizer_s = kO;
  p.check_s = kC;
  int64_t values = 0;
  for (size_t i = 0; i < p.segments.size(); ++i) {
    p.segments[i].ready_fraction = fraction;
    const int64_t n = p.segments[i].numel;
    values += i + 1 < p.segments.size() ? (n + 15) / 16 * 16 : n;
  }
  *bucket_bytes = 4.0 * double(values);
  const std::string file = dir.file(fmt::format("round_{}.profile.json", fraction));
  std::ofstream(file) << cluster::compute_profile_json(p);
  return file;
}

// The parameter arena's bytes for the profile's tensors: each in a slot of a multiple of 16
// floats (core/param_arena.h).
inline double arena_bytes(const std::string& profile) {
  double values = 0;
  for (const auto& seg : cluster::load_compute_profile(profile).segments)
    values += double((seg.numel + 15) / 16 * 16);
  return 4.0 * values;
}

struct Records {
  std::vector<nlohmann::json> epochs;                    // metrics.jsonl "epoch"
  std::vector<nlohmann::json> steps;                     // metrics.jsonl "step" (rank 0's timings)
  std::vector<std::vector<nlohmann::json>> rank_epochs;  // rank_R.jsonl "rank_epoch", per rank
  nlohmann::json run;                                    // run.json
  std::string out;                                       // the console (stdout)
};

inline std::vector<nlohmann::json> read_jsonl(const fs::path& p, const std::string& kind) {
  std::vector<nlohmann::json> r;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) {
      auto j = nlohmann::json::parse(line);
      if (j["kind"] == kind) r.push_back(j);
    }
  return r;
}

// The command line of `dplab train` of mnist_cnn with `args`, into `out`.
inline std::string train_command(const fs::path& out, const std::string& args,
                                 int64_t batch = kBatch) {
  return fmt::format(
      "train --model mnist_cnn --data fashion-mnist --batch {} --lr 0.05 --threads 1 "
      "--set data.test_limit=16 --set progress=off --out {} {}",
      batch, out.string(), args);
}

// `dplab train` of mnist_cnn on `ranks` ranks with `args`, into dir/out_name.
inline Records train(int ranks, const std::string& args, const ScopedTempDir& dir,
                     const std::string& out_name, int64_t batch = kBatch) {
  const fs::path out = dir.path / out_name;
  const auto r =
      test::run_dplab_mpi(ranks, train_command(out, args, batch), dir.path / (out_name + "-log"));
  EXPECT_EQ(r.status, 0) << r.err;
  Records rec;
  rec.out = r.out;
  rec.epochs = read_jsonl(out / "metrics.jsonl", "epoch");
  rec.steps = read_jsonl(out / "metrics.jsonl", "step");
  for (int k = 0; k < ranks && ranks > 1; ++k)
    rec.rank_epochs.push_back(read_jsonl(out / fmt::format("rank_{}.jsonl", k), "rank_epoch"));
  std::ifstream in(out / "run.json");
  if (in) rec.run = nlohmann::json::parse(in);
  return rec;
}

inline double ring_allreduce(int P, double alpha, double rate, double bytes) {
  return 2.0 * (P - 1) * alpha + 2.0 * (P - 1) / P * bytes / rate;
}

}  // namespace dplab::cluster_test
