// dplab bench: the commands run and report what they promise (no timing assertions: the
// machine is shared, so only the shape and sanity of the numbers are checked).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "data/temp_dir.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;

TEST(Bench, TrainJsonHasTheRequiredFields) {
  ScopedTempDir dir("bench-train");
  auto r = run_dplab(
      "bench train --model mnist_cnn --batch 8 --steps 3 --warmup 1 --json --threads 1", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);  // exactly one JSON object on stdout
  ASSERT_TRUE(j.is_object());
  for (const char* k : {"ms_per_step_median", "ms_per_step_min", "ms_per_step_max", "images_per_s",
                        "peak_rss_mb"}) {
    ASSERT_TRUE(j.contains(k) && j[k].is_number()) << k << " in " << r.out;
    EXPECT_GT(j[k].get<double>(), 0) << k;
  }
  EXPECT_LE(j["ms_per_step_min"].get<double>(), j["ms_per_step_median"].get<double>());
  EXPECT_LE(j["ms_per_step_median"].get<double>(), j["ms_per_step_max"].get<double>());
  // images/s is batch / median step time.
  EXPECT_NEAR(j["images_per_s"].get<double>(), 8e3 / j["ms_per_step_median"].get<double>(),
              1e-6 * j["images_per_s"].get<double>());
  EXPECT_EQ(j["model"], "mnist_cnn");
  EXPECT_EQ(j["batch"], 8);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["steps"], 3);
  EXPECT_EQ(j["mode"], "train");
  EXPECT_FALSE(j.contains("ratio"));  // only with --compare-pytorch
}

// The side-by-side run finds its PyTorch script and reports both frameworks and their ratio.
TEST(Bench, ComparePytorchReportsBothAndTheRatio) {
  ScopedTempDir dir("bench-torch");
  auto r = run_dplab(
      "bench train --model mnist_cnn --batch 8 --steps 3 --warmup 1 --json --threads 1 "
      "--compare-pytorch",
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("ratio") && j["ratio"].is_number()) << r.out;
  for (const char* k :
       {"pytorch_ms_per_step_median", "pytorch_images_per_s", "pytorch_peak_rss_mb"})
    ASSERT_TRUE(j.contains(k) && j[k].get<double>() > 0) << k << " in " << r.out;
  EXPECT_NE(j["pytorch_framework"].get<std::string>().find("pytorch"), std::string::npos);
  EXPECT_EQ(j["pytorch_channels_last"], false) << "PyTorch's f32 baseline is NCHW";
  // ratio = dplab's images/s over PyTorch's (> 1: dplab is faster).
  EXPECT_NEAR(j["ratio"].get<double>(),
              j["images_per_s"].get<double>() / j["pytorch_images_per_s"].get<double>(),
              1e-9 * j["ratio"].get<double>());
}

// --amp bf16 runs the forward under autocast: from the same seed (same weights, same batch) the
// last step's loss moves off the f32 one by bf16 rounding only, and PyTorch is asked for the
// same precision. A precision bench does not know is a usage error.
TEST(Bench, AmpBf16RunsTheForwardInBf16OnBothSides) {
  ScopedTempDir dir("bench-amp");
  const std::string args =
      "bench train --model mnist_cnn --batch 8 --steps 2 --warmup 0 --json --threads 1 --seed 3";
  auto f32 = run_dplab(args, dir.path);
  auto bf16 = run_dplab(args + " --amp bf16 --compare-pytorch", dir.path);
  ASSERT_EQ(f32.status, 0) << f32.err;
  ASSERT_EQ(bf16.status, 0) << bf16.err;
  const auto a = nlohmann::json::parse(f32.out), b = nlohmann::json::parse(bf16.out);
  EXPECT_EQ(a["amp"], "off");
  EXPECT_EQ(b["amp"], "bf16");
  EXPECT_EQ(b["pytorch_dtype"], "bf16");
  // channels_last where PyTorch's oneDNN runs bf16 convolutions, and its precision line says
  // which layout ran.
  const bool cl = b["pytorch_channels_last"].get<bool>();
  EXPECT_EQ(b["pytorch_precision"].get<std::string>().find("channels_last") != std::string::npos,
            cl)
      << b["pytorch_precision"];
  const double la = a["last_loss"].get<double>(), lb = b["last_loss"].get<double>();
  // Cross-entropy of 10 classes near initialisation: about ln 10.
  EXPECT_NEAR(la, std::log(10.0), 0.5);
  EXPECT_NE(la, lb) << "bf16 operands left the loss bit-identical: autocast did not apply";
  // bf16 keeps 8 significant bits (relative rounding 2^-9 per operand): the loss agrees closely.
  EXPECT_NEAR(lb, la, 0.02 * la);
  auto bad = run_dplab(args + " --amp f16", dir.path);
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("--amp"), std::string::npos) << bad.err;
}

