// Training configuration: TOML flattening, --set, unknown-key errors, the trajectory options.
#include <gtest/gtest.h>

#include <fstream>

#include "data/temp_dir.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/registry.h"

namespace dplab {
namespace {

TEST(Config, TomlTablesFlattenWithDots) {
  test::ScopedTempDir dir("config-toml");
  std::ofstream(dir.file("a.toml"))
      << "model = \"mnist_cnn\"\nbatch = 32\n"
         "nesterov = true\n[lr]\nvalue = 0.05\nschedule = \"multistep\"\n"
         "milestones = [30, 60]\n[hybrid]\nW = 8\n";
  Options o;
  load_toml_options(dir.file("a.toml"), o);
  EXPECT_EQ(o.get_string("model", ""), "mnist_cnn");
  EXPECT_EQ(o.get_int("batch", 0), 32);
  EXPECT_DOUBLE_EQ(o.get_double("lr", 0), 0.05);
  EXPECT_TRUE(o.get_bool("nesterov", false));
  EXPECT_EQ(o.get_string("lr.schedule", ""), "multistep");
  EXPECT_EQ(o.get_string("lr.milestones", ""), "30,60");
  EXPECT_EQ(o.get_int("hybrid.W", 0), 8);
}

// The options a checkpoint stores: every key read, with the value set or the reader's
// default, except the keys the table marks as not changing the trajectory.
TEST(Config, TrajectoryConfigHoldsEveryKeyReadSetOrDefaulted) {
  Options o;
  o.set("lr", "0.05");
  o.set("daso.B_max", "2");
  o.set("out", "runs/a");
  o.set("never.read", "1");
  EXPECT_DOUBLE_EQ(o.get_double("lr", 0.01), 0.05);
  EXPECT_EQ(o.get_int("daso.B_max", 4), 2);
  EXPECT_EQ(o.get_int("daso.S", 1), 1);  // defaulted: stored as the default read
  EXPECT_DOUBLE_EQ(o.get_double("lr.gamma", 0.1), 0.1);
  EXPECT_FALSE(o.get_bool("nesterov", false));
  EXPECT_EQ(o.get_string("out", ""), "runs/a");  // where it writes: not the trajectory
  EXPECT_EQ(o.get_int("threads", 0), 0);         // how fast: not the trajectory
  EXPECT_EQ(o.get_int("epochs", 1), 1);          // how long: not the trajectory
  EXPECT_EQ(o.get_string("comm.wait", "auto"), "auto");
  const std::map<std::string, std::string> read = {
      {"comm.wait", "auto"}, {"daso.B_max", "2"}, {"daso.S", "1"},
      {"epochs", "1"},       {"lr", "0.05"},      {"lr.gamma", "0.1"},
      {"nesterov", "false"}, {"out", "runs/a"},   {"threads", "0"}};
  EXPECT_EQ(o.read_values(), read);
  const std::map<std::string, std::string> trajectory = {{"daso.B_max", "2"},
                                                         {"daso.S", "1"},
                                                         {"lr", "0.05"},
                                                         {"lr.gamma", "0.1"},
                                                         {"nesterov", "false"}};
  EXPECT_EQ(trajectory_config(o), trajectory);
  // The defaults the readers passed, set or not (the run record's is_default), in
  // read_values' text form; none for a key never read.
  EXPECT_EQ(o.default_read("lr"), "0.01");
  EXPECT_EQ(o.default_read("daso.B_max"), "4");
  EXPECT_EQ(o.default_read("daso.S"), "1");
  EXPECT_EQ(o.default_read("nesterov"), "false");
  EXPECT_EQ(o.default_read("out"), "");
  EXPECT_EQ(o.default_read("never.read"), std::nullopt);
}

TEST(Config, SetOverridesAndRejectsMalformed) {
  Options o;
  o.set("lr", "0.1");
  apply_set_option("lr=0.2", o);
  apply_set_option("data.dir=/a=b", o);  // only the first '=' splits
  EXPECT_EQ(o.get_string("lr", ""), "0.2");
  EXPECT_EQ(o.get_string("data.dir", ""), "/a=b");
  EXPECT_THROW(apply_set_option("lr", o), UsageError);
  EXPECT_THROW(apply_set_option("=3", o), UsageError);
}

TEST(Config, UnknownKeysAreNamed) {
  Options o;
  o.set("lr", "0.1");
  o.set("lrr", "0.1");
  o.set("zz.top", "1");
  o.get_double("lr", 0);
  try {
    check_no_unknown_options(o);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    // lrr is one edit from lr: named with the suggestion; zz.top is near nothing.
    EXPECT_NE(std::string(e.what()).find("unknown options lrr (did you mean 'lr'?), zz.top ("),
              std::string::npos)
        << e.what();
  }
  o.get_string("lrr", "");
  o.get_string("zz.top", "");
  EXPECT_NO_THROW(check_no_unknown_options(o));
}

// A compression key no part of the run reads (an algorithm without GradSync, or another
// algorithm's prefix) is refused with the reason (train/config/compress_refusal.h); other unknown
// keys are not given it.
// What each algorithm exchanges instead comes from its registry entry (StrategyEntry::exchanges).
TEST(Config, CompressionKeysNotReadSayWhy) {
  const Registry builtins = Registry::with_builtins();
  Options o;
  o.set("algo", "dcs3gd");
  o.set("allreduce.compress", "topk");
  o.get_string("algo", "");
  try {
    check_no_unknown_options(o, &builtins);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown option allreduce.compress (an option of area allreduce"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("Gradient compression is read only under the GradSync prefixes"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("algorithm 'dcs3gd' allreduces its delayed updates"), std::string::npos) << m;
  }
  Options p;
  p.set("algo", "sgp");
  p.set("sgp.topk.ratio", "0.1");  // not a table key: still explained
  p.get_string("algo", "");
  try {
    check_no_unknown_options(p, &builtins);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("algorithm 'sgp' gossips parameters"), std::string::npos)
        << e.what();
  }
  Options q;
  q.set("algo", "sgp");
  q.set("sgp.intervall", "2");
  q.get_string("algo", "");
  try {
    check_no_unknown_options(q, &builtins);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find("Gradient compression"), std::string::npos) << e.what();
  }
}

TEST(Config, TomlErrorsNameFileAndLine) {
  test::ScopedTempDir dir("config-bad");
  std::ofstream(dir.file("bad.toml")) << "a = 1\nb = [\n";
  Options o;
  try {
    load_toml_options(dir.file("bad.toml"), o);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("bad.toml") + ":"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_toml_options(dir.file("missing.toml"), o), UsageError);
}

TEST(Config, EveryDocumentedKeyHasHelp) {
  for (const auto& s : train_option_specs()) {
    EXPECT_FALSE(s.key.empty());
    EXPECT_FALSE(s.help.empty()) << s.key;
  }
  EXPECT_EQ(option_default("batch"), "64");
  EXPECT_THROW(option_default("no.such.key"), Error);
}

}  // namespace
}  // namespace dplab
