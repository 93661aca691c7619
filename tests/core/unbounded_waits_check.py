#!/usr/bin/env python3
"""No host wait for the device without a limit (issue #31, item 2).

Every wait of the host for a CUDA stream, event or copy goes through core/host_wait.h's
poll_until (core/cuda/stream_wait.h): a stream held up by a stalled collective then makes the
waiting thread throw after comm.timeout_s instead of hanging forever. This check reads the
library's sources (not the tests, which may synchronise freely) and fails on each call that
waits without limit:
  - cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize;
  - cudaMemcpy (synchronous) and a cudaMemcpyAsync device -> host outside stream_wait.cpp's
    pinned staging (a copy into pageable memory blocks in the driver until the stream gets
    there);
  - blocking NCCL set-up: ncclCommInitRank without a config (the communicators are
    non-blocking, so every NCCL call returns and its completion is polled);
and on a kernel launcher that returns cudaPeekAtLastError (the error would stay in the record
and be reported again by every later launch).
Usage: unbounded_waits_check.py SOURCE_DIR [--self-test]
"""
import os
import re
import sys

DIRS = ["core", "comm", "data", "layers", "models", "optim", "train", "tools"]
RULES = [
    (re.compile(r"\bcudaStreamSynchronize\s*\("), None, "waits for a stream without limit"),
    (re.compile(r"\bcudaEventSynchronize\s*\("), None, "waits for an event without limit"),
    (re.compile(r"\bcudaDeviceSynchronize\s*\("), None, "waits for the device without limit"),
    (re.compile(r"\bcudaMemcpy\s*\("), None, "a synchronous copy waits without limit"),
    (re.compile(r"cudaMemcpyDeviceToHost"), "core/cuda/stream_wait.cpp",
     "a device -> host copy outside cuda::copy_to_host blocks without limit"),
    (re.compile(r"\bncclCommInitRank\s*\("), None,
     "blocking NCCL initialisation (use ncclCommInitRankConfig, non-blocking)"),
    (re.compile(r"\bcudaPeekAtLastError\s*\("), None,
     "a launcher must return cudaGetLastError (the error would stay in the record)"),
]
SUFFIXES = (".cpp", ".cu", ".h", ".cuh")


def strip_comment(line):
    """The code of a line: without a // comment (string literals holding // are not used here)."""
    i = line.find("//")
    return line if i < 0 else line[:i]


def violations(root):
    found = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                in_block = False
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for no, line in enumerate(fh, 1):
                        code = line
                        if in_block:
                            if "*/" not in code:
                                continue
                            code, in_block = code.split("*/", 1)[1], False
                        if "/*" in code and "*/" not in code.split("/*", 1)[1]:
                            code, in_block = code.split("/*", 1)[0], True
                        code = strip_comment(code)
                        for rx, allowed, why in RULES:
                            if rx.search(code) and rel != allowed:
                                found.append(f"{rel}:{no}: {why}: {line.strip()}")
    return found


def self_test():
    """The rules catch what they should, on a tree made here."""
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "core", "cuda"))
        with open(os.path.join(t, "core", "cuda", "bad.cpp"), "w") as f:
            f.write("// cudaStreamSynchronize(s) in a comment is fine\n"
                    "void f() { cudaStreamSynchronize(s); }\n"
                    "/* cudaEventSynchronize(e);\n   still a comment */\n"
                    "x = cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToHost, st);\n"
                    "return cudaPeekAtLastError();\n")
        got = violations(t)
        assert len(got) == 3 and ":2:" in got[0] and ":5:" in got[1] and ":6:" in got[2], got


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    self_test()
    found = violations(sys.argv[1])
    for v in found:
        print(v)
    print(f"unbounded_waits_check: {len(found)} unbounded host wait(s) in {', '.join(DIRS)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
