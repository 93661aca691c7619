// Replaying a compute profile in training (train/virtual/profile_replay.h): the profile must be of
// the run's model, per-rank batch and parameter tensors, and its times scale with the rank's
// --slowdown factor. Expected values are written as their arithmetic.
#include <gtest/gtest.h>

#include "dplab/core/usage_error.h"
#include "dplab/train/virtual/profile_replay.h"

namespace dplab {
namespace {

std::vector<NamedTensor> two_tensors() {
  return {{"fc.weight", Tensor::zeros({4, 3})}, {"fc.bias", Tensor::zeros({4})}};
}

cluster::ComputeProfile profile_of(const ParamArena& arena) {
  cluster::ComputeProfile p;
  p.model = "tiny";
  p.batch = 8;
  p.forward_s = 0.010;
  p.backward_s = 0.020;
  p.optimizer_s = 0.005;
  p.check_s = 0.001;
  double f = 0.25;
  for (const ArenaSegment& s : arena.segments()) {
    p.segments.push_back({s.name, s.numel, f});
    f += 0.5;
  }
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no usage error)";
}

TEST(ProfileReplay, TimesScaleWithTheSlowdownAndBucketsAreReadyAtTheirFraction) {
  ParamArena arena(two_tensors(), ParamArena::Layout::given_order);
  const ProfileReplay r(profile_of(arena), "p.json", "tiny", 8, arena, 2.0);
  EXPECT_DOUBLE_EQ(r.forward_s(), 2 * 0.010);
  EXPECT_DOUBLE_EQ(r.backward_s(), 2 * 0.020);
  EXPECT_DOUBLE_EQ(r.optimizer_s(), 2 * 0.005);
  EXPECT_DOUBLE_EQ(r.check_s(), 2 * 0.001);
  // Segment 0 is ready at 0.25 of backward, segment 1 at 0.75; a bucket with its last tensor.
  EXPECT_DOUBLE_EQ(r.bucket_ready(1.0, 0, 0), 1.0 + 0.25 * 0.040);
  EXPECT_DOUBLE_EQ(r.bucket_ready(1.0, 1, 1), 1.0 + 0.75 * 0.040);
  EXPECT_DOUBLE_EQ(r.bucket_ready(1.0, 0, 1), 1.0 + 0.75 * 0.040);
}

TEST(ProfileReplay, RefusesAProfileOfAnotherModelBatchOrTensors) {
  ParamArena arena(two_tensors(), ParamArena::Layout::given_order);
  const cluster::ComputeProfile good = profile_of(arena);
  EXPECT_NE(error_of([&] {
              ProfileReplay(good, "p.json", "other", 8, arena, 1.0);
            }).find("profile:p.json: the profile is of model 'tiny', the run trains 'other'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              ProfileReplay(good, "p.json", "tiny", 16, arena, 1.0);
            }).find("the profile is of batch 8 per rank, the run has batch 16"),
            std::string::npos);
  cluster::ComputeProfile renamed = good;
  renamed.segments[1].name = "fc.b";
  EXPECT_NE(error_of([&] { ProfileReplay(renamed, "p.json", "tiny", 8, arena, 1.0); })
                .find("parameter tensor 1 is 'fc.b' (4 values) in the profile, 'fc.bias' (4 "
                      "values) in model 'tiny'"),
            std::string::npos);
  cluster::ComputeProfile shorter = good;
  shorter.segments.pop_back();
  EXPECT_NE(error_of([&] {
              ProfileReplay(shorter, "p.json", "tiny", 8, arena, 1.0);
            }).find("the profile has 1 parameter tensors, model 'tiny' has 2"),
            std::string::npos);
}

}  // namespace
}  // namespace dplab
