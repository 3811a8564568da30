#!/usr/bin/env python3
"""Profiles one variant of a lab with Nsight Compute and says, in plain words,
what limits it: memory- or compute-bound (speed of light of DRAM and the SMs),
achieved vs theoretical occupancy, the top warp stall reasons, shared-memory
bank conflicts, uncoalesced global accesses, local-memory spills — each with
its numbers.

  make profile LAB=02 VARIANT=float4
  make profile LAB=21 VARIANT=naive ARGS="--size 4096"
  tools/profile.py 05 tiled16 --build build --expect shared-memory-bound
  tools/profile.py --diagnose build/profile/02_timed_vector_add-float4.ncu-rep   # a kept report again

What runs: ncu with a fixed list of sections (SpeedOfLight, Occupancy,
LaunchStats, WarpStateStats, MemoryWorkloadAnalysis and its tables,
SourceCounters) plus the metrics below, on the first launch of the variant's
kernel (--kernel-name regex:...), with the lab in --check-only mode (each
kernel runs three times, not hundreds) and CUDALABS_TRACE=0 (Nsight Compute
owns CUPTI). The full report stays in build/profile/LAB-VARIANT.ncu-rep: open
it in the Nsight Compute GUI (ncu-ui) for source-level detail. The numbers are
exported with `ncu --import REPORT --csv --page raw`.

--expect KIND (repeatable) turns it into a test: exit 1 unless the diagnosis
contains that finding (memory-bound, compute-bound, shared-memory-bound,
latency-bound, low-occupancy, occupancy-gap, bank-conflicts, uncoalesced,
local-memory, or a stall such as stall-long-scoreboard).

Exit codes: 0 diagnosed (and every --expect found), 1 an --expect missing or no
kernel matched, 2 bad usage, 3 ncu or the lab failed, 77 no ncu, no GPU, or no
permission to read the GPU's counters (a skip in meson test).
"""
import argparse
import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tune import ROOT, build, find_lab  # noqa: E402  (lab names as make run reads them)
from grader import config as grading  # noqa: E402  (tools/grading.toml: the sizes each lab accepts)
from profiling import compare, nocounters  # noqa: E402
from profiling import run as profiling_run  # noqa: E402
from profiling.experiments import LabFailed, size_multiples  # noqa: E402

SECTIONS = ["SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis",
            "MemoryWorkloadAnalysis_Tables", "SourceCounters"]

STALLS = {  # reason: (what the warp waits for, what to do)
    "long_scoreboard": ("a global or local memory load (L1TEX: DRAM, L2, spills)",
                        "more bytes in flight per thread (wider or more independent loads) or more warps"),
    "short_scoreboard": ("a shared-memory access or a special-function result (MIO)",
                         "fewer shared-memory round trips per instruction: keep reused values in registers"),
    "mio_throttle": ("the shared-memory / MIO instruction queue, full",
                     "fewer, wider shared-memory accesses; remove bank conflicts"),
    "lg_throttle": ("the local/global memory instruction queue, full",
                    "fewer, wider global accesses (16-byte loads); no local-memory spills"),
    "barrier": ("__syncthreads: other warps of the block",
                "less work between barriers or smaller blocks; balance the work of the warps"),
    "membar": ("a memory fence", "fewer fences or atomics with narrower scope"),
    "math_pipe_throttle": ("a busy arithmetic pipe", "the kernel uses that pipe fully: fewer instructions, or another pipe"),
    "wait": ("a fixed-latency dependency", "independent instructions between dependent ones (ILP)"),
    "not_selected": ("nothing: another warp was picked", "nothing to fix: warps were eligible"),
    "selected": ("nothing: it issued", "nothing to fix"),
    "dispatch_stall": ("the dispatcher", "rare; look at the SASS"),
    "drain": ("memory writes to drain at exit", "usually nothing"),
    "branch_resolving": ("a branch target", "fewer divergent branches"),
    "no_instruction": ("the instruction cache", "smaller unrolled loops or fewer kernel variants in flight"),
    "imc_miss": ("the constant cache", "uniform constant accesses"),
    "tex_throttle": ("the texture unit queue", "fewer texture or FP64 / transcendental ops"),
    "sleeping": ("__nanosleep or a yield", "nothing to fix if intended"),
    "misc": ("something ncu does not classify", "look at the source counters"),
}
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
SM_CLOCK = "gpc__cycles_elapsed.avg.per_second"  # the SMs' clock while the kernel ran, in Hz

