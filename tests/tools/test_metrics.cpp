// Honest metrics and the run record (docs/metrics_schema.md): the global figures of
// metrics.jsonl against every rank's own records, computed here from rank_R.jsonl with the
// documented formulas; the schema file against what a run writes; run.json as a --config that
// repeats a run bitwise.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "data/temp_dir.h"
#include "dplab/tools/plot/metrics_series.h"
#include "dplab/train/report/epoch_record.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

// 256 training images: 4 steps of 32 per rank with 2 ranks, 8 with one.
const std::string kJob =
    "train --model mnist_cnn --data fashion-mnist --batch 32 --lr 0.02 --momentum 0.9 "
    "--threads 1 --set data.train_limit=256 --set data.test_limit=100 --set progress=off";

// One JSON object per line; fails on a key that appears twice in a record (nlohmann would keep
// the last one silently).
std::vector<nlohmann::json> read_records(const fs::path& file) {
  std::vector<nlohmann::json> r;
  std::istringstream in(slurp(file));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::set<std::string> keys;
    const auto no_duplicates = [&](int depth, nlohmann::json::parse_event_t e,
                                   nlohmann::json& parsed) {
      if (e == nlohmann::json::parse_event_t::key && depth == 1) {
        EXPECT_TRUE(keys.insert(parsed.get<std::string>()).second)
            << file << ":" << n << ": key " << parsed << " twice in " << line;
      }
      return true;
    };
    r.push_back(nlohmann::json::parse(line, no_duplicates));
  }
  return r;
}

std::vector<nlohmann::json> of_kind(const std::vector<nlohmann::json>& recs, const std::string& k) {
  std::vector<nlohmann::json> r;
  for (const auto& j : recs)
    if (j["kind"] == k) r.push_back(j);
  return r;
}

double num(const nlohmann::json& j, const char* key) {
  EXPECT_TRUE(j.contains(key)) << key << " missing in " << j.dump();
  return j.contains(key) ? j[key].get<double>() : 0;
}

// Relative comparison for figures that went through a division and a JSON round trip.
void expect_close(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, std::abs(want))) << what;
}

// The rows of the schema's tables: "| a | b | ... |" lines after a header row starting with
// `first_column`.
std::vector<std::vector<std::string>> schema_rows(const std::string& first_column) {
  std::ifstream in(fs::path(DPLAB_TEST_SOURCE_DIR) / "docs" / "metrics_schema.md");
  EXPECT_TRUE(in.good()) << "docs/metrics_schema.md";
  std::vector<std::vector<std::string>> rows;
  bool in_table = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string c;
    while (std::getline(ss, c, '|')) {
      c.erase(0, c.find_first_not_of(' '));
      c.erase(c.find_last_not_of(' ') + 1);
      cells.push_back(c);
    }
    if (!in_table) {
      in_table = !cells.empty() && cells[0] == first_column;
      continue;
    }
    if (!cells.empty() && cells[0].rfind("---", 0) == 0) continue;
    rows.push_back(cells);
  }
  return rows;
}

struct SchemaKey {
  bool always = false;
};
// (file, kind) -> key -> presence, from the records table.
using Schema = std::map<std::pair<std::string, std::string>, std::map<std::string, SchemaKey>>;

Schema record_schema() {
  Schema s;
  for (const auto& row : schema_rows("file")) {
    EXPECT_EQ(row.size(), 7u) << "schema row of " << row.size() << " cells";
    if (row.size() < 7) continue;
    s[{row[0], row[1]}][row[2]].always = row[5] == "always";
  }
  return s;
}

// Every key of `rec` is documented for its (file, kind); every key documented as always
// written is there.
void check_against_schema(const Schema& schema, const std::string& file, const nlohmann::json& rec,
                          std::set<std::pair<std::string, std::string>>& seen) {
  const std::string kind = rec["kind"].get<std::string>();
  seen.insert({file, kind});
  const auto it = schema.find({file, kind});
  ASSERT_NE(it, schema.end()) << file << " kind " << kind << " is not in the schema";
  for (const auto& [k, v] : rec.items()) {
    bool listed = it->second.count(k) != 0;
    for (const auto& [pattern, p] : it->second)
      if (const auto lt = pattern.find('<'); lt != std::string::npos)
        listed |= k.rfind(pattern.substr(0, lt), 0) == 0;
    EXPECT_TRUE(listed) << file << " " << kind << ": key " << k << " is not in the schema";
  }
  for (const auto& [k, p] : it->second) {
    if (p.always) {
      EXPECT_TRUE(rec.contains(k)) << file << " " << kind << ": " << k << " missing";
    }
  }
}

