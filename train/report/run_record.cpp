#include "dplab/train/report/run_record.h"
#include "dplab/comm/comm_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "dplab/core/error.h"
#include "dplab/train/config/config.h"
#include "dplab/train/report/build_info.h"
#include "dplab/train/report/epoch_record.h"

namespace dplab {
namespace {

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown";
  return host;
}

// This process's arguments (Linux: /proc/self/cmdline, NUL-separated), so the driver needs
// no argv.
std::vector<std::string> command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  return args;
}

std::string option_default_or_read(const Options& opt, const std::string& key) {
  for (const auto& s : train_option_specs())
    if (s.key == key) return s.default_value;
  return opt.default_read(key).value_or("");
}

}  // namespace

bool run_record_excludes(const std::string& key) {
  return key == "out" || key == "resume" || key == "resume.override" || key == "resume.reshard";
}

std::string utc_iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json run_record(const Options& opt, const RunFacts& f,
                          const std::vector<std::string>& hosts) {
  // Every option the run read, with the value it got (set or defaulted) and its default: the
  // table's (train/config/config.cpp) or, for the algorithms' and schedules' own keys, the one
  // their reader passed.
  nlohmann::json options = nlohmann::json::object(), not_read = nlohmann::json::object();
  nlohmann::json run_only = nlohmann::json::object();
  const auto read = opt.read_values();
  for (const auto& [k, v] : read) {
    const bool set = opt.values().count(k) != 0;
    const std::optional<std::string> def =
        opt.default_read(k) ? std::optional(option_default_or_read(opt, k)) : std::nullopt;
    nlohmann::json e = {{"value", v}, {"set", set}};
    if (f.optimizer_defaulted.count(k)) {
      // Unset, so the optimizer's own default (AdamW's lr is PyTorch's 0.001, not the table's).
      e["default"] = v;
      e["is_default"] = true;
      e["default_from"] = "optim " + f.optimizer;
    } else if (def) {
      e["default"] = *def;
      e["is_default"] = v == *def;
    } else {
      e["default"] = nullptr;  // read without a default (required)
      e["is_default"] = false;
    }
    (run_record_excludes(k) ? run_only : options)[k] = e;
  }
  for (const auto& s : train_option_specs())
    if (!read.count(s.key)) not_read[s.key] = s.default_value;

  std::map<std::string, int> per_host;
  for (const auto& h : hosts) ++per_host[h];
  int most = 0;
  for (const auto& [h, n] : per_host) most = std::max(most, n);
  const int world = int(hosts.size());
  // Virtual nodes (the option, comm/topology.h) or the hosts the ranks run on.
  const int64_t virtual_rpn = communicator_option_table().get_int(opt, "ranks_per_node");
  const bool cuda = f.device.rfind("cuda", 0) == 0;
  nlohmann::json plugins = nlohmann::json::array();
  for (const PluginRecord& p : f.plugins)
    plugins.push_back({{"path", p.path}, {"sha256", p.sha256}});
  nlohmann::json cmd = nlohmann::json::array();
  for (const auto& a : command_line()) cmd.push_back(a);
  return {
      {"format", "dplab run record"},
      {"format_version", 1},
      {"options", options},
      {"run", run_only},
      {"options_not_read", not_read},
      {"model", f.model},
      {"parameters", f.parameters},
      {"algorithm", f.algo},
      {"optimizer",
       {{"name", f.optimizer},
        {"defaults_from", f.optimizer_defaults_from},
        {"defaulted", f.optimizer_defaulted}}},
      {"world_size", world},
      {"nodes", f.cluster_nodes > 0 ? int64_t(f.cluster_nodes)
                : virtual_rpn > 0   ? (world + virtual_rpn - 1) / virtual_rpn
                                    : int64_t(per_host.size())},
      {"hosts", per_host.size()},
      {"ranks_per_node", f.cluster_nodes > 0 ? int64_t(f.cluster_ranks_per_node)
                         : virtual_rpn > 0   ? virtual_rpn
                                             : int64_t(most)},
      {"ranks_per_node_from", f.cluster_nodes > 0 ? "option cluster"
                              : virtual_rpn > 0   ? "option ranks_per_node"
                                                  : "host names"},
      {"time_base", f.time_base},
      {"batch_per_rank", f.batch},
      {"accumulate_steps", f.accumulate_steps},
      {"global_batch", f.batch * world * f.accumulate_steps},
      {"eval_batch_per_rank", f.eval_batch},
      {"device", f.device},
      {"threads_per_rank", f.threads},
      {"data",
       {{"name", f.data}, {"train_samples", f.train_samples}, {"test_samples", f.test_samples}}},
      {"build", build_info(cuda)},
      {"host_names", hosts},
      {"command_line", cmd},
      {"start_time", utc_iso8601(f.start)},
      {"plugins", plugins},
  };
}

