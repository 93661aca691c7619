// The non-finite guard's checks (train/loop/nonfinite_guard.h) on hand-made tensors with inf and
// NaN at chosen places, the pre-emption signal flag (train/loop/preemption.h) and the one-process
// StepAgreement (train/loop/step_agreement.h).
#include <gtest/gtest.h>

#include <tuple>

#include <csignal>
#include <limits>

#include "dplab/core/state_dict.h"
#include "dplab/train/loop/nonfinite_guard.h"
#include "dplab/train/loop/preemption.h"
#include "dplab/train/loop/step_agreement.h"

namespace dplab {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

TEST(NonfiniteGuard, IndicesOfTheTensorsWithInfOrNan) {
  const std::vector<Tensor> ts = {
      Tensor::from_vector({1.f, 2.f, 3.f}, {3}),
      Tensor::from_vector({1.f, kNan, 3.f}, {3}),                // 1: NaN inside
      Tensor::from_vector_i64({1, 2}, {2}),                      // integers: always finite
      Tensor::from_vector({3.4e38f, -3.4e38f, 1e-45f}, {3}),     // extreme but finite
      Tensor::from_vector({1.f, 2.f, -kInf}, {3}, DType::bf16),  // 4: bf16 -inf, last
      Tensor::from_vector({kInf, 0.f, 0.f, 0.f}, {2, 2}).transpose(0, 1),  // 5: a strided view
      Tensor::from_vector({0.f}, {}),
  };
  EXPECT_EQ(nonfinite_indices(ts), (std::vector<size_t>{1, 4, 5}));
  EXPECT_TRUE(nonfinite_indices({}).empty());
  EXPECT_EQ(nonfinite_names({{"a", ts[0]}, {"b", ts[1]}, {"c", ts[5]}}),
            (std::vector<std::string>{"b", "c"}));
}

TEST(NonfiniteGuard, StateDictEntries) {
  StateDict s;
  s.put_tensor("good", Tensor::from_vector({1.f}, {1}));
  s.put_tensor("V", Tensor::from_vector({0.f, kInf}, {2}));
  s.put_double("loss", std::nan(""));
  s.put_double("lr", 0.1);
  s.put_doubles("history", {1.0, -std::numeric_limits<double>::infinity(), 2.0});
  s.put_doubles("fine", {1.0, 2.5});
  s.put_string("mode", "info");  // text that merely contains "inf" is not a number
  s.put_int("count", 3);
  std::vector<std::string> bad = nonfinite_entries(s);
  std::sort(bad.begin(), bad.end());
  EXPECT_EQ(bad, (std::vector<std::string>{"V", "history", "loss"}));
}

TEST(NonfiniteGuard, NameList) {
  EXPECT_EQ(name_list({"a"}), "'a'");
  EXPECT_EQ(name_list({"a", "b"}), "'a' and 'b'");
  EXPECT_EQ(name_list({"a", "b", "c"}), "'a', 'b' and 'c'");
  EXPECT_EQ(name_list({"a", "b", "c", "d", "e"}), "'a', 'b', 'c' and 2 more");
}

// Three parameters in one arena; the step check and the names it reports.
struct ThreeParams {
  Tensor w = Tensor::from_vector({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::from_vector({1, 2}, {2});
  Tensor c = Tensor::from_vector({5}, {1});
  ParamArena arena{{{"fc.weight", w}, {"fc.bias", b}, {"out.bias", c}},
                   ParamArena::Layout::given_order};
  Tensor loss = Tensor::scalar(0.5f);
  ThreeParams() { arena.zero_grad(); }
  void set_grad(Tensor& p, std::vector<float> g) {
    p.grad().copy_(Tensor::from_vector(g, p.shape()));
  }
};

TEST(NonfiniteGuard, StepCheckNamesTheGradientOrTheLoss) {
  ThreeParams t;
  NonfiniteGuard guard(t.arena, true);
  EXPECT_FALSE(guard.step_nonfinite(t.loss));
  t.set_grad(t.b, {0.f, kNan});
  EXPECT_TRUE(guard.step_nonfinite(t.loss));
  EXPECT_EQ(guard.describe(t.loss), "gradient of 'fc.bias'");
  t.set_grad(t.c, {-kInf});
  EXPECT_EQ(guard.describe(t.loss), "gradients of 'fc.bias' and 'out.bias'");
  Tensor bad_loss = Tensor::scalar(kInf);
  EXPECT_EQ(guard.describe(bad_loss), "loss and gradients of 'fc.bias' and 'out.bias'");
  t.arena.zero_grad();
  EXPECT_FALSE(guard.step_nonfinite(t.loss));
  EXPECT_TRUE(guard.step_nonfinite(bad_loss));
  EXPECT_EQ(guard.describe(bad_loss), "loss");
  // The first element of the first parameter, the last of the last: the arena's ends.
  t.set_grad(t.w, {kNan, 0, 0, 0});
  EXPECT_TRUE(guard.step_nonfinite(t.loss));
  EXPECT_EQ(guard.describe(t.loss), "gradient of 'fc.weight'");
}

// nonfinite_check = next_step: the posted check's flags come back on take_posted(), each step's
// own (the arena changes between posting and taking are not seen), and say which of the two.
TEST(NonfiniteGuard, PostedCheckReturnsItsOwnFlags) {
  ThreeParams t;
  NonfiniteGuard guard(t.arena, true);
  EXPECT_FALSE(guard.posted());
  guard.post_check(t.loss, true);
  EXPECT_TRUE(guard.posted());
  t.set_grad(t.b, {0.f, kNan});  // after the post: the next step's gradient
  NonfiniteFlags f = guard.take_posted();
  EXPECT_FALSE(guard.posted());
  EXPECT_FALSE(f.any());
  guard.post_check(t.loss, true);
  f = guard.take_posted();
  EXPECT_FALSE(f.loss);
  EXPECT_TRUE(f.grads);
  guard.post_check(Tensor::scalar(kNan), true);
  f = guard.take_posted();
  EXPECT_TRUE(f.loss);
  EXPECT_TRUE(f.grads);
  EXPECT_EQ(NonfiniteGuard::describe_posted({true, false}, 7).substr(0, 22),
            "loss of global step 7 ");
  EXPECT_EQ(NonfiniteGuard::describe_posted({false, true}, 7).substr(0, 39),
            "at least one gradient of global step 7 ");
  EXPECT_THROW(guard.take_posted(), Error);  // nothing posted
}

// The group's loss flag (accumulate_steps: the update at the group's end is dropped when any of
// its batches' losses was non-finite) holds from the bad batch to the group's end and starts
// again with the next group; the step and metric flags the device acts on are those posted.
TEST(NonfiniteGuard, PostedGroupFlagSpansTheAccumulationGroup) {
  ThreeParams t;
  NonfiniteGuard guard(t.arena, true);
  guard.post_check(Tensor::scalar(kInf), true);  // group 1, batch 1: loss inf, gradients finite
  NonfiniteFlags f = guard.take_posted();
  EXPECT_TRUE(f.loss && f.group_loss && !f.grads);
  guard.post_check(t.loss, false);  // batch 2 is finite, the group is still dropped
  f = guard.take_posted();
  EXPECT_FALSE(f.any());
  EXPECT_TRUE(f.group_loss);
  EXPECT_TRUE(f.group_dropped());
  EXPECT_EQ(guard.skip_flags().to_vector(), (std::vector<float>{0.f, 1.f}));
  EXPECT_EQ(guard.metric_flags().to_vector(), (std::vector<float>{0.f, 0.f}));
  guard.post_check(t.loss, true);  // group 2 starts clean
  f = guard.take_posted();
  EXPECT_FALSE(f.group_dropped());
  t.set_grad(t.c, {kNan});
  guard.post_check(t.loss, false);  // a gradient: the step's own flag and the group's drop
  f = guard.take_posted();
  EXPECT_TRUE(f.grads && !f.group_loss && f.group_dropped());
  EXPECT_EQ(guard.metric_flags().to_vector(), (std::vector<float>{0.f, 1.f}));
}

TEST(NonfiniteGuard, CheckOptionResolves) {
  using C = NonfiniteCheck;
  // auto: next_step only on CUDA and without the f16 scaler (either nonfinite policy).
  EXPECT_EQ(resolve_nonfinite_check("auto", true, false), C::next_step);
  EXPECT_EQ(resolve_nonfinite_check("auto", false, false), C::every_step);
  EXPECT_EQ(resolve_nonfinite_check("auto", true, true), C::every_step);
  EXPECT_EQ(resolve_nonfinite_check("every_step", true, false), C::every_step);
  EXPECT_EQ(resolve_nonfinite_check("next_step", false, false), C::next_step);
  try {
    resolve_nonfinite_check("next_step", true, true);
    FAIL() << "accepted next_step with the f16 loss scaler";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("amp = f16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_nonfinite_check("later", true, false), Error);
}

TEST(NonfiniteGuard, UnderTheLossScalerOnlyTheLossCounts) {
  ThreeParams t;
  NonfiniteGuard guard(t.arena, false);
  t.set_grad(t.w, {kInf, 0, 0, 0});
  EXPECT_FALSE(guard.step_nonfinite(t.loss));
  EXPECT_TRUE(guard.step_nonfinite(Tensor::scalar(kNan)));
  EXPECT_EQ(guard.describe(Tensor::scalar(kNan)), "loss");
}

TEST(NonfiniteGuard, PolicyOption) {
  EXPECT_EQ(parse_nonfinite_policy("stop"), NonfinitePolicy::stop);
  EXPECT_EQ(parse_nonfinite_policy("skip"), NonfinitePolicy::skip);
  try {
    parse_nonfinite_policy("ignore");
    FAIL() << "accepted 'ignore'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("option nonfinite"), std::string::npos) << e.what();
  }
}

TEST(Preemption, SignalListOption) {
  EXPECT_EQ(parse_preempt_signals("TERM,USR1"), (std::vector<int>{SIGTERM, SIGUSR1}));
  EXPECT_EQ(parse_preempt_signals(" sigusr2 , hup,USR2"), (std::vector<int>{SIGUSR2, SIGHUP}));
  EXPECT_TRUE(parse_preempt_signals("").empty());
  EXPECT_THROW(parse_preempt_signals("TERM,KILL"), Error);
  EXPECT_EQ(preempt_signal_name(SIGUSR1), "SIGUSR1");
}

int g_test_handler_calls = 0;  // the test's own handler (must be a plain function)
extern "C" void count_signal(int) {
  ++g_test_handler_calls;
}

TEST(Preemption, HandlerOnlySetsTheFlagAndTheOldOneComesBack) {
  struct sigaction mine {};
  mine.sa_handler = count_signal;
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGUSR1, &mine, &before), 0);
  g_test_handler_calls = 0;
  {
    PreemptionSignals p(parse_preempt_signals("USR1,USR2"));
    EXPECT_EQ(p.received(), 0);
    std::raise(SIGUSR2);
    std::raise(SIGUSR1);
    EXPECT_EQ(p.received(), SIGUSR2);  // the first one is kept
    EXPECT_EQ(g_test_handler_calls, 0);
    EXPECT_THROW(PreemptionSignals again({SIGTERM}), Error);  // one at a time
  }
  std::raise(SIGUSR1);  // the previous handler is back
  EXPECT_EQ(g_test_handler_calls, 1);
  {
    PreemptionSignals fresh({SIGTERM});
    EXPECT_EQ(fresh.received(), 0);  // a new instance starts clear
  }
  PreemptionSignals none({});  // disabled: nothing installed, nothing received
  EXPECT_EQ(none.received(), 0);
  sigaction(SIGUSR1, &before, nullptr);
}

TEST(StepAgreement, OneProcessDecidesAtOnce) {
  Options opt;
  StepAgreement a(opt, 1);
  EXPECT_TRUE(a.tick(0, false, false, "").empty());
  std::vector<Agreement> due = a.tick(1, true, false, "loss");
  ASSERT_EQ(due.size(), 1u);  // no lag on one process
  EXPECT_EQ(due[0].tick, 1);
  EXPECT_TRUE(due[0].nonfinite);
  EXPECT_FALSE(due[0].preempt);
  EXPECT_EQ(due[0].joined_reports(), "rank 0: loss");
  EXPECT_EQ(due[0].reporting_ranks(), (std::vector<int>{0}));
  due = a.tick(2, false, true, std::string(2000, 'x'));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_TRUE(due[0].preempt);
  EXPECT_EQ(due[0].reports[0].size(), size_t(StepAgreement::kReportBytes - 1));  // capped
  EXPECT_TRUE(a.flush().empty());
  int built = 0;
  Agreement v = a.agree(false, false, [&] {
    ++built;
    return std::string("state");
  });
  EXPECT_FALSE(v.any());
  EXPECT_EQ(built, 0);  // the report is built only on the failure path
  v = a.agree(true, false, [&] {
    ++built;
    return std::string("state");
  });
  EXPECT_EQ(v.joined_reports(), "rank 0: state");
  a.barrier();
}

}  // namespace
}  // namespace dplab
