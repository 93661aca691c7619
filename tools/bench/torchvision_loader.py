#!/usr/bin/python3
"""torchvision side of `dplab bench loader --compare-torchvision`: times torchvision's
ImageFolder (for folder: data) or a Dataset reading the tar members with Python's tarfile (for
shards: data; webdataset is not installed) + DataLoader on the images dplab timed, in the same
order, with the same transform, batch and worker count; prints one JSON object.

The manifest (written by dplab) holds the data, dplab's dataset indices of the warm-up and timed
images, each timed image's name (checked against this side's own numbering, so both time the
same images), batch, workers, seed and the transform's parameters.

Threads: DataLoader sets torch.set_num_threads(1) in every worker process; the main process is
set to 1 as well (with workers it only receives batches; with 0 workers it does the work, like
dplab's consuming thread). Pillow decodes on the calling thread.

Uses Debian's python3-torch / python3-torchvision (run with /usr/bin/python3)."""
import argparse
import io
import json
import os
import sys
import tarfile
import time

import PIL
import torch
import torchvision
from PIL import Image, features
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T

# The extensions dplab's shard reader takes as the image member (data/image_folder.cpp).
IMAGE_EXTENSIONS = {"jpg", "jpeg", "png", "bmp", "ppm", "pgm", "tga", "gif"}


def split_key(name):
    """WebDataset naming as dplab reads it: key = the member path up to the first '.' of its file
    name; the rest is the extension, lower-cased."""
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    if dot < 0:
        return name, ""
    return name[:dot], name[dot + 1:].lower()


class TarShards(Dataset):
    """Samples of WebDataset-style tar shards (key.jpg + key.cls), numbered shard by shard in
    archive order, as dplab numbers them. The members are indexed once with tarfile; each
    process opens its own TarFile on first use and reads a member with extractfile."""

    def __init__(self, shards, transform):
        self.paths = list(shards)
        self.transform = transform
        self.samples = []  # (shard number, image TarInfo, label, name)
        for s, path in enumerate(self.paths):
            with tarfile.open(path, "r:") as tf:
                groups, order = {}, []
                for m in tf.getmembers():
                    if not m.isfile():
                        continue
                    key, ext = split_key(m.name)
                    if key not in groups:
                        groups[key] = [None, None]
                        order.append(key)
                    if ext == "cls":
                        groups[key][1] = m
                    elif ext in IMAGE_EXTENSIONS:
                        groups[key][0] = m
                for key in order:
                    img, cls = groups[key]
                    if img is None or cls is None:
                        raise SystemExit(f"{path}:{key}: no image or no .cls member")
                    label = int(tf.extractfile(cls).read().decode().strip())
                    self.samples.append((s, img, label, f"{path}:{key}"))
        self.open_pid, self.open_tars = None, {}

    def __len__(self):
        return len(self.samples)

    def name(self, i):
        return self.samples[i][3]

    def __getitem__(self, i):
        s, member, label, _ = self.samples[i]
        if self.open_pid != os.getpid():  # a worker process: its own file handles
            self.open_pid, self.open_tars = os.getpid(), {}
        tf = self.open_tars.get(s)
        if tf is None:
            tf = self.open_tars[s] = tarfile.open(self.paths[s], "r:")
        data = tf.extractfile(member).read()
        img = Image.open(io.BytesIO(data)).convert("RGB")  # as ImageFolder's pil_loader
        return self.transform(img), label


class Order(torch.utils.data.Sampler):
    """The indices of the current pass; set before each pass (the persistent workers keep
    running, the main process draws the indices)."""

    def __init__(self):
        self.indices = []

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--manifest", required=True)
    a = ap.parse_args()
    with open(a.manifest) as f:
        m = json.load(f)
    torch.set_num_threads(1)
    torch.manual_seed(m["seed"])
    size = m["size"]
    transform = T.Compose([
        T.RandomResizedCrop(size, scale=tuple(m["scale"]), ratio=tuple(m["ratio"]),
                            interpolation=T.InterpolationMode.BILINEAR),
        T.RandomHorizontalFlip(p=m["flip_p"]),
        T.ToTensor(),
        T.Normalize(mean=m["mean"], std=m["std"]),
    ])
    if m["kind"] == "folder":
        ds = torchvision.datasets.ImageFolder(m["root"], transform=transform)
        name = lambda i: os.path.relpath(ds.samples[i][0], m["root"])
        what = "ImageFolder"
    else:
        ds = TarShards(m["shards"], transform)
        name = ds.name
        what = "tar members (tarfile)"
    if len(ds) != m["dataset_images"]:
        raise SystemExit(f"torchvision {what} finds {len(ds)} images, dplab "
                         f"{m['dataset_images']}: the two do not read the same files (extensions "
                         f"or nested directories one side skips?)")
    for i, want in zip(m["order"], m["names"]):
        if name(i) != want:
            raise SystemExit(f"image {i} is {name(i)} for torchvision {what}, {want} for dplab")

    workers = m["workers"]
    order = Order()
    loader = DataLoader(ds, batch_size=m["batch"], sampler=order, num_workers=workers,
                        persistent_workers=workers > 0)
    if m["warmup_order"]:
        order.indices = m["warmup_order"]
        for _ in loader:
            pass
    order.indices = m["order"]
    images = batches = label_sum = 0
    first = None
    t0 = time.perf_counter()
    for x, y in loader:
        n = x.shape[0]
        if x.dtype != torch.float32 or list(x.shape[1:]) != [3, size, size] or y.shape != (n,):
            raise SystemExit(f"batch {batches}: images {tuple(x.shape)} {x.dtype}, labels "
                             f"{tuple(y.shape)}; expected [n, 3, {size}, {size}] float32")
        label_sum += int(y.sum())
        if first is None:
            first = (x, y)
        images += n
        batches += 1
    seconds = time.perf_counter() - t0
    del loader  # stops the persistent workers

    turbo = features.check_feature("libjpeg_turbo")
    print(json.dumps({
        "framework": f"torchvision {torchvision.__version__} (torch {torch.__version__}, Pillow "
                     f"{PIL.__version__}{' with libjpeg-turbo' if turbo else ''}), DataLoader "
                     f"num_workers={workers}",
        "dataset": what,
        "images": images, "batches": batches, "seconds": seconds,
        "images_per_s": images / seconds,
        "batch_shape": list(first[0].shape),
        "label_sum": label_sum,
        "first_batch_labels": first[1].tolist(),
        "first_batch_channel_mean": first[0].double().mean(dim=(0, 2, 3)).tolist(),
        "prefetch_batches": 2 * workers,
        "resampling": "PIL bilinear with antialiasing of the full-size decode",
    }))


if __name__ == "__main__":
    sys.exit(main())