void record_run_start(const Options& opt, const RankGroup& ranks, const RunFacts& f,
                      std::ostream& out) {
  const std::vector<std::string> hosts = ranks.allgather(host_name());
  if (ranks.rank() != 0) return;
  const nlohmann::json rec = run_record(opt, f, hosts);
  const std::string out_dir = train_option_table().get_string(opt, "out");
  const auto& b = rec["build"];
  const std::string commit = b["git_commit"].get<std::string>();
  const int world = rec["world_size"].get<int>();
  const int64_t global = rec["global_batch"].get<int64_t>();
  out << fmt::format("dplab {} ({}{}): model {} ({} parameters), algorithm {}\n",
                     b["dplab_version"].get<std::string>(), commit.substr(0, 12),
                     b["git_dirty"] == "true" ? ", modified" : "", f.model,
                     grouped_rate(double(f.parameters)), f.algo);
  out << fmt::format(
      "  {} rank{} on {} node{} ({} per node, from {}); global batch {} = {} per rank x {} "
      "rank{} x {} accumulation step{}\n",
      world, world == 1 ? "" : "s", rec["nodes"].get<int64_t>(),
      rec["nodes"].get<int64_t>() == 1 ? "" : "s", rec["ranks_per_node"].get<int64_t>(),
      rec["ranks_per_node_from"].get<std::string>(), global, f.batch, world, world == 1 ? "" : "s",
      f.accumulate_steps, f.accumulate_steps == 1 ? "" : "s");
  if (!f.optimizer.empty()) {
    // Which of the optimizer's values the user did not set: they are its defaults, whose.
    std::string unset;
    for (const auto& [k, v] : f.optimizer_defaulted)
      unset += fmt::format("{}{} {}", unset.empty() ? "" : ", ", k, v);
    out << fmt::format("  optimizer {}: {}\n", f.optimizer,
                       unset.empty() ? std::string("every value set")
                                     : fmt::format("{} defaulted by the optimizer ({})", unset,
                                                   f.optimizer_defaults_from));
  }
  out << f.algo_note;
  out << f.cluster_note;  // a virtual cluster: its shape and how compute is timed
  out << fmt::format("  device {}, {} thread{} per rank; data {}: {} train / {} test samples\n",
                     f.device, f.threads, f.threads == 1 ? "" : "s", f.data,
                     grouped_rate(double(f.train_samples)), grouped_rate(double(f.test_samples)));
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    const auto path = std::filesystem::path(out_dir) / "run.json";
    const auto tmp = std::filesystem::path(out_dir) / ".run.json.tmp";
    {
      std::ofstream o(tmp, std::ios::trunc);
      o << rec.dump(2) << '\n';
      o.flush();
      DPLAB_CHECK(o.good(), "{}: cannot write the run record", tmp.string());
    }
    std::filesystem::rename(tmp, path);  // never a half-written run.json
    out << fmt::format("  run record: {}\n", path.string());
  }
  out.flush();
}

namespace {

// Rank 0: OUT/run.json read, changed by `change` and written back whole (never half written),
// when the option out is set.
void update_run_record(const Options& opt, const RankGroup& ranks,
                       const std::function<void(nlohmann::json&)>& change) {
  const std::string out_dir = train_option_table().get_string(opt, "out");
  if (ranks.rank() != 0 || out_dir.empty()) return;
  const auto path = std::filesystem::path(out_dir) / "run.json";
  const auto tmp = std::filesystem::path(out_dir) / ".run.json.tmp";
  nlohmann::json rec;
  {
    std::ifstream in(path);
    DPLAB_CHECK(in.good(), "{}: cannot read the run record", path.string());
    rec = nlohmann::json::parse(in);
  }
  change(rec);
  {
    std::ofstream o(tmp, std::ios::trunc);
    o << rec.dump(2) << '\n';
    o.flush();
    DPLAB_CHECK(o.good(), "{}: cannot write the run record", tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

void record_world_sizes(const Options& opt, const RankGroup& ranks,
                        const std::vector<WorldSpan>& spans) {
  update_run_record(opt, ranks, [&](nlohmann::json& rec) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& s : spans)
      a.push_back({{"from_step", s.from_step}, {"world_size", s.world_size}});
    rec["world_sizes"] = a;
  });
}

std::string failure_summary(double lost_rank_s, double recovery_s) {
  return fmt::format(
      "failures: {:.4g} rank-s of virtual time lost (the ranks down x each step's virtual time, "
      "summed over ranks), recovery {:.4g} s virtual (how far the heals of returning ranks "
      "moved the world's clock: 0 when a heal ends before the live ranks' step does)\n",
      lost_rank_s, recovery_s);
}

void record_failures(const Options& opt, const RankGroup& ranks, double lost_rank_s,
                     double recovery_s) {
  update_run_record(opt, ranks, [&](nlohmann::json& rec) {
    rec["failure_lost_rank_s"] = lost_rank_s;
    rec["recovery_s"] = recovery_s;
  });
}

}  // namespace dplab
