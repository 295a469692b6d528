#!/usr/bin/env python3
"""Embed a folder of JPEGs with a checkpoint on the simulated IPU21 and print
their cosine similarities.

    pip install ./python pillow
    python examples/python/embed_folder.py CHECKPOINT_DIR IMAGE_DIR [--planning-tiles 64]

Each image goes through the checkpoint's own image processor (its
preprocessor_config.json, as transformers' PIL backend applies it), runs on
the package compiled once, and is validated against the device-numerics
reference. Cycles are simulated at the IPU21's 1.5 GHz clock, not measured
on hardware.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

import ipuc


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="Hugging Face checkpoint directory")
    parser.add_argument("images", type=Path, help="folder of .jpg/.jpeg (and .png) images")
    parser.add_argument("--planning-tiles", type=int, default=None, help="tiles to plan for (default: all 1472)")
    parser.add_argument("--layers", type=int, default=None, help="encoder layers (default: all)")
    parser.add_argument("--package", type=Path, default=None, help="also save the package here")
    args = parser.parse_args()

    paths = sorted(
        p for p in args.images.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")
    )
    if not paths:
        sys.exit("no JPEG or PNG images in %s" % args.images)

    planning = {}
    if args.planning_tiles is not None:
        planning["planning_tiles"] = args.planning_tiles
    try:
        package = ipuc.compile(checkpoint=args.checkpoint, layers=args.layers, **planning)
        processor = ipuc.ImageProcessor.from_pretrained(args.checkpoint)
        pixels = processor([str(p) for p in paths])["pixel_values"]
    except ipuc.IpucError as e:
        sys.exit("error: %s" % e)
    print("package %s… (%d tiles); %s" % (package.digest[:16], package.tiles, processor.describe()))
    if args.package is not None:
        package.save(args.package)
        print("saved %s (run it with: ipuc exec %s --reference-run)" % (args.package, args.package))

    # The package takes `package.batch` images per inference.
    embeddings = []
    cycles = []
    for start in range(0, len(paths), package.batch):
        batch = pixels[start : start + package.batch]
        result = package.run(batch)
        check = result.validate(fp32=False)
        embeddings.append(result.pooler_output)
        cycles.append(result.cycles_per_image)
        for i in range(len(batch)):
            print(
                "%-24s %s, %d simulated cycles (%.0f images/s simulated at %.1f GHz)"
                % (
                    paths[start + i].name,
                    "PASS" if check.images[i]["passed"] else "FAIL",
                    result.cycles_per_image,
                    result.images_per_second,
                    result.clock_hz / 1e9,
                )
            )
    e = np.concatenate(embeddings)
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    similarity = e @ e.T
    names = [p.stem[:10] for p in paths]
    print("\ncosine similarity of the pooled embeddings:")
    print(" " * 11 + " ".join("%10s" % n for n in names))
    for name, row in zip(names, similarity):
        print("%-10s " % name + " ".join("%10.4f" % v for v in row))


if __name__ == "__main__":
    main()
