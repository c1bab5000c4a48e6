#!/usr/bin/env python3
"""Sums the per-launch GPU times of a profile_kernels.sh CSV (ncu --csv --page raw --nvtx) by stage and kernel.

    python3 tools/gpu/summarise_ncu.py ncu_small_1024_fp16.csv [--top 12]

Prints, per NVTX stage range (the engine's StageRecorder names: backbone, refine_corr, ...), the total time and the
kernels that make it up (launch count, total and mean microseconds), largest first. A launch outside any range is
counted under "(none)". Reads only the CSV: no ncu needed.
"""
import argparse
import csv
import re
import sys
from collections import defaultdict


def short_name(kernel):
    """The kernel's name without its template arguments and parameter list (readable, still distinct)."""
    name = re.sub(r"\(.*$", "", kernel)
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    return name.split("::")[-1] if "::" in name else name


def stage_of(row, nvtx_columns):
    """The innermost NVTX push/pop range named in the row's NVTX columns, or "(none)"."""
    for column in nvtx_columns:
        value = (row.get(column) or "").strip()
        if value:
            # ncu writes the range stack as `PID "<domain>:NAME:payload...:message"` entries; the last is the innermost.
            names = re.findall(r"<[^>]*>:([^:\"]+)", value)
            if names:
                return names[-1].strip()
            return value.strip().strip('"')
    return "(none)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv_file")
    parser.add_argument("--top", type=int, default=12, help="kernels listed per stage")
    args = parser.parse_args()
    with open(args.csv_file, newline="", encoding="utf-8", errors="replace") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu prints its own log lines before the table
    reader = csv.DictReader(lines)
    if reader.fieldnames is None or "Kernel Name" not in reader.fieldnames:
        sys.exit(f"{args.csv_file}: no ncu table (no 'Kernel Name' column)")
    time_column = next((c for c in reader.fieldnames if c.startswith("gpu__time_duration")), None)
    if time_column is None:
        sys.exit(f"{args.csv_file}: no gpu__time_duration column")
    nvtx_columns = [c for c in reader.fieldnames if "nvtx" in c.lower() or "range" in c.lower()]
    unit_scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
    scale = 1e-3
    per_stage = defaultdict(lambda: defaultdict(lambda: [0, 0.0]))
    for row in reader:
        value = (row.get(time_column) or "").replace(",", "")
        if value in unit_scale:  # the units row
            scale = unit_scale[value]
            continue
        try:
            microseconds = float(value) * scale
        except ValueError:
            continue
        entry = per_stage[stage_of(row, nvtx_columns)][short_name(row["Kernel Name"])]
        entry[0] += 1
        entry[1] += microseconds
    if not per_stage:
        sys.exit(f"{args.csv_file}: no launches")
    total = sum(e[1] for kernels in per_stage.values() for e in kernels.values())
    launches = sum(e[0] for kernels in per_stage.values() for e in kernels.values())
    print(f"{args.csv_file}: {launches} launches, {total / 1e3:.3f} ms of kernel time (NVTX columns: {nvtx_columns})")
    for stage, kernels in sorted(per_stage.items(), key=lambda s: -sum(e[1] for e in s[1].values())):
        stage_us = sum(e[1] for e in kernels.values())
        stage_launches = sum(e[0] for e in kernels.values())
        print(f"\n{stage}: {stage_us / 1e3:.3f} ms, {stage_launches} launches ({100 * stage_us / total:.1f}%)")
        ranked = sorted(kernels.items(), key=lambda k: -k[1][1])
        for name, (count, us) in ranked[: args.top]:
            print(f"  {us:9.1f} us  {count:5d} x {us / count:8.1f} us  {name}")
        if len(ranked) > args.top:
            rest = ranked[args.top :]
            print(f"  {sum(r[1][1] for r in rest):9.1f} us  {sum(r[1][0] for r in rest):5d} launches in "
                  f"{len(rest)} other kernels")


if __name__ == "__main__":
    main()
