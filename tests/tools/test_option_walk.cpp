// Issue #35 item 1: every bad value of every declared key exits 2 with one message form,
// "option KEY: ..." (on the command line, and after "FILE:LINE:COL: " in a config file). The
// keys and their rules come from the driver's table (train/config/config.h,
// train/config/option_values.h); the bad values are made here from each rule's kind and bounds,
// and the exit status and message are the `dplab` command's.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "data/temp_dir.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/option_values.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;

struct Bad {
  std::string cli;   // as --set KEY=VALUE takes it
  std::string toml;  // as a config file writes it
};

std::string number_text(double v) {
  return v == std::floor(v) ? std::to_string(int64_t(v)) : std::to_string(v);
}

// A mistyped value and, where the rule has bounds, one just outside them.
std::vector<Bad> bad_values(const ValueRule& r) {
  std::vector<Bad> v;
  using K = ValueRule::Kind;
  switch (r.kind) {
    case K::integer:
      v.push_back({"1.5", "1.5"});
      break;
    case K::number:
      v.push_back({"abc", "\"abc\""});
      break;
    case K::boolean:
      v.push_back({"maybe", "\"maybe\""});
      break;
    case K::choice:
      v.push_back({"no-such-value", "\"no-such-value\""});
      break;
    case K::text:
      break;
  }
  if (r.kind == K::integer || r.kind == K::number) {
    if (std::isfinite(r.min)) {
      const std::string below = number_text(r.min - 1);
      v.push_back({below, below});
    }
    if (std::isfinite(r.max)) {
      const std::string above = number_text(r.max_open ? r.max : r.max + 1);
      v.push_back({above, above});
    }
  }
  return v;
}

// Keys that take free text: names, paths, lists and specs whose checks are their readers' (a
// missing file, an unknown dataset). A key outside this list without a value rule fails the
// test below: a new number or switch must get its rule.
const std::set<std::string> kFreeText = {
    "data",
    "data.val",
    "data.dir",
    "out",
    "resume",
    "resume.override",
    "init_from",
    "cluster",
    "cluster.compute",
    "cluster.events",
    "link.intra",
    "link.inter",
    "slowdown",
    "plugins",
    "device",
    "trace.steps",
    "lr.milestones",
    "crossover.segments",
    "oscars.t_us",
    "oscars.resolution_us",
    "allreduce.reducer",
    "hybrid.reducer",
    "daso.local.reducer",
    "crossover.sync.reducer",
    "preempt.signals",
};

TEST(OptionWalk, EveryDeclaredKeysBadValueExits2NamingTheKey) {
  ScopedTempDir dir("option-walk");
  int checked = 0;
  std::vector<std::string> without_rule;
  for (const OptionSpec& s : train_option_specs()) {
    const ValueRule* rule = option_value_rule(s.key);
    if (!rule || rule->kind == ValueRule::Kind::text) {
      if (!kFreeText.count(s.key)) without_rule.push_back(s.key);
      continue;
    }
    const std::vector<Bad> bad = bad_values(*rule);
    for (size_t i = 0; i < bad.size(); ++i) {
      const auto cli = run_dplab("train --set '" + s.key + "=" + bad[i].cli + "'", dir.path);
      EXPECT_EQ(cli.status, 2) << s.key << " = " << bad[i].cli << ": " << cli.err;
      EXPECT_NE(cli.err.find("dplab: error: option " + s.key + ": "), std::string::npos)
          << s.key << " = " << bad[i].cli << ": " << cli.err;
      const std::string file = dir.file("bad.toml");
      std::ofstream(file) << "\"" << s.key << "\" = " << bad[i].toml << "\n";
      const auto cfg = run_dplab("train --config " + file, dir.path);
      EXPECT_EQ(cfg.status, 2) << s.key << " = " << bad[i].toml << " (file): " << cfg.err;
      EXPECT_NE(cfg.err.find("bad.toml:1:"), std::string::npos) << s.key << ": " << cfg.err;
      EXPECT_NE(cfg.err.find("option " + s.key + ": "), std::string::npos)
          << s.key << " = " << bad[i].toml << " (file): " << cfg.err;
      ++checked;
    }
  }
  EXPECT_GT(checked, 150);
  for (const std::string& k : kFreeText) {  // the list names declared keys only
    bool declared = false;
    for (const OptionSpec& s : train_option_specs()) declared = declared || s.key == k;
    EXPECT_TRUE(declared) << k;
  }
  EXPECT_TRUE(without_rule.empty()) << "keys without a value rule: " << [&] {
    std::string s;
    for (const auto& k : without_rule) s += k + " ";
    return s;
  }();
}

}  // namespace
}  // namespace dplab
