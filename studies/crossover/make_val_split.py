#!/usr/bin/python3
"""Writes a validation split of Fashion-MNIST as IDX files dplab reads with
--data fashion-mnist:DIR: DIR/train-* = the first 50,000 training images, DIR/t10k-* = the last
10,000 training images (the validation set). The test set is never read here, so learning rates
chosen on this split are not chosen on the test set.

Usage: make_val_split.py SRC_DIR DST_DIR   (SRC_DIR: the standard IDX files, .gz or not)
"""
import gzip
import pathlib
import struct
import sys

N_TRAIN = 50000


def read(p):
    p = pathlib.Path(p)
    data = gzip.open(p).read() if p.suffix == ".gz" else p.read_bytes()
    magic, n = struct.unpack(">II", data[:8])
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return data[:4], shape, data[4 + 4 * dims:]


def write(p, head, shape, body):
    with gzip.open(p, "wb") as f:
        f.write(head + struct.pack(">" + "I" * len(shape), *shape) + body)


def find(src, stem):
    for name in (stem + ".gz", stem):
        if (src / name).exists():
            return src / name
    sys.exit(f"make_val_split.py: {src / stem}[.gz] not found")


def main():
    src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    dst.mkdir(parents=True, exist_ok=True)
    for kind in ("images-idx3", "labels-idx1"):
        head, shape, body = read(find(src, f"train-{kind}-ubyte"))
        per = 1
        for d in shape[1:]:
            per *= d
        assert shape[0] == 60000, f"expected 60,000 training records, found {shape[0]}"
        write(dst / f"train-{kind}-ubyte.gz", head, (N_TRAIN,) + shape[1:], body[:N_TRAIN * per])
        write(dst / f"t10k-{kind}-ubyte.gz", head, (shape[0] - N_TRAIN,) + shape[1:],
              body[N_TRAIN * per:])
    print(f"wrote {dst}: {N_TRAIN} train / {60000 - N_TRAIN} validation (from train)")


if __name__ == "__main__":
    main()