# Nsight Compute locks the GPU's clocks to their base values by default (--clock-control base), for
# repeatable counters. The lab times its kernels at the clocks the GPU picks, and the counter-free
# diagnosis reasons from that timing. On an H200 the lock held the SMs at 1.31-1.50 GHz where the lab
# ran them at 1.98 GHz, with the memory clock at 3.2 GHz in both (results/h200/profiling/held-out-5/):
# the SMs' side of every comparison grows by 32-51% against DRAM's. Lab 20's softmax issued
# instructions 73% of the cycles and kept DRAM 67% busy under the lock: compute-bound; its 84 M warp
# instructions over the lab's own 148 us at 1.98 GHz are 54% of the issue, against 73% of DRAM's peak:
# memory-bound. Left at the GPU's own clocks, the profiler sees the kernel the lab timed.
CLOCK_CONTROL = "none"

METRICS = [
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__block_size",
    "launch__grid_size",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    SM_CLOCK,
] + [STALL_METRIC.format(r) for r in STALLS]
# Every metric diagnose() reads: a comparison keeps these of a report (compare.kept_metrics).
READS = METRICS + ["memory_l2_theoretical_sectors_global", "memory_l2_theoretical_sectors_global_ideal"]

# The kernel of a variant, where its name does not contain the variant's name.
KERNELS = {
    ("02_timed_vector_add", "one_per_thread"): "vector_add_kernel",
    ("05_matmul", "tiled16"): "tiled_matmul_kernel",
    ("07_reduction_v3", "tree"): "reduce_tree_kernel",
    ("21_transpose", "shared_tile"): "transpose_tiled_kernel",
    ("21_transpose", "padded_tile"): "transpose_tiled_kernel",
    ("22_stencil", "naive_2d"): "jacobi_2d_naive_kernel",
    ("22_stencil", "tiled_2d"): "jacobi_2d_tiled_kernel",
    ("22_stencil", "registers_2d"): "jacobi_2d_registers_kernel",
    ("22_stencil", "naive_3d"): "jacobi_3d_naive_kernel",
    ("22_stencil", "tiled_3d"): "jacobi_3d_tiled_kernel",
    ("22_stencil", "blocked_2_5d"): "jacobi_3d_blocked_kernel",
    ("22_stencil", "registers_3d"): "jacobi_3d_registers_kernel",
}
# One size per lab that shows its bottleneck: data far larger than the 50 MB L2.
SIZES = {
    "02_timed_vector_add": ["--size", "2^26"],
    "05_matmul": ["--size", "2048"],
    "07_reduction_v3": ["--size", "2^26"],
    "21_transpose": ["--size", "8192"],
    "28_tuning": ["--size", "2^26"],
}

# Thresholds of the diagnosis, in % of peak unless said.
BUSY = 60.0          # a unit above this is what the kernel is bound by
OCCUPANCY_LOW = 50.0  # theoretical occupancy below this is named
GAP = 0.8            # achieved below this fraction of theoretical is named
CONFLICTS = 0.10     # bank-conflict wavefronts above this share of all shared wavefronts
SECTOR_USE = 50.0    # global accesses using less than this % of each 32-byte sector


@dataclass
class Finding:
    kind: str        # memory-bound, uncoalesced, stalls, ...
    text: str        # what a student reads, with the numbers
    tags: list = field(default_factory=list)  # more kinds --expect may name (stall-long-scoreboard)


def value(m, name):
    v = m.get(name)
    return v if isinstance(v, (int, float)) else None


