#include "dplab/train/data/data_pipeline.h"

#include <algorithm>

#include "dplab/train/config/config.h"

namespace dplab {
namespace {

SamplerOptions sampler_options(const DataPipelineOptions& o) {
  SamplerOptions s;
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.seed = o.seed;
  s.shuffle = true;
  return s;
}

LoaderOptions loader_options(const DataPipelineOptions& o) {
  LoaderOptions l;
  l.batch_size = o.batch;
  l.workers = o.workers;
  l.prefetch = o.prefetch;
  l.seed = o.seed;
  return l;
}

}  // namespace

DataPipelineOptions DataPipelineOptions::from(const Options& opt, int rank, int world_size,
                                              uint64_t seed, int64_t batch) {
  DataPipelineOptions o;
  o.rank = rank;
  o.world_size = world_size;
  o.seed = seed;
  o.batch = batch;
  o.workers = int(train_option_table().get_int(opt, "data.workers"));
  o.prefetch = int(train_option_table().get_int(opt, "data.prefetch"));
  o.shuffle_buffer = train_option_table().get_int(opt, "data.shuffle_buffer");
  return o;
}

DataPipeline::DataPipeline(std::shared_ptr<Dataset> train, const DataPipelineOptions& o,
                           Device device)
    : opt_(o),
      shards_(std::dynamic_pointer_cast<ShardDataset>(train)),
      sampler_(train->size(), sampler_options(o)),
      loader_(train, loader_options(o)),
      batches_(loader_, device) {
  // Tar shards: every rank streams the same number of samples (the rest is dropped).
  rank_samples_ =
      shards_ ? shard_stream_count(shards_->shard_begin(), o.world_size) : sampler_.num_samples();
  steps_per_epoch_ = loader_.num_batches_for(rank_samples_);
}

std::vector<int64_t> DataPipeline::epoch_indices(int64_t epoch, int rank) {
  if (shards_)
    return shard_stream_order(shards_->shard_begin(), rank, opt_.world_size, opt_.seed, epoch,
                              opt_.shuffle_buffer);
  sampler_.set_epoch(epoch);
  if (rank == opt_.rank) return sampler_.indices();
  // The sampler's strided shard of the order every rank shares (data/sampler.h).
  const std::vector<int64_t> all = sampler_.global_order();
  std::vector<int64_t> mine;
  for (size_t i = size_t(rank); i < all.size(); i += size_t(opt_.world_size))
    mine.push_back(all[i]);
  return mine;
}

std::vector<int64_t> DataPipeline::batch_indices(int rank, int64_t number) {
  auto it = orders_.find(rank);
  if (it == orders_.end()) it = orders_.emplace(rank, epoch_indices(epoch_, rank)).first;
  const std::vector<int64_t>& order = it->second;
  const int64_t begin = std::min<int64_t>(number * opt_.batch, int64_t(order.size()));
  const int64_t end = std::min<int64_t>(begin + opt_.batch, int64_t(order.size()));
  return std::vector<int64_t>(order.begin() + begin, order.begin() + end);
}

void DataPipeline::start_epoch(int64_t epoch, int64_t first_batch, trace::Tracer* tracer,
                               int64_t first_global_step) {
  epoch_ = epoch;
  orders_.clear();
  loader_.set_tracer(tracer, first_global_step);  // load batch events
  loader_.start_epoch(epoch_indices(epoch), epoch, first_batch);
  batches_.reset();
}

}  // namespace dplab
