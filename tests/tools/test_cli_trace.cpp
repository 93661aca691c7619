// `dplab trace` end to end: the summary table and --json of a hand-built two-rank trace
// (trace_fixture.h has the figures worked out), the per-rank files of a stopped run, the errors,
// and the figure files by extension.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "data/temp_dir.h"
#include "run_cli.h"
#include "trace_fixture.h"

namespace dplab {
namespace {

using nlohmann::json;
using test::run_dplab;
using test::ScopedTempDir;

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// The line of `text` that starts with `prefix`.
std::string line_of(const std::string& text, const std::string& prefix) {
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    if (line.rfind(prefix, 0) == 0) return line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

TEST(CliTrace, TableHasTheHandValuesPerRankAndMean) {
  ScopedTempDir dir("cli-trace-table");
  write(dir.path / "run" / "trace.json", test::two_rank_trace().dump());
  const auto r = run_dplab("trace " + (dir.path / "run").string(), dir.path / "o");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("window: steps 10:13 (trace.steps), world size 2, 3 steps found (global "
                       "steps 10 to 12), 2 ranks with steps"),
            std::string::npos)
      << r.out;
  // step, compute, forward, backward, optimizer, data wait, in flight, exposed (ms), overlap.
  EXPECT_EQ(words(line_of(r.out, "rank 0 ")),
            (std::vector<std::string>{"rank", "0", "10.000", "9.000", "3.000", "5.000", "1.000",
                                      "0.500", "4.000", "0.500", "87.5", "%"}))
      << r.out;
  EXPECT_EQ(words(line_of(r.out, "rank 1 ")),
            (std::vector<std::string>{"rank", "1", "13.000", "10.000", "4.000", "5.000", "1.000",
                                      "1.000", "4.000", "0.300", "92.5", "%"}));
  EXPECT_EQ(words(line_of(r.out, "mean over ranks ")),
            (std::vector<std::string>{"mean", "over", "ranks", "11.500", "9.500", "3.500", "5.000",
                                      "1.000", "0.750", "4.000", "0.400", "90.0", "%"}));
  EXPECT_NE(r.out.find("slowest rank: 1 (mean step time 13.000 ms); skew between ranks: 26.1 %"),
            std::string::npos);
  // Operations (here GradSync's buckets, "allreduce bucket K"): calls per step, in flight per
  // call and per step (ms), payload and wire bytes per call (MB; wire = payload for a ring
  // allreduce at P = 2), wire bandwidth (GB/s), ready-to-launch delay (ms); rank 0's first, then
  // rank 1's, then the means.
  std::vector<std::vector<std::string>> ops;
  std::istringstream in(r.out.substr(r.out.find("communication by operation")));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("rank ", 0) == 0 || line.rfind("mean over ranks", 0) == 0)
      ops.push_back(words(line));
  const std::vector<std::vector<std::string>> want = {
      {"rank", "0", "allreduce", "bucket", "0", "1.00", "2.000", "2.000", "4.000", "4.000", "2.000",
       "0.200"},
      {"rank", "0", "allreduce", "bucket", "1", "1.00", "2.500", "2.500", "1.000", "1.000", "0.400",
       "0.500"},
      {"rank", "1", "allreduce", "bucket", "0", "1.00", "3.000", "3.000", "4.000", "4.000", "1.333",
       "0.100"},
      {"rank", "1", "allreduce", "bucket", "1", "1.00", "1.000", "1.000", "1.000", "1.000", "1.000",
       "0.300"},
      {"mean", "over", "ranks", "allreduce", "bucket", "0", "1.00", "2.500", "2.500", "4.000",
       "4.000", "1.600", "0.150"},
      {"mean", "over", "ranks", "allreduce", "bucket", "1", "1.00", "1.750", "1.750", "1.000",
       "1.000", "0.571", "0.400"}};
  EXPECT_EQ(ops, want) << r.out;
  EXPECT_NE(r.out.find("wall time"), std::string::npos);
  EXPECT_EQ(r.out.find("virtual"), std::string::npos);
  EXPECT_EQ(r.out.find("outside the steps"), std::string::npos);  // none in this trace
}

// Every communication event, by operation name, and the events after the last step apart
// (trace_fixture.h operations_trace has the figures); a virtual-time trace says so everywhere.
TEST(CliTrace, EveryOperationIsARowAndVirtualTimeIsSaid) {
  ScopedTempDir dir("cli-trace-ops");
  write(dir.path / "run" / "trace.json", test::operations_trace("virtual:testlab").dump());
  const auto r = run_dplab("trace " + (dir.path / "run").string(), dir.path / "o");
  ASSERT_EQ(r.status, 0) << r.err;
  // The row of `label` for `op` in the section that starts with `section`: the words after
  // the operation's name.
  const auto row = [&](const std::string& section, const std::string& label,
                       const std::string& op) {
    // The label takes the first 16 characters, the operation's name follows.
    std::istringstream in(r.out.substr(r.out.find(section)));
    for (std::string line; std::getline(in, line);)
      if (line.rfind(label + " ", 0) == 0 && line.size() > 16 &&
          line.substr(16).rfind(op + "  ", 0) == 0)
        return words(line.substr(16 + op.size()));
    return std::vector<std::string>{};
  };
  using W = std::vector<std::string>;
  const std::string ops = "communication by operation";
  // calls per step, in flight per call, per step (ms), payload, wire (MB), wire GB/s, delay.
  EXPECT_EQ(row(ops, "rank 0", "broadcast"),
            (W{"0.50", "0.400", "0.200", "0.800", "0.600", "1.500", "-"}))
      << r.out;
  EXPECT_EQ(row(ops, "rank 2", "daso global sync"),
            (W{"0.50", "1.000", "0.500", "2.000", "n/a", "n/a", "-"}));
  EXPECT_EQ(row(ops, "rank 3", "gossip exchange"),
            (W{"1.00", "2.000", "2.000", "1.000", "1.000", "0.500", "-"}));
  EXPECT_EQ(row(ops, "rank 0", "outer gradient"),
            (W{"0.50", "0.500", "0.250", "4.000", "6.000", "12.000", "-"}));
  EXPECT_EQ(row(ops, "rank 3", "outer gradient"),
            (W{"0.50", "2.000", "1.000", "4.000", "6.000", "3.000", "-"}));
  EXPECT_EQ(row(ops, "mean over ranks", "outer gradient"),
            (W{"0.50", "1.250", "0.625", "4.000", "6.000", "4.800", "-"}))
      << r.out;
  // Outside the steps: calls, in flight per call and in total (ms), payload, wire, GB/s.
  const std::string outside = "communication outside the steps";
  EXPECT_EQ(row(outside, "rank 1", "final average"),
            (W{"1.00", "1.000", "1.000", "4.000", "6.000", "6.000"}));
  EXPECT_EQ(row(outside, "mean over ranks", "final average"),
            (W{"1.00", "1.000", "1.000", "4.000", "6.000", "6.000"}));
  EXPECT_NE(r.out.find("rank 2: exposed wait outside the steps 1.000 ms"), std::string::npos);
  // Virtual time everywhere: the step table, the operations, the time base line.
  EXPECT_EQ(r.out.find("wall"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("time base: virtual:testlab"), std::string::npos);
  EXPECT_NE(r.out.find("mean over the window's steps, virtual time in ms"), std::string::npos);
  // The mean over ranks of the step figures: in flight 3.325 ms, exposed 0.625 ms.
  EXPECT_EQ(words(line_of(r.out, "mean over ranks ")),
            (W{"mean", "over", "ranks", "10.000", "8.000", "3.000", "4.000", "1.000", "0.000",
               "3.325", "0.625", "81.2", "%"}));
  const auto j = run_dplab("trace " + (dir.path / "run").string() + " --json", dir.path / "o");
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["time_base"], "virtual:testlab");
  const auto f =
      run_dplab(fmt::format("trace {} --out {}", (dir.path / "run").string(), dir.file("t.svg")),
                dir.path / "o");
  ASSERT_EQ(f.status, 0) << f.err;
  EXPECT_NE(f.out.find("of 4 ranks, virtual time"), std::string::npos) << f.out;
}

TEST(CliTrace, JsonHasTheDocumentedKeysAndTheHandValues) {
  ScopedTempDir dir("cli-trace-json");
  write(dir.path / "trace.json", test::two_rank_trace().dump());
  const auto r =
      run_dplab("trace " + (dir.path / "trace.json").string() + " --json", dir.path / "o");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  for (const char* k : {"files", "from_rank_files", "window", "time_base", "world_size",
                        "steps_found", "first_step", "last_step", "units", "ranks",
                        "mean_over_ranks", "slowest_rank", "slowest_step_time_s", "skew"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["window"], "10:13");
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["steps_found"], 3);
  EXPECT_EQ(j["from_rank_files"], false);
  EXPECT_EQ(j["slowest_rank"], 1);
  EXPECT_DOUBLE_EQ(j["slowest_step_time_s"].get<double>(), 0.013);
  EXPECT_NEAR(j["skew"].get<double>(), 3.0 / 11.5, 1e-12);
  ASSERT_EQ(j["ranks"].size(), 2u);
  const std::vector<std::string> per_rank_keys = {"rank",
                                                  "name",
                                                  "steps",
                                                  "step_time_s",
                                                  "compute_s",
                                                  "forward_s",
                                                  "backward_s",
                                                  "optimizer_s",
                                                  "data_wait_s",
                                                  "comm_in_flight_s",
                                                  "exposed_wait_s",
                                                  "overlap",
                                                  "incomplete_events",
                                                  "operations",
                                                  "outside_steps"};
  for (const auto& k : per_rank_keys) EXPECT_TRUE(j["ranks"][0].contains(k)) << k;
  const json& r1 = j["ranks"][1];
  EXPECT_EQ(r1["rank"], 1);
  EXPECT_EQ(r1["name"], "rank 1 (node 0, hostA)");
  EXPECT_EQ(r1["steps"], 3);
  EXPECT_NEAR(r1["step_time_s"].get<double>(), 0.013, 1e-15);
  EXPECT_NEAR(r1["compute_s"].get<double>(), 0.010, 1e-15);
  EXPECT_NEAR(r1["data_wait_s"].get<double>(), 0.001, 1e-15);
  EXPECT_NEAR(r1["comm_in_flight_s"].get<double>(), 0.004, 1e-15);
  EXPECT_NEAR(r1["exposed_wait_s"].get<double>(), 0.0003, 1e-15);
  EXPECT_NEAR(r1["overlap"].get<double>(), 0.925, 1e-12);
  const json& b = j["mean_over_ranks"]["operations"][1];
  for (const char* k : {"name", "bucket", "events", "calls_per_step", "ready_to_launch_s",
                        "duration_s", "in_flight_per_step_s", "in_flight_total_s", "bytes",
                        "wire_bytes", "wire_bandwidth_bytes_per_s"})
    EXPECT_TRUE(b.contains(k)) << k;
  EXPECT_EQ(b["name"], "allreduce bucket 1");
  EXPECT_EQ(b["bucket"], 1);
  EXPECT_EQ(b["events"], 6);
  EXPECT_NEAR(b["calls_per_step"].get<double>(), 1, 1e-15);
  EXPECT_NEAR(b["ready_to_launch_s"].get<double>(), 0.0004, 1e-15);
  EXPECT_NEAR(b["duration_s"].get<double>(), 0.00175, 1e-15);
  EXPECT_NEAR(b["in_flight_total_s"].get<double>(), 0.00525, 1e-15);  // 3 calls per rank
  EXPECT_EQ(b["bytes"].get<double>(), 1e6);
  EXPECT_EQ(b["wire_bytes"].get<double>(), 1e6);
  EXPECT_NEAR(b["wire_bandwidth_bytes_per_s"].get<double>(), 1e6 / 1.75e-3, 1e-3);
  EXPECT_EQ(j["time_base"], "wall");
  EXPECT_TRUE(j["mean_over_ranks"]["outside_steps"]["operations"].empty());
  EXPECT_NEAR(j["mean_over_ranks"]["overlap"].get<double>(), 0.9, 1e-12);
}

// A run stopped before rank 0 merged: trace/rank_R.json only. Same figures, and it says so.
TEST(CliTrace, PerRankFilesOfAStoppedRun) {
  ScopedTempDir dir("cli-trace-ranks");
  const json all = test::two_rank_trace();
  for (int rank = 0; rank < 2; ++rank) {
    json one = all;
    one["traceEvents"] = json::array();
    for (const auto& e : all["traceEvents"])
      if (e["pid"] == rank) one["traceEvents"].push_back(e);
    one["otherData"]["rank"] = rank;
    write(dir.path / "run" / "trace" / fmt::format("rank_{}.json", rank), one.dump());
  }
  const auto r = run_dplab("trace " + (dir.path / "run").string(), dir.path / "o");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("note: no trace.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank_0.json"), std::string::npos);
  EXPECT_NE(r.out.find("rank_1.json"), std::string::npos);
  EXPECT_EQ(words(line_of(r.out, "mean over ranks ")),
            (std::vector<std::string>{"mean", "over", "ranks", "11.500", "9.500", "3.500", "5.000",
                                      "1.000", "0.750", "4.000", "0.400", "90.0", "%"}))
      << r.out;
  const auto j = run_dplab("trace " + (dir.path / "run").string() + " --json", dir.path / "o");
  EXPECT_EQ(json::parse(j.out)["from_rank_files"], true);
}

