// The epoch's training loss that the LR schedule reads (reduce-on-plateau). Every rank must
// read the same number: fed its own loss, each rank's plateau detector would cut the LR in an
// epoch of its own, and the ranks would train on with different learning rates.
#pragma once
#include <cstdint>

namespace dplab {

class LrSchedule;
class RankGroup;

// Σ_r loss_sum_r / Σ_r seen_r over all ranks (the sample-weighted mean training loss of the
// epoch; 0 when no rank saw a sample). Collective over `ranks`; the sums run in rank order on
// every rank, so every rank gets the same double.
double world_epoch_loss(const RankGroup& ranks, double loss_sum, int64_t seen);

// schedule.observe_epoch(world_epoch_loss(...)): the train loop's call at each epoch's end.
void observe_epoch_loss(LrSchedule& schedule, const RankGroup& ranks, double loss_sum,
                        int64_t seen);

}  // namespace dplab
