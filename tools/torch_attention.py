#!/usr/bin/env python3
"""PyTorch's attention beside the course's: times
torch.nn.functional.scaled_dot_product_attention with each of its backends
forced in turn (cuDNN, FlashAttention-2, memory-efficient, math) on the shapes
of labs 16, 17 and 31, and appends one JSON record per (backend, dtype, shape,
mask) in the course's record format (../shared/DESIGN.md), so that
tools/make_plots.py can draw PyTorch beside the labs. Not part of `make test`:
it needs PyTorch with CUDA (the GPU machine has it).

  tools/torch_attention.py --json results.jsonl            # every lab's shapes
  tools/torch_attention.py --labs 31 --causal both --json r.jsonl
  tools/torch_attention.py --quick                          # small shapes, a smoke test
  tools/torch_attention.py --labs 17 --shape 4,16,16384,128  # a lab's layout, other sizes

Timing as the labs' (docs/methodology.md): CUDA events on one stream around
each call, 3 warm-up calls, then calls until the 95% confidence half-width of
the mean (Student t) is within 2% of the mean, at least 10, at most 1000 or
2 s; the median is reported. FLOPs as the labs count them: 4·N²·d per head
(Q·Kᵀ and P·V), N(N+1)/2 pairs instead of N² under the causal mask
(labs/16_flash_attention/attention_shape.hpp). Bytes: Q, K, V read once and
O written once, all in the input type (PyTorch writes O in it; the labs write
FP32 O).

Every backend's output is checked, on the first and the last head, against a
float64 reference computed from the same rounded inputs, with the labs'
tolerances (flash_check.cuh): a backend that answered wrong gets
"passed": false and is not drawn. A backend that refuses a shape or a type
(FlashAttention has no FP32, cuDNN no FP32) prints one line and writes nothing.

Records: "lab": "torch_attention" (tools/update_results.py replaces a lab's
records as a group, so these never displace a lab's own), "variant":
"torch_<backend>_<dtype>[_causal]", "shape_of_lab": the lab whose shape it is,
"size" with that lab's size names, plus "torch_version" and "torch_backend".

Exit codes: 0 every record passed its check, 1 a check failed, 2 bad usage,
77 no PyTorch or no CUDA device (one line says which).
"""
import argparse
import datetime
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = "torch_attention"

# The shapes of the labs' default (full) runs, from their main.cu. Lab 16: one
# head (size names seq, dim); labs 17 and 31: [batch][heads][seq][dim].
SHAPES = {
    "16": {"lab": "16_flash_attention", "size_names": ("seq", "dim"),
           "full": [(1, 1, n, 64) for n in (512, 1024, 2048, 4096, 8192, 16384)],
           "quick": [(1, 1, n, 64) for n in (17, 257)], "dtypes": ("fp16", "bf16", "fp32")},
    "17": {"lab": "17_multi_head_attention", "size_names": ("batch", "heads", "seq", "dim"),
           "full": [(4, 16, 4096, 64), (4, 16, 4096, 128)],
           "quick": [(2, 3, 37, 64), (2, 2, 130, 128)], "dtypes": ("fp16", "bf16", "fp32")},
    "31": {"lab": "31_flash_attention_hopper", "size_names": ("batch", "heads", "seq", "dim"),
           "full": [(4, 16, n, d) for n in (1024, 4096, 8192) for d in (64, 128)],
           "quick": [(1, 2, 1, 64), (2, 2, 133, 128)], "dtypes": ("fp16", "bf16")},
}
BACKENDS = ("cudnn", "flash", "efficient", "math")
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}

# The labs' timer (common/src/timer.cpp, TimerConfig).
WARMUP, MIN_RUNS, MAX_RUNS, BUDGET_S, PRECISION = 3, 10, 1000, 2.0, 0.02

# Inputs as the labs draw them (flash_check.cuh): Q, K in [-2, 2), V in [-1, 1),
# so the softmax weights of a row differ by factors up to e^8.
QK_RANGE, V_RANGE = 2.0, 1.0


# ---- pure functions (tests/test_torch_attention.py checks them without torch) ----------

