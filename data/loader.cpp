#include "dplab/data/loader.h"

#include "dplab/core/error.h"
#include "dplab/core/trace/tracer.h"

namespace dplab {

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions opt)
    : dataset_(std::move(dataset)), opt_(std::move(opt)) {
  DPLAB_CHECK(dataset_ != nullptr, "BatchLoader: no dataset");
  DPLAB_CHECK(opt_.batch_size > 0, "BatchLoader: batch size {} must be positive", opt_.batch_size);
  DPLAB_CHECK(opt_.workers >= 0, "BatchLoader: negative worker count {}", opt_.workers);
  if (opt_.prefetch < 1) opt_.prefetch = 1;
}

BatchLoader::~BatchLoader() {
  stop();
}

int64_t BatchLoader::num_batches_for(int64_t n) const {
  return opt_.drop_last ? n / opt_.batch_size : (n + opt_.batch_size - 1) / opt_.batch_size;
}

void BatchLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_space_.notify_all();
  cv_ready_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void BatchLoader::start_epoch(std::vector<int64_t> indices, int64_t epoch, int64_t first_batch) {
  stop();
  indices_ = std::move(indices);
  for (int64_t i : indices_)
    DPLAB_CHECK(i >= 0 && i < dataset_->size(), "BatchLoader: index {} out of range for {}", i,
                dataset_->describe());
  // A resume position comes from a file: a negative one would index before the batch list.
  DPLAB_CHECK(first_batch >= 0, "BatchLoader: first batch {} of epoch {} is negative", first_batch,
              epoch);
  epoch_ = epoch;
  next_out_ = next_build_ = std::min(first_batch, num_batches());
  ready_.clear();
  error_ = nullptr;
  stopping_ = false;
  for (int w = 0; w < opt_.workers; ++w) threads_.emplace_back([this, w] { worker_loop(w); });
}

void BatchLoader::set_tracer(trace::Tracer* tracer, int64_t step_of_batch0) {
  stop();  // no worker reads these while they change
  tracer_ = tracer;
  trace_step0_ = step_of_batch0;
}

Batch BatchLoader::make_batch(int64_t b) const {
  const int64_t begin = b * opt_.batch_size;
  const int64_t end = std::min<int64_t>(begin + opt_.batch_size, int64_t(indices_.size()));
  return make_batch_of(std::vector<int64_t>(indices_.begin() + begin, indices_.begin() + end), b);
}

Batch BatchLoader::make_batch_of(const std::vector<int64_t>& indices, int64_t number) const {
  const int64_t n = int64_t(indices.size());
  Shape shape = dataset_->sample_shape();
  const int64_t per = shape_numel(shape);
  Shape bshape{n};
  bshape.insert(bshape.end(), shape.begin(), shape.end());
  Batch out;
  out.number = number;
  out.images = Tensor::empty(bshape);
  out.labels = Tensor::empty({n}, DType::i64);
  float* img = out.images.data<float>();
  int64_t* lab = out.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = indices[size_t(i)];
    DPLAB_CHECK(index >= 0 && index < dataset_->size(), "BatchLoader: index {} out of range for {}",
                index, dataset_->describe());
    // Stream: epoch in the high bits, dataset index in the low 40 (up to 10^12 samples).
    // Decode-time augmentation draws first, then the float transform.
    PhiloxStream rng(opt_.seed, (uint64_t(epoch_) << 40) | uint64_t(index));
    lab[i] = dataset_->get_random_into(index, img + i * per, rng);
    if (opt_.transform) opt_.transform(img + i * per, shape, rng);
  }
  return out;
}

void BatchLoader::worker_loop(int worker) {
  const int64_t total = num_batches();
  for (;;) {
    int64_t b;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Bounded prefetch: build at most `prefetch` batches ahead of the consumer.
      cv_space_.wait(lock, [&] {
        return stopping_ || next_build_ >= total || next_build_ < next_out_ + opt_.prefetch;
      });
      if (stopping_ || next_build_ >= total) return;
      b = next_build_++;
    }
    Batch batch;
    std::exception_ptr err;
    const int64_t step = trace_step0_ + b;
    const bool traced = trace::kCompiled && tracer_ && tracer_->in_window(step);
    const auto t0 = traced ? trace::Clock::now() : trace::Clock::time_point{};
    try {
      batch = make_batch(b);
    } catch (...) {
      err = std::current_exception();
    }
    if (traced)
      tracer_->complete("load batch", "data", tracer_->loader_tid(worker), t0, trace::Clock::now(),
                        step, {{"batch", double(b)}, {"worker", double(worker)}});
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (err && !error_) error_ = err;
      if (!err) ready_.emplace(b, std::move(batch));
    }
    cv_ready_.notify_all();
    if (err) return;
  }
}

bool BatchLoader::next(Batch& out) {
  if (next_out_ >= num_batches()) return false;
  if (threads_.empty()) {
    out = make_batch(next_out_++);
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_ready_.wait(lock, [&] { return error_ || ready_.count(next_out_) != 0; });
  if (error_) std::rethrow_exception(error_);
  auto it = ready_.find(next_out_);
  out = std::move(it->second);
  ready_.erase(it);
  ++next_out_;
  lock.unlock();
  cv_space_.notify_all();
  return true;
}

}  // namespace dplab
