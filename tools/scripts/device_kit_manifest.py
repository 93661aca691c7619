#!/usr/bin/python3
"""Turns `ctest --show-only=json-v1` into the device kit's test manifest (tests.tsv).

device-bundle.sh calls this with the build tree's ctest listing on stdin. A test enters the
kit when it carries the label `cuda` (every CUDA and NCCL test, whatever the other labels), or
when its binary is one of the CPU binaries named with --cpu (what device-kit-selftest.sh runs
in a bare root). The label alone decides: the device tests inside CPU binaries (test_core's
CudaMemory.*, test_optim's *Cuda.*, test_tools' DeviceTrain.Cuda* and PinnedBuffersAreReused)
carry it too, declared with dplab_add_test's CUDA_TESTS (tests/CMakeLists.txt). ctest lists a
gtest binary once per test (--gtest_filter=Suite.Name); the kit runs each binary once with the
union of its selected filters instead, since a CUDA binary pays the device's start-up on every
launch. MPI tests (mpiexec -n N BIN ARGS) stay one entry per rank count.

Output, one line per entry, tab-separated:
  name  labels(;)  ranks(0: no mpiexec)  timeout_s  binary(basename)  args(shell-quoted)
and the binaries' build paths, one per line, to the file named by --binaries.
"""
import argparse
import json
import os
import re
import shlex
import sys


def prop(test, key, default=None):
    for p in test.get("properties", []):
        if p.get("name") == key:
            return p.get("value")
    return default


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cpu", default="", help="comma-separated CPU test binaries to carry")
    # OpCaseTable.CoversEveryOpDeclaredInCoreOps reads core/ops.h from the source tree, which
    # the kit does not carry (it checks the source, not the binary).
    ap.add_argument("--exclude-regex", default=r"^OpCaseTable\.CoversEveryOpDeclared",
                    help="ctest names never carried (tests that read the source tree)")
    ap.add_argument("--binaries", required=True, help="write the selected binaries' paths here")
    a = ap.parse_args()
    cpu = {c for c in a.cpu.split(",") if c}
    excluded = re.compile(a.exclude_regex) if a.exclude_regex else None
    names_of = {}  # binary path -> the gtest names of all its ctest entries
    listing = json.load(sys.stdin)

    gtest = {}  # (binary path, CUDA part?) -> {"labels", "timeout", "filters"}
    mpi = []  # (name, labels, ranks, timeout, binary, args)
    entries = {}  # binary path -> how many ctest entries run it (selected or not)
    for t in listing.get("tests", []):
        cmd = t.get("command") or []
        if cmd:
            entries[cmd[0]] = entries.get(cmd[0], 0) + 1
            names_of.setdefault(cmd[0], []).extend(
                x.split("=", 1)[1] for x in cmd[1:] if x.startswith("--gtest_filter="))
    for t in listing.get("tests", []):
        cmd = t.get("command") or []
        labels = list(prop(t, "LABELS", []) or [])
        if not cmd or (excluded and excluded.search(t["name"])):
            continue
        timeout = int(float(prop(t, "TIMEOUT", 300) or 300))
        is_mpi = os.path.basename(cmd[0]).startswith("mpiexec") and len(cmd) >= 4 and cmd[1] == "-n"
        binary = cmd[3] if is_mpi else cmd[0]
        if "cuda" not in labels and os.path.basename(binary) not in cpu:
            continue
        # ctest entries that run `cmake -P script` (the DPLAB_REQUIRE_CUDA checks) check the
        # no-device path with build-tree paths: not carried (on a device they skip anyway).
        if os.path.basename(binary) == "cmake":
            continue
        if is_mpi:
            args = cmd[4:]
            carried = binary
            # `mpiexec -n N sh -c "VAR=... exec /build/path/BIN"` (one GPU per rank): the kit runs
            # the system's sh with the binary's path as @KIT_BIN@/BIN (device-check.sh fills it in)
            # and carries BIN itself.
            if os.path.basename(binary) == "sh" and len(args) == 2 and args[0] == "-c":
                carried = shlex.split(args[1])[-1]
                if not os.path.isabs(carried):
                    sys.exit(f"device_kit_manifest: {t['name']}: sh -c must end by exec'ing a "
                             f"binary by absolute path, got '{args[1]}'")
                args = ["-c", args[1].replace(carried, "@KIT_BIN@/" + os.path.basename(carried))]
                binary = "sh"
            mpi.append((t["name"], labels, int(cmd[2]), timeout, binary, args, carried))
            continue
        filt = [x for x in cmd[1:] if x.startswith("--gtest_filter=")]
        rest = [x for x in cmd[1:] if not x.startswith("--gtest_filter=")
                and x != "--gtest_also_run_disabled_tests"]
        if rest:  # a plain add_test with its own arguments: carried as is
            mpi.append((t["name"], labels, 0, timeout, binary, cmd[1:], binary))
            continue
        # A binary's CUDA tests and its CPU tests are separate entries (the CPU ones only when
        # the binary is a --cpu one): device-check.sh runs the first, the self-test the second.
        cuda_part = "cuda" in labels
        if not cuda_part and os.path.basename(binary) not in cpu:
            continue
        g = gtest.setdefault((binary, cuda_part), {"labels": set(), "timeout": 0, "filters": []})
        g["labels"].update(labels)
        g["timeout"] += timeout
        if filt:
            g["filters"].append(filt[0].split("=", 1)[1])

    binaries = set()
    out = sys.stdout
    for binary, cuda_part in sorted(gtest):
        g = gtest[(binary, cuda_part)]
        binaries.add(binary)
        # Every test of the binary is one ctest entry each, so a per-binary bound is their sum,
        # capped: a hung test is caught by the step's timeout, not by waiting hours.
        timeout = min(g["timeout"], 1800)
        # All of a binary's entries selected: no filter (test_cuda's is thousands of names).
        # A --cpu binary's CPU part is "all but the rest" (its CUDA tests and the excluded ones:
        # a short negative filter).
        chosen = set(g["filters"])
        if not g["filters"] or len(chosen) == entries[binary]:
            args, name = "", os.path.basename(binary)
        elif not cuda_part:
            rest = [n for n in names_of[binary] if n not in chosen]
            args = "--gtest_filter=" + shlex.quote("-" + ":".join(rest))
            name = os.path.basename(binary)
        else:
            args = "--gtest_filter=" + shlex.quote(":".join(g["filters"]))
            name = os.path.basename(binary) + "_cuda"
        out.write("\t".join([name, ";".join(sorted(g["labels"])), "0",
                             str(timeout), os.path.basename(binary), args]) + "\n")
    for name, labels, ranks, timeout, binary, args, carried in sorted(mpi):
        binaries.add(carried)
        out.write("\t".join([name, ";".join(labels), str(ranks), str(timeout),
                             os.path.basename(binary), " ".join(shlex.quote(x) for x in args)])
                  + "\n")
    with open(a.binaries, "w") as f:
        for b in sorted(binaries):
            f.write(b + "\n")
    if not binaries:
        sys.exit("device_kit_manifest: no test carries the label cuda or a --cpu name: "
                 "is the build tree configured with CUDA and its tests discovered?")


if __name__ == "__main__":
    main()
