// The registry entry of algorithm topk (topk_strategy.h), shared by the experiment binary
// (main.cpp) and the plugin (topk_plugin.cpp: `dplab train --plugin libtopk_plugin.so`).
#pragma once
#include "dplab/train/config/registry.h"
#include "topk_strategy.h"

inline dplab::StrategyEntry topk_entry() {
  using namespace dplab;
  return StrategyEntry{
      "topk",
      "top-k sparsified gradient averaging with error feedback (allgather of indices and "
      "values); k = topk.ratio x parameters [default ratio 0.01]",
      {"topk.ratio"},
      [](std::shared_ptr<Topology> topo, const Options& o) {
        return std::make_unique<TopKStrategy>(std::move(topo), o.get_double("topk.ratio", 0.01));
      }};
}
