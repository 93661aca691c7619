// DASO's pure parts (ALGORITHMS.md §3): which batches send and merge for given (B, S), the
// group rotation, the phases, and the plateau-driven B/S cycle on scripted loss sequences.
// Expected values are written out by hand.
#include <gtest/gtest.h>

#include "dplab/comm/algorithms/daso.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

// {send, merge, group, S'}
DasoSync sync(int64_t send, int64_t merge, int group, int S) {
  DasoSync d;
  d.send_batch = send;
  d.merge_batch = merge;
  d.group = group;
  d.S = S;
  return d;
}

void expect_schedule(const std::vector<DasoSync>& got, const std::vector<DasoSync>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].send_batch, want[i].send_batch) << "sync " << i;
    EXPECT_EQ(got[i].merge_batch, want[i].merge_batch) << "sync " << i;
    EXPECT_EQ(got[i].group, want[i].group) << "sync " << i;
    EXPECT_EQ(got[i].S, want[i].S) << "sync " << i;
  }
}

TEST(DasoSchedule, B4S1SendsEveryFourthBatchAndForcesBlockingLastBatch) {
  // T = 10: sends after 0, 4, 8 (merged one batch later, 8's at the last batch), and the
  // epoch's last batch 9 is a blocking plain average. Groups alternate 0, 1, 0, 1.
  expect_schedule(daso_epoch_schedule(10, DasoPhase::cycling, 4, 1, 2),
                  {sync(0, 1, 0, 1), sync(4, 5, 1, 1), sync(8, 9, 0, 1), sync(9, 9, 1, 0)});
}

TEST(DasoSchedule, SendOnTheLastBatchIsBlocking) {
  // T = 9: batch 8 is both a send batch (8 % 4 == 0) and the last: S' = min(1, 0) = 0.
  expect_schedule(daso_epoch_schedule(9, DasoPhase::cycling, 4, 1, 2),
                  {sync(0, 1, 0, 1), sync(4, 5, 1, 1), sync(8, 8, 0, 0)});
}

TEST(DasoSchedule, StalenessIsClippedSoNothingCrossesTheEpoch) {
  // B = 2, S = 3, T = 7: S' = min(3, 6-t): 3, 3, 2, then the last batch blocks. Receives
  // overlap later sends (S > B).
  expect_schedule(daso_epoch_schedule(7, DasoPhase::cycling, 2, 3, 2),
                  {sync(0, 3, 0, 3), sync(2, 5, 1, 3), sync(4, 6, 0, 2), sync(6, 6, 1, 0)});
}

TEST(DasoSchedule, GroupsRotateRoundRobinOverFourLocalRanks) {
  expect_schedule(daso_epoch_schedule(4, DasoPhase::cycling, 1, 1, 4),
                  {sync(0, 1, 0, 1), sync(1, 2, 1, 1), sync(2, 3, 2, 1), sync(3, 3, 3, 0)});
  expect_schedule(daso_epoch_schedule(6, DasoPhase::cycling, 1, 1, 4),
                  {sync(0, 1, 0, 1), sync(1, 2, 1, 1), sync(2, 3, 2, 1), sync(3, 4, 3, 1),
                   sync(4, 5, 0, 1), sync(5, 5, 1, 0)});
}

TEST(DasoSchedule, SZeroIsBlockingEveryBBatches) {
  expect_schedule(daso_epoch_schedule(7, DasoPhase::cycling, 3, 0, 2),
                  {sync(0, 0, 0, 0), sync(3, 3, 1, 0), sync(6, 6, 0, 0)});
}

TEST(DasoSchedule, BlockingPhasesSyncAfterEveryBatch) {
  for (DasoPhase ph : {DasoPhase::warmup, DasoPhase::cooldown})
    expect_schedule(
        daso_epoch_schedule(5, ph, 4, 1, 2),
        {sync(0, 0, 0, 0), sync(1, 1, 1, 0), sync(2, 2, 0, 0), sync(3, 3, 1, 0), sync(4, 4, 0, 0)});
}

TEST(DasoSchedule, WithoutEpochEndSyncTheLastReceiveStillLandsInTheEpoch) {
  expect_schedule(daso_epoch_schedule(10, DasoPhase::cycling, 4, 1, 2, false),
                  {sync(0, 1, 0, 1), sync(4, 5, 1, 1), sync(8, 9, 0, 1)});
}

TEST(DasoSchedule, OneBatchEpochAndBadArguments) {
  expect_schedule(daso_epoch_schedule(1, DasoPhase::cycling, 4, 1, 2), {sync(0, 0, 0, 0)});
  EXPECT_THROW(daso_epoch_schedule(0, DasoPhase::cycling, 4, 1, 2), Error);
  EXPECT_THROW(daso_epoch_schedule(5, DasoPhase::cycling, 0, 1, 2), Error);
  EXPECT_THROW(daso_epoch_schedule(5, DasoPhase::cycling, 2, -1, 2), Error);
}