// The console's seconds: a virtual epoch of hundredths of a second must not print as 0.0.
TEST(Metrics, SecondsTextKeepsThreeSignificantDigitsBelowTenSeconds) {
  EXPECT_EQ(seconds_text(0.04677), "0.0468");
  EXPECT_EQ(seconds_text(0.000123456), "0.000123");
  EXPECT_EQ(seconds_text(2.346), "2.35");
  EXPECT_EQ(seconds_text(9.5), "9.5");
  EXPECT_EQ(seconds_text(123.46), "123.5");
  EXPECT_EQ(seconds_text(10.0), "10.0");
}

// Rates and counts print with thousands separators, rounded to whole units; negatives print 0.
TEST(Metrics, GroupedRateSeparatesThousands) {
  EXPECT_EQ(grouped_rate(0), "0");
  EXPECT_EQ(grouped_rate(999.4), "999");
  EXPECT_EQ(grouped_rate(999.6), "1,000");
  EXPECT_EQ(grouped_rate(12345), "12,345");
  EXPECT_EQ(grouped_rate(123456), "123,456");
  EXPECT_EQ(grouped_rate(25557032), "25,557,032");
  EXPECT_EQ(grouped_rate(-5), "0");
}

// One 2-rank run, 2 epochs, step records every 2 steps, shared by the tests below.
class TwoRankRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScopedTempDir("metrics-2ranks");
    result_ = new test::CliResult(test::run_dplab_mpi(
        2,
        kJob +
            " --algo allreduce --epochs 2 --set metrics.every_steps=2 --set progress=lines "
            "--out " +
            dir_->file("run"),
        dir_->path));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete dir_;
  }
  fs::path run() const { return dir_->path / "run"; }
  static ScopedTempDir* dir_;
  static test::CliResult* result_;
};
ScopedTempDir* TwoRankRun::dir_ = nullptr;
test::CliResult* TwoRankRun::result_ = nullptr;

TEST_F(TwoRankRun, GlobalImagesPerSecondIsAllRanksImagesOverTheSlowestRanksEpochTime) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const auto m = read_records(run() / "metrics.jsonl");
  const auto epochs = of_kind(m, "epoch");
  const auto r0 = of_kind(read_records(run() / "rank_0.jsonl"), "rank_epoch");
  const auto r1 = of_kind(read_records(run() / "rank_1.jsonl"), "rank_epoch");
  ASSERT_EQ(epochs.size(), 2u);
  ASSERT_EQ(r0.size(), 2u);
  ASSERT_EQ(r1.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    const std::string what = fmt::format("epoch {}", e + 1);
    // 256 images per epoch in all, 128 per rank (hand count: train_limit over 2 ranks).
    EXPECT_EQ(r0[e]["images"], 128) << what;
    EXPECT_EQ(r1[e]["images"], 128) << what;
    EXPECT_EQ(epochs[e]["images"], 256) << what;
    EXPECT_EQ(epochs[e]["ranks"], 2) << what;
    const double t = std::max(num(r0[e], "time_s"), num(r1[e], "time_s"));
    EXPECT_EQ(num(epochs[e], "time_s"), t) << what;  // the slowest rank's, as written
    expect_close(num(epochs[e], "images_per_s"), 256.0 / t, what + " images_per_s");
    expect_close(num(epochs[e], "images_per_s_rank"), 128.0 / num(r0[e], "time_s"),
                 what + " images_per_s_rank");
    expect_close(num(r1[e], "images_per_s_rank"), 128.0 / num(r1[e], "time_s"),
                 what + " rank 1's images_per_s_rank");
  }
  // The console prints the global rate and says so.
  EXPECT_NE(result_->out.find(fmt::format("img/s global (2 ranks)  {} s\n",
                                          seconds_text(num(epochs[0], "time_s")))),
            std::string::npos)
      << result_->out;
}

