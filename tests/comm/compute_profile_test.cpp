// Compute profiles (comm/cluster/compute_profile.h): the file round-trips, a bucket is ready
// with its last tensor, and bad files are refused naming the file, the key and what was
// expected.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/comm/cluster/compute_profile.h"
#include "dplab/core/error.h"

namespace dplab::cluster {
namespace {

ComputeProfile sample() {
  ComputeProfile p;
  p.model = "mnist_cnn";
  p.batch = 64;
  p.device = "cuda:0";
  p.threads = 1;
  p.steps = 20;
  p.forward_s = 0.002;
  p.backward_s = 0.004;
  p.optimizer_s = 0.0005;
  p.check_s = 0.00025;
  p.step_log_sigma = 0.07;
  p.segments = {{"fc1.bias", 10, 0.05}, {"fc1.weight", 5120, 0.04}, {"cnn1.weight", 400, 0.97}};
  return p;
}

std::string error_of(const std::string& text) {
  try {
    parse_compute_profile(text, "p.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ComputeProfile, RoundTrips) {
  const ComputeProfile p = parse_compute_profile(compute_profile_json(sample()), "p.json");
  EXPECT_EQ(p.model, "mnist_cnn");
  EXPECT_EQ(p.batch, 64);
  EXPECT_EQ(p.device, "cuda:0");
  EXPECT_EQ(p.steps, 20);
  EXPECT_DOUBLE_EQ(p.forward_s, 0.002);
  EXPECT_DOUBLE_EQ(p.backward_s, 0.004);
  EXPECT_DOUBLE_EQ(p.optimizer_s, 0.0005);
  EXPECT_DOUBLE_EQ(p.check_s, 0.00025);
  EXPECT_DOUBLE_EQ(p.step_log_sigma, 0.07);
  ASSERT_EQ(p.segments.size(), 3u);
  EXPECT_EQ(p.segments[2].name, "cnn1.weight");
  EXPECT_EQ(p.segments[1].numel, 5120);
  EXPECT_DOUBLE_EQ(p.segments[0].ready_fraction, 0.05);
}

// sample()'s file with `entry` (one "key": value, pair) replaced by `by` ("": removed).
std::string with_entry(const std::string& entry, const std::string& by) {
  std::string text = compute_profile_json(sample());
  const size_t i = text.find(entry);
  EXPECT_NE(i, std::string::npos) << entry << " not in " << text;
  if (i != std::string::npos) text.replace(i, entry.size(), by);
  return text;
}

// A profile written before the non-finite check was recorded has no "check_s": it reads as 0
// (its runs charge no check, as they did); a present one must be seconds.
TEST(ComputeProfile, AProfileWithoutTheCheckReadsAsNoCheck) {
  const std::string entry = "\"check_s\": 0.00025,";
  const ComputeProfile p = parse_compute_profile(with_entry(entry, ""), "p.json");
  EXPECT_EQ(p.check_s, 0.0);
  EXPECT_DOUBLE_EQ(p.optimizer_s, 0.0005);
  const std::string bad = with_entry(entry, "\"check_s\": -1,");
  EXPECT_NE(error_of(bad).find("p.json: key 'check_s': expected a number of seconds >= 0, got -1"),
            std::string::npos)
      << error_of(bad);
}

// Older profiles have no "step_log_sigma": no spread recorded (0); a present one must be >= 0.
TEST(ComputeProfile, AProfileWithoutTheSpreadReadsAsNone) {
  const std::string entry = "\"step_log_sigma\": 0.07,";
  EXPECT_EQ(parse_compute_profile(with_entry(entry, ""), "p.json").step_log_sigma, 0.0);
  const std::string bad = with_entry(entry, "\"step_log_sigma\": -0.5,");
  EXPECT_NE(error_of(bad).find("p.json: key 'step_log_sigma': expected a number >= 0, got -0.5"),
            std::string::npos)
      << error_of(bad);
}

// Hand values: logs {0, 1, 2} have mean 1 and sample variance (1 + 0 + 1) / 2 = 1; equal steps
// have no spread, whatever their length.
TEST(ComputeProfile, StepLogSigmaIsTheSpreadOfTheLogs) {
  EXPECT_NEAR(step_log_sigma({1.0, std::exp(1.0), std::exp(2.0)}), 1.0, 1e-12);
  EXPECT_NEAR(step_log_sigma({0.004, 0.004, 0.004, 0.004}), 0.0, 1e-12);
  // 2x and 1x: logs {ln 2, 0}, sample sd = ln 2 / sqrt 2.
  EXPECT_NEAR(step_log_sigma({0.002, 0.001}), std::log(2.0) / std::sqrt(2.0), 1e-12);
  EXPECT_EQ(step_log_sigma({0.003}), 0.0);
  EXPECT_THROW(step_log_sigma({0.001, 0.0}), Error);
}

TEST(ComputeProfile, ABucketIsReadyWithItsLastTensor) {
  const ComputeProfile p = sample();
  EXPECT_DOUBLE_EQ(p.bucket_ready_fraction(0, 1), 0.05);  // max(0.05, 0.04)
  EXPECT_DOUBLE_EQ(p.bucket_ready_fraction(0, 2), 0.97);
  EXPECT_THROW(p.bucket_ready_fraction(1, 3), Error);
}

TEST(ComputeProfile, BadFilesNameTheKey) {
  const std::string good = compute_profile_json(sample());
  EXPECT_NE(error_of("{").find("p.json: not JSON"), std::string::npos) << error_of("{");
  EXPECT_NE(error_of("{}").find("'dplab_compute_profile': expected 1"), std::string::npos);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t i = t.find(from);
    EXPECT_NE(i, std::string::npos) << from;
    return t.replace(i, from.size(), to);
  };
  std::string e = error_of(with("\"backward_s\": 0.004", "\"backward_s\": \"slow\""));
  EXPECT_NE(e.find("p.json: key 'backward_s': expected a number of seconds >= 0, got \"slow\""),
            std::string::npos)
      << e;
  e = error_of(with("\"ready_fraction\": 0.97", "\"ready_fraction\": 1.5"));
  EXPECT_NE(e.find("p.json: segments[2]: key 'ready_fraction': expected a number in [0, 1], "
                   "got 1.5"),
            std::string::npos)
      << e;
  e = error_of(with("\"batch\": 64", "\"batch\": 0"));
  EXPECT_NE(e.find("key 'batch': expected an integer >= 1, got 0"), std::string::npos) << e;
  e = error_of(with("\"model\": \"mnist_cnn\",", ""));
  EXPECT_NE(e.find("p.json: key 'model' missing"), std::string::npos) << e;
}

}  // namespace
}  // namespace dplab::cluster