TEST(DasoPhases, WarmupCyclingCooldown) {
  DasoConfig c;  // W = C = 4
  for (int e = 0; e < 12; ++e) {
    const DasoPhase want =
        e < 4 ? DasoPhase::warmup : (e < 8 ? DasoPhase::cycling : DasoPhase::cooldown);
    EXPECT_EQ(daso_phase(e, 12, c), want) << "epoch " << e;
  }
  // Short run: warm-up covers [0,4), the rest is cool-down, no cycling.
  for (int e = 0; e < 6; ++e)
    EXPECT_EQ(daso_phase(e, 6, c), e < 4 ? DasoPhase::warmup : DasoPhase::cooldown);
  c.phases = false;
  EXPECT_EQ(daso_phase(0, 12, c), DasoPhase::cycling);
  EXPECT_EQ(daso_phase(11, 12, c), DasoPhase::cycling);
}

TEST(DasoCycle, PlateauTransitionsOnScriptedLosses) {
  DasoConfig c;
  c.warmup_epochs = 1;
  c.cooldown_epochs = 1;  // E = 100: epochs 1..98 cycle
  DasoCycle cy(c);
  struct Step {
    double loss;
    bool plateau;
    int B, S;
  };
  // Epoch 0 is warm-up: its (low) loss must not feed the detector, else epochs 1-3 would all
  // be "bad" against it. Threshold 5 %, patience 2: the 3rd epoch without a 5 % improvement on
  // the best is a plateau.
  const std::vector<Step> script = {
      {1.00, false, 4, 1},  // 0 warm-up: ignored
      {2.00, false, 4, 1},  // 1 best = 2
      {1.50, false, 4, 1},  // 2 improves (< 1.9)
      {1.45, false, 4, 1},  // 3 bad 1 (not < 1.425)
      {1.44, false, 4, 1},  // 4 bad 2
      {1.43, true, 2, 1},   // 5 bad 3: plateau, B halves, S stays at its floor 1
      {1.00, false, 2, 1},  // 6 improves
      {0.99, false, 2, 1},  // 7 bad 1
      {0.98, false, 2, 1},  // 8 bad 2
      {0.97, true, 1, 1},   // 9 plateau: (1, 1)
      {0.90, false, 1, 1},  // 10 improves (< 0.95)
      {0.90, false, 1, 1},  // 11
      {0.90, false, 1, 1},  // 12
      {0.90, true, 4, 1},   // 13 plateau with B = S = 1: reset to (B_max, S)
  };
  for (size_t e = 0; e < script.size(); ++e) {
    EXPECT_EQ(cy.end_epoch(static_cast<int64_t>(e), 100, script[e].loss), script[e].plateau)
        << "epoch " << e;
    EXPECT_EQ(cy.B(), script[e].B) << "epoch " << e;
    EXPECT_EQ(cy.S(), script[e].S) << "epoch " << e;
  }
  EXPECT_EQ(cy.plateaus(), 3);
  // Cool-down epochs do not feed the detector either.
  for (int e = 0; e < 5; ++e) EXPECT_FALSE(cy.end_epoch(99, 100, 5.0));
  EXPECT_EQ(cy.B(), 4);
}

// A constant loss: best at the first cycling epoch, then a plateau every 3rd epoch.
std::vector<std::pair<int, int>> cycle_under_constant_loss(DasoConfig c, int plateaus) {
  c.warmup_epochs = 0;
  c.cooldown_epochs = 0;
  DasoCycle cy(c);
  std::vector<std::pair<int, int>> seen = {{cy.B(), cy.S()}};
  int64_t e = 0;
  while (cy.plateaus() < plateaus) {
    if (cy.end_epoch(e++, 1000, 1.0)) seen.emplace_back(cy.B(), cy.S());
    EXPECT_LT(e, 1000);
  }
  EXPECT_EQ(e, 1 + 3 * plateaus);
  return seen;
}

// A cycle restored from save_state in the middle of a patience count (bad epochs 2 of 3, best
// 1.50) takes the same decisions as the one that never stopped: the plateau of the hand script
// above falls on epoch 5 for both.
TEST(DasoCycle, StateRoundTripKeepsThePatienceCount) {
  DasoConfig c;
  c.warmup_epochs = 1;
  c.cooldown_epochs = 1;
  DasoCycle a(c);
  const std::vector<double> losses = {1.00, 2.00, 1.50, 1.45, 1.44};  // epochs 0-4
  for (size_t e = 0; e < losses.size(); ++e) a.end_epoch(int64_t(e), 100, losses[e]);
  StateDict st;
  a.save_state(st);
  EXPECT_EQ(st.get_int("detector.bad_epochs"), 2);
  EXPECT_EQ(st.get_double("detector.best"), 1.50);
  DasoCycle b(c);
  b.load_state(st);
  EXPECT_TRUE(b.end_epoch(5, 100, 1.43));  // bad 3: plateau (a fresh cycle would set its best)
  EXPECT_EQ(b.B(), 2);
  EXPECT_EQ(b.plateaus(), 1);
  DasoCycle fresh(c);
  EXPECT_FALSE(fresh.end_epoch(5, 100, 1.43));
}