// The progress lines show rank 0's own running loss and rate, and say so; the epoch line the
// global ones.
TEST_F(TwoRankRun, ProgressLinesSayTheyAreRankZerosOwn) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  EXPECT_NE(result_->err.find(" img/s (rank 0's own)\n"), std::string::npos) << result_->err;
  EXPECT_NE(result_->out.find(" img/s global (2 ranks)"), std::string::npos) << result_->out;
}

TEST_F(TwoRankRun, LossAndAccuracyAreSampleWeightedMeansOverRanks) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const auto epochs = of_kind(read_records(run() / "metrics.jsonl"), "epoch");
  const auto r0 = of_kind(read_records(run() / "rank_0.jsonl"), "rank_epoch");
  const auto r1 = of_kind(read_records(run() / "rank_1.jsonl"), "rank_epoch");
  ASSERT_EQ(epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    const double n0 = num(r0[e], "samples"), n1 = num(r1[e], "samples");
    const double loss = (num(r0[e], "loss") * n0 + num(r1[e], "loss") * n1) / (n0 + n1);
    const double acc = (num(r0[e], "train_acc") * n0 + num(r1[e], "train_acc") * n1) / (n0 + n1);
    expect_close(num(epochs[e], "loss"), loss, "loss");
    expect_close(num(epochs[e], "train_acc"), acc, "train_acc");
    // The ranks' data differ, so a mean over ranks is not rank 0's figure.
    EXPECT_NE(num(r0[e], "loss"), num(r1[e], "loss"));
  }
  // Step records: every rank's window, combined the same way.
  const auto steps = of_kind(read_records(run() / "metrics.jsonl"), "step");
  const auto s0 = of_kind(read_records(run() / "rank_0.jsonl"), "step");
  const auto s1 = of_kind(read_records(run() / "rank_1.jsonl"), "step");
  ASSERT_EQ(steps.size(), 4u);  // steps 2, 4 (epoch 1), 6, 8 (epoch 2)
  ASSERT_EQ(s0.size(), 4u);
  ASSERT_EQ(s1.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const std::string what = fmt::format("step record {}", i);
    EXPECT_EQ(steps[i]["step"], int64_t(2 * (i + 1))) << what;
    EXPECT_EQ(steps[i]["epoch"], int64_t(i / 2 + 1)) << what;
    EXPECT_EQ(steps[i]["window_steps"], 2) << what;
    EXPECT_EQ(s0[i]["step"], steps[i]["step"]) << what;
    EXPECT_EQ(s1[i]["step"], steps[i]["step"]) << what;
    EXPECT_EQ(steps[i]["images"], 128) << what;  // 2 steps x 32 x 2 ranks
    const double n0 = num(s0[i], "samples"), n1 = num(s1[i], "samples");
    expect_close(num(steps[i], "loss"),
                 (num(s0[i], "loss") * n0 + num(s1[i], "loss") * n1) / (n0 + n1), what);
    const double t = std::max(num(s0[i], "step_time_s"), num(s1[i], "step_time_s")) * 2;
    EXPECT_NEAR(num(steps[i], "images_per_s"), 128.0 / t, 1e-9 * 128.0 / t) << what;
    EXPECT_EQ(num(steps[i], "step_time_s"), num(s0[i], "step_time_s")) << what;  // rank 0's
    EXPECT_GE(num(steps[i], "data_wait_s"), 0) << what;
    EXPECT_LE(num(steps[i], "data_wait_s"), num(steps[i], "step_time_s")) << what;
    EXPECT_GE(num(steps[i], "comm_exposed_wait_s"), 0) << what;
    EXPECT_DOUBLE_EQ(num(steps[i], "lr"), 0.02) << what;
  }
  // The epoch's loss is the mean of its step windows' (equal sample counts per window).
  for (size_t e = 0; e < 2; ++e)
    expect_close(num(epochs[e], "loss"),
                 (num(steps[2 * e], "loss") + num(steps[2 * e + 1], "loss")) / 2,
                 "epoch loss from its steps");
}

