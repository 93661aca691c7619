// The training data's way to the loop, for one rank: which samples it takes in each epoch (the
// DistributedSampler, or for tar shards the shards' stream order with a shuffle buffer,
// data/shards.h), the batch loader with its worker threads (data/loader.h), and the upload to
// the training device one batch ahead (train/data/device_prefetch.h). run_training builds one
// from the options; an experiment's own loop can build one the same way.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "dplab/core/device.h"
#include "dplab/core/options.h"
#include "dplab/core/trace/tracer.h"
#include "dplab/data/loader.h"
#include "dplab/data/sampler.h"
#include "dplab/data/shards.h"
#include "dplab/train/data/device_prefetch.h"

namespace dplab {

struct DataPipelineOptions {
  int rank = 0;
  int world_size = 1;
  uint64_t seed = 0;           // the shuffle's and the augmentations' (option seed)
  int64_t batch = 1;           // per rank (option batch)
  int workers = 0;             // option data.workers
  int prefetch = 4;            // option data.prefetch
  int64_t shuffle_buffer = 0;  // option data.shuffle_buffer (tar shards only)
  // Reads data.workers, data.prefetch and data.shuffle_buffer (defaults from the option table).
  static DataPipelineOptions from(const Options& opt, int rank, int world_size, uint64_t seed,
                                  int64_t batch);
};

class DataPipeline {
 public:
  DataPipeline(std::shared_ptr<Dataset> train, const DataPipelineOptions& o, Device device);
  DataPipeline(const DataPipeline&) = delete;
  DataPipeline& operator=(const DataPipeline&) = delete;

  // Batches per epoch on this rank (every rank has the same count, so collective steps match).
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  // Samples this rank reads per epoch (its shard of the data).
  int64_t rank_samples() const { return rank_samples_; }
  // This rank's sample order in `epoch` (a function of seed, rank, world size and epoch only).
  std::vector<int64_t> epoch_indices(int64_t epoch) { return epoch_indices(epoch, opt_.rank); }
  // Any rank's: so a live rank of a virtual cluster can take a down rank's samples.
  std::vector<int64_t> epoch_indices(int64_t epoch, int rank);
  // Rank `rank`'s dataset indices of batch `number` of the epoch under way (start_epoch).
  std::vector<int64_t> batch_indices(int rank, int64_t number);
  // A batch of these dataset indices of the epoch under way, built as its batches are (the same
  // per-sample randomness), on the host.
  Batch make_batch(const std::vector<int64_t>& indices, int64_t number) const {
    return loader_.make_batch_of(indices, number);
  }
  // Starts `epoch` at batch `first_batch` (resume in the middle of an epoch); the loader's
  // batch events go to `tracer` as steps `first_global_step` + batch number.
  void start_epoch(int64_t epoch, int64_t first_batch, trace::Tracer* tracer,
                   int64_t first_global_step);
  // The batches on the device (valid until the next call of next(): device_prefetch.h).
  DeviceBatches& batches() { return batches_; }
  const DataPipelineOptions& options() const { return opt_; }

 private:
  DataPipelineOptions opt_;
  std::shared_ptr<ShardDataset> shards_;  // training data from tar shards: streamed order
  DistributedSampler sampler_;
  BatchLoader loader_;
  DeviceBatches batches_;
  int64_t steps_per_epoch_ = 0;
  int64_t rank_samples_ = 0;
  int64_t epoch_ = 0;                           // start_epoch's
  std::map<int, std::vector<int64_t>> orders_;  // batch_indices' ranks' orders of epoch_
};

}  // namespace dplab
