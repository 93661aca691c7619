#!/usr/bin/env bash
# Re-creates a study's runs.tar.xz from the run folders its runs.list names (after new runs;
# studies/README.md, "Commands"), deterministically: the same files give the same bytes (names
# sorted, times 0, owner 0, modes 644/755, one xz thread). Left out, as .gitignore leaves them
# out of git: weights (*.safetensors), checkpoints/, a PAUSE file.
#   studies/lib/pack_runs.sh STUDY          STUDY: a name under studies/ or a directory
# A listed folder that is absent is first expanded from the current archive, so it is kept.
set -euo pipefail
LIB=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || { echo "usage: $0 STUDY" >&2; exit 2; }
if [ -d "$1" ]; then STUDY=$(cd "$1" && pwd); else STUDY=$(cd "$LIB/../$1" && pwd); fi
[ -f "$STUDY/runs.list" ] || { echo "$STUDY/runs.list: no such file (what to pack)" >&2; exit 1; }
/usr/bin/python3 "$LIB/runs_archive.py" "$STUDY"
mapfile -t folders < <(grep -v '^#' "$STUDY/runs.list" | sed 's:/*[[:space:]]*$::' | grep .)
tmp=$(mktemp "$STUDY/.runs.tar.xz.XXXXXX")
trap 'rm -f "$tmp"' EXIT
LC_ALL=C tar -C "$STUDY" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
  --mode=u=rwX,go=rX --format=gnu --exclude='*.safetensors' --exclude=checkpoints \
  --exclude=PAUSE -cf - -- "${folders[@]}" | xz -9e -T1 >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$STUDY/runs.tar.xz"
trap - EXIT
echo "$STUDY/runs.tar.xz: $(stat -c %s "$STUDY/runs.tar.xz") bytes, ${#folders[@]} folders"
