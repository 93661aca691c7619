#!/usr/bin/python3
"""Writes a synthetic ImageNet-like JPEG folder for `dplab bench loader`: OUT/<class>/<n>.JPEG,
CLASSES classes, IMAGES images in all, deterministic for a given --seed.

What makes it ImageNet-like for a loader benchmark is what the decoder and the crop see: the
image sizes (drawn from the sizes most frequent in ImageNet-1k's training set, 500 x 375 the
most common), baseline JPEG at quality 90 with 4:2:0 chroma (typical of camera and web JPEGs), and
content with edges, smooth regions and grain so the files compress to about ImageNet's mean
(~110 KB; 105-107 KB and ~190 kpixel with the defaults) rather than to a few KB (flat colour) or
several hundred (pure noise). The script prints the mean file size and pixel count so the set
can be described next to any figure.

Pack it into tar shards for `--data shards:...` with
  build/bin/dplab shards --input OUT --output OUT-shards/train --per-shard 1000

Uses /usr/bin/python3 with Pillow and NumPy (Debian: python3-pil, python3-numpy)."""
import argparse
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# (width, height, weight): the most frequent ImageNet-1k training sizes, roughly in proportion.
SIZES = [(500, 375, 40), (375, 500, 10), (500, 333, 16), (333, 500, 4), (500, 500, 6),
         (500, 400, 4), (400, 500, 2), (640, 480, 5), (500, 334, 4), (500, 332, 3),
         (300, 225, 3), (800, 600, 2)]


def make_image(rng, width, height):
    # Smooth colour field: a few random colours at a coarse grid, upsampled bicubically.
    gw, gh = int(rng.integers(3, 9)), int(rng.integers(3, 9))
    coarse = rng.integers(0, 256, size=(gh, gw, 3), dtype=np.uint8)
    img = Image.fromarray(coarse, "RGB").resize((width, height), Image.BICUBIC)
    # Edges: random filled shapes of random colours.
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(4, 12))):
        x0, x1 = sorted(rng.integers(0, width, size=2))
        y0, y1 = sorted(rng.integers(0, height, size=2))
        colour = tuple(int(c) for c in rng.integers(0, 256, size=3))
        if rng.random() < 0.5:
            draw.ellipse([x0, y0, x1, y1], fill=colour)
        else:
            draw.rectangle([x0, y0, x1, y1], fill=colour)
    img = img.filter(ImageFilter.GaussianBlur(radius=float(rng.uniform(0.5, 2.0))))
    # Texture: fine noise of a random strength (photographs' grain and detail).
    a = np.asarray(img, dtype=np.int16)
    a = a + rng.normal(0.0, float(rng.uniform(18.0, 34.0)), size=a.shape).astype(np.int16)
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="output folder (OUT/<class>/<n>.JPEG)")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.images < 1 or a.classes < 1:
        ap.error("--images and --classes must be positive")
    rng = np.random.default_rng(a.seed)
    weights = np.array([w for _, _, w in SIZES], dtype=float)
    weights /= weights.sum()
    total_bytes = total_pixels = 0
    for n in range(a.images):
        c = n % a.classes
        d = os.path.join(a.out, f"n{c:08d}")
        os.makedirs(d, exist_ok=True)
        w, h, _ = SIZES[int(rng.choice(len(SIZES), p=weights))]
        path = os.path.join(d, f"img_{n:07d}.JPEG")
        make_image(rng, w, h).save(path, "JPEG", quality=a.quality, subsampling="4:2:0")
        total_bytes += os.path.getsize(path)
        total_pixels += w * h
    print(f"wrote {a.images} images in {a.classes} classes to {a.out}: mean "
          f"{total_bytes / a.images / 1024:.1f} KB, {total_pixels / a.images / 1e3:.0f} kpixel")


if __name__ == "__main__":
    main()
