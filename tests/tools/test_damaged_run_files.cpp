// Damaged and hostile run files (issue #38, item 3), each made small in the test: --resume of a
// run directory without a committed checkpoint names what it expected where; a manifest whose
// algorithm or loop position disagrees with its rank files, and a shard with a key twice, are
// refused naming the file and both values; the trace of a run that was killed is summarised from
// its per-rank files, saying so.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/temp_dir.h"
#include "dplab/data/decode.h"
#include "dplab/data/shards.h"
#include "dplab/data/tar.h"
#include "run_cli.h"
#include "spawn_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

// 128 training images in batches of 32: 4 steps per epoch; a checkpoint after every step.
const std::string kTiny =
    "train --model mnist_cnn --data fashion-mnist --batch 32 --lr 0.01 --momentum 0.9 "
    "--threads 1 --set data.train_limit=128 --set data.test_limit=50 --set progress=off "
    "--set checkpoint.every_steps=1";

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

TEST(DamagedRunFiles, ResumeOfARunWithoutACheckpointSaysWhereItLooked) {
  ScopedTempDir dir("damaged-nockpt");
  // A run killed before its first checkpoint: its record and metrics, no checkpoints/.
  const fs::path run = dir.path / "run";
  write(run / "run.json", "{}\n");
  write(run / "metrics.jsonl", "");
  auto r = run_dplab(kTiny + " --epochs 1 --resume " + run.string(), dir.path);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err, (run / "checkpoints").string() + " does not exist, so the run directory "
                                                          "holds no checkpoint"))
      << r.err;
  EXPECT_TRUE(has(r.err, "step_<N>/ with a manifest.json")) << r.err;
  EXPECT_FALSE(has(r.err, "never committed")) << r.err;
  // Killed while writing its first: checkpoints/ holds only the temporary directory.
  fs::create_directories(run / "checkpoints" / ".step_00000002.tmp");
  r = run_dplab(kTiny + " --epochs 1 --resume " + run.string(), dir.path);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err, "--resume " + run.string() + ": " + (run / "checkpoints").string() +
                             " holds no checkpoint: expected directories step_<N> with a "
                             "manifest.json"))
      << r.err;
}

TEST(DamagedRunFiles, AManifestThatDisagreesWithItsRankFilesIsRefused) {
  ScopedTempDir dir("damaged-manifest");
  auto r = run_dplab(kTiny + " --max-steps 3 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path good = dir.path / "run" / "checkpoints" / "step_00000003";
  // The manifest is not covered by a CRC: its copies of the loop position and the algorithm
  // are checked against what rank_0.safetensors holds (epoch 0, step 3 of 4, algo local).
  struct Case {
    const char* key;
    nlohmann::json value;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"epoch", 1,
       "state values 'loop.epoch' = 0, 'loop.step_in_epoch' = 3, but {} says "
       "'epoch' = 1, 'step_in_epoch' = 3"},
      {"step_in_epoch", 2,
       "state values 'loop.epoch' = 0, 'loop.step_in_epoch' = 3, but {} says "
       "'epoch' = 0, 'step_in_epoch' = 2"},
      {"algo", "allreduce", "state value 'dplab.algo' = 'local', but {} says 'algo' = 'allreduce'"},
  };
  for (const Case& c : cases) {
    const fs::path bad = dir.path / (std::string("bad-") + c.key);
    fs::copy(good, bad, fs::copy_options::recursive);
    nlohmann::ordered_json m = nlohmann::ordered_json::parse(slurp(bad / "manifest.json"));
    m[c.key] = c.value;
    write(bad / "manifest.json", m.dump(1));
    r = run_dplab(kTiny + " --epochs 2 --resume " + bad.string(), dir.path);
    EXPECT_EQ(r.status, 1) << r.err;
    const std::string expect =
        (bad / "rank_0.safetensors").string() + ": " +
        fmt::format(fmt::runtime(c.expect), (bad / "manifest.json").string());
    EXPECT_TRUE(has(r.err, expect)) << expect << "\n" << r.err;
  }
}

std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

