// Issue #33 item 6: each optimizer's unset options take that optimizer's defaults
// (train/loop/optimizer_options.h, optim/optimizer_factory.h). AdamW's are PyTorch's, written here
// from the torch.optim.AdamW documentation (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay
// 1e-2); SGD keeps dplab's table (lr 0.01, momentum 0.9, weight decay 0). A key that is set wins.
// The run header and run.json say which values the optimizer defaulted.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/temp_dir.h"
#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/sequential.h"
#include "dplab/optim/adamw.h"
#include "dplab/optim/lars.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/loop/model_parts.h"
#include "dplab/train/loop/trainer.h"
#include "toy_registry.h"

namespace dplab {
namespace {

using test::ScopedTempDir;
using test::toy_registry;
using test::ToyDataset;

ModelParts parts_for(const Options& opt) {
  const Registry r = toy_registry();
  const TrainData data{std::make_shared<ToyDataset>(16), std::make_shared<ToyDataset>(8), false};
  return build_model_parts(opt, r, "toy_linear", data, 1, "", Device::cpu(), false);
}

// LARS's and AdamW's own keys default in optim/ (the option structs, read by
// optim/optimizer_factory.h); the option table repeats them for --help and docs/options.md:
// the two must agree.
TEST(OptimizerDefaults, TheTableRepeatsTheOptimizersOwnDefaults) {
  EXPECT_EQ(std::stod(option_default("lars.eta")), LARSOptions{}.trust_coefficient);
  EXPECT_EQ(std::stod(option_default("lars.eps")), LARSOptions{}.eps);
  EXPECT_EQ(std::stod(option_default("adamw.beta1")), AdamWOptions{}.beta1);
  EXPECT_EQ(std::stod(option_default("adamw.beta2")), AdamWOptions{}.beta2);
  EXPECT_EQ(std::stod(option_default("adamw.eps")), AdamWOptions{}.eps);
}

TEST(OptimizerDefaults, AdamWTakesPyTorchsDefaults) {
  Options opt;
  opt.set("optim", "adamw");
  const ModelParts p = parts_for(opt);
  const auto* a = dynamic_cast<const AdamW*>(p.optimizer.get());
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->options().lr, 1e-3);
  EXPECT_DOUBLE_EQ(a->options().weight_decay, 1e-2);
  EXPECT_DOUBLE_EQ(a->options().beta1, 0.9);
  EXPECT_DOUBLE_EQ(a->options().beta2, 0.999);
  EXPECT_DOUBLE_EQ(a->options().eps, 1e-8);
  EXPECT_DOUBLE_EQ(p.base_lr, 1e-3);  // what the lr schedule multiplies
}

TEST(OptimizerDefaults, SetValuesWin) {
  Options opt;
  opt.set("optim", "adamw");
  opt.set("lr", "0.05");
  opt.set("wd", "0");
  opt.set("adamw.beta2", "0.95");
  const ModelParts p = parts_for(opt);
  const auto* a = dynamic_cast<const AdamW*>(p.optimizer.get());
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->options().lr, 0.05);
  EXPECT_DOUBLE_EQ(a->options().weight_decay, 0.0);
  EXPECT_DOUBLE_EQ(a->options().beta2, 0.95);
  EXPECT_DOUBLE_EQ(p.base_lr, 0.05);
}

TEST(OptimizerDefaults, SgdKeepsItsOwn) {
  Options opt;  // optim = sgd by default
  const ModelParts p = parts_for(opt);
  const auto* s = dynamic_cast<const SGD*>(p.optimizer.get());
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(p.base_lr, 0.01);
  EXPECT_DOUBLE_EQ(s->options().momentum, 0.9);
  EXPECT_DOUBLE_EQ(s->options().weight_decay, 0.0);
}

nlohmann::json run_json(const std::string& out) {
  std::ifstream in(out + "/run.json");
  return nlohmann::json::parse(in);
}

Options toy_run(const std::string& out) {
  Options o;
  o.set("model", "toy_linear");
  o.set("data", "toy");
  o.set("epochs", "1");
  o.set("batch", "8");
  o.set("progress", "off");
  o.set("threads", "1");
  o.set("out", out);
  o.set("optim", "adamw");
  return o;
}

TEST(OptimizerDefaults, RunHeaderAndRunJsonSayWhatTheOptimizerDefaulted) {
  ScopedTempDir dir("optim-defaults");
  const Registry r = toy_registry();
  {
    std::ostringstream summary, progress;
    run_training(toy_run(dir.file("adamw")), r, summary, progress);
    EXPECT_NE(summary.str().find("optimizer adamw: adamw.beta1 0.9, adamw.beta2 0.999, "
                                 "adamw.eps 1e-08, lr 0.001, wd 0.01 defaulted by the optimizer "
                                 "(PyTorch's torch.optim.AdamW)"),
              std::string::npos)
        << summary.str();
    const nlohmann::json j = run_json(dir.file("adamw"));
    EXPECT_EQ(j["optimizer"]["name"], "adamw");
    EXPECT_EQ(j["optimizer"]["defaults_from"], "PyTorch's torch.optim.AdamW");
    EXPECT_EQ(j["optimizer"]["defaulted"]["lr"], "0.001");
    EXPECT_EQ(j["optimizer"]["defaulted"]["wd"], "0.01");
    EXPECT_EQ(j["optimizer"]["defaulted"]["adamw.eps"], "1e-08");
    EXPECT_EQ(j["options"]["lr"]["value"], "0.001");
    EXPECT_EQ(j["options"]["lr"]["set"], false);
    EXPECT_EQ(j["options"]["lr"]["is_default"], true);
    EXPECT_EQ(j["options"]["lr"]["default_from"], "optim adamw");
  }
  {
    Options o = toy_run(dir.file("lr_set"));
    o.set("lr", "0.05");
    std::ostringstream summary, progress;
    run_training(o, r, summary, progress);
    EXPECT_NE(summary.str().find("optimizer adamw: adamw.beta1 0.9, adamw.beta2 0.999, "
                                 "adamw.eps 1e-08, wd 0.01 defaulted"),
              std::string::npos)
        << summary.str();
    const nlohmann::json j = run_json(dir.file("lr_set"));
    EXPECT_FALSE(j["optimizer"]["defaulted"].contains("lr"));
    EXPECT_EQ(j["options"]["lr"]["value"], "0.05");
    EXPECT_EQ(j["options"]["lr"]["set"], true);
    EXPECT_FALSE(j["options"]["lr"].contains("default_from"));
  }
}

}  // namespace
}  // namespace dplab