TEST_F(TwoRankRun, TimesAreMonotoneAndTheFinalRecordKeepsItsTotalsApart) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const auto m = read_records(run() / "metrics.jsonl");
  std::vector<std::string> kinds;
  for (const auto& j : m) kinds.push_back(j["kind"]);
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"step", "step", "epoch", "step", "step", "epoch", "final"}));
  const auto r0 = of_kind(read_records(run() / "rank_0.jsonl"), "rank_epoch");
  double prev_elapsed = 0, sum_time = 0;
  for (const auto& j : m) {
    if (!j.contains("elapsed_s")) continue;
    EXPECT_GT(num(j, "elapsed_s"), prev_elapsed) << j.dump();
    prev_elapsed = num(j, "elapsed_s");
  }
  const auto epochs = of_kind(m, "epoch");
  for (size_t e = 0; e < epochs.size(); ++e) {
    EXPECT_GT(num(epochs[e], "time_s"), 0);
    sum_time += num(epochs[e], "time_s");
    // Rank 0's epoch fits between the previous record and this one on its clock.
    const double before = e == 0 ? 0 : num(epochs[e - 1], "elapsed_s");
    EXPECT_LE(num(r0[e], "time_s"), num(epochs[e], "elapsed_s") - before);
    EXPECT_LE(sum_time, num(epochs[e], "elapsed_s") * 1.5) << "epoch times add up beyond the run";
  }
  const auto& fin = m.back();
  for (const char* k : {"time_s", "images_per_s", "images_per_s_rank", "elapsed_s"})
    EXPECT_FALSE(fin.contains(k)) << k << " in the final record: " << fin.dump();
  EXPECT_EQ(fin["total_images"], 512);
  expect_close(num(fin, "total_train_time_s"), sum_time, "total_train_time_s");
  expect_close(num(fin, "total_images_per_s"), 512.0 / sum_time, "total_images_per_s");
  EXPECT_GE(num(fin, "total_time_s"), prev_elapsed);
  EXPECT_EQ(fin["loss"], epochs.back()["loss"]);
}

TEST_F(TwoRankRun, EveryKeyIsInTheSchemaAndEveryRequiredKeyIsWritten) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const Schema schema = record_schema();
  ASSERT_GT(schema.size(), 5u) << "schema tables not found in docs/metrics_schema.md";
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& j : read_records(run() / "metrics.jsonl"))
    check_against_schema(schema, "metrics.jsonl", j, seen);
  for (const char* f : {"rank_0.jsonl", "rank_1.jsonl"})
    for (const auto& j : read_records(run() / f))
      check_against_schema(schema, "rank_R.jsonl", j, seen);
  for (const auto& k :
       std::vector<std::pair<std::string, std::string>>{{"metrics.jsonl", "epoch"},
                                                        {"metrics.jsonl", "final"},
                                                        {"metrics.jsonl", "step"},
                                                        {"rank_R.jsonl", "rank_epoch"},
                                                        {"rank_R.jsonl", "step"}})
    EXPECT_TRUE(seen.count(k)) << k.first << " " << k.second << " not written by the run";
}

