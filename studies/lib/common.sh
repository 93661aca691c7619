# shellcheck shell=bash
# Shared by the studies' run.sh (source it): the resumable runner and the common switches.
#   DPLAB    the dplab binary (default: ROOT/build/bin/dplab)
#   MPIEXEC  the MPI launcher matching the build (default: mpiexec.mpich)
#   SEEDS    seeds of every configuration (default "0 1 2": tables give mean and min-max)
#   QUICK=1  the smoke scale: a few steps, the first seed only, runs under runs_quick/ (not
#            committed); proves configs -> runs -> summary -> figures end to end
#   NICE     niceness of the training processes (default 10: the lead's measurements first)
#   RUNS     where the runs go (default STUDY/runs_vc, or STUDY/runs_quick with QUICK=1)
#   OUT      where the tables and figures go (default STUDY, or RUNS with QUICK=1)
# A run whose directory holds `done` is skipped, so a study resumes where it stopped; while
# RUNS/PAUSE exists no new run starts (quiet measurements beside a study).
# Every run writes DIR/command.txt (the exact command), stdout.txt, stderr.txt, wall_s.txt
# (seconds of wall time) and maxrss_kb.txt (the largest resident set of one process, KiB, from
# GNU time: the biggest rank).
STUDY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DPLAB=${DPLAB:-$STUDY_ROOT/build/bin/dplab}
MPIEXEC=${MPIEXEC:-mpiexec.mpich}
QUICK=${QUICK:-0}
NICE=${NICE:-10}
if [ "$QUICK" = 1 ]; then
  SEEDS=${SEEDS:-0}
else
  SEEDS=${SEEDS:-"0 1 2"}
fi

# study_runs_dir HERE: the default RUNS of a study directory.
study_runs_dir() {
  if [ "$QUICK" = 1 ]; then echo "$1/runs_quick"; else echo "$1/runs_vc"; fi
}

# run_one DIR NP ARGS...: `MPIEXEC -n NP dplab train ARGS... --out DIR` unless DIR/done exists.
# A failed run leaves no `done` (it is retried next time) and stops the study.
run_one() {
  local dir=$1 np=$2
  shift 2
  [ -f "$dir/done" ] && return 0
  while [ -e "${RUNS:-/nonexistent}/PAUSE" ]; do sleep 5; done
  rm -rf "$dir"
  mkdir -p "$dir"
  local cmd=("$MPIEXEC" -n "$np" env OMP_NUM_THREADS=1 nice -n "$NICE" "$DPLAB" train "$@"
             --out "$dir")
  printf '%q ' "${cmd[@]}" | sed 's/ $//' >"$dir/command.txt"
  echo >>"$dir/command.txt"
  echo "[$(date -u +%FT%TZ)] $(cat "$dir/command.txt")"
  local start
  start=$(date +%s.%N)
  if ! /usr/bin/time -f '%M' -o "$dir/maxrss_kb.txt" "${cmd[@]}" >"$dir/stdout.txt" \
      2>"$dir/stderr.txt"; then
    echo "run failed: $dir (see $dir/stderr.txt)" >&2
    tail -5 "$dir/stderr.txt" >&2
    return 1
  fi
  echo "$(date +%s.%N) - $start" | bc >"$dir/wall_s.txt"
  touch "$dir/done"
}

# study_expand_runs PATH...: a study's run folders are stored in STUDY/runs.tar.xz (STUDY/runs.list
# names them): expands the archive where PATH is, lies inside or holds one of them that is absent;
# does nothing where they are there, or for a PATH outside them (lib/runs_archive.py).
study_expand_runs() {
  /usr/bin/python3 "$STUDY_ROOT/studies/lib/runs_archive.py" "$@"
}

# study_out_dir HERE: where tables and figures go: OUT when set (a variant's runs in another
# RUNS directory must not overwrite the study's results), else the study directory; with
# QUICK=1 the runs directory, so a smoke run never overwrites the study's results.
study_out_dir() {
  if [ -n "${OUT:-}" ]; then echo "$OUT"
  elif [ "$QUICK" = 1 ]; then study_runs_dir "$1"
  else echo "$1"; fi
}
