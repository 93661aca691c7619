// DC-S3GD's learning rate as the user sees it: the metrics' `lr` is the lr its own schedule
// applied (not the optimizer's --lr), and the run start states the paper's peak lr (eta_theo/3).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "data/temp_dir.h"
#include "dplab/comm/algorithms/dcs3gd.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

// The notes' table (papers/notes/dc-s3gd.md §2, eta_theo = 0.1 B/256): B = 16384 gives
// eta_theo 6.4 and a peak of 2.13 after a 15-of-90-epoch warm-up (1/6: eta_theo/3); B = 131072
// gives 51.2 and 22.76 after 20 of 90 (2/9: 4/9 eta_theo); VGG-16 (0.02 at 256), B = 16384:
// 1.28 and 0.43.
TEST(Dcs3gdLr, PaperPeakLrMatchesTheNotesTable) {
  EXPECT_DOUBLE_EQ(dcs3gd_paper_theo_lr(16384), 6.4);
  EXPECT_NEAR(dcs3gd_paper_peak_lr(16384, 15.0 / 90.0), 6.4 / 3.0, 1e-12);
  EXPECT_NEAR(dcs3gd_paper_peak_lr(16384, 15.0 / 90.0), 2.13, 0.005);
  EXPECT_DOUBLE_EQ(dcs3gd_paper_theo_lr(131072), 51.2);
  EXPECT_NEAR(dcs3gd_paper_peak_lr(131072, 20.0 / 90.0), 22.76, 0.005);
  EXPECT_NEAR(dcs3gd_paper_theo_lr(16384, 0.02), 1.28, 1e-12);
  EXPECT_NEAR(dcs3gd_paper_peak_lr(16384, 15.0 / 90.0, 0.02), 0.43, 0.005);
  EXPECT_THROW(dcs3gd_paper_peak_lr(256, 0.6), Error);
  const std::string note = dcs3gd_peak_lr_note(16384, 1.0 / 6.0, 2.0);
  EXPECT_NE(note.find("= 6.4 "), std::string::npos) << note;
  EXPECT_NE(note.find("= 2.133 "), std::string::npos) << note;
}

// 256 images in batches of 64: 4 steps per epoch, 3 epochs, T = 12 iterations, warm-up
// round(12/6) = 2. f(t) = (t+1)/2 for t < 2, then (12 - t)/10. The epoch records are written
// after each epoch's last step, t = 3, 7, 11: f = 0.9, 0.5, 0.1, so lr = 0.01 f = 0.009,
// 0.005, 0.001 (the optimizer's lr stays 0.01, which the metrics used to report).
TEST(Dcs3gdLr, MetricsReportTheAppliedLr) {
  ScopedTempDir dir("dcs3gd-lr");
  const auto r = run_dplab(
      "train --model mnist_cnn --data fashion-mnist --batch 64 --lr 0.01 --momentum 0.9 "
      "--epochs 3 --algo dcs3gd --threads 2 --set data.train_limit=256 "
      "--set data.test_limit=64 --set progress=off --out " +
          dir.file("run"),
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("dcs3gd: the paper's peak lr for global batch 64: eta_theo = 0.1 x "
                       "64/256 = 0.025"),
            std::string::npos)
      << r.out;
  std::istringstream in(slurp(dir.path / "run" / "metrics.jsonl"));
  std::vector<double> lr;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j["kind"] == "epoch") lr.push_back(j["lr"].get<double>());
  }
  ASSERT_EQ(lr.size(), 3u);
  const double expect[3] = {0.009, 0.005, 0.001};
  for (size_t e = 0; e < 3; ++e) EXPECT_NEAR(lr[e], expect[e], 1e-12) << "epoch " << e + 1;
}

}  // namespace
}  // namespace dplab