// Under a virtual cluster the records carry time_base and the wall-clock figures beside the
// virtual ones (docs/metrics_schema.md, presence "virtual cluster"): every key is documented.
TEST(Metrics, AVirtualClusterRunsRecordsAreInTheSchemaWithTheirWallTimes) {
  ScopedTempDir dir("metrics-cluster");
  const auto r = test::run_dplab_mpi(2,
                                     kJob +
                                         " --algo allreduce --epochs 1 --set metrics.every_steps=2 "
                                         "--cluster cpu-10gbe --ranks-per-node 1 --out " +
                                         dir.file("run"),
                                     dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const Schema schema = record_schema();
  std::set<std::pair<std::string, std::string>> seen;
  const auto m = read_records(dir.path / "run" / "metrics.jsonl");
  for (const auto& j : m) check_against_schema(schema, "metrics.jsonl", j, seen);
  for (const char* f : {"rank_0.jsonl", "rank_1.jsonl"})
    for (const auto& j : read_records(dir.path / "run" / f)) {
      check_against_schema(schema, "rank_R.jsonl", j, seen);
      EXPECT_EQ(j["time_base"], "virtual:cpu-10gbe") << j.dump();
      EXPECT_TRUE(j.contains(j["kind"] == "step" ? "step_wall_s" : "wall_s")) << j.dump();
    }
  const std::map<std::string, std::vector<std::string>> wall_keys = {
      {"epoch", {"wall_s", "elapsed_wall_s"}},
      {"final", {"total_train_wall_s", "total_wall_s"}},
      {"step", {"step_wall_s", "elapsed_wall_s"}}};
  for (const auto& [kind, keys] : wall_keys) {
    const auto recs = of_kind(m, kind);
    ASSERT_FALSE(recs.empty()) << kind;
    for (const auto& j : recs) {
      EXPECT_EQ(j["time_base"], "virtual:cpu-10gbe") << j.dump();
      for (const auto& k : keys) EXPECT_TRUE(j.contains(k)) << kind << " " << k;
    }
  }
  const nlohmann::json rec = nlohmann::json::parse(slurp(dir.path / "run" / "run.json"));
  EXPECT_EQ(rec["time_base"], "virtual:cpu-10gbe");
  EXPECT_EQ(rec["nodes"], 2);
  EXPECT_EQ(rec["ranks_per_node_from"], "option cluster");
}

// An epoch's communication figures cover the window of its time_s, the training iterations:
// with a step record every step, the epoch's exposed wait is the sum of its steps' (the set-up
// broadcast and the buffer averaging before each evaluation are no step's), so it never
// exceeds the epoch's time. What happens outside the iterations is in the final record; the
// set-up broadcast alone sends every parameter (4 bytes each, mnist_cnn's count from the run
// header).
TEST(Metrics, AnEpochsCommunicationCoversItsIterationsOnly) {
  ScopedTempDir dir("metrics-comm-window");
  const auto r = test::run_dplab_mpi(2,
                                     kJob +
                                         " --algo allreduce --epochs 2 --set metrics.every_steps=1 "
                                         "--cluster cpu-10gbe --ranks-per-node 1 --out " +
                                         dir.file("run"),
                                     dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"rank_0.jsonl", "rank_1.jsonl"}) {
    const auto recs = read_records(dir.path / "run" / f);
    const auto epochs = of_kind(recs, "rank_epoch");
    ASSERT_EQ(epochs.size(), 2u) << f;
    for (const auto& e : epochs) {
      double steps_wait = 0;
      int steps = 0;
      for (const auto& st : of_kind(recs, "step"))
        if (st["epoch"] == e["epoch"]) {
          steps_wait += num(st, "comm_exposed_wait_s") * num(st, "window_steps");
          steps += int(num(st, "window_steps"));
        }
      EXPECT_EQ(steps, 4) << f;  // 256 images / (32 x 2 ranks)
      EXPECT_NEAR(num(e, "comm_exposed_wait_s"), steps_wait, 1e-9 + 1e-9 * steps_wait)
          << f << " " << e.dump();
      EXPECT_LE(num(e, "comm_exposed_wait_s"), num(e, "time_s")) << f << " " << e.dump();
      EXPECT_LE(num(e, "idle_fraction"), 1.0) << f;
    }
  }
  const auto fin = of_kind(read_records(dir.path / "run" / "metrics.jsonl"), "final");
  ASSERT_EQ(fin.size(), 1u);
  const size_t at = r.out.find("model mnist_cnn (");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::string digits;
  for (size_t i = at + 17; i < r.out.size() && r.out[i] != ' '; ++i)
    if (r.out[i] != ',') digits += r.out[i];
  const double params = std::stod(digits);
  EXPECT_GE(num(fin[0], "comm_outside_epochs_bytes"), 4 * params) << fin[0].dump();
  EXPECT_GE(num(fin[0], "comm_outside_epochs_exposed_wait_s"), 0.0);
}

