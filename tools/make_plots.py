#!/usr/bin/env python3
"""Draws the course's plots from recorded results, with gnuplot; no GPU needed.

Reads results/h100/records.jsonl (the raw records of a GPU run),
results/h100/08_streams_timeline.csv and, where it exists,
results/h200x2/records.jsonl (labs 32 and 33, H200), writes one small CSV per plot to a
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
import collections
import csv
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import tune  # tools/tune.py: lab 28's heat map
from grader.records import read_records  # tools/grader/records.py
from grader.scoring import baseline_variants, size_product  # tools/grader/scoring.py

ROOT = Path(__file__).resolve().parent.parent
PLOTS_DIR = ROOT / "plots"
REDUCTION_LABS = ("04_reduction", "06_reduction_v2", "07_reduction_v3")
MATMUL_LABS = ("05_matmul", "09_template_matmul", "10_vectorized_matmul", "11_register_blocked_matmul",
               "18_matmul_cublas_gap")
COPY = "d2d_copy_gbps"
# The roofline's two FLOP ceilings, each one cuBLAS record at its lab's largest size:
# (lab, variant, input type). FP32 on the CUDA cores: lab 18's SGEMM (no TF32). Tensor
# cores: lab 30's FP16 GEMM (FP32 accumulation), a different unit with a far higher rate.
FP32_CEILING = ("18_matmul_cublas_gap", "cublas", None)
TENSOR_CEILING = ("30_tensor_core_gemm", "cublas", "fp16")
# Flag defaults that are not "0", per lab (the records carry each flag's value, defaults included).
DEFAULT_FLAGS = {"30_tensor_core_gemm": {"dtype": "fp16"}}  # its BF16 and TF32 runs are options


class Skip(Exception):
    """The records hold no data for this plot (yet)."""


# ---- selecting records ------------------------------------------------------------------

class Records:
    def __init__(self, records):
        # Timed and correct only; a lab run twice into the file counts once (its last run).
        def flags(r):  # --sweep is not a problem of its own: sweep points carry their launch in their name
            return tuple(sorted((k, v) for k, v in r.get("flags", {}).items() if k != "sweep"))
        latest = {(r["lab"], r["variant"], tuple(sorted(r.get("size", {}).items())), flags(r)): r
                  for r in records if r.get("timed") and r.get("passed")}
        # A lab run under other flags (lab 16 --causal) measured another problem: the
        # plots show each lab's main run, the flag values most of its records have.
        counts = {}
        for r in latest.values():
            counts.setdefault(r["lab"], collections.Counter())[flags(r)] += 1
        # On a tie (lab 31: as many --causal records as not; lab 30: as many BF16 as
        # FP16) the run closer to the defaults is the main one: a toggle is an option,
        # "0" its default; DEFAULT_FLAGS names the other defaults.
        def main_flags(lab):
            return max(counts[lab].items(),
                       key=lambda kv: (kv[1], sum(v == "0" or DEFAULT_FLAGS.get(lab, {}).get(k) == v
                                                  for k, v in kv[0])))[0]
        main = {lab: main_flags(lab) for lab in counts}
        self.every_flag = list(latest.values())  # the runs under other flags too (the roofline's ceilings)
        self.all = [r for r in latest.values() if flags(r) == main[r["lab"]]]
        self.gpu = next((r["gpu"] for r in self.all if r.get("gpu")), "unknown GPU")
        # The records of that GPU (the first file's: results/h100/): the roofline and
        # the default copy bandwidth. Lab 32's records (results/h200x2/) are another GPU's.
        self.main = [r for r in self.all if r.get("gpu", self.gpu) == self.gpu]

    def lab(self, *labs):
        """The records of these labs, without sweep points (`make tune`'s
        'float4[block=128,...]': only the heat maps draw those)."""
        found = [r for r in self.all if r["lab"] in labs and not is_sweep_point(r)]
        if not found:
            raise Skip(f"no records of {', '.join(labs)}")
        return found

    def copy_gbps(self, records=None):
        """The measured device-to-device copy bandwidth (each lab process measures it once)."""
        values = self.copy_values(records)
        if not values and records:
            return self.copy_gbps()
        return statistics.median(values) if values else 0

    def copy_values(self, records=None):
        return [r["ceiling_value"] for r in (records or self.main) if r.get("ceiling") == COPY and r.get("ceiling_value")]


def is_sweep_point(r):
    return "[" in r["variant"]


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


def on_tensor_cores(r):
    """A record of a tensor-core kernel: FP16/BF16 in its variant's name (labs 16, 17,
    31), or a lab whose input type is a flag (lab 30's --dtype fp16, bf16, tf32)."""
    return uses_tensor_cores(r["variant"]) or r.get("flags", {}).get("dtype") in ("fp16", "bf16", "tf32")


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


TORCH_ATTENTION_SERIES = ("torch_cudnn_fp16", "torch_flash_fp16", "torch_efficient_fp32")


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
    # PyTorch's scaled_dot_product_attention on lab 16's shapes (tools/torch_attention.py),
    # where those records exist: its cuDNN and FlashAttention-2 kernels in FP16 and its
    # FP32 default (memory-efficient), not masked, at the plot's head dim.
    torch_recs = [r for r in d.all if r["lab"] == "torch_attention" and r.get("shape_of_lab") == "16_flash_attention"
                  and r["size"].get("dim") == dim]
    series += [(f"PyTorch {v.split('_')[1]} {v.split('_')[2]}" + (" (tensor cores)" if uses_tensor_cores(v) else ""),
                [r for r in torch_recs if r["variant"] == v]) for v in TORCH_ATTENTION_SERIES]
    n = write_series(tmp, series, lambda r: r["size"]["seq"], lambda r: r.get("median_ms"))
    return {"nseries": n, "dim": dim or 0, "labs": ("labs 15 and 16" if len(labs) == 2 else
            "lab 16; the *_lab15 lines are lab 15's unfused passes, run in lab 16")
            + ("; PyTorch " + torch_recs[0].get("torch_version", "") if torch_recs else "")}


def log_pixels(xlim, ylim, size):
    """(x, y) -> pixels from the bottom left of a log-log plot area `size` pixels wide
    and high, and its inverse."""
    sx = size[0] / math.log10(xlim[1] / xlim[0])  # pixels per decade
    sy = size[1] / math.log10(ylim[1] / ylim[0])
    return (lambda x, y: (math.log10(x / xlim[0]) * sx, math.log10(y / ylim[0]) * sy),
            lambda u, v: (xlim[0] * 10 ** (u / sx), ylim[0] * 10 ** (v / sy)))


def place_labels(points, xlim, ylim, size=(560, 500), char=(6.5, 12), near=0.12, avoid=()):
    """Labels for the points of a log-log plot, placed where they do not overlap.

    points: (x, y, text). Points closer than `near` decades on both axes share
    one label ('02 03 08': the same vector add). Each label goes right of, left
    of, above or below its point, the first of these that overlaps no point, no
    label placed before it and no box of `avoid` (pixels, as log_pixels gives
    them: text the plot draws elsewhere), in pixels estimated from the plot's size
    (size: the plot area; char: one character's width and height). Returns rows
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
    px, data = log_pixels(xlim, ylim, size)

    def overlaps(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    taken = [(u - 7, v - 7, u + 7, v + 7) for u, v in (px(x, y) for x, y, _ in points)] + list(avoid)
    rows = []
    for x, y, texts in groups:
        text = " ".join(texts)
        u, v = px(x, y)
        w, h = char[0] * len(text), char[1]
        boxes = [(u + 9, v - h / 2, u + 9 + w, v + h / 2), (u - 9 - w, v - h / 2, u - 9, v + h / 2),
                 (u - w / 2, v + 9, u + w / 2, v + 9 + h), (u - w / 2, v - 9 - h, u + w / 2, v - 9)]
        box = min(boxes, key=lambda b: sum(overlaps(b, t) for t in taken))  # first free one, else the least crowded
        taken.append(box)
        rows.append([*data((box[0] + box[2]) / 2, (box[1] + box[3]) / 2), text])
    return rows


def number_text(v):
    """A recorded value as the record holds it (52075.8, 736030, 2929.88): the number in
    a ceiling's label is the record's, not a rounding of it."""
    return f"{v:.10g}"


def gemm_ceiling(d, lab, variant, dtype):
    """The record that sets a FLOP ceiling: `variant` of `lab` at the lab's largest size,
    on the main GPU, with `dtype` inputs (None: the lab has one input type). Taken from
    the runs under every flag, so lab 30's FP16 cuBLAS is the tensor-core ceiling even
    where another type's run is the lab's main one. None where the records have none."""
    default = DEFAULT_FLAGS.get(lab, {}).get("dtype")
    recs = [r for r in d.every_flag if r["lab"] == lab and r["variant"] == variant and r.get("gflops")
            and r.get("gpu", d.gpu) == d.gpu
            and (dtype is None or r.get("flags", {}).get("dtype", default) == dtype)]
    return largest(recs)[-1] if recs else None


def roofline_ceilings(d):
    """The roofline's three ceilings: {"memory": ..., "fp32": ..., "tensor": ...}, each
    {"value": GB/s or GFLOP/s, "head": what it is and its value, "source": the records
    it comes from}; None for a ceiling the records do not hold."""
    ceilings = {}
    # Every run on the main GPU measured the copy, whatever its flags (lab 25's int scans too).
    values = d.copy_values([r for r in d.every_flag if r.get("gpu", d.gpu) == d.gpu])
    bw = statistics.median(values) if values else 0
    ceilings["memory"] = {"value": bw, "head": f"device-to-device copy: {number_text(bw)} GB/s",
                          "source": f"{COPY}, median of {len(values)} records"} if bw else None
    for key, (lab, variant, dtype), what in (("fp32", FP32_CEILING, "FP32, CUDA cores"),
                                             ("tensor", TENSOR_CEILING, "tensor cores")):
        r = gemm_ceiling(d, lab, variant, dtype)
        gemm = f"cuBLAS {dtype.upper()} GEMM" if dtype else "cuBLAS SGEMM"
        ceilings[key] = {"value": r["gflops"], "head": f"{what}: {number_text(r['gflops'])} GFLOP/s",
                         "source": f"{gemm}, lab {short(lab)} {variant} at {shape_text(r['size'])}"} if r else None
    return ceilings


# The roofline's size in pixels and its plot area's edges (fractions of it: left, right,
# bottom, top), fixed so that the labels placed here land where gnuplot draws them.
ROOFLINE_SIZE = (1200, 680)
ROOFLINE_AREA = (0.07, 0.70, 0.11, 0.93)
CEILING_CHAR = (7.0, 13.0)  # a character of the ceilings' labels (font 10), in pixels


def roofline(d, tmp):
    fp32, tensor = [], []
    for lab in sorted({r["lab"] for r in d.main}):
        recs = [r for r in d.main if r["lab"] == lab and not is_sweep_point(r)]
        base = baseline_variants(recs)
        # The lab's own kernels on device memory, measured against the copy bandwidth or
        # a library: no baselines, library pipelines, CPU rows or diagnostics.
        kernels = [r for r in recs if r["variant"] not in base and is_lab_kernel(r["variant"])
                   and r.get("flops") and r.get("bytes") and r.get("gflops")
                   and (r.get("ceiling") == COPY or r.get("ceiling") in base)]
        if not kernels:
            continue
        top = largest(kernels)
        # The best FP32 kernel, and apart from it the best tensor-core one (labs 16, 17, 30, 31).
        for group, keep in ((fp32, False), (tensor, True)):
            mine = [r for r in top if on_tensor_cores(r) == keep]
            if mine:
                group.append(max(mine, key=lambda r: r["gflops"]))
    if not fp32 + tensor:
        raise Skip("no kernel records with flops and bytes")
    ceilings = roofline_ceilings(d)
    if not ceilings["memory"]:
        raise Skip("no measured copy bandwidth")
    bw = ceilings["memory"]["value"]
    flat = {k: c for k, c in ceilings.items() if k != "memory" and c}
    points = fp32 + tensor
    # One series per point, so the key names each lab's kernel; the labels on the plot are lab numbers.
    n = write_series(tmp, [(f"{short(r['lab'])} {r['variant']}" + (" (tensor cores)" if r in tensor else ""), [r])
                           for r in points], lambda r: r["flops"] / r["bytes"], lambda r: r["gflops"])
    xs = [r["flops"] / r["bytes"] for r in points] + [c["value"] / bw for c in flat.values()]
    ys = [r["gflops"] for r in points] + [c["value"] for c in flat.values()]
    # Point types: FP32 kernels circles, then squares, then triangles (8 colours each);
    # tensor-core kernels stars.
    ptypes = " ".join(str(3 if i >= len(fp32) else 7 if i < 8 else 5 if i < 16 else 9) for i in range(n))
    xlim, ylim = (min(xs) / 4, max(xs) * 4), (min(ys) / 4, max(ys) * 3)
    left, right, bottom, area_top = ROOFLINE_AREA
    area = (ROOFLINE_SIZE[0] * (right - left), ROOFLINE_SIZE[1] * (area_top - bottom))
    px, data = log_pixels(xlim, ylim, area)
    cw, ch = CEILING_CHAR
    variables, avoid = {}, []
    # Each flat ceiling's label: two lines (what and its value; its source), right-aligned
    # at the right edge, just above its line.
    for key, c in flat.items():
        u, v = px(xlim[1], c["value"])
        w = cw * max(len(c["head"]), len(c["source"]))
        # 12 pixels above the line: clear of a star drawn on it (lab 30's kernel is level with cuBLAS).
        avoid.append((u - 8 - w, v + 10, u, v + 14 + 2 * ch))
        # gnuplot puts a label's first line at its y and the next ones below it.
        variables.update({f"{key}_label_x": data(u - 8, v)[0], f"{key}_label_y": data(u, v + 12 + 1.5 * ch)[1]})
    # The copy bandwidth's label: one line along the slope, just above it, ending short of
    # the highest ridge (the lowest part of the slope is where the memory-bound kernels crowd).
    (u0, v0), (u1, v1) = px(1, bw), px(10, 10 * bw)
    slope = math.atan2(v1 - v0, u1 - u0)  # the slope's angle on the picture, radians
    end = min(xlim[1], ylim[1] / bw, max([c["value"] for c in flat.values()], default=float("inf")) / bw)
    text = f"{ceilings['memory']['head']} ({ceilings['memory']['source']})"
    half = cw * len(text) / 2
    uc = max(px(end, bw * end)[0] - half * math.cos(slope) - 15, half * math.cos(slope))
    x = data(uc, 0)[0]
    vc = px(x, bw * x)[1]
    uc, vc = uc - math.sin(slope) * (4 + ch / 2), vc + math.cos(slope) * (4 + ch / 2)  # above the line
    for t in range(-int(half), int(half) + 1, int(ch)):
        u, v = uc + t * math.cos(slope), vc + t * math.sin(slope)
        avoid.append((u - ch / 2, v - ch / 2, u + ch / 2, v + ch / 2))
    bx, by = data(uc, vc)
    write_rows(tmp / "labels.csv", place_labels([(r["flops"] / r["bytes"], r["gflops"], short(r["lab"])) for r in points],
                                                xlim, ylim, size=area, avoid=avoid))
    variables.update({"nseries": n, "ptypes": ptypes, "ntensor": len(tensor), "width": ROOFLINE_SIZE[0],
                      "height": ROOFLINE_SIZE[1], "area_left": left, "area_right": right,
                      "area_bottom": bottom, "area_top": area_top, "bw_gbps": bw, "bw_label": text,
                      "bw_label_x": bx, "bw_label_y": by, "bw_angle": math.degrees(slope),
                      "xmin": xlim[0], "xmax": xlim[1], "ymin": ylim[0], "ymax": ylim[1]})
    for key in ("fp32", "tensor"):
        c = ceilings[key]
        variables.update({f"{key}_gflops": c["value"] if c else 0, f"{key}_head": c["head"] if c else "",
                          f"{key}_source": c["source"] if c else ""})
    return variables


# ---- the wave-2 labs (21 to 32): shared helpers ---------------------------------------------

def grouped_bars(tmp, groups, series, value, **variables):
    """table.csv for plots/grouped_bars.gp: one row per group, one column per series.
    groups: [(label, key)]; series: [(title, key)]; value(group key, series key): a
    number or None (no bar). A series without a single value is left out. Returns
    the script's variables: the ones given, defaults for the rest, and ymin/ymax
    from the values (room above for the key and the numbers over the bars)."""
    table = [[value(g, s) for _, s in series] for _, g in groups]
    keep = [j for j in range(len(series)) if any(row[j] for row in table)]
    if not keep:
        raise Skip("no values to draw")
    # gnuplot reads the header as plain comma-separated text: no commas in a title.
    write_rows(tmp / "table.csv", [["group"] + [series[j][0].replace(",", ";") for j in keep]] +
               [[label] + [row[j] if row[j] else "NaN" for j in keep] for (label, _), row in zip(groups, table)])
    values = [row[j] for row in table for j in keep if row[j]]
    logy = variables.get("logy", 0)
    ref = variables.get("ref", 0)
    top = max(values + [ref])
    out = {"ref": 0, "ref_title": "", "library": 0, "valuefmt": "%.0f", "logy": 0,
           "ymin": min(values + ([ref] if ref else [])) / 3 if logy else 0, "ymax": top * 30 if logy else top * 1.35}
    out.update(variables)
    library = variables.get("library", 0)
    out["library"] = keep.index(library - 1) + 1 if library and library - 1 in keep else 0
    out.update(ngroups=len(groups), nseries=len(keep))
    return out


def copy_line(d, recs):
    copy = d.copy_gbps(recs)
    return {"ref": copy, "ref_title": f"device-to-device copy, measured: {copy:.0f} GB/s"} if copy else {}


def same_work(a, b):
    """Two records of the same operation on the same data: their GB/s and GFLOP/s compare."""
    return a.get("bytes") == b.get("bytes") and a.get("flops", 0) == b.get("flops", 0)


def baseline_name(recs):
    """The library baseline most records of these were measured against ('' none)."""
    names = [r["baseline"] for r in recs if r.get("baseline")]
    return max(set(names), key=names.count) if names else ""


def size_key(r):
    return tuple(sorted(r["size"].items()))


# ---- one function per plot (wave 2) --------------------------------------------------------

def driver_api_costs(d, tmp):
    """Lab 19: what the driver API's one-time and per-launch costs are, in µs on a log
    scale: loading a module from PTX (the driver compiles it), from a cubin and from a
    fatbin, and one launch through the runtime and through the driver API."""
    recs = {r["variant"]: r for r in d.lab("19_driver_api")}
    bars = [("load PTX", "load_ptx", 1), ("load cubin", "load_cubin", 1), ("load fatbin", "load_fatbin", 1)]
    bars += [(f"{api} launch", v, recs[v]["size"].get("launches", 1) if v in recs else 1)
             for api, v in (("runtime", "runtime_launches"), ("driver", "driver_launches"))]
    us = {v: 1000 * recs[v]["median_ms"] / per for _, v, per in bars if v in recs}
    if not us:
        raise Skip("no module-load or launch records")
    return grouped_bars(tmp, [(title, v) for title, v, _ in bars], [("median µs", "us")],
                        lambda v, _: us.get(v), logy=1, valuefmt="%.3g",
                        plot_title=f"Driver API (lab 19): loading a module (PTX is compiled by the driver) and one launch, {d.gpu}",
                        y_label="µs, log scale (median)")


def nvrtc_jit_bandwidth(d, tmp):
    """Lab 20: GB/s of the softmax compiled ahead of time for any size, compiled at run
    time (NVRTC) with the size as a constant, and lab 12's register kernel, per shape,
    against the copy bandwidth measured in the same run."""
    recs = [r for r in d.lab("20_nvrtc_jit") if r.get("gbps") and {"rows", "cols"} <= set(r["size"])]
    if not recs:
        raise Skip("no softmax records with rows and cols")
    shapes = sorted({size_key(r) for r in recs}, key=lambda s: (dict(s)["cols"], dict(s)["rows"]))
    gbps = {(size_key(r), r["variant"]): r["gbps"] for r in recs}
    titles = {"aot_generic": "ahead of time for any size (the baseline)", "jit_generic": "NVRTC: the same source",
              "jit_specialised": "NVRTC: sizes as constants", "aot_lab12_registers": "lab 12's register kernel (ahead of time)"}
    return grouped_bars(tmp, [(f"{dict(k)['rows']} x {dict(k)['cols']}", k) for k in shapes],
                        [(titles.get(v, v), v) for v in variants_in_order(recs)], lambda k, v: gbps.get((k, v)),
                        plot_title=f"Run-time compilation (lab 20): softmax GB/s per shape (rows x cols), {d.gpu}",
                        y_label="GB/s (bytes read and written / median time)", **copy_line(d, recs))


def transpose_bandwidth(d, tmp):
    """Lab 21: GB/s of every transpose and of cublasSgeam at each size, under the copy."""
    recs = d.lab("21_transpose")
    base = baseline_variants(recs)
    sizes = sorted({size_key(r) for r in recs}, key=lambda s: size_product({"size": dict(s)}))
    variants = [v for v in variants_in_order(recs) if v not in base] + [v for v in variants_in_order(recs) if v in base]
    gbps = {(size_key(r), r["variant"]): r.get("gbps") for r in recs}
    label = {v: f"{v} (cuBLAS: the library)" if v in base else v for v in variants}
    return grouped_bars(tmp, [(f"{dict(s)['rows']} x {dict(s)['cols']} floats", s) for s in sizes],
                        [(label[v], v) for v in variants], lambda s, v: gbps.get((s, v)),
                        plot_title=f"Transpose (lab 21): bandwidth by size, {d.gpu}",
                        y_label="GB/s  (matrix read once and written once / median time)",
                        library=len(variants) if variants[-1] in base else 0, **copy_line(d, recs))


def stencil_pct_of_copy(d, tmp):
    """Lab 22: % of the copy bandwidth of each stencil version, 2D (5-point) and 3D
    (7-point), each at its largest grid."""
    recs = [r for r in d.lab("22_stencil") if r.get("ceiling") == COPY and r.get("pct_of_ceiling")]
    groups = []
    for dims, suffix in ((2, "_2d"), (3, "_3d")):
        mine = [r for r in recs if (r["size"].get("nz", 1) > 1) == (dims == 3)]
        if mine:
            s = largest(mine)[0]["size"]
            grid = f"{s['nx']} x {s['ny']}" + (f" x {s['nz']}" if dims == 3 else "")
            groups.append((f"{dims}D {5 if dims == 2 else 7}-point, {grid}", (dims, size_key(largest(mine)[0]))))
    # naive_2d and naive_3d are one idea: one bar colour, the dimension is the group.
    def idea(v):
        return v[:-3] if v.endswith(("_2d", "_3d")) else v
    ideas = list(dict.fromkeys(idea(r["variant"]) for r in recs))
    pct = {(size_key(r), idea(r["variant"])): r["pct_of_ceiling"] for r in recs}
    steps = next((r["extra"]["steps"] for r in recs if r.get("extra", {}).get("steps")), 0)
    return grouped_bars(tmp, groups, [(v, v) for v in ideas], lambda g, v: pct.get((g[1], v)),
                        plot_title=f"Stencil (lab 22): % of the copy bandwidth" + (f", {steps:g} steps" if steps else "") +
                        f", {d.gpu}", y_label="% of device-to-device copy (same run)",
                        ref=100, ref_title=f"device-to-device copy, measured: {d.copy_gbps(recs):.0f} GB/s = 100%")


def unified_memory_strategies(d, tmp):
    """Lab 23: effective GB/s end to end of each memory strategy, for the vector add
    and the stencil. No line: explicit copies are the bar the others are judged by."""
    recs = d.lab("23_unified_memory")
    ops = [("vector add", "_add"), ("stencil", "_stencil")]
    def strategy(v):
        return next((v[:-len(sfx)] for _, sfx in ops if v.endswith(sfx)), v)
    strategies = list(dict.fromkeys(strategy(r["variant"]) for r in recs))
    gbps = {(strategy(r["variant"]), sfx): r.get("gbps") for r in largest(recs) for _, sfx in ops if r["variant"].endswith(sfx)}
    s = largest(recs)[0]["size"]
    return grouped_bars(tmp, [(f"{name} ({'n = ' + count_text(s['n']) if sfx == '_add' else str(s['nx']) + ' x ' + str(s['ny'])})", sfx)
                              for name, sfx in ops],
                        [(v, v) for v in strategies], lambda sfx, v: gbps.get((v, sfx)),
                        plot_title=f"Unified memory (lab 23): effective bandwidth end to end per strategy, {d.gpu}",
                        y_label="effective GB/s  (the operation's bytes / median time, transfers included)",
                        valuefmt="%.1f")


def histogram_vs_cub(d, tmp):
    """Lab 24: each histogram kernel as x CUB in the same run, at the largest n, on
    uniform input (every bin) and on one-bin input (every atomic on one address)."""
    recs = [r for r in d.lab("24_histogram") if r["size"].get("n")]
    recs = [r for r in recs if r["size"]["n"] == max(x["size"]["n"] for x in recs)]  # every input at the largest n
    measured = [r for r in recs if r.get("baseline") and r.get("vs_baseline")]
    if not measured:
        raise Skip("no histogram record measured against CUB")
    def kind(size):
        return "uniform" if size["spread"] == size["bins"] else "one bin" if size["spread"] == 1 else f"{size['spread']} bins hit"
    inputs = sorted({size_key(r) for r in measured}, key=lambda s: (dict(s)["bins"], -dict(s)["spread"]))
    ratio = {(size_key(r), r["variant"]): r["vs_baseline"] for r in measured}
    base = baseline_name(measured)
    return grouped_bars(tmp, [(f"{dict(s)['bins']} bins, {kind(dict(s))}", s) for s in inputs],
                        [(v, v) for v in variants_in_order(measured)], lambda s, v: ratio.get((s, v)),
                        plot_title=f"Histogram (lab 24): speed as x {base} (the library) in the same run, n = {count_text(recs[0]['size']['n'])} "
                                   f"samples, {d.gpu}",
                        y_label=f"x {base}  (time of {base} / time of the kernel, log scale)", logy=1, valuefmt="%.2g",
                        ref=1, ref_title=f"{base} (the library) = 1x")


def scan_bandwidth(d, tmp):
    """Lab 25: GB/s of each scan and of CUB's against n, under the copy bandwidth.
    Only versions that do the scan's work (same bytes as CUB's): not the
    compaction built on it."""
    recs = d.lab("25_scan")
    base = baseline_variants(recs)
    cub = {size_key(r): r for r in recs if r["variant"] in base}
    scans = [r for r in recs if size_key(r) in cub and same_work(r, cub[size_key(r)])]
    order = [v for v in variants_in_order(scans) if v not in base] + [v for v in variants_in_order(scans) if v in base]
    n = write_series(tmp, [(f"{v} (the library)" if v in base else v, [r for r in scans if r["variant"] == v]) for v in order],
                     lambda r: r["size"]["n"], lambda r: r.get("gbps"))
    per = next(iter(cub.values()))
    kind = per.get("extra", {})
    what = f"{'exclusive' if kind.get('exclusive') else 'inclusive'} sum of {'ints' if kind.get('int') else 'floats'}"
    return {"nseries": n, "library": n if order[-1] in base else 0, "keypos": "top left", "ymin": 0, "ref": 0, "ref_title": "",
            "ymax": 1.6 * max([d.copy_gbps(recs)] + [r["gbps"] for r in scans if r.get("gbps")]),
            "plot_title": f"Scan (lab 25): bandwidth vs n, {what}, {d.gpu}",
            "x_label": "elements n (log scale)",
            "y_label": f"GB/s  ({per['bytes'] / per['size']['n']:g} bytes per element / median time)", **copy_line(d, recs)}


def cooperative_groups_vs_cub(d, tmp):
    """Lab 26: each reduction as x CUB against n: at 2^16 the time is launches (one
    grid.sync() instead of a second launch pays), at 2^28 it is DRAM (all equal).
    select_positive is a compaction, not a sum (other work): left out."""
    recs = d.lab("26_cooperative_groups")
    base = baseline_variants(recs)
    cub = {size_key(r): r for r in recs if r["variant"] in base}
    sums = [r for r in recs if r["variant"] not in base and size_key(r) in cub and same_work(r, cub[size_key(r)])
            and r.get("vs_baseline")]
    n = write_series(tmp, [(v, [r for r in sums if r["variant"] == v]) for v in variants_in_order(sums)],
                     lambda r: r["size"]["n"], lambda r: r["vs_baseline"])
    name = baseline_name(sums)
    return {"nseries": n, "library": 0, "keypos": "top right", "ymin": 0,
            "ymax": 1.35 * max([1] + [r["vs_baseline"] for r in sums]),
            "plot_title": f"Cooperative groups (lab 26): sum of n floats, speed as x {name} (the library) in the same run, {d.gpu}",
            "x_label": "elements n (log scale)", "y_label": f"x {name}  (time of {name} / time of the kernel)",
            "ref": 1, "ref_title": f"{name} (the library) = 1x"}


def monte_carlo_rates(d, tmp):
    """Lab 27: samples per second of the cuRAND host API (generate into DRAM, then
    reduce) and of the fused kernels (Philox in registers), per estimator and size."""
    recs = d.lab("27_monte_carlo")
    def samples(r):
        return r.get("extra", {}).get("samples") or r["size"].get("samples") or r["size"].get("paths")
    paths = [r for r in recs if r["variant"].endswith(("_host_api", "_fused")) and samples(r)]
    if not paths:
        raise Skip("no host-API or fused records")
    rate = {(r["variant"].split("_")[0], samples(r), r["variant"].split("_", 1)[1]): samples(r) / r["median_ms"] / 1e6
            for r in paths}
    groups = sorted({k[:2] for k in rate}, key=lambda k: (k[0] != "pi", k[1]))
    words = {"pi": ("pi", "samples"), "option": ("call option", "paths")}
    return grouped_bars(tmp, [(f"{words.get(e, (e, 'samples'))[0]}, {count_text(int(n))} {words.get(e, (e, 'samples'))[1]}", (e, n))
                              for e, n in groups],
                        [("cuRAND host API: generate into DRAM then reduce (the library)", "host_api"),
                         ("fused: Philox states in registers (no buffer)", "fused")],
                        lambda g, v: rate.get(g + (v,)),
                        plot_title=f"Monte Carlo (lab 27): random numbers made where they are used, {d.gpu}",
                        y_label="G samples (paths) per second  (samples / median time)", library=1)


QUANT = re.compile(r"^(q\d+_\d+)_(.+)$")


def llm_decode_matvec(d, tmp):
    """Lab 29: % of the copy bandwidth of each quantised matrix-vector kernel, per
    format and shape, at the largest shapes (the weights stream from DRAM once)."""
    recs = [r for r in d.lab("29_llm_decode") if QUANT.match(r["variant"]) and r.get("pct_of_ceiling")
            and r.get("ceiling") == COPY]
    if not recs:
        raise Skip("no matvec records")
    area = max(r["size"]["rows"] * r["size"]["cols"] for r in recs)  # every format at the largest matrix
    top = [r for r in recs if r["size"]["rows"] * r["size"]["cols"] == area]
    groups = sorted({(QUANT.match(r["variant"])[1], r["size"]["rows"], r["size"]["cols"]) for r in top},
                    key=lambda g: (-int(g[0][1:].split("_")[0]), g[1]))
    kernels = list(dict.fromkeys(QUANT.match(v)[2] for v in variants_in_order(top)))
    base = {QUANT.match(v)[2] for v in baseline_variants(top)}
    kernels = [k for k in kernels if k in base] + [k for k in kernels if k not in base]
    pct = {(QUANT.match(r["variant"])[1], r["size"]["rows"], r["size"]["cols"], QUANT.match(r["variant"])[2]): r["pct_of_ceiling"]
           for r in top}
    return grouped_bars(tmp, [(f"{f} {rows} x {cols}", (f, rows, cols)) for f, rows, cols in groups],
                        [(f"{k} (cuBLAS after dequantising)" if k in base else k, k) for k in kernels],
                        lambda g, k: pct.get(g + (k,)),
                        plot_title=f"LLM decode (lab 29): quantised matrix-vector kernels, % of the copy bandwidth, {d.gpu}",
                        y_label="% of device-to-device copy (same run)",
                        library=1 if kernels and kernels[0] in base else 0,
                        ref=100, ref_title=f"device-to-device copy, measured: {d.copy_gbps(top):.0f} GB/s = 100%")


def llm_decode_graph(d, tmp):
    """Lab 29: the time of one decode step launched kernel by kernel (eager) and as
    one CUDA graph, with the eager step's kernels back to back (no_gap_ms) as the floor
    that removing launch gaps can reach."""
    recs = [r for r in d.lab("29_llm_decode") if r["variant"] in ("decode_eager", "decode_graph")]
    if not recs:
        raise Skip("no decode_eager / decode_graph records")
    shapes = sorted({size_key(r) for r in recs}, key=lambda s: -size_product({"size": dict(s)}))
    ms = {(size_key(r), r["variant"]): r["median_ms"] for r in recs}
    ms.update({(size_key(r), "no_gap"): r["no_gap_ms"] for r in recs if r["variant"] == "decode_eager" and r.get("no_gap_ms")})
    launches = next((r["extra"]["launches"] for r in recs if r.get("extra", {}).get("launches")), 0)
    def group(s):
        bits = next((r["extra"].get("format_bits") for r in recs if size_key(r) == s and r.get("extra")), None)
        return ", ".join(f"{k} {v}" for k, v in s) + (f", q{bits:g}_0 weights" if bits else "")
    return grouped_bars(tmp, [(group(s), s) for s in shapes],
                        [("eager: one launch per kernel", "decode_eager"), ("one CUDA graph", "decode_graph"),
                         ("eager kernels back to back (no_gap_ms): no launch gaps at all", "no_gap")],
                        lambda s, v: ms.get((s, v)), valuefmt="%.3f",
                        plot_title="LLM decode (lab 29): one decode step" + (f" ({launches:g} kernels)" if launches else "") +
                                   f", eager vs CUDA graph, {d.gpu}",
                        y_label="median ms per decode step")


def tuning_heatmap(variant, lab="28_tuning"):
    """The heat map of `variant`'s sweep over block x blocks per SM (tools/tune.py):
    lab 28's kernels, and lab 02's float4 (`make tune LAB=02`)."""
    def make(d, tmp):
        try:
            return tune.tuning_heatmap(d, tmp, lab, variant)
        except tune.NoSweep as why:
            raise Skip(f"{why} (make tune LAB={lab[:2]} writes them to build/tune/{lab}.jsonl)") from None
    return make


def gemm_ladder(lab, title):
    """A ladder of GEMM steps (lab 30's tensor-core steps, lab 33's FP8 ones): each as x
    the library in the same run, at the largest shape all steps ran (each at its largest
    where they share none). Steps measured against another library configuration (TF32)
    say which; rows that are not GEMMs (lab 33's quantisation) have no FLOP/s and stay out."""
    def draw(d, tmp):
        recs = d.lab(lab)  # the main run's: one input type (Records)
        dtype = recs[0].get("flags", {}).get("dtype")
        base = baseline_variants(recs)
        measured = [r for r in recs if r["variant"] not in base and r.get("vs_baseline") and r.get("gflops")]
        if not measured:
            raise Skip("no step measured against its library")
        variants = variants_in_order(measured)
        shared = set.intersection(*({size_key(r) for r in measured if r["variant"] == v} for v in variants))
        if shared:
            size = max(shared, key=lambda s: size_product({"size": dict(s)}))
            picked = [next(r for r in measured if r["variant"] == v and size_key(r) == size) for v in variants]
        else:
            size, picked = None, [largest([r for r in measured if r["variant"] == v])[0] for v in variants]
        main = baseline_name(picked)
        bars = [[r["variant"] + ("" if r["baseline"] == main else f" (vs {r['baseline']})") +
                 ("" if size else f" at {shape_text(r['size'])}"), r["vs_baseline"]] for r in picked]
        write_rows(tmp / "bars.csv", bars)
        return {"nbars": len(bars), "ymax": 1.25 * max([1] + [b[1] for b in bars]), "plot_title": title,
                "size_note": (f"{shape_text(dict(size))} (M x N x K)" if size else "each step at its largest shape") +
                             (f", {dtype.upper()}" if dtype else ""),
                "blas_note": f"{main} (the library, same run) = 1x",
                "gpu": next((r["gpu"] for r in picked if r.get("gpu")), d.gpu)}
    return draw


# PyTorch's kernels beside lab 31 (tools/torch_attention.py, records of lab "torch_attention").
TORCH_BESIDE_31 = [("PyTorch cuDNN", "torch_cudnn_fp16"), ("PyTorch FlashAttention-2", "torch_flash_fp16")]


def flash_attention_hopper(d, tmp):
    """Lab 31: TFLOP/s of each FP16 step, lab 16's flash2 baseline first, per shape
    (batch x heads x N, d), and PyTorch's cuDNN and FlashAttention-2 kernels on the
    same shapes where tools/torch_attention.py recorded them (see the records' git:
    the course ran both in one GPU call)."""
    recs = [r for r in d.lab("31_flash_attention_hopper") if r["variant"].endswith("_fp16") and r.get("gflops")]
    if not recs:
        raise Skip("no FP16 records of lab 31")
    shapes = sorted({size_key(r) for r in recs}, key=lambda s: (dict(s)["dim"], dict(s)["seq"]))
    torch = [r for r in d.all if r["lab"] == "torch_attention" and r.get("gflops") and size_key(r) in shapes]
    tflops = {(size_key(r), r["variant"]): r["gflops"] / 1000 for r in recs + torch}
    one = dict(shapes[0])
    series = [(v.removesuffix("_fp16") + (" (lab 16's flash2: the baseline)" if v.startswith("fa2") else ""), v)
              for v in variants_in_order(recs)] + TORCH_BESIDE_31
    return grouped_bars(tmp, [(f"N {dict(k)['seq']}; d {dict(k)['dim']}", k) for k in shapes],
                        series, lambda k, v: tflops.get((k, v)),
                        plot_title=f"FlashAttention on Hopper (lab 31): FP16 TFLOP/s, {one['batch']} x {one['heads']} heads, "
                                   f"not causal, {d.gpu}",
                        y_label="TFLOP/s (4·N²·d per head)")


def gpus_text(recs):
    gpus = max((r.get("extra", {}).get("gpus", 0) for r in recs), default=0)
    name = next((r["gpu"] for r in recs if r.get("gpu")), "unknown GPU")
    return f"{int(gpus)} x {name}" if gpus else name


def peer_matrix(d, tmp):
    """Lab 32: copy-engine GB/s between every ordered pair of GPUs, one direction and
    both at once, at the largest buffer of the fullest matrix (--pairs auto times
    every pair at one size and only a few pairs at the others)."""
    one = [r for r in d.lab("32_multi_gpu") if r["variant"] == "peer_copy" and {"src", "dst"} <= set(r["size"])]
    both = [r for r in d.lab("32_multi_gpu") if r["variant"] == "peer_copy_bidir" and {"gpu_a", "gpu_b"} <= set(r["size"])]
    if not one or not both:
        raise Skip("no peer_copy and peer_copy_bidir records of every pair")
    pairs = collections.Counter(r["size"]["bytes"] for r in one)
    top = max(pairs, key=lambda b: (pairs[b], b))
    one = [r for r in one if r["size"]["bytes"] == top]
    both = [r for r in both if r["size"]["bytes"] == top]
    ids = sorted({r["size"][k] for r in one for k in ("src", "dst")})
    write_rows(tmp / "one_way.csv", [[ids.index(r["size"]["dst"]), ids.index(r["size"]["src"]), r["gbps"]] for r in one])
    cells = [[ids.index(r["size"][x]), ids.index(r["size"][y]), r["gbps"]]
             for r in both if r["size"]["gpu_a"] in ids and r["size"]["gpu_b"] in ids
             for x, y in (("gpu_b", "gpu_a"), ("gpu_a", "gpu_b"))]
    if not cells:
        raise Skip("no peer_copy_bidir record of the GPUs peer_copy measured")
    write_rows(tmp / "both_ways.csv", cells)
    return {"nx": len(ids), "xtics_list": ", ".join(f'"{g}" {i}' for i, g in enumerate(ids)),
            "size_note": f"{top / 2**20:g} MiB per copy", "gpu": gpus_text(one)}


def allreduce_busbw(d, tmp):
    """Lab 32: all-reduce bus bandwidth (nccl-tests: algbw x 2(G-1)/G, comparable to
    one link's bandwidth) against the buffer size, the hand-written ones vs NCCL."""
    recs = d.lab("32_multi_gpu")
    runs = [r for r in recs if r["variant"].startswith(("allreduce_", "nccl_allreduce")) and r.get("gbps")]
    def busbw(r):
        e = r.get("extra", {})
        factor = e.get("busbw_factor") or (2 * (e["gpus"] - 1) / e["gpus"] if e.get("gpus") else 0)
        return r["gbps"] * factor if factor else None
    base = baseline_variants(recs)
    order = [v for v in variants_in_order(runs) if v not in base] + [v for v in variants_in_order(runs) if v in base]
    n = write_series(tmp, [(f"{v} (the library)" if v in base else v, [r for r in runs if r["variant"] == v]) for v in order],
                     lambda r: r["size"]["bytes"], busbw)
    copies = [r for r in recs if r["variant"] == "peer_copy" and r.get("gbps")]
    top = max((r["size"]["bytes"] for r in copies), default=0)  # not largest(): a GPU id of 0 zeroes the size product
    link = statistics.median(r["gbps"] for r in copies if r["size"]["bytes"] == top) if copies else 0
    values = [busbw(r) for r in runs if busbw(r)]
    return {"nseries": n, "library": n if order and order[-1] in base else 0, "keypos": "top left", "ymin": 0,
            "ymax": 1.3 * max(values + [link]),
            "plot_title": f"All-reduce (lab 32): bus bandwidth vs buffer size, float sum, {gpus_text(runs)}",
            "x_label": "bytes per GPU (log scale)", "y_label": "bus bandwidth, GB/s  (bytes / time x 2(G-1)/G)",
            "ref": link, "ref_title": f"one-way peer copy at its largest buffer, measured: {link:.0f} GB/s" if link else "",
            "gpu": gpus_text(runs)}


# (name, script, the labs it draws, data function)
PLOTS = [
    ("vector_add_bandwidth", "vector_add_bandwidth.gp", "02", vector_add_bandwidth),
    ("pcie_pageable_vs_pinned", "pcie_pageable_vs_pinned.gp", "03", pcie_pageable_vs_pinned),
    ("reduction_vs_cub", "reduction_vs_cub.gp", "04 06 07", reduction_vs_cub),
    ("matmul_ladder", "matmul_ladder.gp", "05 09 10 11 18", matmul_ladder),
    ("streams_timeline", "streams_timeline.gp", "08", None),
    ("softmax_bandwidth", "softmax_bandwidth.gp", "12", softmax_bandwidth),
    ("attention_time", "attention_time.gp", "15 16", attention_time),
    ("driver_api_costs", "grouped_bars.gp", "19", driver_api_costs),
    ("nvrtc_jit_bandwidth", "grouped_bars.gp", "20", nvrtc_jit_bandwidth),
    ("transpose_bandwidth", "grouped_bars.gp", "21", transpose_bandwidth),
    ("stencil_pct_of_copy", "grouped_bars.gp", "22", stencil_pct_of_copy),
    ("unified_memory_strategies", "grouped_bars.gp", "23", unified_memory_strategies),
    ("histogram_vs_cub", "grouped_bars.gp", "24", histogram_vs_cub),
    ("scan_bandwidth", "lines_vs_size.gp", "25", scan_bandwidth),
    ("cooperative_groups_vs_cub", "lines_vs_size.gp", "26", cooperative_groups_vs_cub),
    ("monte_carlo_rates", "grouped_bars.gp", "27", monte_carlo_rates),
    ("tuning_heatmap_vector_add", "tuning_heatmap.gp", "02", tuning_heatmap("float4", "02_timed_vector_add")),
    ("tuning_heatmap_saxpy", "tuning_heatmap.gp", "28", tuning_heatmap("saxpy_grid_stride")),
    ("tuning_heatmap_horner", "tuning_heatmap.gp", "28", tuning_heatmap("horner_grid_stride")),
    ("llm_decode_matvec", "grouped_bars.gp", "29", llm_decode_matvec),
    ("llm_decode_graph", "grouped_bars.gp", "29", llm_decode_graph),
    ("tensor_core_ladder", "tensor_core_ladder.gp", "30",
     gemm_ladder("30_tensor_core_gemm", "Tensor-core GEMM ladder (lab 30): speed vs cuBLAS in the same run")),
    ("flash_attention_hopper", "grouped_bars.gp", "31", flash_attention_hopper),
    ("fp8_ladder", "tensor_core_ladder.gp", "33",
     gemm_ladder("33_fp8_gemm", "FP8 GEMM ladder (lab 33): speed vs cuBLASLt FP8 in the same run")),
    ("peer_matrix", "peer_matrix.gp", "32", peer_matrix),
    ("allreduce_busbw", "lines_vs_size.gp", "32", allreduce_busbw),
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
                    variables.setdefault("gpu", d.gpu)  # labs 32 and 33 name their own (results/h200x2/)
                    variables.update(dir=tmp, pngterm=pngterm)
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
    parser.add_argument("--records", type=Path, action="append",
                        help="a records file (repeatable; default: results/h100/records.jsonl, and "
                             "results/h200x2/records.jsonl for labs 32 and 33 where it exists); the first names the main GPU")
    parser.add_argument("--timeline", type=Path,
                        help="lab 08's timeline CSV (default: 08_streams_timeline.csv beside the first records)")
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
    paths = args.records or [ROOT / "results" / "h100" / "records.jsonl"] + \
        [p for p in [ROOT / "results" / "h200x2" / "records.jsonl"] if p.is_file()]
    if not paths[0].is_file() or paths[0].stat().st_size == 0:
        print(f"make_plots: skipped: no records in {paths[0]} yet (a GPU run writes them: see docs/instructor-guide.md)")
        return 77
    records = []
    for path in paths:
        try:
            records += read_records(path)
        except OSError as e:
            print(f"make_plots: cannot read {path}: {e}")
            return 2
        except ValueError as e:
            print(f"make_plots: {e}")
            return 2
    timeline = args.timeline or paths[0].parent / "08_streams_timeline.csv"

    with tempfile.TemporaryDirectory(prefix="cudalabs-plots-check-") as scratch:
        out = args.out or (Path(scratch) if args.check else ROOT / "docs" / "plots")
        out.mkdir(parents=True, exist_ok=True)
        print(f"plots from {', '.join(map(str, paths))} ({len(records)} records):")
        drawn, failed = draw_all(records, timeline, out, args.only)
    print(f"{drawn} drawn, {failed} failed")
    if failed:
        return 1
    return 0 if drawn else 77


if __name__ == "__main__":
    sys.exit(main())