def t975(df):
    """Student t, 97.5% quantile: common/src/timer.cpp's table and interpolation in 1/df."""
    small = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
             2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
             2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
    df = max(df, 1)
    if df <= 30:
        return small[df - 1]
    knots = ((30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960))
    for (d0, t0), (d1, t1) in zip(knots, knots[1:]):
        if df <= d1:
            x0, x1, x = 1 / d0, 1 / d1, 1 / df
            return t0 + (t1 - t0) * (x - x0) / (x1 - x0)
    return 1.960


def summarize(times_ms):
    """The statistics a lab record keeps, from per-run times in ms."""
    n = len(times_ms)
    mean = statistics.fmean(times_ms)
    sd = statistics.stdev(times_ms) if n > 1 else 0.0
    return {"runs": n, "median_ms": statistics.median(times_ms), "min_ms": min(times_ms), "mean_ms": mean,
            "stddev_ms": sd, "ci95_ms": t975(n - 1) * sd / math.sqrt(n) if n > 1 else 0.0}


def stop_reason(times_ms):
    """Why the timer stops after these runs (None: keep going), in the labs' words."""
    n = len(times_ms)
    if n >= MIN_RUNS:
        s = summarize(times_ms)
        if s["ci95_ms"] <= PRECISION * s["mean_ms"]:
            return "precision"
    if n >= MAX_RUNS:
        return "max_runs"
    if n >= 3 and sum(times_ms) >= BUDGET_S * 1e3:
        return "time_budget"
    return None


def attention_flops(batch, heads, seq, dim, causal):
    """labs/16_flash_attention/attention_shape.hpp: 4·pairs·d per head."""
    pairs = seq * (seq + 1) / 2 if causal else float(seq) * seq
    return 4.0 * pairs * dim * batch * heads


def attention_bytes(batch, heads, seq, dim, dtype):
    """Q, K, V read once, O written once, all in the input type."""
    return 4.0 * DTYPE_BYTES[dtype] * batch * heads * seq * dim


def tolerance(dtype):
    """flash_check.cuh: FP32 kernels abs 5e-6, rel 1e-5; 16-bit ones 2u with u the unit
    roundoff (P rounded to 16 bits before P·V; PyTorch also rounds O to it, < u/2·|O|)."""
    if dtype == "fp32":
        return {"abs": 5e-6, "rel": 1e-5}
    two_u = 2.0 / 256 if dtype == "bf16" else 2.0 / 2048
    return {"abs": two_u, "rel": two_u}


