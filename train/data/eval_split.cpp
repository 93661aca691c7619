#include "dplab/train/data/eval_split.h"

#include <bit>
#include <cstdlib>
#include <cstring>

#include "dplab/core/error.h"

namespace dplab {

std::shared_ptr<Communicator> eval_world(const Options& opt) {
  CommConfig cfg = CommConfig::from_options(opt);
  // Control traffic: real time only, not charged on a modelled cluster (under a cluster the
  // driver does not count the compute thread's time spent on it either).
  cfg.platform.reset();
  cfg.virtual_time.reset();
  return mpi_world(cfg);
}

int launched_ranks() {
  for (const char* var : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"})
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return 1;
}

EvalShard eval_shard(int64_t n, int rank, int world) {
  DPLAB_CHECK(world >= 1 && rank >= 0 && rank < world,
              "evaluation split: rank {} of world size {} is out of range", rank, world);
  DPLAB_CHECK(n >= 0, "evaluation split: negative sample count {}", n);
  // Rank r takes [floor(n r / W), floor(n (r+1) / W)): consecutive blocks, no gaps, no overlap.
  return {n * rank / world, n * (rank + 1) / world};
}

EvalSums sum_over_ranks(Communicator& comm, const EvalSums& mine) {
  constexpr int kFields = 4;
  const int world = comm.size();
  Tensor send = Tensor::from_vector_i64(
      {std::bit_cast<int64_t>(mine.loss_sum), mine.correct, mine.correct5, mine.count}, {kFields});
  Tensor recv = Tensor::zeros({int64_t(world) * kFields}, DType::i64);
  comm.allgather(send, recv);
  const std::vector<int64_t> all = recv.to_vector_i64();
  EvalSums total;
  for (int r = 0; r < world; ++r) {  // rank order: the same sum on every rank
    const int64_t* f = all.data() + size_t(r) * kFields;
    total.loss_sum += std::bit_cast<double>(f[0]);
    total.correct += f[1];
    total.correct5 += f[2];
    total.count += f[3];
  }
  return total;
}

namespace {

// The model's state in a fixed order: parameters, then buffers.
std::vector<Tensor> model_tensors(const Module& model) {
  std::vector<Tensor> out;
  for (const auto& p : model.named_parameters()) out.push_back(p.tensor);
  for (const auto& b : model.named_buffers()) out.push_back(b.tensor);
  return out;
}

// A host copy in plain row-major layout (the tensor itself when it already is one).
Tensor host_plain(const Tensor& t) {
  Tensor h = t.device().is_cpu() ? t : t.to(Device::cpu());
  return h.contiguous();
}

// 64-bit hash of the bytes (multiply-xorshift over 8-byte words). Not cryptographic: it tells
// models that differ from rank 0's by chance (2^-64), not by design.
uint64_t mix(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}
uint64_t hash_bytes(uint64_t h, const unsigned char* p, size_t n) {
  h = mix(h, n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  return mix(h, tail);
}

}  // namespace

void SavedModel::restore() {
  for (size_t i = 0; i < targets_.size(); ++i) targets_[i].copy_(saved_[i]);
  targets_.clear();
  saved_.clear();
}

std::optional<SavedModel> adopt_root_model(Module& model, Communicator& comm) {
  const std::vector<Tensor> tensors = model_tensors(model);
  uint64_t h = 0x243F6A8885A308D3ull;
  int64_t nbytes = 0;
  for (const Tensor& t : tensors) {
    if (t.numel() == 0) continue;
    const Tensor p = host_plain(t);
    h = hash_bytes(h, static_cast<const unsigned char*>(p.raw_data()), p.nbytes());
    nbytes += int64_t(p.nbytes());
  }
  const int world = comm.size();
  Tensor send = Tensor::from_vector_i64({std::bit_cast<int64_t>(h), nbytes}, {2});
  Tensor recv = Tensor::zeros({int64_t(world) * 2}, DType::i64);
  comm.allgather(send, recv);
  const std::vector<int64_t> all = recv.to_vector_i64();
  bool same = true;
  for (int r = 0; r < world; ++r) {
    DPLAB_CHECK(all[size_t(r) * 2 + 1] == all[1],
                "evaluation: rank {}'s model has {} bytes of parameters and buffers, rank 0's has "
                "{}: the ranks hold different architectures",
                r, all[size_t(r) * 2 + 1], all[1]);
    same = same && all[size_t(r) * 2] == all[0];
  }
  if (same) return std::nullopt;

  // Rank 0 packs its state into one byte buffer; one broadcast; every rank unpacks it.
  SavedModel saved;
  Tensor packed = Tensor::empty({nbytes}, DType::u8);
  auto* bytes = static_cast<unsigned char*>(packed.raw_data());
  if (comm.rank() == 0) {
    size_t at = 0;
    for (const Tensor& t : tensors) {
      if (t.numel() == 0) continue;
      const Tensor p = host_plain(t);
      std::memcpy(bytes + at, p.raw_data(), p.nbytes());
      at += p.nbytes();
    }
  }
  comm.broadcast(packed, 0);
  if (comm.rank() == 0) return std::nullopt;  // its own model is the evaluated one
  size_t at = 0;
  for (const Tensor& t : tensors) {
    if (t.numel() == 0) continue;
    saved.targets_.push_back(t);
    saved.saved_.push_back(t.clone());
    Tensor host = Tensor::empty(t.shape(), t.dtype());
    std::memcpy(host.raw_data(), bytes + at, host.nbytes());
    at += host.nbytes();
    Tensor target = t;  // a handle on the same storage (copy_ is non-const)
    target.copy_(host);
  }
  return saved;
}

}  // namespace dplab