TEST(CliTrace, ErrorsNameWhatIsWrong) {
  ScopedTempDir dir("cli-trace-errors");
  auto r = run_dplab("trace " + (dir.path / "nothing").string(), dir.path / "o");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("nothing: no such file or directory"), std::string::npos) << r.err;

  std::filesystem::create_directories(dir.path / "empty_run");
  r = run_dplab("trace " + (dir.path / "empty_run").string(), dir.path / "o");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("neither trace.json nor trace/rank_*.json found"), std::string::npos)
      << r.err;

  write(dir.path / "bad.json", R"({"traceEvents": [)");
  r = run_dplab("trace " + (dir.path / "bad.json").string(), dir.path / "o");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("bad.json: not valid JSON at byte 18 of 17"), std::string::npos) << r.err;

  json doc = test::two_rank_trace();
  doc["traceEvents"][7]["args"].erase("bytes");  // rank 0's "allreduce bucket 1" of step 10
  write(dir.path / "field.json", doc.dump());
  r = run_dplab("trace " + (dir.path / "field.json").string(), dir.path / "o");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("field.json: traceEvents[7]: missing field args.bytes"), std::string::npos)
      << r.err;

  write(dir.path / "empty.json", test::trace_doc(json::array(), 2, "100:110").dump());
  r = run_dplab("trace " + (dir.path / "empty.json").string() + " --json", dir.path / "o");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no step event in the trace (an empty window"), std::string::npos) << r.err;
}

