#!/usr/bin/env bash
# ctest tools.plugin_cli: `dplab train --plugin LIB.so` (docs/extension_api.md, "Plugins").
# The topk example (tools/examples/topk_algo/topk_plugin.cpp) built as a plugin: it holds no copy
# of the dplab libraries; `dplab options` and `dplab train --help` list its algorithm and key;
# `mpiexec -n 2 dplab train --plugin ... --algo topk` trains, run.json names the plugin with
# its path and SHA-256 (against sha256sum); a run stopped after one epoch resumes without
# --plugin (run.json's record), bitwise equal to the uninterrupted run, and refuses to resume,
# naming the plugin, when the recorded file is gone; --config run.json loads the plugin again.
# Bad plugins exit 2 naming the file and the reason: no such file, not a shared library, no
# entry point, another ABI version, a name already taken; an experiment binary refuses option
# plugins (it loads none).
set -euo pipefail
dplab="$1"
mpiexec="$2"
topk="$3"
no_register="$4"
other_abi="$5"
taken_name="$6"
experiment="$7"  # an experiment binary (tests/tools/experiment_bin.cpp): it loads no plugins
tmp="$(mktemp -d "${TMPDIR:-/tmp}/dplab-plugin-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# ---- the plugin links the dplab shared libraries and defines none of their symbols ------------
ldd "$topk" | grep 'libdplab_train\.so' >/dev/null || fail "$topk does not link libdplab_train.so"
if nm -DC --defined-only "$topk" | grep 'dplab::Registry::' >/dev/null; then
  fail "$topk defines Registry symbols (a second copy of the registry)"
fi
nm -D --defined-only "$topk" | grep ' T dplab_plugin_register$' >/dev/null || fail "no entry point"

# ---- listing: dplab options and dplab train --help ---------------------------------------------
"$dplab" options --plugin "$topk" >"$tmp/options.log"
grep -Eq '^  topk +top-k sparsified .*\[keys: topk.ratio\]' "$tmp/options.log" ||
  { cat "$tmp/options.log"; fail "dplab options --plugin does not list topk with its key"; }
grep -Eq '^  plugins ' "$tmp/options.log" || fail "dplab options does not list option plugins"
"$dplab" options topk --plugin "$topk" >"$tmp/options-topk.log"
grep -q 'topk.ratio' "$tmp/options-topk.log" ||
  { cat "$tmp/options-topk.log"; fail "dplab options topk does not list topk.ratio"; }
if "$dplab" options algo | grep '^  topk ' >/dev/null; then fail "topk listed without --plugin"; fi
"$dplab" train --plugin "$topk" --help >"$tmp/help.log"
grep -Eq '^  topk +top-k sparsified .*\[keys: topk.ratio\]' "$tmp/help.log" ||
  fail "dplab train --plugin --help does not list topk"
"$dplab" train --plugin "$topk" --algo topk --help >"$tmp/help-topk.log"
grep -q 'topk.ratio' "$tmp/help-topk.log" || fail "dplab train --algo topk --help: no topk.ratio"

# ---- bad plugins: exit status 2, the file and the reason named ---------------------------------
expect_usage() {  # REGEX ARGS...: dplab ARGS exits 2 and its output matches REGEX
  local want="$1"
  shift
  local rc=0
  "$dplab" "$@" >"$tmp/bad.log" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || { cat "$tmp/bad.log"; fail "exit status $rc, not 2: dplab $*"; }
  grep -Eq "$want" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "no '$want': dplab $*"; }
  cat "$tmp/bad.log"
}
expect_usage "plugin $tmp/missing.so: cannot be loaded: .*No such file or directory" \
  train --plugin "$tmp/missing.so" --algo topk
echo "not a library" >"$tmp/notes.so"
expect_usage "plugin $tmp/notes.so: cannot be loaded: .*(invalid ELF header|file too short)" \
  train --plugin "$tmp/notes.so"
expect_usage "plugin $no_register: no entry point dplab_plugin_register" \
  train --plugin "$no_register"
expect_usage "plugin $other_abi: plugin ABI version 3, but this dplab loads version 2 only" \
  options --plugin "$other_abi"
expect_usage "plugin $taken_name: its registration failed: .*algorithm 'allreduce' is already registered" \
  train --plugin "$taken_name" --algo allreduce
