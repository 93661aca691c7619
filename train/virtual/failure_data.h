// What becomes of a down rank's samples on a virtual cluster with fail events (issue #36 item 2;
// docs/virtual_cluster.md, "Failures"), option cluster.failure_data:
//   - reassign (the default): at a step with ranks down, the down ranks' batches of that step
//     (each rank's shard as in a run without failures) are split among the live ranks, which
//     train on their own batch followed by their share. So each step still sees the global
//     batch's samples and the epoch every sample; a live rank's batch grows and so does its
//     compute (charged: a replayed profile's forward and backward scale with the batch).
//   - drop: each live rank keeps its own batch; the down ranks' batches of those steps are seen
//     by no one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dplab {

enum class FailureData { reassign, drop };

// "reassign" or "drop" (the option's value; checked by the option table).
FailureData parse_failure_data(const std::string& value);

// This live rank's share of the down ranks' samples of one step: the down ranks' batches
// (`down_batches`, dataset indices, in ascending rank order) concatenated and cut into
// `live_count` contiguous parts, part j = [floor(j m / L), floor((j + 1) m / L)) of the m
// samples; `live_index` is this rank's place among the L live ranks (ascending rank). The parts'
// sizes differ by at most one; together they are every down sample once.
std::vector<int64_t> reassigned_samples(const std::vector<std::vector<int64_t>>& down_batches,
                                        int live_index, int live_count);

}  // namespace dplab
