#!/usr/bin/env python3
"""Writes SYNTHETIC records (records.jsonl) and a lab 08 timeline CSV in the
format of the real ones, to draw every plot without a GPU: for developing the
plot scripts and for the CPU test that renders them all. The numbers are made
up (the GPU is named "SYNTHETIC"); never copy them into results/ or the docs.

usage: synthetic_records.py OUT_DIR
"""
import json
import sys
from pathlib import Path

COPY = 3000.0  # made-up copy GB/s
BLAS = 50000.0  # made-up SGEMM GFLOP/s


def record(lab, variant, size, ms, nbytes, flops, ceiling="", ceiling_value=0.0, baseline=None):
    gbps, gflops = nbytes / (ms * 1e6), flops / (ms * 1e6)
    pct = 0.0
    if ceiling == "d2d_copy_gbps" or ceiling == "pcie_link_gbps":
        pct = 100 * gbps / ceiling_value
    r = {"lab": lab, "variant": variant, "gpu": "SYNTHETIC (not a measurement)", "cc": "9.0", "size": size,
         "bytes": nbytes, "flops": flops, "timed": True, "runs": 20, "median_ms": ms, "min_ms": ms * 0.98,
         "mean_ms": ms, "stddev_ms": ms * 0.01, "ci95_ms": ms * 0.005, "stop": "precision", "gbps": gbps,
         "gflops": gflops, "ceiling": ceiling, "ceiling_value": ceiling_value, "pct_of_ceiling": pct,
         "suspect": pct > 105, "baseline": "", "baseline_ms": 0, "vs_baseline": 0, "max_abs_err": 0,
         "rel_err": 0, "tolerance": 0, "tolerance_rel": 1e-6, "passed": True}
    if baseline:
        r.update(baseline=baseline["variant"], baseline_ms=baseline["median_ms"], vs_baseline=baseline["median_ms"] / ms)
        if ceiling == baseline["variant"]:
            r.update(ceiling_value=baseline["gflops"] or baseline["gbps"], pct_of_ceiling=100 * r["vs_baseline"])
    elif ceiling == variant:
        r.update(ceiling_value=gflops or gbps, pct_of_ceiling=100.0)
    r.update(seed=1, git="synthetic", toolkit="13.0", driver="13.0", timestamp="2000-01-01T00:00:00Z")
    return r


def by_bandwidth(lab, variant, size, nbytes, flops, gbps, **kw):
    return record(lab, variant, size, nbytes / (gbps * 1e6), nbytes, flops, **kw)


