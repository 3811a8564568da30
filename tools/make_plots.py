#!/usr/bin/env python3
"""Draws the course's plots from recorded results, with gnuplot; no GPU needed.

Reads results/h100/records.jsonl (the raw records of a GPU run) and
results/h100/08_streams_timeline.csv, writes one small CSV per plot to a
temporary folder, and runs plots/NAME.gp on it twice: NAME.png and NAME.svg
in docs/plots/ (the lab READMEs show them as ../../docs/plots/NAME.svg).

Only timed records that passed their check are drawn (the last one where a lab
was run twice into the file). A plot whose labs have no records yet is skipped
with a line saying so; a gnuplot error fails.

  make plots                                      # docs/plots/ from results/h100/
  tools/make_plots.py --records R.jsonl --out D   # other records, other folder
  tools/make_plots.py --check                     # the plots test: render into a temp folder

Exit codes: 0 drawn, 1 gnuplot failed, 2 bad usage, 77 no records (nothing to draw).
"""
import argparse
import csv
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grade import baseline_variants, size_product  # noqa: E402  (tools/grade.py)

ROOT = Path(__file__).resolve().parent.parent
PLOTS_DIR = ROOT / "plots"
REDUCTION_LABS = ("04_reduction", "06_reduction_v2", "07_reduction_v3")
MATMUL_LABS = ("05_matmul", "09_template_matmul", "10_vectorized_matmul", "11_register_blocked_matmul",
               "18_matmul_cublas_gap")
COPY = "d2d_copy_gbps"


class Skip(Exception):
    """The records hold no data for this plot (yet)."""


# ---- selecting records ------------------------------------------------------------------

class Records:
    def __init__(self, records):
        # Timed and correct only; a lab run twice into the file counts once (its last run).
        latest = {(r["lab"], r["variant"], tuple(sorted(r.get("size", {}).items()))): r
                  for r in records if r.get("timed") and r.get("passed")}
        self.all = list(latest.values())
        self.gpu = next((r["gpu"] for r in self.all if r.get("gpu")), "unknown GPU")

    def lab(self, *labs):
        found = [r for r in self.all if r["lab"] in labs]
        if not found:
            raise Skip(f"no records of {', '.join(labs)}")
        return found

    def copy_gbps(self, records=None):
        """The measured device-to-device copy bandwidth (each lab process measures it once)."""
        values = [r["ceiling_value"] for r in (records or self.all) if r.get("ceiling") == COPY and r.get("ceiling_value")]
        if not values and records:
            return self.copy_gbps()
        return statistics.median(values) if values else 0


def largest(records):
    top = max(size_product(r) for r in records)
    return [r for r in records if size_product(r) == top]


def count_text(n):
    """2^28 for powers of two, the plain number otherwise."""
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def short(lab):
    return lab.split("_")[0]


def is_lab_kernel(variant):
    """A kernel the course wrote, not a library pipeline, a CPU row, a round trip
    through host memory or a diagnostic (lab 17's *_single_head: one head of the
    same FLOPs, a what-if, not the lab's answer)."""
    words = set(variant.split("_"))
    return not (words & {"cub", "cublas", "cpu", "reference"}) and "end_to_end" not in variant \
        and "single_head" not in variant


def uses_tensor_cores(variant):
    """FP16/BF16 kernels on tensor cores (labs 16, 17: flash_fp16, fp16_batched_grid,
    bf16_batched_grid ...). Lab 09's f16_tile16 is FP16 storage with FP32 FMAs on
    CUDA cores, so it does not count."""
    return bool({"fp16", "bf16"} & set(variant.split("_")))


def variants_in_order(records):
    return list(dict.fromkeys(r["variant"] for r in records))


def latest_per_variant(records, labs):
    """(lab that introduced it, record) for each variant, in course order, at its
    lab's largest size. A variant that later labs measure again (lab 07 runs 04's
    tree) is taken from the latest lab, so all versions compare within one process."""
    chosen = {}
    for lab in labs:
        mine = [r for r in records if r["lab"] == lab]
        if mine:
            for r in largest(mine):
                chosen.setdefault(r["variant"], {})[lab] = r
    return [(min(by_lab, key=labs.index), by_lab[max(by_lab, key=labs.index)])
            for by_lab in chosen.values()]