TEST(DamagedRunFiles, AShardKeyGivenTwiceIsRefusedNamingBothMembers) {
  ScopedTempDir dir("damaged-shard");
  const std::vector<uint8_t> px(8 * 8 * 3, 77);
  const auto jpg = encode_jpeg(px.data(), 8, 8, 3);
  // k0 and k3 are good; k1 has two labels, k2 two images.
  const std::string path = dir.file("s-000000.tar");
  {
    TarWriter w(path);
    w.add("k0.jpg", jpg);
    w.add("k0.cls", bytes("0"));
    w.add("k1.jpg", jpg);
    w.add("k1.cls", bytes("1"));
    w.add("k1.cls", bytes("2"));
    w.add("k2.jpg", jpg);
    w.add("k2.cls", bytes("1"));
    w.add("k2.png", jpg);
    w.add("k3.jpg", jpg);
    w.add("k3.cls", bytes("1"));
  }
  ImageTransformOptions t;
  t.size = 8;
  t.train = false;
  t.resize = 8;
  ShardDataset skip({path}, t, OnError::skip);
  EXPECT_EQ(skip.size(), 2);
  EXPECT_EQ(skip.error_count(), 2);
  EXPECT_EQ(skip.sample_name(0), path + ":k0");
  EXPECT_EQ(skip.sample_name(1), path + ":k3");
  const TarIndex idx = index_tar(path);
  auto fail_message = [&](const std::string& shard) {
    try {
      ShardDataset fail({shard}, t, OnError::fail);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string expect = fmt::format(
      "{}:k1: duplicate key: class member 'k1.cls' (data at offset {} = '1') and 'k1.cls' (data "
      "at offset {} = '2'); one .cls member per key expected",
      path, idx.members[3].offset, idx.members[4].offset);
  std::string msg = fail_message(path);
  EXPECT_TRUE(has(msg, expect)) << expect << "\n" << msg;
  // The two images alone in a shard: fail mode stops at the first refusal.
  const std::string images = dir.file("s-000001.tar");
  {
    TarWriter w(images);
    w.add("k2.jpg", jpg);
    w.add("k2.cls", bytes("1"));
    w.add("k2.png", jpg);
  }
  const TarIndex idx2 = index_tar(images);
  expect = fmt::format(
      "{}:k2: duplicate key: image member 'k2.jpg' (data at offset {}) and 'k2.png' (data at "
      "offset {}); one image member per key expected",
      images, idx2.members[0].offset, idx2.members[2].offset);
  msg = fail_message(images);
  EXPECT_TRUE(has(msg, expect)) << expect << "\n" << msg;
}

// A run killed (SIGKILL) while training with --trace: no trace.json, and per-rank files without
// their end. `dplab trace` summarises the steps they hold and says the run did not finish.
TEST(DamagedRunFiles, TheTraceOfAKilledRunIsSummarisedFromItsRankFiles) {
  ScopedTempDir dir("damaged-trace");
  const fs::path run = dir.path / "run";
  test::Spawned s =
      test::spawn(test::dplab_exe() + " " + kTiny + " --epochs 100000 --trace " +
                      "--set trace.steps=all --set checkpoint.every_steps=0 --out " + run.string(),
                  dir.path / "log");
  const fs::path file = run / "trace" / "rank_0.json";
  // Some steps ended (each is written out as the next begins).
  const bool steps = test::wait_until(
      [&] {
        const std::string t = slurp(file);
        size_t n = 0;
        for (size_t at = t.find("\"name\":\"step\""); at != std::string::npos;
             at = t.find("\"name\":\"step\"", at + 1))
          ++n;
        return n >= 5;
      },
      120);
  kill(s.pid, SIGKILL);
  test::wait_exit(s.pid, 60);
  ASSERT_TRUE(steps) << slurp(s.err);
  ASSERT_FALSE(fs::exists(run / "trace.json"));
  const std::string text = slurp(file);
  ASSERT_FALSE(text.ends_with("]}\n")) << "the file was closed";

  auto r = run_dplab("trace " + run.string(), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out,
                  "note: the run did not finish (killed or crashed: no trace.json, and 1 "
                  "of 1 per-rank files end mid-stream); summarised from the steps they "
                  "hold: read " +
                      file.string() + "\n"))
      << r.out;
  r = run_dplab("trace --json " + run.string(), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["unfinished_files"], nlohmann::json::array({file.string()}));
  const int steps_found = j["steps_found"];
  EXPECT_GE(steps_found, 5);

  // Cut in the middle of an event (a write the kill interrupted): that event is left out, the
  // steps before are all there.
  write(file, text + ",\n{\"ph\":\"X\",\"name\":\"forward\",\"cat\":\"comp");
  r = run_dplab("trace --json " + run.string(), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["steps_found"], steps_found);
}

}  // namespace
}  // namespace dplab