def diagnose(m):
    """The findings for a dict of ncu metric values (name -> number; any may be
    missing). CPU only: tests/test_tuning_tools.py drives it with synthetic dicts."""
    found = []
    sm = value(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
    mem = value(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    dram = value(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed")
    l2 = value(m, "lts__throughput.avg.pct_of_peak_sustained_elapsed")
    l1 = value(m, "l1tex__throughput.avg.pct_of_peak_sustained_active")
    fma = value(m, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active")
    shared_inst = sum(value(m, f"smsp__sass_inst_executed_op_shared_{op}.sum") or 0 for op in ("ld", "st"))
    shared_waves = sum(value(m, f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum") or 0 for op in ("ld", "st"))
    uses_shared = shared_inst > 0 or shared_waves > 0

    # Stall reasons, largest first; "selected" and "not_selected" are not stalls.
    stalls = sorted(((value(m, STALL_METRIC.format(r)), r) for r in STALLS
                     if r not in ("selected", "not_selected") and value(m, STALL_METRIC.format(r))), reverse=True)
    top = [r for _, r in stalls[:3]]

    # 1. What the kernel is bound by (speed of light).
    units = ", ".join(f"{name} {v:.0f}%" for name, v in (("DRAM", dram), ("L2", l2), ("L1/shared", l1), ("SM", sm))
                      if v is not None)
    if dram is not None and dram >= BUSY and dram >= (sm or 0):
        found.append(Finding("memory-bound",
                             f"memory-bound: DRAM runs at {dram:.0f}% of its peak ({units}). The kernel moves bytes as "
                             "fast as DRAM allows: only moving fewer bytes (fusing kernels, smaller types, reuse through "
                             "shared memory) makes it faster; more arithmetic per byte is free."))
    elif l2 is not None and l2 >= BUSY and l2 >= (sm or 0) and (dram is None or dram < BUSY):
        found.append(Finding("memory-bound",
                             f"memory-bound in L2: L2 runs at {l2:.0f}% of its peak ({units}). The L2 traffic, not "
                             "DRAM, sets the pace: sectors fetched and not used (uncoalesced accesses), atomics on "
                             "few addresses, or data reread from L2; fewer, fuller L2 transactions help.",
                             tags=["l2-bound"]))
    # Shared memory is the limiter where the L1/shared unit is the busiest of the SM's units, or where nothing is
    # busy and the warps wait most on it. Where the SM (instruction issue, a pipe) is busier, Nsight Compute's
    # breakdown puts compute above memory, and so does this diagnosis: it takes the busiest unit.
    sm_busiest = sm is not None and sm >= BUSY and sm > (l1 or 0)
    shared_pressure = uses_shared and dram is not None and dram < BUSY and not sm_busiest and not any(
        f.kind == "memory-bound" for f in found) and (
        (l1 is not None and l1 >= BUSY) or any(r in ("mio_throttle", "short_scoreboard") for r in top[:2]))
    if shared_pressure:
        found.append(Finding("shared-memory-bound",
                             f"shared-memory-bound: L1/shared memory at {l1 or 0:.0f}% of its peak with DRAM at "
                             f"{dram:.0f}% ({units}); the warps wait most on "
                             f"{', '.join(r.replace('_', ' ') for r in top[:2])}. The shared-memory pipe, not DRAM "
                             "and not the FMA units, sets the pace: keep reused values in registers (more outputs "
                             "per thread), use wider shared loads, remove bank conflicts."))
    if sm is not None and sm >= BUSY and sm > (dram or 0) and not shared_pressure and \
            not any(f.kind == "memory-bound" for f in found):
        pipe = f" (FMA pipe {fma:.0f}% busy)" if fma is not None else ""
        found.append(Finding("compute-bound",
                             f"compute-bound: the SMs run at {sm:.0f}% of their peak{pipe} ({units}). Fewer or "
                             "cheaper instructions per result help; the memory system has room to spare."))
    busiest = max([v for v in (sm, mem, dram) if v is not None], default=None)
    if busiest is not None and busiest < BUSY and not shared_pressure and \
            not any(f.kind == "memory-bound" for f in found):
        found.append(Finding("latency-bound",
                             f"latency-bound: no unit is busy ({units}; the busiest at {busiest:.0f}%). The warps "
                             "spend their time waiting: more independent work in flight (more warps, more "
                             "independent loads or FMAs per thread) or shorter dependency chains."))

    # 2. Occupancy.
    achieved = value(m, "sm__warps_active.avg.pct_of_peak_sustained_active")
    theoretical = value(m, "sm__maximum_warps_per_active_cycle_pct")
    if theoretical is not None:
        limits = {k: value(m, f"launch__occupancy_limit_{k}") for k in ("registers", "shared_mem", "warps", "blocks")}
        limits = {k: v for k, v in limits.items() if v is not None}
        limit_text = ""
        if limits:
            limiter = min(limits, key=limits.get)
            registers = value(m, "launch__registers_per_thread")
            why = f", {registers:.0f} registers per thread" if limiter == "registers" and registers else ""
            limit_text = f"; {limiter.replace('_', ' ')} limit it to {limits[limiter]:.0f} blocks per SM{why}"
        if theoretical < OCCUPANCY_LOW:
            found.append(Finding("low-occupancy",
                                 f"low occupancy: at most {theoretical:.0f}% of the SM's warp slots can be filled"
                                 f"{limit_text}. That matters when the warps stall on latency (above); a kernel "
                                 "bound by a busy unit does not need more warps."))
        if achieved is not None and achieved < GAP * theoretical:
            found.append(Finding("occupancy-gap",
                                 f"achieved occupancy {achieved:.0f}% of the theoretical {theoretical:.0f}%: warp slots "
                                 "stay empty — too few blocks for the SMs (a grid smaller than one wave), a tail "
                                 "wave, or blocks that finish at very different times."))
        if not any(f.kind in ("low-occupancy", "occupancy-gap") for f in found):
            found.append(Finding("occupancy",
                                 f"occupancy: achieved {achieved if achieved is not None else float('nan'):.0f}% of a "
                                 f"theoretical {theoretical:.0f}%{limit_text}."))

    # 3. Where the warps wait.
    if stalls:
        parts = [f"{r.replace('_', ' ')} {v:.1f} cycles per issued instruction (waiting for {STALLS[r][0]})"
                 for v, r in stalls[:3]]
        advice = STALLS[stalls[0][1]][1]
        found.append(Finding("stalls", "top stall reasons: " + "; ".join(parts) + f". First: {advice}.",
                             tags=["stall-" + r.replace("_", "-") for r in top]))

    # 4. Shared-memory bank conflicts.
    for op, what in (("ld", "loads"), ("st", "stores")):
        conflicts = value(m, f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
        waves = value(m, f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
        inst = value(m, f"smsp__sass_inst_executed_op_shared_{op}.sum")
        if conflicts and waves and conflicts / waves >= CONFLICTS:
            ways = f", {waves / inst:.1f} wavefronts per shared {what[:-1]} instruction (1 is conflict-free)" if inst else ""
            found.append(Finding("bank-conflicts",
                                 f"shared-memory bank conflicts on {what}: {conflicts:.0f} extra wavefronts, "
                                 f"{100 * conflicts / waves:.0f}% of all{ways}. Threads of a warp hit the same bank: "
                                 "pad the array (e.g. [32][33]) or change which thread reads which element."))

    # 5. Uncoalesced global accesses.
    for op, what in (("ld", "loads"), ("st", "stores")):
        use = value(m, f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.pct")
        sectors = value(m, f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")
        requests = value(m, f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum")
        if use is not None and use < SECTOR_USE and (sectors is None or sectors > 0):
            per = f", {sectors / requests:.1f} sectors per request" if sectors and requests else ""
            found.append(Finding("uncoalesced",
                                 f"uncoalesced global {what}: each 32-byte sector carries {use * 32 / 100:.1f} useful "
                                 f"bytes ({use:.0f}%){per}. Neighbouring threads touch addresses far apart: make "
                                 "consecutive threads access consecutive addresses (e.g. transpose through a shared-"
                                 "memory tile)."))
    ideal = value(m, "memory_l2_theoretical_sectors_global_ideal")
    actual = value(m, "memory_l2_theoretical_sectors_global")
    if ideal and actual and actual > 1.1 * ideal and not any(f.kind == "uncoalesced" for f in found):
        found.append(Finding("uncoalesced",
                             f"uncoalesced global accesses: {actual:.0f} L2 sectors where {ideal:.0f} would do "
                             f"({actual / ideal:.1f}x); Source Counters in the GUI names the lines."))

    # 6. Local memory (register spills, local arrays).
    local = {op: value(m, f"smsp__sass_inst_executed_op_local_{op}.sum") or 0 for op in ("ld", "st")}
    if local["ld"] + local["st"] > 0:
        found.append(Finding("local-memory",
                             f"local memory: {local['ld']:.0f} local load and {local['st']:.0f} local store "
                             "instructions (warp-level): register spills or an array indexed at run time. Local memory "
                             "is DRAM behind L1; fewer live values, compile-time indices, or __launch_bounds__."))
    if not found:
        found.append(Finding("no-data", "no diagnosis: none of the metrics it reads were in the report."))
    return found


# A report without these is refused, not diagnosed: every finding rests on them.
KEY_METRICS = ["gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "dram__throughput.avg.pct_of_peak_sustained_elapsed"]


def refusal(m):
    """Why a kernel's metrics cannot be diagnosed (a key metric missing or NaN), or None."""
    missing = [k for k in KEY_METRICS if not isinstance(m.get(k), (int, float))]
    nan = [k for k in KEY_METRICS if isinstance(m.get(k), float) and math.isnan(m[k])]
    if missing:
        return f"the report lacks {', '.join(missing)}: this ncu did not collect them (a replay failed or the " \
               "metric names changed); nothing is diagnosed from it"
    if nan:
        return f"the report's {', '.join(nan)} is NaN: ncu could not measure it (a replay was cut short or the " \
               "counters were taken by another profiler); nothing is diagnosed from it"
    return None


def ncu_version(ncu):
    """'2025.3.1.0' from `ncu --version`, or 'unknown'."""
    try:
        p = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    m = re.search(r"Version\s+([\w.]+)", p.stdout + p.stderr)
    return m.group(1) if m and p.returncode == 0 else "unknown"


def kinds(findings):
    return {f.kind for f in findings} | {t for f in findings for t in f.tags}


# ---- the report ------------------------------------------------------------------------

def number(text):
    """ncu's CSV values: '1,234.5', '95.2', 'n/a' -> float or None."""
    t = text.strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None


def parse_raw_csv(text):
    """`ncu --import R --csv --page raw`: a header row of metric names, a row of
    units, then one row per profiled kernel. Returns a list of {name: value}
    (numbers as float, the rest as text), one per kernel."""
    rows = list(csv.reader(io.StringIO(text[text.find('"'):] if '"' in text else text)))
    if len(rows) < 2:
        return []
    header = rows[0]
    units = rows[1] if len(rows) > 2 and all(number(c) is None for c in rows[1][len(rows[1]) // 2:]) else None
    kernels = []
    for row in rows[2 if units else 1:]:
        k = {}
        for i, name in enumerate(header):
            if i >= len(row):
                break
            v = number(row[i])
            unit = units[i] if units else ""
            if v is not None and unit in ("usecond", "msecond", "second"):  # durations in ns
                v *= {"usecond": 1e3, "msecond": 1e6, "second": 1e9}[unit]
            k[name] = v if v is not None else row[i]
        kernels.append(k)
    return kernels


def find_ncu(given):
    for candidate in [given, os.environ.get("NCU"), shutil.which("ncu"), "/usr/local/cuda/bin/ncu"]:
        if candidate and Path(candidate).is_file():
            return candidate
    for found in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")):
        return str(found)
    return None


def skip(message):
    print(f"profile: skipped: {message}")
    return 77


def permission_problem(output):
    return "ERR_NVGPUCTRPERM" in output or "permission to access NVIDIA GPU Performance Counters" in output


def report_text(lab, variant, kernel, findings, report, csv_path):
    name = kernel.get("Kernel Name") or kernel.get("Function Name") or "?"
    duration = value(kernel, "gpu__time_duration.sum")
    lines = [f"{lab} {variant}: kernel {name}"]
    grid = kernel.get("Grid Size", value(kernel, "launch__grid_size"))
    block = kernel.get("Block Size", value(kernel, "launch__block_size"))
    shape = [f"grid {grid:.0f}" if isinstance(grid, float) else f"grid {grid}" if grid else "",
             f"block {block:.0f}" if isinstance(block, float) else f"block {block}" if block else "",
             f"{duration / 1e3:.1f} us under the profiler" if duration else "",
             f"SMs at {value(kernel, SM_CLOCK) / 1e6:.0f} MHz" if value(kernel, SM_CLOCK) else ""]
    if any(shape):
        lines.append("  " + ", ".join(s for s in shape if s))
    for i, f in enumerate(findings, 1):
        lines.append(f"  {i}. {f.text}")
    lines.append(f"  full report: {report}   (open it: ncu-ui {report})")
    lines.append(f"  numbers:     {csv_path}")
    return "\n".join(lines)


def run_ncu(ncu, program, lab_args, kernel_regex, skip_launches, report_base, metrics):
    cmd = [ncu, "--force-overwrite", "--clock-control", CLOCK_CONTROL, "--export", str(report_base),
           "--kernel-name-base", "function",
           "--kernel-name", f"regex:{kernel_regex}", "--launch-skip", str(skip_launches), "--launch-count", "1"]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(metrics), str(program)] + lab_args
    print("CUDALABS_TRACE=0 " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "CUDALABS_TRACE": "0"})
    return p.returncode, p.stdout + p.stderr


def import_report(ncu, report):
    p = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stdout + p.stderr)
    return p.stdout


REFERENCES = sorted(ROOT.glob("results/*/records.jsonl"))  # recorded copy ceilings, for labs that measure none


def profile_with_ncu(ncu, program, lab, variant, lab_args, kernel_regex, launch_skip, out):
    """Nsight Compute on one kernel. Returns a dict: status (ok, skip, refused,
    failed, no-kernel), reason, version, metrics, findings, text, seconds."""
    start = time.time()
    version = ncu_version(ncu)
    result = {"version": version, "findings": [], "metrics": {}, "text": ""}
    base = out / f"{lab}-{variant}"
    report = base.with_suffix(".ncu-rep")
    metrics = list(METRICS)
    status, output = run_ncu(ncu, program, lab_args, kernel_regex, launch_skip, base, metrics)
    # A metric this ncu does not know fails the whole run: drop it and try once more.
    unknown = [m for m in metrics if m in output and re.search(rf"(?i)(error|fail|invalid|not found).*{re.escape(m)}", output)]
    if unknown and not report.is_file():
        print(f"profile: this ncu does not know {', '.join(unknown)}; profiling without them")
        metrics = [m for m in metrics if m not in unknown]
        status, output = run_ncu(ncu, program, lab_args, kernel_regex, launch_skip, base, metrics)
    result["seconds"] = round(time.time() - start, 1)
    if permission_problem(output):
        return {**result, "status": "skip",
                "reason": "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as root, or "
                          "set the nvidia module option NVreg_RestrictProfilingToAdminUsers=0"}
    if status == 77:
        return {**result, "status": "skip", "reason": "the lab found no usable GPU under ncu"}
    if not report.is_file():
        if "No kernels were profiled" in output:
            return {**result, "status": "no-kernel",
                    "reason": f"no kernel matched regex:{kernel_regex}. Name it with KERNEL=... (make) or --kernel; "
                              f"the lab's kernels are in labs/{lab}/*.cuh"}
        return {**result, "status": "failed", "reason": f"ncu wrote no report (exit {status}):\n{output[-4000:]}"}
    try:
        raw = import_report(ncu, report)
    except RuntimeError as e:
        return {**result, "status": "failed", "reason": f"ncu could not read back {report}:\n{e}"}
    csv_path = base.with_suffix(".csv")
    csv_path.write_text(raw)
    kernels = parse_raw_csv(raw)
    if not kernels:
        return {**result, "status": "no-kernel", "reason": f"{report} holds no profiled kernel (regex:{kernel_regex})"}
    why = refusal(kernels[0])
    if why:
        return {**result, "status": "refused", "reason": why, "metrics": kernels[0]}
    findings = diagnose(kernels[0])
    text = report_text(lab, variant, kernels[0], findings, report, csv_path) + f"\n  Nsight Compute {version}"
    base.with_suffix(".txt").write_text(text + "\n")
    return {**result, "status": "ok", "reason": "", "metrics": kernels[0], "findings": findings, "text": text}


def agreement_text(ncu_findings, diagnosis):
    ncu_main = nocounters.main_limiter_of_ncu(kinds(ncu_findings))
    verdict = compare.verdict(ncu_main, diagnosis.limiter, diagnosis.confidence)
    return (f"both paths: Nsight Compute says {ncu_main}, the counter-free diagnosis {diagnosis.limiter} "
            f"({diagnosis.confidence}): {compare.VERDICTS[verdict]}")


def multiples_of(lab):
    """What LAB requires its sizes to be multiples of ({flag: n}), from its draw table in tools/grading.toml; {}
    where the file cannot be read (the ladder then drops the rungs the lab refuses)."""
    try:
        cfg = grading.load_config(ROOT / "tools" / "grading.toml", grading.lab_names(ROOT))
    except grading.GradeError as e:
        print(f"profile: {e}: the size ladder goes without the labs' declared multiples")
        return {}
    return size_multiples(cfg.get(lab, {}).get("draw"))


def lab_arguments(lab, variant, args_text):
    extra = args_text.split()
    size = [] if any(a.startswith(("-n", "--size", "--n", "--m", "--k", "--rows", "--cols", "--seq", "--kv"))
                     for a in extra) else SIZES.get(lab, [])
    return size + extra


def compare_table(args, ncu):
    """--compare-table: both paths on every kernel of a table; a JSON record and
    a markdown table in --out."""
    try:
        entries = compare.load_table(args.compare_table)
    except (OSError, ValueError) as e:
        print(f"profile: {e}")
        return 2
    out = args.out or Path(args.build) / "profile" / "compare"
    out.mkdir(parents=True, exist_ok=True)
    if not ncu:
        print("profile: no ncu here: the table gets the counter-free column only")
    rows = []
    for entry in entries:
        lab = find_lab(entry["lab"])
        program = build(args.build, lab)
        key = compare.key(entry)
        run_args = entry["args"].split()
        regex = entry.get("kernel") or KERNELS.get((lab, entry["variant"]), re.escape(entry["variant"]))
        row = {**entry, "lab": lab, "key": key}
        print(f"\n==== {key}: {lab} --variant {entry['variant']} {entry['args']}", flush=True)
        try:
            diag, ev, notes = profiling_run.counter_free(program, entry["variant"], run_args, regex,
                                                         sweep=entry.get("sweep"), references=REFERENCES,
                                                         cuobjdump=args.cuobjdump, multiples=multiples_of(lab))
            print(profiling_run.report(key, diag, notes, ev["seconds"]))
            row.update(counter_free=diag.to_json(), seconds=ev["seconds"], notes=notes)
            (out / f"{key}.evidence.json").write_text(json.dumps(ev) + "\n")
        except LabFailed as e:
            print(f"counter-free: {e}")
            if e.code == 77:
                return skip("the lab found no usable GPU")
            row.update(counter_free=None, notes=[str(e).splitlines()[0]])
        if ncu:
            lab_args = ["--variant", entry["variant"], "--check-only"] + run_args
            r = profile_with_ncu(ncu, program, lab, entry["variant"], lab_args, regex, 0, out)
            print(r["text"] or f"ncu: {r['status']}: {r['reason']}")
            row["ncu"] = {"status": r["status"], "reason": r["reason"], "version": r["version"],
                          "seconds": r.get("seconds"), "kinds": sorted(kinds(r["findings"])),
                          "limiter": nocounters.main_limiter_of_ncu(kinds(r["findings"])) if r["findings"] else None,
                          "metrics": {k: v for k, v in r["metrics"].items() if isinstance(v, (int, float))}}
        rows.append(row)
        compare.write(rows, out, READS)  # after every kernel: a cut-short run keeps what it measured
    summary = compare.write(rows, out, READS)
    print("\n" + summary)
    return 0


def main():
    parser = argparse.ArgumentParser(description="Say what limits one variant's kernel: with Nsight Compute's "
                                                 "counters where they may be read, and without them everywhere.",
                                     epilog="Exit codes: 0 diagnosed, 1 an --expect missing or no kernel matched, "
                                            "2 bad usage, 3 ncu or the lab failed (or a report was refused), "
                                            "77 no GPU (or, with --counters 1, no ncu or no counter permission).")
    parser.add_argument("lab", nargs="?", help="the lab: 02, 2, 02_timed_vector_add or timed_vector_add")
    parser.add_argument("variant", nargs="?", help="the variant (see the lab's --list)")
    parser.add_argument("--build", default=str(ROOT / "build"), help="the build folder (default: build)")
    parser.add_argument("--program", help="the lab program (default: BUILD/labs/LAB/LAB, built first)")
    parser.add_argument("--args", default="", help="more flags for the lab; a size here replaces the default one")
    parser.add_argument("--kernel", help="regex of the kernel to profile (default: from the variant's name)")
    parser.add_argument("--launch-skip", type=int, default=0, help="matching launches to skip first (default 0)")
    parser.add_argument("--out", type=Path, help="where the report goes (default: BUILD/profile)")
    parser.add_argument("--ncu", help="the ncu program (default: $NCU, ncu on PATH, /usr/local/cuda/bin/ncu)")
    parser.add_argument("--cuobjdump", help="the cuobjdump program (default: $CUOBJDUMP, PATH, the CUDA Toolkit)")
    parser.add_argument("--counters", choices=["auto", "1", "0"], default=os.environ.get("COUNTERS") or "auto",
                        help="auto (default): Nsight Compute where it may read the counters, and the counter-free "
                             "diagnosis always; 1: Nsight Compute only; 0: the counter-free diagnosis only")
    parser.add_argument("--sweep", help="a launch-shape sweep for the counter-free experiments (the lab's --sweep "
                                        "syntax, e.g. 'block=128,256,512,1024'), where the lab has one")
    parser.add_argument("--expect", action="append", default=[], metavar="KIND",
                        help="exit 1 unless the diagnosis has this finding (repeatable)")
    parser.add_argument("--diagnose", type=Path, metavar="REPORT", help="diagnose a kept .ncu-rep again, run nothing")
    parser.add_argument("--compare-table", type=Path, metavar="TOML",
                        help="both paths on every kernel of the table; comparison.json and comparison.md in --out")
    parser.add_argument("--recompare", type=Path, metavar="DIR", action="append",
                        help="rebuild DIR's comparison from its kept evidence and Nsight Compute's kept metrics, "
                             "without a GPU (after a rule changed): every comparison*.json in DIR, merged, into "
                             "--out (default DIR); repeat it to merge several folders into one --out")
    args = parser.parse_args()

    if args.recompare:
        try:
            print(compare.recompare(args.recompare, REFERENCES, args.out, lambda m: kinds(diagnose(m)), READS))
        except (OSError, ValueError) as e:
            print(f"profile: {e}")
            return 2
        return 0
    ncu = find_ncu(args.ncu) if args.counters != "0" else None
    if args.compare_table:
        return compare_table(args, ncu)
    if args.diagnose:
        if not ncu:
            return skip("ncu (Nsight Compute) not found: it reads the report")
        try:
            kernels = parse_raw_csv(import_report(ncu, args.diagnose))
        except RuntimeError as e:
            print(f"profile: ncu could not read {args.diagnose}:\n{e}")
            return 3
        if not kernels:
            print(f"profile: {args.diagnose} holds no profiled kernel")
            return 1
        why = refusal(kernels[0])
        if why:
            print(f"profile: {args.diagnose} refused: {why}")
            return 3
        print(report_text(args.diagnose.stem, "", kernels[0], diagnose(kernels[0]), args.diagnose, "-")
              + f"\n  Nsight Compute {ncu_version(ncu)}")
        return 0
    if not args.lab or not args.variant:
        parser.error("name a lab and a variant: make profile LAB=02 VARIANT=float4")
    if args.counters == "1" and not ncu:
        return skip("ncu (Nsight Compute) not found: it comes with the CUDA Toolkit (/usr/local/cuda/bin/ncu) "
                    "or as the nsight-compute package; or name it with --ncu / NCU=...; COUNTERS=0 diagnoses "
                    "without it")
    lab = find_lab(args.lab)
    program = Path(args.program) if args.program else build(args.build, lab)
    run_args = lab_arguments(lab, args.variant, args.args)
    lab_args = ["--variant", args.variant, "--check-only"] + run_args
    kernel_regex = args.kernel or KERNELS.get((lab, args.variant), re.escape(args.variant))

    # The lab alone first, without the profiler: no GPU (77), a bad variant (2)
    # or a wrong result shows here, in the lab's own words.
    p = subprocess.run([str(program)] + lab_args, capture_output=True, text=True)
    if p.returncode == 77:
        return skip(p.stderr.strip() or "the lab found no usable GPU")
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        print(f"profile: {program.name} {' '.join(lab_args)} exited {p.returncode} before profiling")
        return 2 if p.returncode == 2 else 3

    out = args.out or Path(args.build) / "profile"
    out.mkdir(parents=True, exist_ok=True)
    base = out / f"{lab}-{args.variant}"
    counted = None
    if ncu:
        r = profile_with_ncu(ncu, program, lab, args.variant, lab_args, kernel_regex, args.launch_skip, out)
        if r["status"] == "no-kernel":
            print(f"profile: {r['reason']}")
            return 1
        if r["status"] == "ok":
            counted = r["findings"]
            print("\n" + r["text"])
        elif args.counters == "1":
            if r["status"] == "skip":
                return skip(r["reason"])
            print(f"profile: {r['reason']}")
            return 3
        else:
            print(f"profile: Nsight Compute: {r['reason']}\nprofile: diagnosing without counters")
    elif args.counters == "auto":
        print("profile: no ncu (Nsight Compute) here: diagnosing without counters")

    diagnosis = None
    if args.counters != "1":
        try:
            diagnosis, ev, notes = profiling_run.counter_free(program, args.variant, run_args, kernel_regex,
                                                              sweep=args.sweep, references=REFERENCES,
                                                              cuobjdump=args.cuobjdump, multiples=multiples_of(lab))
            text = profiling_run.report(f"{lab} {args.variant}", diagnosis, notes, ev["seconds"])
            base.with_suffix(".nocounters.txt").write_text(text + "\n")
            base.with_suffix(".evidence.json").write_text(json.dumps(ev) + "\n")
            print("\n" + text)
            if counted is not None:
                print("\n" + agreement_text(counted, diagnosis))
        except (LabFailed, ValueError) as e:
            if counted is None:
                print(f"profile: the counter-free experiments failed: {e}")
                return 77 if getattr(e, "code", None) == 77 else 3
            print(f"profile: the counter-free experiments failed ({str(e).splitlines()[0]}); Nsight Compute's "
                  "diagnosis stands alone")
    have = kinds(counted) if counted is not None else diagnosis.kinds()
    missing = [k for k in args.expect if k not in have]
    if missing:
        print(f"profile: expected {', '.join(missing)}; the diagnosis has {', '.join(sorted(have))}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