def records():
    out = []
    for e in range(10, 29, 2):
        n = 1 << e
        l2 = 1.6 if 12 * n < 40e6 else 1.0  # small sizes sit in L2: above the copy line
        for v, f in (("one_per_thread", 0.85), ("grid_stride", 0.88), ("float4", 0.91)):
            out.append(by_bandwidth("02_timed_vector_add", v, {"n": n}, 12 * n, n, COPY * f * l2 * min(1, n / 2**18),
                                    ceiling="d2d_copy_gbps", ceiling_value=COPY))
        out.append(by_bandwidth("02_timed_vector_add", "cpu", {"n": n}, 12 * n, n, 12.0))
    for n in (1 << 24, 1 << 26):
        v = 4.0 * n
        out += [by_bandwidth("03_pcie_truth", "cpu", {"n": n}, 3 * v, n, 12.0),
                by_bandwidth("03_pcie_truth", "kernel_only", {"n": n}, 3 * v, n, COPY * 0.85,
                             ceiling="d2d_copy_gbps", ceiling_value=COPY)]
        for kind, f in (("pageable", 0.3), ("pinned", 0.85)):
            out += [by_bandwidth("03_pcie_truth", f"{kind}_h2d", {"n": n}, 2 * v, 0, 63 * f, ceiling="pcie_link_gbps", ceiling_value=63.0),
                    by_bandwidth("03_pcie_truth", f"{kind}_d2h", {"n": n}, v, 0, 63 * f * 0.9, ceiling="pcie_link_gbps", ceiling_value=63.0),
                    by_bandwidth("03_pcie_truth", f"{kind}_end_to_end", {"n": n}, 3 * v, n, 63 * f * 0.8)]
    n = 1 << 28
    for lab, versions in (("04_reduction", [("tree", 0.3)]), ("06_reduction_v2", [("two_loads", 0.5)]),
                          ("07_reduction_v3", [("tree", 0.31), ("two_loads", 0.52), ("warp_shuffle", 0.8),
                                               ("warp_shuffle_float4", 0.93)])):
        cub = by_bandwidth(lab, "cub", {"n": n}, 4 * n, n, COPY * 0.9, ceiling="d2d_copy_gbps", ceiling_value=COPY)
        out.append(cub)
        out += [by_bandwidth(lab, v, {"n": n}, 4 * n, n, COPY * f, ceiling="d2d_copy_gbps", ceiling_value=COPY,
                             baseline=cub) for v, f in versions]
    for lab, versions in (("05_matmul", [("tiled16", 0.12)]), ("09_template_matmul", [("tile8", 0.08), ("tile16", 0.12), ("tile32", 0.14)]),
                          ("10_vectorized_matmul", [("vectorized", 0.13)]), ("11_register_blocked_matmul", [("register_4x4", 0.35)]),
                          ("18_matmul_cublas_gap", [("float4_smem", 0.5), ("thread_tile_8x8", 0.7)])):
        for m in (1024, 4096):
            size, fl, nbytes = {"m": m, "n": m, "k": m}, 2.0 * m**3, 12.0 * m * m
            blas = record(lab, "cublas", size, fl / (BLAS * 1e6), nbytes, fl, ceiling="cublas")
            out.append(blas)
            out += [record(lab, v, size, blas["median_ms"] / f, nbytes, fl, ceiling="cublas", baseline=blas) for v, f in versions]
            if lab == "05_matmul":
                out.append(record(lab, "cpu_reference", size, fl / 50e9 * 1e3, nbytes, fl, baseline=blas))
    n = 1 << 24
    for v, f in (("pinned_sync", 0.5), ("pinned_streams", 0.8)):
        out.append(by_bandwidth("08_streams", v, {"n": n}, 12 * n, n, 60 * f))
    for rows, cols in ((512, 512), (16384, 1024), (4096, 4096), (128, 524288)):
        size, nbytes = {"rows": rows, "cols": cols}, 8.0 * rows * cols
        for v, f in (("block_per_row", 0.3), ("online", 0.55), ("row_in_registers", 0.85), ("split_rows", 0.7)):
            if v == "row_in_registers" and cols > 16384:
                continue
            out.append(by_bandwidth("12_softmax", v, size, nbytes, 5.0 * rows * cols, COPY * f,
                                    ceiling="d2d_copy_gbps", ceiling_value=COPY))
    # Attention as the labs record it: lab 15's pipeline against its cuBLAS baseline,
    # with one single-stage row (not a whole pass: the plot leaves it out); lab 16's
    # kernels against lab 15's unfused pass (run again in lab 16, *_lab15), one on
    # tensor cores (above the FP32 roof); lab 17 with a diagnostic *_single_head row.
    for seq in (512, 1024, 2048, 4096, 8192):
        d = 64
        size, fl = {"dim": d, "seq": seq}, 4.0 * seq * seq * d
        blas = record("15_attention_forward", "cublas_pipeline", size, 0.01 + seq * seq * 2e-8, 16.0 * seq * seq, fl,
                      ceiling="cublas_pipeline")
        out += [blas, record("15_attention_forward", "unfused", size, 0.01 + seq * seq * 2.5e-8, 16.0 * seq * seq, fl,
                             ceiling="cublas_pipeline", baseline=blas),
                by_bandwidth("15_attention_forward", "softmax", size, 8.0 * seq * seq, 0, COPY * 0.8,
                             ceiling="d2d_copy_gbps", ceiling_value=COPY)]
        unfused = record("16_flash_attention", "unfused_lab15", size, 0.01 + seq * seq * 2.5e-8, 16.0 * seq * d, fl,
                         ceiling="unfused_lab15")
        out += [unfused] + [record("16_flash_attention", v, size, 0.01 + seq * seq * t, 16.0 * seq * d, fl,
                                   ceiling="unfused_lab15", baseline=unfused)
                            for v, t in (("flash_fp32", 2.2e-8), ("flash_fp16", 3e-9))]
    size = {"batch": 4, "dim": 64, "heads": 16, "seq": 4096}
    fl = 4.0 * 4096 * 4096 * 64 * 64
    base = record("17_multi_head_attention", "unfused_per_head", size, fl / 20e9, 2.0**28, fl, ceiling="unfused_per_head")
    out += [base] + [record("17_multi_head_attention", v, size, fl / g, 2.0**28 / div, fl, ceiling="unfused_per_head",
                            baseline=base)
                     for v, g, div in (("fp32_single_head", 26e9, 8), ("fp32_batched_grid", 25e9, 1),
                                       ("fp16_single_head", 260e9, 12), ("fp16_batched_grid", 250e9, 1.6))]
    return out


def timeline():
    lines = ["n,stream,chunk,op,start_ms,end_ms"]
    for chunk in range(4):
        stream, start = chunk % 2, chunk * 0.4
        for op, length in (("h2d", 0.5), ("kernel", 0.05), ("d2h", 0.25)):
            lines.append(f"16777216,{stream},{chunk},{op},{start:.3f},{start + length:.3f}")
            start += length
    return "\n".join(lines) + "\n"


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "records.jsonl", "w") as f:
        for r in records():
            f.write(json.dumps(r) + "\n")
    (out / "08_streams_timeline.csv").write_text(timeline())
    print(f"synthetic records and timeline in {out}")


if __name__ == "__main__":
    main()
