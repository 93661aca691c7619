#!/usr/bin/python3
"""A study's run folders are stored as one archive, STUDY/runs.tar.xz, and expanded on demand.

STUDY/runs.list names the folders the archive holds (relative to STUDY, one per line; `#`
starts a comment); git ignores them (.gitignore). ensure(PATH) expands the archive when PATH is
one of those folders, lies inside one or holds one, and a listed folder is absent: every
summarize.py calls it on its runs, every run.sh and figures.sh through lib/common.sh's
study_expand_runs (or this script). A listed folder that is there is never touched (a run.sh
resuming, new runs not yet packed); a PATH outside every study's folders (a variant's RUNS
elsewhere, a test's runs) is left alone. lib/pack_runs.sh re-creates the archive after new
runs (studies/README.md, "Commands").

Usage: runs_archive.py PATH...        (a study directory: all its folders)
"""
import os
import pathlib
import shutil
import sys
import tarfile
import tempfile

LIST, ARCHIVE = "runs.list", "runs.tar.xz"


def folders(study):
    """The folders STUDY/runs.list names, relative to STUDY."""
    lines = (pathlib.Path(study) / LIST).read_text().splitlines()
    return [ln.strip().rstrip("/") for ln in lines if ln.strip() and not ln.startswith("#")]


def _listed(name, names):
    """Whether the archive member NAME lies in one of the listed folders."""
    p = pathlib.PurePosixPath(name)
    return not p.is_absolute() and ".." not in p.parts and any(
        str(p) == f or str(p).startswith(f + "/") for f in names)


def expand(study):
    """Expands STUDY/runs.tar.xz into every folder of runs.list that is absent; returns those
    (relative to STUDY). The archive is extracted into a temporary directory beside them and each
    absent folder renamed into place, so a folder is either whole or absent; one that appears
    meanwhile (a concurrent expansion) is left as it is."""
    study = pathlib.Path(study)
    names = folders(study)
    absent = [f for f in names if not (study / f).exists()]
    if not absent:
        return []
    archive = study / ARCHIVE
    if not archive.is_file():
        raise FileNotFoundError(f"{archive}: no such archive, so the run folders "
                                f"{', '.join(absent)} (listed in {LIST}) cannot be expanded")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=".runs-expand-", dir=study))
    expanded = []
    try:
        with tarfile.open(archive, "r:xz") as tar:
            members = tar.getmembers()
            for m in members:
                if not (m.isfile() or m.isdir()) or not _listed(m.name, names):
                    raise ValueError(f"{archive}: {m.name} is not a file or folder in the "
                                     f"folders of {LIST}")
            if hasattr(tarfile, "data_filter"):  # Python >= 3.12 (and 3.11.4+)
                tar.extractall(tmp, members, filter="data")
            else:
                tar.extractall(tmp, members)
        for f in absent:
            src, dst = tmp / f, study / f
            if not src.is_dir():
                raise ValueError(f"{archive}: holds no {f}/ (listed in {LIST})")
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(src, dst)
            except OSError:
                if not dst.exists():
                    raise
                continue  # expanded meanwhile by another process: theirs stays
            expanded.append(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in expanded:
        print(f"expanded {study / f}/ from {archive}", file=sys.stderr)
    return expanded


def ensure(path):
    """Expands the archive of the study that PATH belongs to (see the module's doc) when PATH
    is, lies inside or holds one of its listed folders and one is absent; returns the folders
    expanded (none: nothing to do)."""
    path = pathlib.Path(path).resolve()
    for study in (path, *path.parents):
        if (study / LIST).is_file():
            for f in folders(study):
                d = study / f
                if d == path or d in path.parents or path in d.parents:
                    return expand(study)
            return []
    return []


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.exit(__doc__)
    try:
        for p in argv:
            ensure(p)
    except (OSError, ValueError, tarfile.TarError) as e:
        sys.exit(f"runs_archive.py: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
