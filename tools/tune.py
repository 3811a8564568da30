#!/usr/bin/env python3
"""Tunes one lab: runs it with --sweep at its benchmark size, prints the best
launch of each swept variant, and draws a heat map of every sweep over threads
per block x blocks per SM (gnuplot, plots/tuning_heatmap.gp).

  make tune LAB=02                               # the lab's own sweep (--sweep default)
  make tune LAB=28 VARIANT=horner_grid_stride SWEEP="blocks_per_sm=1,2,4,8 items=1,2,4,8"
  tools/tune.py 28 --build build --args "--size 2^24"
  tools/tune.py --heatmap-only build/tune/28_tuning.jsonl      # heat maps from recorded sweeps

The lab measures every point the way it measures any variant (poisoned, traced,
checked, timed, re-checked on fresh inputs), writes one JSON record per point
into OUT/<lab>.jsonl (the file is started afresh) and notes the best point of
each size under its table. Points the hardware cannot launch are listed there,
never launched.

Exit codes: the lab's (0 all correct, 1 a point gave a wrong result, 2 bad
usage, 3 CUDA failure, 77 no GPU).
"""
import argparse
import collections
import csv
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.records import read_records  # tools/grader/records.py


ROOT = Path(__file__).resolve().parent.parent

# The size each lab is benchmarked at (its largest size that is not an odd
# edge case), and the variants its sweep is for.
BENCHMARK = {
    "02_timed_vector_add": (["--size", "2^28"], ["float4"]),
    "07_reduction_v3": (["--size", "2^28"], ["warp_shuffle_float4"]),
    "21_transpose": (["--size", "8192"], ["float4"]),
    "28_tuning": (["--size", "2^26"], []),  # every variant: the ratio matrix needs them all
}

X_AXIS, Y_AXIS = "block", "blocks_per_sm"


class NoSweep(Exception):
    """The records hold no sweep to draw (make_plots.py turns it into its Skip)."""


def find_lab(name):
    """The lab folder that LAB names, as `make run` reads it: a number (1 and 01
    are lab 01, never 10), a folder (01_vector_add) or a name (vector_add)."""
    labs = sorted(p.name for p in (ROOT / "labs").iterdir() if (p / "main.cu").is_file())
    text = str(name).strip()
    if text.isdigit():
        matches = [lab for lab in labs if lab[:2] == f"{int(text):02d}"]
    else:
        bare = text[3:] if len(text) > 3 and text[:2].isdigit() and text[2] == "_" else text
        matches = [lab for lab in labs if lab[3:] == bare]
    if not matches:
        print(f"no lab '{name}'. The labs (LAB=01, LAB=1 or LAB=vector_add): {', '.join(labs)}", file=sys.stderr)
        raise SystemExit(2)
    return matches[0]


def build(build_dir, lab):
    program = Path(build_dir) / "labs" / lab / lab
    if not (Path(build_dir) / "build.ninja").is_file():
        print(f"{Path(sys.argv[0]).name}: {build_dir} is not a configured build folder: run make (or "
              f"meson setup {build_dir}) first, or name yours with --build", file=sys.stderr)
        raise SystemExit(2)
    # meson is a Python program that imports the standard library's profile module: with tools/ on
    # PYTHONPATH (as the tests run these tools) it would import tools/profile.py instead and fail.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run(["meson", "compile", "-C", str(build_dir), f"labs/{lab}/{lab}"], env=env)
    if p.returncode != 0:
        raise SystemExit(p.returncode)
    return program


# ---- records of a sweep ---------------------------------------------------------------

def base_variant(variant):
    """'float4[block=256,blocks_per_sm=0]' -> 'float4'."""
    return variant.split("[", 1)[0]


def size_text(size):
    return " ".join(f"{k}={v}" for k, v in size.items())


def swept(records):
    """Timed, correct records of sweep points, {(base variant, size text): [records]}."""
    groups = {}
    for r in records:
        if "[" in r.get("variant", "") and r.get("timed") and r.get("passed") and r.get("median_ms"):
            groups.setdefault((base_variant(r["variant"]), size_text(r.get("size", {}))), []).append(r)
    return groups


