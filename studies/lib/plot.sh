# shellcheck shell=bash
# Shared by the studies' figures.sh (source it after common.sh): mean-over-seeds figures with
# `dplab plot`.
#   collect LABEL CONFIG_DIR...   adds the finished seed runs (CONFIG_DIR/seed*/done) under LABEL
#   plot_mean ARGS...             dplab plot of the collected runs, one mean line per LABEL with a
#                                 min-max band (ARGS: --out, --x, --y, titles)
#   plot_clear                    forgets the collected runs
# The runs have run.json, where `dplab plot --group-by KEY` reads an option; a label such as
# "AllReduce f16" is no single option, so plot_mean links each run's metrics.jsonl into a
# scratch directory without run.json, where --group-by groups by --label.
PLOT_DIRS=() PLOT_LABELS=()
collect() {
  local label=$1 d s
  shift
  for d in "$@"; do
    for s in "$d"/seed*; do
      [ -f "$s/done" ] || continue
      PLOT_DIRS+=("$s") PLOT_LABELS+=("$label")
    done
  done
}
plot_clear() { PLOT_DIRS=() PLOT_LABELS=(); }
plot_mean() {
  [ ${#PLOT_DIRS[@]} -gt 0 ] || { echo "plot_mean: no finished runs for $*" >&2; return 0; }
  local scratch i staged=()
  scratch=$(mktemp -d)
  for i in "${!PLOT_DIRS[@]}"; do
    mkdir -p "$scratch/$i"
    ln -s "${PLOT_DIRS[$i]}/metrics.jsonl" "$scratch/$i/metrics.jsonl"
    staged+=("$scratch/$i")
  done
  "$DPLAB" plot "${staged[@]}" --label "${PLOT_LABELS[@]}" --group-by label --band minmax \
    --width 900 --height 500 "$@" 2> >(grep -v 'has no run.json' >&2)
  local rc=$?
  rm -rf "$scratch"
  return $rc
}
