#include "dplab/train/report/epoch_loss.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dplab/core/error.h"
#include "dplab/optim/schedule.h"
#include "dplab/train/loop/rank_group.h"

namespace dplab {

double world_epoch_loss(const RankGroup& ranks, double loss_sum, int64_t seen) {
  // JSON doubles are written in shortest round-trip form: exact on every rank.
  const std::vector<std::string> all = ranks.allgather(nlohmann::json{loss_sum, seen}.dump());
  double sum = 0;
  int64_t n = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    const nlohmann::json a = nlohmann::json::parse(all[r]);
    DPLAB_CHECK(a.is_array() && a.size() == 2 && a[1].is_number_integer(),
                "epoch loss of rank {}: expected [loss_sum, samples], got {}", r, all[r]);
    sum += a[0].get<double>();
    n += a[1].get<int64_t>();
  }
  return n > 0 ? sum / double(n) : 0.0;
}

void observe_epoch_loss(LrSchedule& schedule, const RankGroup& ranks, double loss_sum,
                        int64_t seen) {
  schedule.observe_epoch(world_epoch_loss(ranks, loss_sum, seen));
}

}  // namespace dplab
