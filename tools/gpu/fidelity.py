#!/usr/bin/env python3
"""Fast mode against exact mode: track the same random queries with `trackscope-cli track` in fp32 (exact) and in
each other precision, and report how far the tracks move and how often the visibility flag changes.

    tools/gpu/fidelity.py --cli build-gpu/app/trackscope-cli --video ../shared/testdata/horsejump-high_480p/video \
        [--model default] [--points 1024] [--seed 7] [--precisions tf32,bf16,fp16] [--json OUT.json]

Queries: `--points` uniform random points on uniform random frames of the video (seeded), in raster pixels.
Statistics per precision over every (track, frame): mean, median, p90, p99 and max of the Euclidean deviation
from fp32 in original-video pixels, and the share of (track, frame) pairs whose visibility agrees; the same
deviation statistics again over the (track, frame) pairs that fp32 calls visible.
Only the standard library: it runs on the GPU machine's Python as is.
"""
import argparse
import csv
import json
import math
import os
import random
import subprocess
import sys
import tempfile


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"fidelity: {' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return result.stdout


def read_tracks(path):
    """{(track_id, frame): (x, y, visible)} from a Trackscope tracks CSV (comment lines start with '#')."""
    with open(path, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {(int(r["track_id"]), int(r["frame"])): (float(r["x"]), float(r["y"]), r["visible"] == "1")
                for r in rows}


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def deviation_stats(deviations):
    ordered = sorted(deviations)
    return {"mean_px": sum(ordered) / len(ordered) if ordered else float("nan"),
            "median_px": percentile(ordered, 0.5), "p90_px": percentile(ordered, 0.9),
            "p99_px": percentile(ordered, 0.99), "max_px": ordered[-1] if ordered else float("nan"),
            "pairs": len(ordered)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--video", required=True)
    parser.add_argument("--model", default="default")
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--precisions", default="tf32,bf16,fp16")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--json")
    args = parser.parse_args()

    info = json.loads(run([args.cli, "info", args.video]))
    width, height, frames = info["width"], info["height"], info["frame_count"]
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="fidelity-")
    queries = os.path.join(work, "queries.csv")
    with open(queries, "w") as f:
        f.write("frame,x,y\n")
        for _ in range(args.points):
            f.write(f"{rng.randrange(frames)},{rng.uniform(0, width):.3f},{rng.uniform(0, height):.3f}\n")

    def track(precision):
        out = os.path.join(work, f"tracks-{precision}.csv")
        run([args.cli, "track", args.video, "--queries", queries, "--out", out, "--model", args.model, "--device",
             args.device, "--precision", precision, "-q"])
        return read_tracks(out)

    exact = track("fp32")
    report = {"video": args.video, "model": args.model, "points": args.points, "seed": args.seed,
              "frames": frames, "size": [width, height], "against": "fp32", "precisions": {}}
    for precision in [p for p in args.precisions.split(",") if p]:
        other = track(precision)
        deviations, visible_deviations, agree = [], [], 0
        for key, (x, y, visible) in exact.items():
            ox, oy, other_visible = other[key]
            deviation = math.hypot(ox - x, oy - y)
            deviations.append(deviation)
            if visible:
                visible_deviations.append(deviation)
            agree += visible == other_visible
        stats = deviation_stats(deviations)
        stats["visibility_agreement"] = agree / len(deviations)
        # Where exact mode says the point is visible: the positions a user sees as filled markers (an occluded
        # point's position is the model's guess behind the occluder, drawn hollow).
        stats["visible_in_fp32"] = deviation_stats(visible_deviations)
        report["precisions"][precision] = stats
        shown = stats["visible_in_fp32"]
        print(f"{precision} vs fp32: mean {stats['mean_px']:.3f} px, median {stats['median_px']:.3f}, "
              f"p90 {stats['p90_px']:.2f}, p99 {stats['p99_px']:.2f}, max {stats['max_px']:.1f}, "
              f"visibility agreement {100 * stats['visibility_agreement']:.2f}% of {stats['pairs']}; "
              f"visible in fp32: mean {shown['mean_px']:.3f} px, p99 {shown['p99_px']:.2f} of {shown['pairs']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
