// `dplab shards --input DIR --output PREFIX [--per-shard N] [--seed S] [--val-fraction F]
// [--check decode|header]`: packs an image folder (<class>/<file>) into shuffled WebDataset tar
// shards plus index files (data/shards.h write_shards), checking every image first.
#include <iostream>

#include "dplab/data/shards.h"
#include "dplab/tools/dplab/command.h"

namespace dplab::cli {
namespace {
struct ShardsArgs {
  std::string input, output, check = "decode";
  int64_t per_shard = 1000;
  uint64_t seed = 0;
  double val_fraction = 0;
};

int64_t sum(const std::vector<int64_t>& v) {
  int64_t total = 0;
  for (int64_t n : v) total += n;
  return total;
}
}  // namespace

CommandSpec shards_command() {
  return {
      "shards", [](CLI::App& app) -> Action {
        auto a = std::make_shared<ShardsArgs>();
        CLI::App* c = app.add_subcommand(
            "shards",
            "pack an image folder (<class>/<file>) into shuffled tar shards in the WebDataset "
            "layout (KEY.jpg + KEY.cls, KEY = the source path without extension, e.g. "
            "n01440764/n01440764_10026) and an index PREFIX.json; bad images are reported and "
            "left out");
        c->add_option("--input", a->input, "image folder root")->required();
        c->add_option("--output", a->output,
                      "shard prefix: writes PREFIX-000000.tar, ... (with --val-fraction: "
                      "PREFIX-train-000000.tar, ... and PREFIX-val-000000.tar, ...)")
            ->required();
        c->add_option("--per-shard", a->per_shard, "images per shard")
            ->default_val(1000)
            ->check(CLI::PositiveNumber);
        c->add_option("--seed", a->seed, "shuffle and split seed")->default_val(0);
        c->add_option("--val-fraction", a->val_fraction,
                      "share of each class packed as a validation set (0: none)")
            ->default_val(0)
            ->check(CLI::Range(0.0, 0.999999));
        c->add_option("--check", a->check,
                      "how each image is checked before packing: decode (whole image) or header")
            ->default_val("decode")
            ->check(CLI::IsMember({"decode", "header"}));
        return [a]() {
          ShardWriteOptions o;
          o.per_shard = a->per_shard;
          o.seed = a->seed;
          o.val_fraction = a->val_fraction;
          o.check = a->check == "header" ? ShardCheck::header : ShardCheck::decode;
          const ShardWriteResult r = write_shards(a->input, a->output, o);
          for (const ShardSkip& s : r.skipped)
            std::cerr << "dplab shards: skipped "
                      << (s.reason.find(s.path) == std::string::npos ? s.path + ": " : "")
                      << s.reason << "\n";
          std::cout << fmt::format("wrote {} images of {} classes into {} shards; index {}\n",
                                   sum(r.counts), r.classes.size(), r.shard_paths.size(),
                                   r.index_path);
          if (!r.val_shard_paths.empty())
            std::cout << fmt::format("validation: {} images into {} shards; index {}\n",
                                     sum(r.val_counts), r.val_shard_paths.size(), r.val_index_path);
          std::cout << fmt::format("skipped {} bad images{}\n", r.skipped.size(),
                                   r.skipped.empty() ? "" : " (listed on stderr)");
          return 0;
        };
      }};
}

}  // namespace dplab::cli