// 3x3 stride-1 convolutions run oneDNN's Winograd kernels unless DPLAB_CPU_WINOGRAD=0, and a
// value other than 0 or 1 is an error naming the variable. (oneDNN's Winograd is AVX-512 only:
// elsewhere only the direct runs and the error are checked.)
TEST(Bench, WinogradSwitchIsHonouredAndChecked) {
  ScopedTempDir dir("bench-winograd");
  const std::string args =
      "bench train --model resnet18_cifar --batch 2 --steps 1 --warmup 0 --threads 1";
  auto run = [&](const char* value) {
    setenv("DNNL_VERBOSE", "1", 1);
    if (value)
      setenv("DPLAB_CPU_WINOGRAD", value, 1);
    else
      unsetenv("DPLAB_CPU_WINOGRAD");
    auto r = run_dplab(args, dir.path);
    unsetenv("DNNL_VERBOSE");
    unsetenv("DPLAB_CPU_WINOGRAD");
    return r;
  };
  const auto dflt = run(nullptr);
  ASSERT_EQ(dflt.status, 0) << dflt.err;
  if (dflt.out.find("AVX-512") != std::string::npos) {
    EXPECT_NE(dflt.out.find("jit_wino"), std::string::npos) << "no Winograd convolution ran";
  }
  const auto direct = run("0");
  ASSERT_EQ(direct.status, 0) << direct.err;
  EXPECT_EQ(direct.out.find("wino"), std::string::npos) << "DPLAB_CPU_WINOGRAD=0 ignored";
  EXPECT_NE(direct.out.find("convolution"), std::string::npos) << direct.out.substr(0, 2000);
  const auto bad = run("off");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("DPLAB_CPU_WINOGRAD=off"), std::string::npos) << bad.err;
}

TEST(Bench, InferTableAndUsageErrors) {
  ScopedTempDir dir("bench-infer");
  auto r = run_dplab("bench infer --model mnist_cnn --batch 4 --steps 2 --warmup 1 --threads 1",
                     dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("dplab bench infer: mnist_cnn, batch 4, 1 thread, 2 steps"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("images/s"), std::string::npos) << r.out;
  r = run_dplab("bench train --model no_such_model --steps 1 --warmup 0 --json", dir.path);
  EXPECT_EQ(r.status, 2);  // a usage error
  EXPECT_NE(r.err.find("no_such_model"), std::string::npos) << r.err;
  r = run_dplab("bench", dir.path);  // a bench kind is required
  EXPECT_EQ(r.status, 2) << r.err;
  r = run_dplab("bench allreduce --sizes 4,1Q", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("unknown unit 'Q'"), std::string::npos) << r.err;
}

TEST(Bench, AllreduceOnOneRankReportsEverySize) {
  ScopedTempDir dir("bench-allreduce");
  auto r = run_dplab("bench allreduce --sizes 4,1K,64K --iters 3 --warmup 1 --json", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ranks"], 1);
  ASSERT_EQ(j["rows"].size(), 3u);
  const int64_t bytes[] = {4, 1024, 65536};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["rows"][i]["bytes"], bytes[i]);
    EXPECT_GT(j["rows"][i]["dplab_us"].get<double>(), 0);
    EXPECT_GT(j["rows"][i]["mpi_us"].get<double>(), 0);
  }
}

}  // namespace
}  // namespace dplab
