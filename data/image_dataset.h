// Datasets of encoded images (JPEG tar shards, image folders): each sample is decoded and
// transformed on every get (augmentation draws from the loader's per-sample Philox stream).
// A sample that cannot be read or decoded is counted and reported with its name (shard and key,
// or file); with OnError::skip the next readable sample (index + 1, ...) takes its place, so a
// batch stays a pure function of (seed, epoch, indices); with OnError::fail it throws.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "dplab/data/dataset.h"
#include "dplab/data/transforms.h"

namespace dplab {

enum class OnError { skip, fail };
OnError parse_on_error(const std::string& s);  // "skip" or "fail"

class EncodedImageDataset : public Dataset {
 public:
  EncodedImageDataset(ImageTransformOptions transform, OnError on_error);
  Shape sample_shape() const override { return {3, transform_.size, transform_.size}; }
  // Without a random stream (evaluation): a train transform falls back to stream (0, index).
  int64_t get_into(int64_t index, float* out) const override;
  int64_t get_random_into(int64_t index, float* out, PhiloxStream& rng) const override;
  // Samples skipped so far (index-time damage plus decode failures).
  int64_t error_count() const { return errors_.load(); }
  const ImageTransformOptions& transform() const { return transform_; }
  OnError on_error() const { return on_error_; }

  // The sample's encoded bytes and its label; throws (TarError, Error) when unreadable.
  virtual std::vector<uint8_t> read_encoded(int64_t index) const = 0;
  virtual int64_t label(int64_t index) const = 0;
  // "shard.tar:key" or the file path.
  virtual std::string sample_name(int64_t index) const = 0;

 protected:
  // Counts and reports a damaged sample; throws with `what` when on_error is fail.
  void report_error(const std::string& what) const;

 private:
  ImageTransformOptions transform_;
  OnError on_error_;
  mutable std::atomic<int64_t> errors_{0};
};

}  // namespace dplab