printf 'plugins = ["%s"]\nalgo = "topk"\n' "$tmp/missing.so" >"$tmp/job.toml"
expect_usage "plugin $tmp/missing.so: cannot be loaded" train --config "$tmp/job.toml"
# An experiment binary loads no plugins: option plugins there names one it has not loaded.
rc=0
"$experiment" plugins="$topk" max_steps=1 >"$tmp/exp.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { cat "$tmp/exp.log"; fail "experiment binary with plugins: exit status $rc"; }
grep -q "option plugins: plugin $topk is not loaded" "$tmp/exp.log" ||
  { cat "$tmp/exp.log"; fail "experiment binary: no 'plugin is not loaded'"; }
# An algorithm no plugin brought is an unknown name, as before.
expect_usage "option algo: unknown value 'topk'" train --algo topk

# ---- training with the plugin's algorithm, 2 ranks ---------------------------------------------
mkdir "$tmp/lib"
cp "$topk" "$tmp/lib/libtopk.so"
plugin="$tmp/lib/libtopk.so"
job=(train --model mnist_cnn --data fashion-mnist --algo topk --batch 32 --lr 0.05
  --momentum 0.9 --threads 1 --seed 5 --epochs 2 --set data.train_limit=256
  --set data.test_limit=100 --set topk.ratio=0.05 --set progress=off)
train2() {  # LOG ARGS...: mpiexec -n 2 dplab ARGS
  local log="$1"
  shift
  OMP_NUM_THREADS=1 "$mpiexec" -n 2 "$dplab" "$@" >"$log" 2>&1 || { cat "$log"; return 1; }
}
train2 "$tmp/full.log" "${job[@]}" --plugin "$plugin" --out "$tmp/full" || fail "plugin run failed"
cat "$tmp/full.log"
sha="$(sha256sum "$plugin" | cut -d' ' -f1)"
record="$(tr -d ' \n' <"$tmp/full/run.json")"
grep -qF "\"plugins\":[{\"path\":\"$plugin\",\"sha256\":\"$sha\"}]" <<<"$record" ||
  fail "run.json does not name $plugin with SHA-256 $sha"
grep -qF "\"algorithm\":\"topk\"" <<<"$record" || fail "run.json: the algorithm is not topk"
grep -qF "\"plugins\":{\"default\":\"\",\"is_default\":false,\"set\":true,\"value\":\"$plugin\"}" \
  <<<"$record" || fail "run.json's options do not hold plugins = $plugin"

# Stopped after one epoch (4 steps of 2 x 32 of 256 samples), then resumed without --plugin:
# the run's record loads it again; the final model is bitwise the uninterrupted run's.
train2 "$tmp/cut.log" "${job[@]}" --plugin "$plugin" --max-steps 4 --out "$tmp/cut" ||
  fail "the run to resume failed"
mv "$plugin" "$tmp/lib/moved.so"
rc=0
OMP_NUM_THREADS=1 "$mpiexec" -n 2 "$dplab" "${job[@]}" --resume "$tmp/cut" --out "$tmp/cut" \
  >"$tmp/gone.log" 2>&1 || rc=$?
cat "$tmp/gone.log"
[ "$rc" -eq 2 ] || fail "resume without the recorded plugin: exit status $rc, not 2"
grep -q "plugin $plugin: cannot be loaded: .*(the run --resume continues used this plugin" \
  "$tmp/gone.log" || fail "the resume's refusal does not name the missing plugin"
mv "$tmp/lib/moved.so" "$plugin"
train2 "$tmp/resume.log" "${job[@]}" --resume "$tmp/cut" --out "$tmp/cut" || fail "resume failed"
cat "$tmp/resume.log"
grep -q "resumed from .* (global step 4)" "$tmp/resume.log" || fail "not resumed at step 4"
cmp "$tmp/cut/final.safetensors" "$tmp/full/final.safetensors" ||
  fail "the resumed plugin run's final model differs from the uninterrupted run's"
grep -qF "\"sha256\":\"$sha\"" <(tr -d ' \n' <"$tmp/cut/run.json") ||
  fail "the resumed run's run.json does not name the plugin"

# --config run.json: the recorded options, plugins among them, repeat the run.
train2 "$tmp/again.log" train --config "$tmp/full/run.json" --max-steps 1 --out "$tmp/again" ||
  fail "--config run.json of a plugin run failed"
grep -qF "\"sha256\":\"$sha\"" <(tr -d ' \n' <"$tmp/again/run.json") ||
  fail "the run from --config run.json does not record the plugin"
echo "plugin_cli: all checks passed"
