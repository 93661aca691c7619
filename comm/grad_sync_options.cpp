#include "dplab/comm/grad_sync_options.h"

namespace dplab {

const OptionTable& grad_sync_options() {
  static const OptionTable t({
      {"first_bucket_mb", "1",
       "size of the first gradient bucket, MiB (small: communication starts early in the "
       "backward pass; comm/grad_sync.h)",
       number(0)},
      {"bucket_cap_mb", "25",
       "size of the later gradient buckets, MiB (0: one allreduce per tensor)", number(0)},
      {"wire", "f32", "wire type of the gradient allreduce: f32, bf16 or f16 (f32 accumulation)",
       choice({"f32", "bf16", "f16"})},
      {"hierarchical", "false",
       "reduce-scatter within each node, allreduce across nodes, allgather within the node",
       boolean()},
      // Gradient compression (comm/grad_compress.h, docs/algorithms/compression.md).
      {"compress", "none",
       "gradient compression: none, powersgd (low rank, Vogels et al. 2019) or topk (sparse, "
       "error feedback); CPU arenas, wire f32 (hierarchical: across nodes only)",
       choice({"none", "powersgd", "topk"})},
      {"powersgd.rank", "1", "PowerSGD rank r (each matrix is approximated at min(n, m, r))",
       integer(1)},
      {"powersgd.start_step", "1000",
       "PowerSGD: synchronised steps of plain allreduce before compression starts (PyTorch's "
       "start_powerSGD_iter; a run with fewer steps gets a warning: it never compresses)",
       integer(0)},
      {"powersgd.min_compression_rate", "2",
       "PowerSGD: an n x m matrix is compressed only if n m > (n + m) r times this; others "
       "travel uncompressed",
       number(0)},
      {"powersgd.warm_start", "true",
       "PowerSGD: keep Q between steps (false: a fresh Q from the seed every step)", boolean()},
      // 0 itself is refused by the reader (CompressOptions::from_options): k would be 0.
      {"topk.ratio", "0.01",
       "top-k: fraction of each bucket's elements sent, k = max(1, ratio n), in (0, 1]",
       number(0, 1)},
      {"reducer", "",
       "bucket reducer registered by name (comm/bucket_reducer.h), e.g. an experiment's own; "
       "empty: the built-in one the keys above select (flat, hierarchical, powersgd or topk)",
       text()},
  });
  return t;
}

OptionTable grad_sync_option_table(const std::string& prefix, const std::string& what) {
  return grad_sync_options().prefixed(prefix, what);
}

}  // namespace dplab