def write_series(tmp, series, x_of, y_of):
    """One CSV per series (s1.csv, s2.csv, ...), header 'x,TITLE': gnuplot takes the
    title from it (columnheader) and loops over nseries files."""
    n = 0
    for title, records in series:
        points = sorted((x_of(r), y_of(r)) for r in records if y_of(r))
        if not points:
            continue
        n += 1
        with open(tmp / f"s{n}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["x", title])
            w.writerows(points)
    if n == 0:
        raise Skip("no timed points")
    return n


def write_rows(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


# ---- one function per plot: records -> CSV files + gnuplot variables -----------------------

def vector_add_bandwidth(d, tmp):
    recs = d.lab("02_timed_vector_add")
    gpu_variants = [v for v in variants_in_order(recs) if any(r["variant"] == v and r.get("ceiling") == COPY for r in recs)]
    n = write_series(tmp, [(v, [r for r in recs if r["variant"] == v]) for v in gpu_variants],
                     lambda r: r["size"]["n"], lambda r: r.get("gbps"))
    return {"nseries": n, "copy_gbps": d.copy_gbps(recs)}


def pcie_pageable_vs_pinned(d, tmp):
    recs = largest(d.lab("03_pcie_truth"))
    by = {r["variant"]: r for r in recs}
    if not any(k in by for k in ("pageable_h2d", "pinned_h2d", "pageable_d2h", "pinned_d2h")):
        raise Skip("no copy records in 03_pcie_truth")

    def gbps(v):
        return by[v]["gbps"] if v in by and by[v].get("gbps") else "NaN"

    write_rows(tmp / "copies.csv", [["host to device", gbps("pageable_h2d"), gbps("pinned_h2d")],
                                    ["device to host", gbps("pageable_d2h"), gbps("pinned_d2h")]])
    times = [(label, by[v]["median_ms"]) for v, label in
             (("kernel_only", "kernel only"), ("pinned_end_to_end", "pinned end to end"),
              ("pageable_end_to_end", "pageable end to end"), ("cpu", "CPU, one core")) if v in by]
    write_rows(tmp / "times.csv", times or [["(none)", "NaN"]])
    link = next((r["ceiling_value"] for r in recs if r.get("ceiling") == "pcie_link_gbps" and r.get("ceiling_value")), 0)
    tallest = max([link] + [r["gbps"] for r in recs if r["variant"].endswith(("_h2d", "_d2h")) and r.get("gbps")])
    return {"link_gbps": link, "n": count_text(recs[0]["size"]["n"]), "ymax": 1.3 * tallest}


def reduction_vs_cub(d, tmp):
    recs = d.lab(*REDUCTION_LABS)
    base = baseline_variants(recs)
    chosen = [(lab, r) for lab, r in latest_per_variant(recs, REDUCTION_LABS) if r.get("gbps")]
    rows = [[r["variant"] if r["variant"] in base else f"{short(lab)} {r['variant']}", r["gbps"], 2 if r["variant"] in base else 1]
            for lab, r in chosen]
    if not rows:
        raise Skip("no GB/s in the reduction records")
    write_rows(tmp / "bars.csv", rows)
    copy = d.copy_gbps([r for _, r in chosen])  # the ceiling of the run(s) the bars come from
    runs = sorted({short(r["lab"]) for _, r in chosen})
    return {"copy_gbps": copy, "n": count_text(largest(recs)[0]["size"].get("n", 0)),
            "run_note": f"all measured in lab {runs[0]}'s run" if len(runs) == 1 else "each in the latest lab that runs it",
            "ymax": 1.3 * max([copy] + [row[1] for row in rows])}


def shape_text(size):
    dims = [size[k] for k in ("m", "n", "k") if k in size]
    return f"{dims[0]}³" if len(dims) == 3 and len(set(dims)) == 1 else " x ".join(map(str, dims))


def matmul_ladder(d, tmp):
    recs = d.lab(*MATMUL_LABS)
    base = baseline_variants(recs)
    # % of cuBLAS only where the record is measured against it (not the CPU or end-to-end rows).
    measured = [r for r in recs if r["variant"] not in base and r.get("ceiling") in base and r.get("pct_of_ceiling")]
    if not measured:
        raise Skip("no matmul record measured against cuBLAS")
    # Every lab at ONE size: the largest that all of them measured (4096³, the labs'
    # benchmark size). Only when they share none, each lab at its own largest.
    labs = [lab for lab in MATMUL_LABS if any(r["lab"] == lab for r in measured)]
    shared = set.intersection(*({tuple(sorted(r["size"].items())) for r in measured if r["lab"] == lab} for lab in labs))
    if shared:
        size = dict(max(shared, key=lambda s: size_product({"size": dict(s)})))
        picked = [r for r in measured if r["size"] == size]
    else:
        size, picked = None, [r for lab in labs for r in largest([x for x in measured if x["lab"] == lab])]
    # A version that later labs measure again (05's tiled16 in 09, 10, 11) is named after
    # the lab that introduced it and taken from the latest lab's run.
    by_variant = {}
    for r in picked:
        by_variant.setdefault(r["variant"], {})[r["lab"]] = r
    bars = []
    for by_lab in by_variant.values():
        first, last = min(by_lab, key=MATMUL_LABS.index), max(by_lab, key=MATMUL_LABS.index)
        r = by_lab[last]
        bars.append((MATMUL_LABS.index(first), f"{short(first)} {r['variant']}", r["pct_of_ceiling"], r))
    bars.sort(key=lambda b: b[0])  # course order; within a lab, the order it measures them
    labels = [label if size else f"{label} ({shape_text(r['size'])})" for _, label, _, r in bars]
    write_rows(tmp / "bars.csv", [[label, pct] for label, (_, _, pct, _) in zip(labels, bars)])
    # cuBLAS in the runs the bars come from, at the bars' size(s).
    runs = {(r["lab"], tuple(sorted(r["size"].items()))) for _, _, _, r in bars}
    blas = [r["gflops"] for r in recs if r["variant"] in base and r.get("gflops")
            and (r["lab"], tuple(sorted(r["size"].items()))) in runs]
    low, high = (min(blas), max(blas)) if blas else (0, 0)
    blas_text = (f"{low:.0f} GFLOP/s" if round(low) == round(high) else f"{low:.0f} to {high:.0f} GFLOP/s")
    where = f"at {shape_text(size)}" if size else "at the largest size of each lab"
    return {"ymax": 1.2 * max([100] + [b[2] for b in bars]), "nbars": len(bars),
            "size_note": f"at {shape_text(size)} (M x N x K)" if size else "each lab at its largest size",
            "blas_note": f"cuBLAS SGEMM = 100% ({blas_text} {where}, in the runs plotted)" if blas else "cuBLAS SGEMM = 100%"}


def softmax_bandwidth(d, tmp):
    recs = d.lab("12_softmax")
    variants = variants_in_order(recs)
    sizes = sorted({tuple(r["size"].items()) for r in recs}, key=lambda s: (dict(s).get("cols", 0), dict(s).get("rows", 0)))
    table = {(tuple(r["size"].items()), r["variant"]): r.get("gbps") for r in recs}
    rows = [["size"] + variants]
    for s in sizes:
        label = " x ".join(str(v) for _, v in s)
        rows.append([label] + [table.get((s, v)) or "NaN" for v in variants])
    write_rows(tmp / "table.csv", rows)
    copy = d.copy_gbps(recs)
    return {"nvariants": len(variants), "nsizes": len(sizes), "copy_gbps": copy,
            "size_names": " x ".join(k for k, _ in sizes[0]),
            "ymax": 1.3 * max([copy] + [r["gbps"] for r in recs if r.get("gbps")])}


def attention_time(d, tmp):
    recs = d.lab("15_attention_forward", "16_flash_attention")
    # Whole forward passes only: the library pipeline (the baseline) and the kernels
    # measured against it; not lab 15's scores/softmax/output rows (one stage each).
    passes = []
    for lab in ("15_attention_forward", "16_flash_attention"):
        mine = [r for r in recs if r["lab"] == lab and "seq" in r["size"]]
        base = baseline_variants(mine)
        passes += [r for r in mine if r["variant"] in base or r.get("ceiling") in base]
    if not passes:
        raise Skip("no attention records with a seq size")
    dims = [r["size"].get("dim") for r in passes]
    dim = max(set(dims), key=dims.count)
    passes = [r for r in passes if r["size"].get("dim") == dim and len(r["size"]) <= 2]
    # Lab 16 runs lab 15's pipelines again (*_lab15) up to its larger N: then lab 15's
    # own, shorter lines would only lie under them.
    labs = ["16_flash_attention"] if any(r["variant"].endswith("_lab15") for r in passes) else \
        ["15_attention_forward", "16_flash_attention"]
    series = [(f"{short(lab)} {v}" + (" (tensor cores)" if uses_tensor_cores(v) else ""),
               [r for r in passes if r["lab"] == lab and r["variant"] == v])
              for lab in labs for v in variants_in_order([r for r in passes if r["lab"] == lab])]
    n = write_series(tmp, series, lambda r: r["size"]["seq"], lambda r: r.get("median_ms"))
    return {"nseries": n, "dim": dim or 0, "labs": "labs 15 and 16" if len(labs) == 2 else
            "lab 16; the *_lab15 lines are lab 15's unfused passes, run in lab 16"}


def place_labels(points, xlim, ylim, size=(560, 500), char=(6.5, 12), near=0.12):
    """Labels for the points of a log-log plot, placed where they do not overlap.

    points: (x, y, text). Points closer than `near` decades on both axes share
    one label ('02 03 08': the same vector add). Each label goes right of, left
    of, above or below its point, the first of these that overlaps no point and
    no label placed before it, in pixels estimated from the plot's size (size:
    the plot area; char: one character's width and height). Returns rows
    (x, y, text) of the label's centre, for gnuplot's 'with labels center'."""
    groups = []  # [x, y, [texts]]
    for x, y, text in points:
        for g in groups:
            if abs(math.log10(g[0] / x)) < near and abs(math.log10(g[1] / y)) < near:
                if text not in g[2]:
                    g[2].append(text)
                break
        else:
            groups.append([x, y, [text]])
    sx = size[0] / math.log10(xlim[1] / xlim[0])  # pixels per decade
    sy = size[1] / math.log10(ylim[1] / ylim[0])

    def px(x, y):
        return math.log10(x / xlim[0]) * sx, math.log10(y / ylim[0]) * sy

    def overlaps(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    taken = [(u - 7, v - 7, u + 7, v + 7) for u, v in (px(x, y) for x, y, _ in points)]
    rows = []
    for x, y, texts in groups:
        text = " ".join(texts)
        u, v = px(x, y)
        w, h = char[0] * len(text), char[1]
        boxes = [(u + 9, v - h / 2, u + 9 + w, v + h / 2), (u - 9 - w, v - h / 2, u - 9, v + h / 2),
                 (u - w / 2, v + 9, u + w / 2, v + 9 + h), (u - w / 2, v - 9 - h, u + w / 2, v - 9)]
        box = min(boxes, key=lambda b: sum(overlaps(b, t) for t in taken))  # first free one, else the least crowded
        taken.append(box)
        cu, cv = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        rows.append([xlim[0] * 10 ** (cu / sx), ylim[0] * 10 ** (cv / sy), text])
    return rows


def roofline(d, tmp):
    fp32, tensor = [], []
    library = []  # every library baseline
    for lab in sorted({r["lab"] for r in d.all}):
        recs = [r for r in d.all if r["lab"] == lab]
        base = baseline_variants(recs)
        library += [r for r in recs if r["variant"] in base]
        # The lab's own kernels on device memory, measured against the copy bandwidth or
        # a library: no baselines, library pipelines, CPU rows or diagnostics.
        kernels = [r for r in recs if r["variant"] not in base and is_lab_kernel(r["variant"])
                   and r.get("flops") and r.get("bytes") and r.get("gflops")
                   and (r.get("ceiling") == COPY or r.get("ceiling") in base)]
        if not kernels:
            continue
        top = largest(kernels)
        # The best FP32 kernel, and apart from it the best tensor-core one (labs 16, 17).
        for group, keep in ((fp32, False), (tensor, True)):
            mine = [r for r in top if uses_tensor_cores(r["variant"]) == keep]
            if mine:
                group.append(max(mine, key=lambda r: r["gflops"]))
    if not fp32 + tensor:
        raise Skip("no kernel records with flops and bytes")
    bw = d.copy_gbps()
    if not bw:
        raise Skip("no measured copy bandwidth")
    points = fp32 + tensor
    # One series per point, so the key names each lab's kernel; the labels on the plot are lab numbers.
    n = write_series(tmp, [(f"{short(r['lab'])} {r['variant']}" + (" (tensor cores)" if r in tensor else ""), [r])
                           for r in points], lambda r: r["flops"] / r["bytes"], lambda r: r["gflops"])
    # The FP32 ceiling: the fastest cuBLAS (FP32 SGEMM, no TF32) measured; the tensor-core
    # points have no measured ceiling (the fastest of them is not one).
    blas = [r for r in library if "cublas" in r["variant"] and r.get("ceiling") == r["variant"] and r.get("gflops")]
    peak = max(blas, key=lambda r: r["gflops"]) if blas else None
    xs = [r["flops"] / r["bytes"] for r in points] + ([peak["gflops"] / bw] if peak else [])
    ys = [r["gflops"] for r in points] + ([peak["gflops"]] if peak else [])
    # Point types: FP32 kernels circles, then squares, then triangles (8 colours each);
    # tensor-core kernels stars.
    ptypes = " ".join(str(3 if i >= len(fp32) else 7 if i < 8 else 5 if i < 16 else 9) for i in range(n))
    xlim, ylim = (min(xs) / 4, max(xs) * 4), (min(ys) / 4, max(ys) * 3)
    write_rows(tmp / "labels.csv", place_labels([(r["flops"] / r["bytes"], r["gflops"], short(r["lab"])) for r in points],
                                                xlim, ylim))
    return {"nseries": n, "ptypes": ptypes, "ntensor": len(tensor), "bw_gbps": bw,
            "peak_gflops": peak["gflops"] if peak else 0,
            "peak_name": (f"{'cuBLAS SGEMM' if peak['variant'] == 'cublas' else peak['variant']} (lab {short(peak['lab'])})"
                          if peak else ""),
            "xmin": xlim[0], "xmax": xlim[1], "ymin": ylim[0], "ymax": ylim[1]}


# (name, script, the labs it draws, data function)
PLOTS = [
    ("vector_add_bandwidth", "vector_add_bandwidth.gp", "02", vector_add_bandwidth),
    ("pcie_pageable_vs_pinned", "pcie_pageable_vs_pinned.gp", "03", pcie_pageable_vs_pinned),
    ("reduction_vs_cub", "reduction_vs_cub.gp", "04 06 07", reduction_vs_cub),
    ("matmul_ladder", "matmul_ladder.gp", "05 09 10 11 18", matmul_ladder),
    ("streams_timeline", "streams_timeline.gp", "08", None),
    ("softmax_bandwidth", "softmax_bandwidth.gp", "12", softmax_bandwidth),
    ("attention_time", "attention_time.gp", "15 16", attention_time),
    ("roofline", "roofline.gp", "all", roofline),
]


# ---- gnuplot ------------------------------------------------------------------------------

def gnuplot_value(v):
    if isinstance(v, (int, float)):
        return repr(float(v))
    text = str(v).replace("'", "''")  # in gnuplot's single-quoted strings, '' is one quote
    return f"'{text}'"


def png_terminal():
    p = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" if "pngcairo" in p.stdout + p.stderr else "png"


def gnuplot(script, variables, log):
    assignments = "; ".join(f"{k}={gnuplot_value(v)}" for k, v in variables.items())
    cmd = ["gnuplot", "-e", f"set loadpath '{PLOTS_DIR}'; {assignments}", str(PLOTS_DIR / script)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.stderr.strip():
        log.append(p.stderr.strip())
    return p.returncode == 0


def render(name, script, out, variables):
    """NAME.png and NAME.svg; variables(fmt, target) gives the script's variables.
    Returns the error text, or None."""
    log = []
    for fmt in ("png", "svg"):
        target = out / f"{name}.{fmt}"
        target.unlink(missing_ok=True)
        ok = gnuplot(script, variables(fmt, target), log)
        if not ok or not target.is_file() or target.stat().st_size == 0:
            return "\n".join(log) or f"gnuplot wrote no {target}"
    return None


def draw_all(records, timeline, out, only):
    d = Records(records)
    pngterm = png_terminal()
    failed = drawn = 0
    for name, script, labs, make in PLOTS:
        if only and name not in only:
            continue
        if not (PLOTS_DIR / script).is_file():
            print(f"  {name:<26} skipped: plots/{script} does not exist yet")
            continue
        with tempfile.TemporaryDirectory(prefix="cudalabs-plot-") as tmp:
            try:
                if make is None:  # lab 08's script reads its timeline CSV itself
                    if not timeline.is_file():
                        raise Skip(f"no {timeline}")
                    error = render(name, script, out, lambda fmt, target: {"datafile": timeline, "outfile": target})
                else:
                    variables = make(d, Path(tmp))
                    variables.update(dir=tmp, gpu=d.gpu, pngterm=pngterm)
                    error = render(name, script, out, lambda fmt, target: {**variables, "fmt": fmt, "out": target})
            except Skip as why:
                print(f"  {name:<26} skipped (labs {labs}): {why}")
                continue
        if error:
            failed += 1
            print(f"  {name:<26} FAILED: gnuplot said:\n{error}")
        else:
            drawn += 1
            print(f"  {name:<26} {out / name}.png, .svg")
    return drawn, failed


def main():
    parser = argparse.ArgumentParser(description="Draw the course's plots from recorded results (gnuplot).",
                                     epilog="Exit codes: 0 drawn, 1 gnuplot failed, 2 bad usage, 77 no records.")
    parser.add_argument("--records", type=Path, default=ROOT / "results" / "h100" / "records.jsonl",
                        help="the records (default: results/h100/records.jsonl)")
    parser.add_argument("--timeline", type=Path,
                        help="lab 08's timeline CSV (default: 08_streams_timeline.csv beside the records)")
    parser.add_argument("--out", type=Path, help="where the PNG and SVG go (default: docs/plots; --check: a temp folder)")
    parser.add_argument("--only", action="append", help="draw only this plot (repeatable): " + ", ".join(p[0] for p in PLOTS))
    parser.add_argument("--check", action="store_true",
                        help="the plots test: render every plot into a temp folder, fail on any gnuplot error")
    args = parser.parse_args()
    unknown = set(args.only or []) - {p[0] for p in PLOTS}
    if unknown:
        parser.error(f"--only {sorted(unknown)[0]}: no such plot")
    if not shutil.which("gnuplot"):
        print("make_plots: gnuplot not found: install it with  sudo apt-get install gnuplot-nox  (or: make deps)")
        return 77 if args.check else 2  # the plots test skips on a machine without gnuplot (the GPU machine)
    if not args.records.is_file() or args.records.stat().st_size == 0:
        print(f"make_plots: skipped: no records in {args.records} yet (a GPU run writes them: see docs/instructor-guide.md)")
        return 77
    try:
        with open(args.records) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        print(f"make_plots: cannot read {args.records}: {e}")
        return 2
    timeline = args.timeline or args.records.parent / "08_streams_timeline.csv"

    with tempfile.TemporaryDirectory(prefix="cudalabs-plots-check-") as scratch:
        out = args.out or (Path(scratch) if args.check else ROOT / "docs" / "plots")
        out.mkdir(parents=True, exist_ok=True)
        print(f"plots from {args.records} ({len(records)} records):")
        drawn, failed = draw_all(records, timeline, out, args.only)
    print(f"{drawn} drawn, {failed} failed")
    if failed:
        return 1
    return 0 if drawn else 77


if __name__ == "__main__":
    sys.exit(main())