// Hybrid SGD in mode only_end trains locally and averages the parameters once, after the last
// epoch's iterations (finish_training): no epoch counts an allreduce, the final record counts
// that one and the evaluation of epoch 1's run's model, the ranks' average (issue #33 item 3;
// mnist_cnn has no BatchNorm buffers to average besides).
TEST(Metrics, AFinalParameterAverageIsOutsideTheEpochs) {
  ScopedTempDir dir("metrics-final-average");
  const auto r = test::run_dplab_mpi(
      2, kJob + " --algo hybrid --set hybrid.mode=only_end --epochs 2 --out " + dir.file("run"),
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto m = read_records(dir.path / "run" / "metrics.jsonl");
  for (const auto& e : of_kind(m, "epoch")) EXPECT_EQ(num(e, "comm_allreduces"), 0) << e.dump();
  const auto fin = of_kind(m, "final");
  ASSERT_EQ(fin.size(), 1u);
  EXPECT_EQ(num(fin[0], "comm_outside_epochs_allreduces"), 2) << fin[0].dump();
}

TEST_F(TwoRankRun, HeaderAndRunRecordHoldTheDocumentedFields) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const std::string& out = result_->out;
  EXPECT_NE(out.find("model mnist_cnn ("), std::string::npos) << out;
  EXPECT_NE(out.find("parameters), algorithm allreduce"), std::string::npos) << out;
  EXPECT_NE(out.find("global batch 64 = 32 per rank x 2 ranks x 1 accumulation step"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1 thread per rank; data fashion-mnist: 256 train / 100 test samples"),
            std::string::npos)
      << out;
  EXPECT_LT(out.find("global batch"), out.find("epoch 1/2")) << "the header comes first";
  EXPECT_EQ(out.find("failures:"), std::string::npos) << "no fail events, no failure line";

  const nlohmann::json rec = nlohmann::json::parse(slurp(run() / "run.json"));
  // Every field but those the schema marks "only ..." (written under a condition: fail events),
  // and nothing else.
  std::set<std::string> always, conditional, written;
  for (const auto& row : schema_rows("run.json field"))
    (row.at(1).starts_with("only ") ? conditional : always).insert(row.at(0));
  for (const auto& [k, v] : rec.items()) written.insert(k);
  EXPECT_EQ(written, always);
  EXPECT_EQ(conditional, (std::set<std::string>{"failure_lost_rank_s", "recovery_s"}));
  EXPECT_EQ(rec["world_size"], 2);
  EXPECT_EQ(rec["global_batch"], 64);
  EXPECT_EQ(rec["eval_batch_per_rank"], 32);  // eval.batch 0: the training batch (--batch 32)
  EXPECT_EQ(rec["algorithm"], "allreduce");
  EXPECT_EQ(rec["time_base"], "wall");  // no virtual cluster
  EXPECT_EQ(rec["host_names"].size(), 2u);
  EXPECT_EQ(rec["ranks_per_node"], 2);  // both ranks on this host
  EXPECT_EQ(rec["nodes"], 1);
  EXPECT_TRUE(std::regex_match(rec["start_time"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << rec["start_time"];
  EXPECT_NE(rec["command_line"].dump().find("metrics.every_steps=2"), std::string::npos);
  for (const char* k : {"dplab_version", "git_commit", "git_dirty", "compiler", "onednn", "mpi"})
    EXPECT_FALSE(rec["build"][k].get<std::string>().empty()) << k;
  EXPECT_TRUE(rec["build"].contains("cuda"));
  // Options: value and whether it is the default.
  const auto& o = rec["options"];
  EXPECT_EQ(o["lr"]["value"], "0.02");
  EXPECT_EQ(o["lr"]["is_default"], false);
  EXPECT_EQ(o["lr"]["set"], true);
  EXPECT_EQ(o["momentum"]["is_default"], true);  // set, to the default
  EXPECT_EQ(o["momentum"]["set"], true);
  EXPECT_EQ(o["wd"]["is_default"], true);
  EXPECT_EQ(o["wd"]["set"], false);
  EXPECT_EQ(o["metrics.every_steps"]["value"], "2");
  EXPECT_TRUE(o.contains("allreduce.bucket_cap_mb") || o.contains("comm"))
      << "the algorithm's own keys are recorded too";
  for (const char* k : {"out", "resume", "resume.override"}) {
    EXPECT_FALSE(o.contains(k)) << k;
    EXPECT_TRUE(rec["run"].contains(k)) << k;
  }
}

// run.json as a --config: a fresh run into another directory, bitwise the same.
TEST_F(TwoRankRun, RunJsonRerunsBitwise) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const fs::path again = dir_->path / "again";
  const auto r = test::run_dplab_mpi(
      2, "train --config " + (run() / "run.json").string() + " --out " + again.string(),
      dir_->path / "again-scratch");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(again / "final.safetensors"));
  EXPECT_TRUE(slurp(again / "final.safetensors") == slurp(run() / "final.safetensors"))
      << "final.safetensors differs";
  // The same losses and the same options read (the re-run's record lists them as set).
  const auto a = of_kind(read_records(run() / "metrics.jsonl"), "epoch");
  const auto b = of_kind(read_records(again / "metrics.jsonl"), "epoch");
  ASSERT_EQ(a.size(), b.size());
  for (size_t e = 0; e < a.size(); ++e) EXPECT_EQ(a[e]["loss"], b[e]["loss"]);
  const auto oa = nlohmann::json::parse(slurp(run() / "run.json"))["options"];
  const auto ob = nlohmann::json::parse(slurp(again / "run.json"))["options"];
  ASSERT_EQ(oa.size(), ob.size());
  for (const auto& [k, v] : oa.items()) {
    EXPECT_EQ(v["value"], ob[k]["value"]) << k;
    EXPECT_EQ(v["is_default"], ob[k]["is_default"]) << k;
    EXPECT_EQ(ob[k]["set"], true) << k;
  }
  // The recorded run is untouched: its own run.json still names its directory.
  EXPECT_EQ(nlohmann::json::parse(slurp(run() / "run.json"))["run"]["out"]["value"],
            run().string());
}

// Training is bitwise the same with step records on (an exchange every step) and off.
TEST_F(TwoRankRun, StepRecordsDoNotChangeTraining) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const fs::path off = dir_->path / "off";
  const auto r = test::run_dplab_mpi(2, kJob + " --algo allreduce --epochs 2 --out " + off.string(),
                                     dir_->path / "off-scratch");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(slurp(off / "final.safetensors") == slurp(run() / "final.safetensors"));
  EXPECT_TRUE(of_kind(read_records(off / "metrics.jsonl"), "step").empty());
}

TEST(Metrics, OneRankPrintsItsRateWithoutTheGlobalLabel) {
  ScopedTempDir dir("metrics-1rank");
  const auto r =
      run_dplab(kJob + " --max-steps 3 --set progress=lines --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(" img/s\n"), std::string::npos) << r.err;  // one rank: no scope to say
  EXPECT_EQ(r.err.find("rank 0's own"), std::string::npos) << r.err;
  const auto m = read_records(dir.path / "run" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]["images"], 96);  // 3 steps of 32
  EXPECT_EQ(num(m[0], "images_per_s"), num(m[0], "images_per_s_rank"));
  expect_close(num(m[0], "images_per_s"), 96.0 / num(m[0], "time_s"), "images_per_s");
  EXPECT_EQ(r.out.find("global ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" img/s  "), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir.path / "run" / "rank_0.jsonl"));
  EXPECT_TRUE(fs::exists(dir.path / "run" / "run.json"));
  const auto bad = run_dplab(kJob + " --max-steps 1 --set metrics.every_steps=-1", dir.path / "b");
  EXPECT_EQ(bad.status, 2);  // a usage error
  EXPECT_NE(bad.err.find("option metrics.every_steps: expected an integer >= 0, got '-1'"),
            std::string::npos)
      << bad.err;
}

// `dplab plot` draws epoch series: a run's step and final records stay out of them.
TEST_F(TwoRankRun, PlotSeriesHoldEpochRecordsOnly) {
  ASSERT_EQ(result_->status, 0) << result_->err;
  const auto epochs = of_kind(read_records(run() / "metrics.jsonl"), "epoch");
  const auto file = plot::read_metrics_file((run() / "metrics.jsonl").string());
  plot::SeriesRequest req;
  req.x_key = "epoch";
  req.y_key = "loss";
  const auto s = plot::series_of(file, req).series;
  ASSERT_EQ(s.x, (std::vector<double>{1, 2}));
  EXPECT_EQ(s.y, (std::vector<double>{num(epochs[0], "loss"), num(epochs[1], "loss")}));
  req.x_key = "elapsed_s";
  const auto t = plot::series_of(file, req);
  EXPECT_FALSE(t.elapsed_from_time_s);  // the records' own elapsed_s
  ASSERT_EQ(t.series.x.size(), 2u);
  EXPECT_LT(t.series.x[0], t.series.x[1]);
}

// A resumed run's record re-runs as a fresh run: the uninterrupted run, not a second resume.
TEST(Metrics, RunJsonOfAResumedRunRerunsTheUninterruptedRun) {
  ScopedTempDir dir("metrics-resumed");
  const std::string job = kJob + " --epochs 2";
  auto r = run_dplab(job + " --max-steps 5 --out " + dir.file("a"), dir.path / "1");
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(job + " --resume " + dir.file("a") + " --out " + dir.file("a"), dir.path / "2");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rec = nlohmann::json::parse(slurp(dir.path / "a" / "run.json"));
  EXPECT_EQ(rec["run"]["resume"]["value"], dir.file("a"));
  EXPECT_FALSE(rec["options"].contains("resume"));
  r = run_dplab("train --config " + dir.file("a/run.json") + " --out " + dir.file("b"),
                dir.path / "3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("resumed from"), std::string::npos) << r.out;
  EXPECT_TRUE(slurp(dir.path / "b" / "final.safetensors") ==
              slurp(dir.path / "a" / "final.safetensors"));
  // And that is the uninterrupted run's model.
  r = run_dplab(job + " --out " + dir.file("c"), dir.path / "4");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(slurp(dir.path / "c" / "final.safetensors") ==
              slurp(dir.path / "b" / "final.safetensors"));
}

// elapsed_s continues across a resume: the checkpoint carries the run's elapsed time, so a
// metrics.jsonl that a resumed run appends to stays in time order. The first process trains
// two epochs and is stopped (max_steps) after the second's checkpoint; the resumed process
// trains the third. Counting from its own start (the old behaviour) the third epoch's record
// would show about one epoch of time, less than the second's two.
TEST(Metrics, ElapsedContinuesAcrossAResume) {
  ScopedTempDir dir("metrics-elapsed-resume");
  const std::string job = kJob + " --epochs 3 --out " + dir.file("a");
  auto r = run_dplab(job + " --max-steps 16", dir.path / "1");  // 8 steps per epoch
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(job + " --resume " + dir.file("a"), dir.path / "2");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_NE(r.out.find("at epoch 3 step 0"), std::string::npos) << r.out;
  const auto epochs = of_kind(read_records(dir.path / "a" / "metrics.jsonl"), "epoch");
  ASSERT_EQ(epochs.size(), 3u);
  for (size_t e = 1; e < epochs.size(); ++e)
    EXPECT_GT(num(epochs[e], "elapsed_s"), num(epochs[e - 1], "elapsed_s"))
        << "epoch " << e + 1 << " after epoch " << e;
}

TEST(Metrics, JsonConfigErrorsNameTheFileAndWhere) {
  ScopedTempDir dir("metrics-config");
  const std::string bad = dir.file("bad.json");
  std::ofstream(bad) << "{\"options\": {\"lr\": 0.1,}}";
  auto r = run_dplab("train --config " + bad, dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(bad + ": not valid JSON at byte offset 24"), std::string::npos) << r.err;
  const std::string no_options = dir.file("list.json");
  std::ofstream(no_options) << "[1, 2]";
  r = run_dplab("train --config " + no_options, dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("expected a run record"), std::string::npos) << r.err;
  const std::string wrong = dir.file("wrong.json");
  std::ofstream(wrong) << R"({"options": {"lr": {"value": null}}})";
  r = run_dplab("train --config " + wrong, dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(wrong + ": option lr: expected a number >= 0, found null"),
            std::string::npos)
      << r.err;
  // Plain JSON values work too, and the command line overrides the file.
  const std::string plain = dir.file("plain.json");
  std::ofstream(plain) << R"({"options": {"model": "mnist_cnn", "data": "fashion-mnist",
      "batch": 32, "lr": 0.05, "nesterov": true, "data.train_limit": 64,
      "data.test_limit": 50, "threads": 1, "progress": "off", "max_steps": 1}})";
  r = run_dplab("train --config " + plain + " --lr 0.03 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rec = nlohmann::json::parse(slurp(dir.path / "run" / "run.json"));
  EXPECT_EQ(rec["options"]["lr"]["value"], "0.03");
  EXPECT_EQ(rec["options"]["nesterov"]["value"], "true");
  EXPECT_EQ(rec["options"]["batch"]["value"], "32");
}

}  // namespace
}  // namespace dplab