def parse_shape(text, lab_key):
    """--shape B,H,N,D for lab `lab_key`: four positive integers; lab 16 is one
    head (B = H = 1). Raises ValueError with what is wrong and how to fix it."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"--shape {text}: give batch,heads,seq,dim as four positive integers, e.g. 4,16,16384,128")
    shape = tuple(int(p) for p in parts)
    if lab_key == "16" and shape[:2] != (1, 1):
        raise ValueError(f"--shape {text}: lab 16 runs one head; give 1,1,seq,dim (or --labs 17 for several heads)")
    return shape


def variant_name(backend, dtype, causal):
    return f"torch_{backend}_{dtype}" + ("_causal" if causal else "")


def make_record(*, shape_key, shape, dtype, backend, causal, stats, stop, check, device, seed, git,
                torch_version, timestamp):
    """One record in the course's format (common/src/report.cpp's fields)."""
    spec = SHAPES[shape_key]
    batch, heads, seq, dim = shape
    full = dict(zip(("batch", "heads", "seq", "dim"), shape))
    size = {name: full[name] for name in spec["size_names"]}
    flops = attention_flops(batch, heads, seq, dim, causal)
    nbytes = attention_bytes(batch, heads, seq, dim, dtype)
    seconds = stats["median_ms"] / 1e3
    record = {
        "lab": LAB, "variant": variant_name(backend, dtype, causal), "gpu": device["name"], "cc": device["cc"],
        "size": size, "bytes": nbytes, "flops": flops, "timed": True, **stats, "stop": stop,
        "gbps": nbytes / seconds / 1e9 if seconds > 0 else 0.0,
        "gflops": flops / seconds / 1e9 if seconds > 0 else 0.0,
        "ceiling": "", "ceiling_value": 0, "pct_of_ceiling": 0, "suspect": False, "implausible": False,
        "baseline": "", "baseline_ms": 0, "vs_baseline": 0,
        "max_abs_err": check["max_abs_err"], "rel_err": check["rel_err"],
        "tolerance": check["tolerance"]["abs"], "tolerance_rel": check["tolerance"]["rel"],
        "passed": check["passed"],
        "extra": {"causal": int(causal), "heads_checked": check["heads_checked"]},
        "seed": seed, "git": git["revision"], "git_dirty": git["dirty"], "toolkit": device["toolkit"],
        "driver": device["driver"], "timestamp": timestamp,
        "shape_of_lab": spec["lab"], "dtype": dtype, "causal": causal,
        "torch_backend": backend, "torch_version": torch_version,
    }
    if not check["passed"]:
        record["failure"] = check["failure"]
    return record


def git_revision():
    """tools/revision.sh's answer (the same as the labs' records carry)."""
    try:
        text = subprocess.run([str(ROOT / "tools" / "revision.sh")], capture_output=True, text=True,
                              timeout=30).stdout.strip() or "unknown"
    except OSError:
        text = "unknown"
    return {"revision": text.removesuffix("-dirty"), "dirty": text.endswith("-dirty")}


# ---- the GPU side -------------------------------------------------------------------------

def device_info(torch):
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    driver = "unknown"
    try:
        v = torch._C._cuda_getDriverVersion()  # e.g. 13000
        driver = f"{v // 1000}.{(v % 1000) // 10}"
    except (AttributeError, RuntimeError):
        pass
    return {"name": props.name, "cc": f"{props.major}.{props.minor}", "toolkit": torch.version.cuda or "unknown",
            "driver": driver}


def time_call(torch, fn):
    """Per-run times in ms (CUDA events around each call on the current stream) and the stop reason."""
    for _ in range(WARMUP):
        fn()
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while True:
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        reason = stop_reason(times)
        if reason:
            return times, reason


def reference(torch, q, k, v, causal):
    """softmax(Q·Kᵀ/sqrt(d))·V in float64 for one head [seq, dim]."""
    q, k, v = q.double(), k.double(), v.double()
    s = (q @ k.T) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), -math.inf)
    return torch.softmax(s, dim=-1) @ v


def check_output(torch, q, k, v, out, causal, dtype):
    """Compares the first and the last head of `out` with the float64 reference:
    every element |got - want| <= abs + rel·|want|, NaN never passes."""
    tol = tolerance(dtype)
    b, h = q.shape[0], q.shape[1]
    heads = sorted({(0, 0), (b - 1, h - 1)})
    worst, err2, ref2, bad, first_bad = 0.0, 0.0, 0.0, 0, ""
    for (i, j) in heads:
        want = reference(torch, q[i, j], k[i, j], v[i, j], causal)
        got = out[i, j].double()
        diff = (got - want).abs()
        limit = tol["abs"] + tol["rel"] * want.abs()
        fails = ~(diff <= limit)  # NaN compares false: it fails
        n = int(fails.sum())
        if n and not first_bad:
            r, c = (int(x) for x in fails.nonzero()[0])
            first_bad = f"head ({i}, {j}) [{r}, {c}] got {float(got[r, c]):.6g} expected {float(want[r, c]):.6g}"
        bad += n
        finite = torch.nan_to_num(diff, nan=math.inf)
        worst = max(worst, float(finite.max()))
        err2 += float((torch.nan_to_num(got, nan=math.inf) - want).pow(2).sum())
        ref2 += float(want.pow(2).sum())
    total = len(heads) * q.shape[2] * q.shape[3]
    result = {"passed": bad == 0, "max_abs_err": worst, "rel_err": math.sqrt(err2 / ref2) if ref2 else 0.0,
              "tolerance": tol, "heads_checked": len(heads)}
    if bad:
        result["failure"] = (f"{bad} of {total} checked elements outside |err| <= {tol['abs']:g} + "
                             f"{tol['rel']:g}·|ref|; {first_bad}")
    return result


def draw_inputs(torch, shape, dtype, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype]

    def uniform(r):
        return (torch.rand(shape, generator=gen, device="cuda") * 2 - 1).mul_(r).to(torch_dtype)
    return uniform(QK_RANGE), uniform(QK_RANGE), uniform(V_RANGE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit codes: 0 all checks passed, 1 a check failed, 2 bad usage, "
                                            "77 no PyTorch or no CUDA device.")
    parser.add_argument("--labs", default="16,17,31", help="whose shapes: a comma list of 16, 17, 31 (default all)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma list of " + ", ".join(BACKENDS))
    parser.add_argument("--causal", choices=("no", "yes", "both"), default="both", help="the mask (default both)")
    parser.add_argument("--quick", action="store_true", help="the labs' small --quick shapes")
    parser.add_argument("--shape", action="append", default=[], metavar="B,H,N,D",
                        help="instead of the lab's default shapes (repeatable; one lab in --labs): "
                             "batch,heads,seq,dim, recorded with that lab's size names")
    parser.add_argument("--seed", type=int, default=42, help="input seed (default 42, the labs' default)")
    parser.add_argument("--json", type=Path, help="append one record per measurement to this file")
    args = parser.parse_args()
    labs = [x.strip() for x in args.labs.split(",") if x.strip()]
    backends = [x.strip() for x in args.backends.split(",") if x.strip()]
    if not labs or set(labs) - set(SHAPES):
        parser.error(f"--labs {args.labs}: choose from {', '.join(SHAPES)} (e.g. --labs 16,31)")
    if not backends or set(backends) - set(BACKENDS):
        parser.error(f"--backends {args.backends}: choose from {', '.join(BACKENDS)}")
    shapes = None
    if args.shape:
        if len(labs) != 1 or args.quick:
            parser.error("--shape: name exactly one lab whose layout the shapes take (e.g. --labs 17), without --quick")
        try:
            shapes = [parse_shape(text, labs[0]) for text in args.shape]
        except ValueError as e:
            parser.error(str(e))

    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention as sdpa
    except ImportError as e:
        print(f"torch_attention: skipped: PyTorch is not installed here ({e}); pip install torch on the GPU machine")
        return 77
    if not torch.cuda.is_available():
        print(f"torch_attention: skipped: PyTorch {torch.__version__} sees no CUDA device")
        return 77
    forced = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32 math backend: FP32 products, as the labs' FP32 rows
    device, git = device_info(torch), git_revision()
    print(f"PyTorch {torch.__version__} (CUDA {device['toolkit']}) on {device['name']}, driver {device['driver']}")
    print(f"  {'shape (b h N d)':<22} {'variant':<28} {'median ms':>10} {'±ci%':>6} {'runs':>5} "
          f"{'TFLOP/s':>8} {'max err':>9}  check")
    masks = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    records, failed = [], 0
    for key in labs:
        spec = SHAPES[key]
        for shape in shapes or spec["quick" if args.quick else "full"]:
            for dtype in spec["dtypes"]:
                q, k, v = draw_inputs(torch, shape, dtype, args.seed)
                for causal in masks:
                    for backend in backends:
                        name = variant_name(backend, dtype, causal)
                        shape_text = " ".join(map(str, shape))

                        def call():
                            return sdpa(q, k, v, is_causal=causal)
                        try:
                            with sdpa_kernel([forced[backend]]):
                                out = call()
                                torch.cuda.synchronize()
                                check = check_output(torch, q, k, v, out, causal, dtype)
                                del out
                                times, stop = time_call(torch, call)
                        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
                            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                            print(f"  {shape_text:<22} {name:<28} not run: {why[:110]}")
                            continue
                        stats = summarize(times)
                        rec = make_record(shape_key=key, shape=shape, dtype=dtype, backend=backend, causal=causal,
                                          stats=stats, stop=stop, check=check, device=device, seed=args.seed,
                                          git=git, torch_version=torch.__version__,
                                          timestamp=datetime.datetime.now(datetime.timezone.utc)
                                          .strftime("%Y-%m-%dT%H:%M:%SZ"))
                        records.append(rec)
                        failed += not check["passed"]
                        ci = 100 * stats["ci95_ms"] / stats["mean_ms"] if stats["mean_ms"] else 0
                        print(f"  {shape_text:<22} {name:<28} {stats['median_ms']:>10.4g} {ci:>5.1f}% "
                              f"{stats['runs']:>5} {rec['gflops'] / 1e3:>8.1f} {check['max_abs_err']:>9.2e}  "
                              + ("PASS" if check["passed"] else "FAIL " + check["failure"])
                              + ("" if stop == "precision" else f"  (timer stopped at {stop})"))
                del q, k, v
                torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
        print(f"{len(records)} records appended to {args.json}")
    print("TFLOP/s counts 4·N²·d per head (N(N+1)/2 pairs causal), as the labs do; checked: first and last head "
          "against float64.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