def best_points(records):
    """One line per swept variant and size: its fastest point."""
    lines = []
    for (variant, size), group in swept(records).items():
        best = min(group, key=lambda r: r["median_ms"])
        rate = f"{best['gbps']:.1f} GB/s" if best.get("gbps") and best.get("flops", 0) <= best.get("bytes", 0) \
            else f"{best.get('gflops', 0):.0f} GFLOP/s"
        occupancy = best.get("extra", {}).get("theoretical_occupancy")
        lines.append(f"  {variant} at {size}: {best['variant']}  {best['median_ms']:.4g} ms  {rate}" +
                     (f"  theoretical occupancy {100 * occupancy:.0f}%" if occupancy is not None else "") +
                     f"  ({len(group)} points)")
    return lines


def uses_flops(records):
    """Compute-bound records are judged by GFLOP/s, the others by GB/s."""
    return all(r.get("flops", 0) > 4 * r.get("bytes", 0) for r in records)


def tuning_heatmap(d, tmp, lab="28_tuning", variant="saxpy_grid_stride"):
    """make_plots-style data function: heatmap.csv (xi,yi,value,block,blocks_per_sm)
    for `variant`'s sweep at the largest size it was swept at, and the variables of
    plots/tuning_heatmap.gp. `d`: any object with the records in `.all` (make_plots.Records).
    Raises NoSweep when there is no such sweep."""
    groups = {key: g for key, g in swept(r for r in d.all if r["lab"] == lab).items() if key[0] == variant}
    groups = {k: g for k, g in groups.items() if all(X_AXIS in r.get("extra", {}) and Y_AXIS in r["extra"] for r in g)}
    if not groups:
        raise NoSweep(f"no sweep of {variant} over {X_AXIS} x {Y_AXIS} in the {lab} records")
    size, records = max(groups.items(), key=lambda kv: math.prod(kv[1][0].get("size", {}).values()))
    size = size[1]
    xs = sorted({int(r["extra"][X_AXIS]) for r in records})
    ys = sorted({int(r["extra"][Y_AXIS]) for r in records})
    if len(xs) < 2 or len(ys) < 2:
        raise NoSweep(f"the sweep of {variant} at {size} has one {X_AXIS} or one {Y_AXIS}: no map to draw")
    flops = uses_flops(records)
    # A map holds one value of every other parameter (items): the value most of the
    # points have, i.e. the block × grid sweep's, so that a separate items sweep at
    # one launch shape never puts its faster point into that shape's cell.
    def others(r):  # the point's other parameters, from its name: saxpy_grid_stride[block=64,...,items=1]
        inside = r["variant"].partition("[")[2].rstrip("]")
        return tuple(sorted(kv for kv in inside.split(",") if kv and kv.split("=")[0] not in (X_AXIS, Y_AXIS)))
    common = collections.Counter(others(r) for r in records).most_common(1)[0][0]
    records = [r for r in records if others(r) == common]
    cells = {}
    for r in records:
        key = (xs.index(int(r["extra"][X_AXIS])), ys.index(int(r["extra"][Y_AXIS])))
        value = r["gflops"] if flops else r["gbps"]
        cells[key] = max(cells.get(key, 0), value)
    with open(tmp / "heatmap.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([xi, yi, f"{v:.6g}", xs[xi], ys[yi]] for (xi, yi), v in sorted(cells.items()))
    def tics(values, zero_name=""):
        """A gnuplot tic list: '"64" 0, "128" 1, ...' (0 named zero_name when given)."""
        return ", ".join(f'"{zero_name if v == 0 and zero_name else v}" {i}' for i, v in enumerate(values))

    # What the top of the scale is, measured in the same run: the copy bandwidth
    # (GB/s maps) or the FP32 peak the lab reports (GFLOP/s maps).
    if flops:
        top = next((f"FP32 peak {r['peak_gflops']:.0f} GFLOP/s" for r in records if r.get("peak_gflops")), "")
    else:
        top = next((f"copy, measured: {r['ceiling_value']:.0f} GB/s" for r in records
                    if r.get("ceiling") == "d2d_copy_gbps" and r.get("ceiling_value")), "")
    return {"nx": len(xs), "ny": len(ys), "xtics_list": tics(xs), "ytics_list": tics(ys, "max"),
            "unit": "GFLOP/s" if flops else "GB/s",
            "what": f"{lab} {variant}, {size}: {'GFLOP/s' if flops else 'GB/s'} by launch shape" + (f" ({top})" if top else "")}


def draw_heatmaps(records, out):
    """A heat map for every swept variant of every lab in `records`; the files written."""
    if not shutil.which("gnuplot"):
        print("  (no heat maps: gnuplot not found; install gnuplot-nox)")
        return []
    # Imported only to draw: make_plots reads tools/grading.toml through tools/grade.py,
    # which needs Python 3.11's tomllib (or python3-tomli); nothing else here does.
    import make_plots
    d = make_plots.Records(records)
    pngterm = make_plots.png_terminal()
    written = []
    for lab, variant in sorted({(r["lab"], base_variant(r["variant"])) for r in d.all if "[" in r["variant"]}):
        with tempfile.TemporaryDirectory(prefix="cudalabs-heatmap-") as tmp:
            try:
                variables = tuning_heatmap(d, Path(tmp), lab, variant)
            except NoSweep as why:
                print(f"  heat map of {variant}: skipped: {why}")
                continue
            variables.update(dir=tmp, gpu=d.gpu, pngterm=pngterm)
            name = f"{lab}_{variant}_heatmap"
            shutil.copy(Path(tmp) / "heatmap.csv", out / f"{name}.csv")
            error = make_plots.render(name, "tuning_heatmap.gp", out,
                                      lambda fmt, target: {**variables, "fmt": fmt, "out": target})
        if error:
            print(f"  heat map of {variant}: gnuplot failed:\n{error}")
        else:
            written.append(out / f"{name}.png")
            print(f"  heat map of {variant}: {out / name}.png, .svg, .csv")
    return written


def main():
    parser = argparse.ArgumentParser(description="Sweep a lab's launch parameters and print the best point.",
                                     epilog="Exit codes: the lab's; 2 bad usage.")
    parser.add_argument("lab", nargs="?", help="the lab: 02, 2, 02_timed_vector_add or timed_vector_add")
    parser.add_argument("--build", default=str(ROOT / "build"), help="the build folder (default: build)")
    parser.add_argument("--variant", help="sweep only these variants (comma-separated; default: the lab's tunable ones)")
    parser.add_argument("--sweep", default="default", help='the sweep text (default: "default", the lab\'s own sweep)')
    parser.add_argument("--args", default="", help="more flags for the lab; a size here replaces the benchmark size")
    parser.add_argument("--out", type=Path, help="records and heat maps go here (default: BUILD/tune)")
    parser.add_argument("--no-build", action="store_true", help="do not run meson compile first")
    parser.add_argument("--heatmap-only", type=Path, metavar="RECORDS",
                        help="draw the heat maps of the sweeps in RECORDS (a --json file) and stop")
    args = parser.parse_args()
    out = args.out or Path(args.build) / "tune"
    out.mkdir(parents=True, exist_ok=True)
    if args.heatmap_only:
        records = read_records(args.heatmap_only)
        print("\n".join(best_points(records)) or "  no sweep records")
        draw_heatmaps(records, out)
        return 0
    if not args.lab:
        parser.error("name a lab: tools/tune.py 02 (or make tune LAB=02)")
    lab = find_lab(args.lab)
    size_args, variants = BENCHMARK.get(lab, ([], []))
    extra = args.args.split()
    if any(a.startswith("-n") or a.startswith("--size") or (a.startswith("--") and a[2:] in ("n", "m", "k", "rows", "cols"))
           for a in extra):
        size_args = []  # the user's size wins
    if args.variant:
        variants = args.variant.split(",")
    program = Path(args.build) / "labs" / lab / lab if args.no_build else build(args.build, lab)
    records_path = out / f"{lab}.jsonl"
    records_path.unlink(missing_ok=True)
    cmd = [str(program), "--sweep", args.sweep, "--json", str(records_path)] + size_args + extra
    if variants:
        cmd += ["--variant", ",".join(variants)]
    print(shlex.join(cmd), flush=True)
    status = subprocess.run(cmd).returncode
    if status != 77 and records_path.is_file():
        records = read_records(records_path)
        print(f"\ntune: best points ({records_path}):")
        print("\n".join(best_points(records)) or "  none (nothing timed passed)")
        draw_heatmaps(records, out)
    return status


if __name__ == "__main__":
    sys.exit(main())
