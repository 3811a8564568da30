#!/usr/bin/env python3
"""Writes SYNTHETIC records (records.jsonl) and a lab 08 timeline CSV in the
format of the real ones, to draw every plot without a GPU: for developing the
plot scripts and for the CPU test that renders them all. The numbers are made
up (the GPU is named "SYNTHETIC"); never copy them into results/ or the docs.
OUT_DIR/records.jsonl stands for results/h100/records.jsonl, OUT_DIR/h200x2.jsonl
for results/h200x2/records.jsonl (labs 32 and 33).

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


def wave2_records():
    """Labs 21 to 30 in the format their programs write (each ceiling and baseline
    where the real records have it); lab 28's sweep points as `make tune` writes them."""
    out = []
    copy = dict(ceiling="d2d_copy_gbps", ceiling_value=COPY)
    for rows, cols in ((4096, 4096), (8191, 8193)):
        size, nbytes = {"cols": cols, "rows": rows}, 8.0 * rows * cols
        geam = by_bandwidth("21_transpose", "cublas_geam", size, nbytes, 0, COPY * 0.85, **copy)
        out += [geam] + [by_bandwidth("21_transpose", v, size, nbytes, 0, COPY * f, baseline=geam, **copy)
                         for v, f in (("naive", 0.16), ("shared_tile", 0.32), ("padded_tile", 0.5), ("float4", 0.8))]
    for v, size, f in (("naive_2d", {"nx": 8191, "ny": 8193, "nz": 1}, 0.6), ("tiled_2d", {"nx": 8191, "ny": 8193, "nz": 1}, 0.7),
                       ("naive_3d", {"nx": 511, "ny": 512, "nz": 513}, 0.55), ("blocked_2_5d", {"nx": 511, "ny": 512, "nz": 513}, 0.5),
                       ("registers_3d", {"nx": 511, "ny": 512, "nz": 513}, 0.88)):
        out.append(by_bandwidth("22_stencil", v, size, 8.0 * size["nx"] * size["ny"] * size["nz"], 0, COPY * f, **copy))
    # Lab 19: module loads (ms per load) and 1000 launches (ms for all of them).
    for v, size, ms in (("load_ptx", {"check_n": 4097}, 14.0), ("load_cubin", {"check_n": 4097}, 0.03),
                        ("load_fatbin", {"check_n": 4097}, 0.03), ("runtime_launches", {"launches": 1000}, 3.6),
                        ("driver_launches", {"launches": 1000}, 3.3)):
        out.append(record("19_driver_api", v, size, ms, 0, 0))
    # Lab 20: the softmax ahead of time and through NVRTC, two shapes (one not a multiple of 32).
    for rows, cols in ((4096, 4096), (8192, 1000)):
        size, nbytes = {"cols": cols, "rows": rows}, 8.0 * rows * cols
        aot = by_bandwidth("20_nvrtc_jit", "aot_generic", size, nbytes, 0, COPY * 0.7, **copy)
        out += [aot] + [by_bandwidth("20_nvrtc_jit", v, size, nbytes, 0, COPY * f, baseline=aot, **copy)
                        for v, f in (("jit_generic", 0.69), ("jit_specialised", 0.88), ("aot_lab12_registers", 0.87))]
    size = {"n": 1 << 26, "nx": 8192, "ny": 8192}
    for op, nbytes in (("add", 12.0 * 2**26), ("stencil", 8.0 * 2**26)):
        out += [by_bandwidth("23_unified_memory", f"{v}_{op}", size, nbytes, 0, g)
                for v, g in (("explicit", 50.0), ("managed_faults", 8.0), ("managed_prefetch", 25.0), ("zero_copy", 40.0))]
    for bins in (256, 1024):
        for spread in (bins, 1):
            size, nbytes = {"bins": bins, "n": 1 << 28, "spread": spread}, 4.0 * 2**28
            cub = by_bandwidth("24_histogram", "cub", size, nbytes, 0, COPY * 0.6, **copy)
            out += [cub] + [by_bandwidth("24_histogram", v, size, nbytes, 0, COPY * f / (30 if spread == 1 and v == "global_atomics" else 1),
                                         baseline=cub, **copy)
                            for v, f in (("global_atomics", 0.01), ("block_privatized", 0.9), ("warp_aggregated", 0.4))]
    for e in (16, 20, 24, 28):
        n = 1 << e
        fill = min(1.0, n / 2**24)  # small n: launch-bound
        cub = by_bandwidth("25_scan", "cub", {"n": n}, 8.0 * n, n, COPY * 0.85 * fill, **copy)
        out += [cub, by_bandwidth("25_scan", "compact", {"n": n}, 6.0 * n, 0, COPY * 0.5 * fill, baseline=cub, **copy)]
        out += [by_bandwidth("25_scan", v, {"n": n}, 8.0 * n, n, COPY * f * fill, baseline=cub, **copy)
                for v, f in (("blelloch", 0.3), ("decoupled_lookback", 0.8))]
        cub = by_bandwidth("26_cooperative_groups", "cub", {"n": n}, 4.0 * n, n, COPY * 0.9 * fill, **copy)
        out += [cub, by_bandwidth("26_cooperative_groups", "select_positive", {"n": n}, 4.0 * n, 0, COPY * 0.1, baseline=cub, **copy)]
        out += [by_bandwidth("26_cooperative_groups", v, {"n": n}, 4.0 * n, n, COPY * (0.9 + f / e) * fill, baseline=cub, **copy)
                for v, f in (("two_launch", -1.0), ("grid_sync", 2.0))]
    for e in (24, 30):
        n = 1 << e
        for est, per, speedup in (("pi", 16, 3.0), ("option", 8, 1.3)):
            host = by_bandwidth("27_monte_carlo", f"{est}_host_api", {"samples" if est == "pi" else "paths": n}, per * n, 0,
                                COPY * 0.8, **copy)
            host["extra"] = {"samples": n}
            fused = record("27_monte_carlo", f"{est}_fused", host["size"], host["median_ms"] / speedup, 0, 0,
                           ceiling=host["variant"], baseline=host)
            fused["extra"] = {"samples": n}
            out += [host, fused]
    # Lab 28: saxpy over block x blocks_per_sm (0 = as many as are resident), Horner
    # the same with two items; one point that did not pass (a blank cell).
    n = 1 << 26
    for variant, nbytes, flops in (("saxpy_grid_stride", 12.0 * n, 2.0 * n), ("horner_grid_stride", 8.0 * n, 512.0 * n)):
        for block in (64, 128, 256, 512, 1024):
            for per_sm in (0, 1, 2, 4, 8):
                resident = min(32, 2048 // block)
                threads = block * (resident if per_sm == 0 else min(per_sm, resident))
                busy = min(1.0, threads / (2048 if variant.startswith("saxpy") else 512))
                r = record("28_tuning", f"{variant}[block={block},blocks_per_sm={per_sm},items=1]", {"n": n},
                           nbytes / (COPY * 1e6) if variant.startswith("saxpy") else flops / (60000 * 1e6), nbytes, flops,
                           **(copy if variant.startswith("saxpy") else {}))
                if variant.startswith("horner"):
                    r["peak_gflops"] = 60000.0
                r["median_ms"] /= max(busy, 0.05)
                r["gbps"], r["gflops"] = nbytes / (r["median_ms"] * 1e6), flops / (r["median_ms"] * 1e6)
                r["extra"] = {"block": block, "blocks_per_sm": per_sm, "items": 1, "theoretical_occupancy": threads / 2048,
                              "resident_blocks_per_sm": resident, "grid": 132 * (per_sm or resident)}
                r["passed"] = not (block == 1024 and per_sm == 8)
                out.append(r)
    # Lab 02: `make tune LAB=02`, float4 over block x blocks_per_sm (its heat map).
    for block in (64, 256, 1024):
        for per_sm in (0, 2, 8):
            r = by_bandwidth("02_timed_vector_add", f"float4[block={block},blocks_per_sm={per_sm}]", {"n": n}, 12.0 * n, n,
                             COPY * (0.85 + 0.01 * per_sm), ceiling="d2d_copy_gbps", ceiling_value=COPY)
            r["extra"] = {"block": block, "blocks_per_sm": per_sm, "grid": 132 * (per_sm or 2048 // block)}
            out.append(r)
    # Lab 31: the FP16 steps at two shapes, lab 16's flash2 (fa2_fp16) the baseline.
    for seq, dim in ((4096, 64), (4096, 128)):
        size, fl = {"batch": 4, "dim": dim, "heads": 16, "seq": seq}, 4.0 * seq * seq * dim * 64
        base = record("31_flash_attention_hopper", "fa2_fp16", size, fl / 280e9, 8.0 * seq * dim * 64, fl)
        out.append(base)
        for v, tflops in (("wgmma_sync_fp16", 420), ("warp_specialized_fp16", 560), ("pingpong_fp16", 450)):
            out.append(record("31_flash_attention_hopper", v, size, fl / (tflops * 1e9), 8.0 * seq * dim * 64, fl,
                              baseline=base))
    for m, n_, k in ((4096, 4096, 4096), (8192, 8192, 8192), (16, 8192, 8192)):
        size, fl = {"k": k, "m": m, "n": n_}, 2.0 * m * n_ * k
        blas = record("30_tensor_core_gemm", "cublas", size, fl / (700e3 * 1e6), 2.0 * (m * k + k * n_) + 4.0 * m * n_, fl,
                      ceiling="cublas")
        tf32 = record("30_tensor_core_gemm", "cublas_tf32", size, fl / (350e3 * 1e6), 4.0 * (m * k + k * n_ + m * n_), fl,
                      ceiling="cublas_tf32")
        out += [blas, tf32] + [record("30_tensor_core_gemm", v, size, blas["median_ms"] / f, blas["bytes"], fl, ceiling="cublas",
                                      baseline=blas)
                               for v, f in (("wmma", 0.3), ("mma_ldmatrix", 0.62), ("cp_async_pipeline", 0.78), ("wgmma_tma", 0.93))]
        out.append(record("30_tensor_core_gemm", "tf32_mma", size, tf32["median_ms"] / 0.7, tf32["bytes"], fl,
                          ceiling="cublas_tf32", baseline=tf32))
    size = {"bits": 8, "cols": 14336, "rows": 4096}
    for bits in (8, 4):
        for rows, cols in ((4096, 14336), (14336, 4096), (896, 4864)):
            size, nbytes = {"bits": bits, "cols": cols, "rows": rows}, rows * cols * (bits / 8 + 2 / 32)
            q = f"q{bits}_0"
            base = by_bandwidth("29_llm_decode", f"{q}_dequant_cublas", size, nbytes, 2.0 * rows * cols, COPY * 0.1, **copy)
            out += [base] + [by_bandwidth("29_llm_decode", f"{q}_{v}", size, nbytes, 2.0 * rows * cols, COPY * f, baseline=base, **copy)
                             for v, f in (("warp_per_row", 0.45), ("dp4a", 0.6), ("dp4a_split", 0.72))]
    for hidden, eager_ms, graph_ms in ((4096, 0.19, 0.18), (896, 0.067, 0.053)):
        size = {"hidden": hidden, "kv": 1024}
        eager = record("29_llm_decode", "decode_eager", size, eager_ms, hidden * hidden * 10.0, 0)
        eager.update(no_gap_ms=graph_ms * 0.93, extra={"launches": 13, "format_bits": 8})
        graph = record("29_llm_decode", "decode_graph", size, graph_ms, hidden * hidden * 10.0, 0, baseline=eager)
        graph["extra"] = {"launches": 13, "format_bits": 8}
        out += [eager, graph]
    return out


def multi_gpu_records():
    """Lab 32 on two GPUs (results/h200x2/ holds the real ones): peer copies of every
    ordered pair and both ways, the all-reduces against NCCL, bytes 1 MiB to 1 GiB."""
    out = []
    for e in (20, 23, 26, 28, 30):
        b = 1 << e
        fill = b / (b + 2**22)  # small buffers: latency-bound
        for src, dst in ((0, 1), (1, 0)):
            r = by_bandwidth("32_multi_gpu", "peer_copy", {"bytes": b, "src": src, "dst": dst}, b, 0, (380 + 10 * src) * fill,
                             ceiling="peer_copy")
            r["extra"] = {"gpus": 2, "peer_access": 1}
            out.append(r)
        r = by_bandwidth("32_multi_gpu", "peer_copy_bidir", {"bytes": b, "gpu_a": 0, "gpu_b": 1}, 2 * b, 0, 700 * fill,
                         ceiling="sum_of_one_way_copies_gbps", ceiling_value=770 * fill)
        r["extra"] = {"gpus": 2}
        out.append(r)
        nccl = by_bandwidth("32_multi_gpu", "nccl_allreduce", {"bytes": b}, b, b / 4, 360 * fill, ceiling="nccl_allreduce")
        out.append(nccl)
        out += [by_bandwidth("32_multi_gpu", v, {"bytes": b}, b, b / 4, 360 * fill * f, ceiling="nccl_allreduce", baseline=nccl)
                for v, f in (("allreduce_ring", 0.8), ("allreduce_oneshot", 0.95 - e / 100))]
    for r in out:
        r["gpu"] = "SYNTHETIC two GPUs (not a measurement)"
        if r["variant"].endswith("allreduce") or r["variant"].startswith("allreduce"):
            r["extra"] = {"gpus": 2, "busbw_factor": 1.0}
    return out


def fp8_records():
    """Lab 33 (results/h200x2/ holds the real ones): the FP8 steps against cuBLASLt's FP8
    GEMM, cuBLAS BF16 beside them, and the quantisation, which is no GEMM (no FLOP)."""
    out = []
    for m, n_, k in ((8192, 8192, 8192), (4096, 7168, 16384)):
        size, fl = {"k": k, "m": m, "n": n_}, 2.0 * m * n_ * k
        nbytes = m * k + n_ * k + 4.0 * m * n_
        lt = record("33_fp8_gemm", "cublaslt_fp8", size, fl / (1300e3 * 1e6), nbytes, fl, ceiling="cublaslt_fp8")
        out += [lt, record("33_fp8_gemm", "cublas_bf16", size, fl / (800e3 * 1e6), 2 * nbytes, fl),
                record("33_fp8_gemm", "quantisation", size, 0.05, 10.0 * (m * k + n_ * k), 0, baseline=lt)]
        out += [record("33_fp8_gemm", v, size, lt["median_ms"] / f, nbytes, fl, ceiling="cublaslt_fp8", baseline=lt)
                for v, f in (("per_tensor", 1.03), ("promoted", 0.87), ("block_scaled", 0.7))]
    for r in out:
        r["gpu"] = "SYNTHETIC H200 (not a measurement)"
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
        for r in records() + wave2_records():
            f.write(json.dumps(r) + "\n")
    with open(out / "h200x2.jsonl", "w") as f:  # labs 32 and 33: another machine's file, as results/h200x2/
        for r in multi_gpu_records() + fp8_records():
            f.write(json.dumps(r) + "\n")
    (out / "08_streams_timeline.csv").write_text(timeline())
    print(f"synthetic records and timeline in {out}")


if __name__ == "__main__":
    main()
