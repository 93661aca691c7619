// BatchLoader: assembles batches [B, C, H, W] f32 + labels [B] i64 from a Dataset in the order a
// sampler gives, optionally on worker threads with a bounded prefetch queue. A batch is a pure
// function of (indices, epoch, batch number, seed): per-sample randomness (the transform's
// Philox stream) is keyed by (seed, epoch, dataset index), so batches are identical for any
// number of workers and any scheduling.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dplab/core/philox.h"
#include "dplab/data/dataset.h"

namespace dplab {

namespace trace {
class Tracer;
}

struct Batch {
  Tensor images;       // f32 [B, sample_shape...]
  Tensor labels;       // i64 [B]
  int64_t number = 0;  // batch number within the epoch
};

// Modifies one sample's image in place (augmentation); `rng` is keyed by (seed, epoch, index).
using SampleTransform = std::function<void(float* image, const Shape& shape, PhiloxStream& rng)>;

struct LoaderOptions {
  int64_t batch_size = 64;
  bool drop_last = false;  // drop a final partial batch
  int workers = 0;         // 0: build batches on the calling thread
  int prefetch = 4;        // batches built ahead of the consumer (with workers)
  uint64_t seed = 0;
  SampleTransform transform;  // optional
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions opt);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts an epoch over `indices` (a sampler's output), from batch `first_batch` on (resume
  // in the middle of an epoch). Stops any epoch still running.
  void start_epoch(std::vector<int64_t> indices, int64_t epoch, int64_t first_batch = 0);
  int64_t num_batches() const { return num_batches_for(int64_t(indices_.size())); }
  int64_t num_batches_for(int64_t n) const;
  // The next batch of the epoch; false when the epoch is done. Rethrows a worker's error.
  bool next(Batch& out);
  // Builds batch `b` of the current epoch directly (what the workers run).
  Batch make_batch(int64_t b) const;
  // Builds a batch of these dataset indices as the current epoch's batches are built (the same
  // samples, the same per-sample randomness), numbered `number`: the samples a live rank of a
  // virtual cluster takes from a down one (train/virtual/failure_data.h).
  Batch make_batch_of(const std::vector<int64_t>& indices, int64_t number) const;
  const Dataset& dataset() const { return *dataset_; }
  // Timeline (core/trace/tracer.h; nullptr: off): each batch a worker builds is a `load batch`
  // event of the step that will consume it (`step_of_batch0` + its number), when that step is
  // in the tracer's window, on the worker's loader thread. Stops a running epoch: call before
  // start_epoch. Batches built on the calling thread (no workers) are in its `data_wait`.
  void set_tracer(trace::Tracer* tracer, int64_t step_of_batch0);

 private:
  void stop();
  void worker_loop(int worker);

  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions opt_;
  std::vector<int64_t> indices_;
  int64_t epoch_ = 0;
  int64_t next_out_ = 0;    // next batch handed to the consumer
  int64_t next_build_ = 0;  // next batch a worker claims
  std::map<int64_t, Batch> ready_;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::mutex mu_;
  std::condition_variable cv_ready_, cv_space_;
  std::vector<std::thread> threads_;
  trace::Tracer* tracer_ = nullptr;
  int64_t trace_step0_ = 0;
};

}  // namespace dplab