TEST(DasoCycle, LoadStateRejectsValuesOutsideTheConfiguration) {
  DasoConfig c;  // B_max 4, S 1, patience 2 (detector patience 3), epochs 4-95 cycle
  DasoCycle a(c);
  a.end_epoch(4, 100, 1.0);  // the detector has a best
  StateDict good;
  a.save_state(good);
  auto with = [&](const std::string& key, const std::string& value) {
    StateDict s;
    for (const auto& [k, v] : good.values()) s.put_string(k, k == key ? value : v);
    return s;
  };
  auto message = [&](const StateDict& s) {
    try {
      DasoCycle(c).load_state(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message(with("B", "8")).find("'B'"), std::string::npos);
  EXPECT_NE(message(with("S", "0")).find("'S'"), std::string::npos);
  EXPECT_NE(message(with("detector.bad_epochs", "3")).find("'bad_epochs'"), std::string::npos);
  EXPECT_NE(message(with("detector.best", "nan")).find("'best'"), std::string::npos);
  EXPECT_NE(message(with("detector.has_best", "1")).find("'has_best'"), std::string::npos);
}

TEST(DasoCycle, HalvingAndDecrementingS) {
  DasoConfig c;
  c.B_max = 8;
  c.S_init = 4;
  using V = std::vector<std::pair<int, int>>;
  EXPECT_EQ(cycle_under_constant_loss(c, 5), (V{{8, 4}, {4, 2}, {2, 1}, {1, 1}, {8, 4}, {4, 2}}));
  c.halve_S = false;  // the authors' code: S - 1
  EXPECT_EQ(cycle_under_constant_loss(c, 4), (V{{8, 4}, {4, 3}, {2, 2}, {1, 1}, {8, 4}}));
  // The paper's setting.
  EXPECT_EQ(cycle_under_constant_loss(DasoConfig{}, 4),
            (V{{4, 1}, {2, 1}, {1, 1}, {4, 1}, {2, 1}}));
}

TEST(DasoCycle, FixedBSWhenPhasesAreOff) {
  DasoConfig c;
  c.phases = false;
  DasoCycle cy(c);
  for (int e = 0; e < 10; ++e) EXPECT_FALSE(cy.end_epoch(e, 10, 1.0));
  EXPECT_EQ(cy.B(), 4);
  EXPECT_EQ(cy.S(), 1);
}

TEST(DasoConfig, OptionsAndTheirErrors) {
  Options o;
  o.set("daso.B_max", "8");
  o.set("daso.S", "2");
  o.set("daso.warmup_epochs", "1");
  o.set("daso.cooldown_epochs", "3");
  o.set("daso.plateau_threshold", "0.1");
  o.set("daso.plateau_patience", "5");
  o.set("daso.S_reduction", "decrement");
  o.set("daso.phases", "false");
  o.set("daso.epoch_end_sync", "false");
  o.set("daso.blocking_wire", "f16");
  o.set("daso.global_wire", "bf16");
  const DasoConfig c = DasoConfig::from_options(o);
  EXPECT_EQ(c.B_max, 8);
  EXPECT_EQ(c.S_init, 2);
  EXPECT_EQ(c.warmup_epochs, 1);
  EXPECT_EQ(c.cooldown_epochs, 3);
  EXPECT_DOUBLE_EQ(c.plateau_threshold, 0.1);
  EXPECT_EQ(c.plateau_patience, 5);
  EXPECT_FALSE(c.halve_S);
  EXPECT_FALSE(c.phases);
  EXPECT_FALSE(c.epoch_end_sync);
  EXPECT_EQ(c.blocking_wire, DType::f16);
  EXPECT_EQ(c.global_wire, DType::bf16);
  EXPECT_TRUE(o.unused_keys().empty());
  const DasoConfig d = DasoConfig::from_options(Options());
  EXPECT_EQ(d.B_max, 4);
  EXPECT_EQ(d.S_init, 1);
  EXPECT_EQ(d.warmup_epochs, 4);
  EXPECT_EQ(d.cooldown_epochs, 4);
  EXPECT_EQ(d.blocking_wire, DType::bf16);
  EXPECT_EQ(d.global_wire, DType::f32);
  for (auto [k, v] :
       std::vector<std::pair<const char*, const char*>>{{"daso.B_max", "0"},
                                                        {"daso.S", "-1"},
                                                        {"daso.S_reduction", "third"},
                                                        {"daso.blocking_wire", "i32"},
                                                        {"daso.warmup_epochs", "-2"}}) {
    Options bad;
    bad.set(k, v);
    try {
      DasoConfig::from_options(bad);
      ADD_FAILURE() << "no error for " << k << "=" << v;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(k), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dplab