TEST(CliTrace, FigureByExtension) {
  ScopedTempDir dir("cli-trace-figure");
  write(dir.path / "run" / "trace.json", test::two_rank_trace().dump());
  const std::string run = (dir.path / "run").string();
  for (const char* ext : {"svg", "pdf", "png"}) {
    const std::string out = dir.file(fmt::format("t.{}", ext));
    const auto r =
        run_dplab(fmt::format("trace {} --out {} --steps 11:13", run, out), dir.path / "o");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(fmt::format("wrote {}: steps 11 to 12 of 2 ranks", out)),
              std::string::npos)
        << r.out;
    const std::map<std::string, std::string> magic = {
        {"svg", "<?xml"}, {"pdf", "%PDF-"}, {"png", "\x89PNG\r"}};
    EXPECT_EQ(test::slurp(out).substr(0, 5), magic.at(ext)) << out;
  }
  auto r = run_dplab(fmt::format("trace {} --out {}", run, dir.file("t.jpg")), dir.path / "o");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("extension '.jpg': use .png, .svg or .pdf"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.jpg")));
  r = run_dplab(fmt::format("trace {} --out {} --steps 3-4", run, dir.file("t.svg")),
                dir.path / "o");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--steps '3-4': expected A:B"), std::string::npos) << r.err;
  r = run_dplab(fmt::format("trace {} --out {} --steps 0:5", run, dir.file("t.svg")),
                dir.path / "o");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("steps 0:5: the trace holds steps 10 to 12 only"), std::string::npos)
      << r.err;
  r = run_dplab(fmt::format("trace {} --json --out {}", run, dir.file("t.svg")), dir.path / "o");
  EXPECT_EQ(r.status, 2);
  r = run_dplab(fmt::format("trace {} --steps 1:2", run), dir.path / "o");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("give --out too"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dplab
