#!/usr/bin/env python3
"""Each build of dplab's CPU loops is compiled for its level (issue #31, item 1; core/cpu_isa.h).

Reads the machine code with objdump, so it holds on any CPU:
  - the portable build (inside libdplab_core.so, x86-64-v2) uses no 256- or 512-bit register:
    it must run on a CPU without AVX;
  - the x86-64-v3 variant uses ymm registers (AVX2) and nothing of AVX-512;
  - the x86-64-v4 variant uses AVX-512: zmm registers, mask registers or xmm/ymm16-31.
A variant that silently got the portable flags (as a source property once made it) fails here.
Usage: cpu_isa_build_check.py CORE_LIB [V3_LIB] [V4_LIB]
"""
import re
import subprocess
import sys

AVX = re.compile(r"%ymm\d+")
AVX512 = re.compile(r"%zmm\d+|%k[1-7]\b|%[xy]mm(1[6-9]|2\d|3[01])\b")


def disassembly(path):
    return subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], check=True,
                          capture_output=True, text=True).stdout


def count(rx, text):
    return sum(1 for line in text.splitlines() if rx.search(line))


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    core, variants = sys.argv[1], sys.argv[2:]
    fails = []
    text = disassembly(core)
    n_avx, n_512 = count(AVX, text), count(AVX512, text)
    print(f"{core}: {n_avx} ymm, {n_512} AVX-512 instructions")
    if n_avx or n_512:
        fails.append(f"{core}: the portable build uses AVX or AVX-512 registers")
    for path in variants:
        text = disassembly(path)
        n_avx, n_512 = count(AVX, text), count(AVX512, text)
        print(f"{path}: {n_avx} ymm, {n_512} AVX-512 instructions")
        if "x86_64_v3" in path and (n_avx == 0 or n_512 > 0):
            fails.append(f"{path}: expected AVX2 (ymm) and no AVX-512")
        if "x86_64_v4" in path and n_512 == 0:
            fails.append(f"{path}: expected AVX-512 instructions")
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
