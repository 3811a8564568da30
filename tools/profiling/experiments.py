"""Experiments a kernel answers through its lab's own flags, on any CUDA
machine, without performance counters:

- a size ladder: the lab's size divided by 4, 16, 64, ... along every size
  flag, in one run (`--size 2^26,2^24,...`). Does the time grow with the bytes,
  with the FLOPs, or stay flat (launch-bound)?
- L2 against DRAM: the largest rung whose data fits well inside L2, timed
  again with --flush-l2 (cold). A kernel much faster warm than cold is
  paced by where its data lives.
- a launch-shape sweep where the lab has one (--sweep, tools/tune.py's
  syntax): do more resident warps make it faster?

The lab measures every point as it measures any variant (checked, timed to a
precision, one JSON record each). Everything below run_lab is arithmetic on
records, so the tests drive it with recorded timings."""
import json
import math
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader import draws
from grader.records import read_records

SIZE_FLAGS = ("--size", "-n", "--n", "--m", "--k", "--rows", "--cols", "--seq", "--kv", "--nx", "--ny", "--nz")
SMALLEST = 16          # no size flag is divided below this (a flag already at or below it stays)
RUNGS = 6              # the ladder: the size, then /4 .. /4^6 along every size flag
L2_FIT = 0.4           # a rung fits L2 when its bytes are at most this share of L2
LAUNCH_RATIO = 2.0     # 16x less work in less than 2x less time: launch-bound
TIMING = ["--max-runs", "30", "--precision", "0.05"]


def parse_count(text):
    """A lab's size syntax: 1000, 2^26, 64k, 1M, 1G."""
    t = str(text).strip()
    m = re.fullmatch(r"(\d+)\^(\d+)", t)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", t)
    if not m:
        raise ValueError(f"not a size: {text!r} (a number, 2^N, or a number with k, M or G)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def size_positions(args):
    """Indices in ARGS of the values of size flags (--size 2^26 -> the index of 2^26)."""
    return [i + 1 for i, a in enumerate(args[:-1]) if a in SIZE_FLAGS]


def size_multiples(draw_table):
    """{size flag: the multiple its values must be} from a lab's draw table (tools/grading.toml's
    [labs.NAME.draw], where each lab declares the sizes it accepts: lab 33's k = { range = "16..8192",
    multiple_of = 16 }, FP8 rows of whole 16-byte units). Only the multiple carries over to the ladder:
    the ranges there are capped for the CPU reference of a correctness run, not the lab's limits. --size
    (-n) sets every size the lab aliases to it, so it takes the least common multiple of them all."""
    if not draw_table:
        return {}
    steps = {}
    for name, space in draws.parse("draw", draw_table).sizes.items():
        if all(isinstance(i, draws.Range) for i in space.items):
            step = math.gcd(*(i.step for i in space.items))
            if step > 1:
                steps["--" + name] = step
    if steps:
        common = math.lcm(*steps.values())
        for flag in ("--size", "-n"):
            steps.setdefault(flag, common)
    return steps


def rung_value(value, k, step=1):
    """VALUE divided by 4^K, to the nearest multiple of STEP (at least STEP); a value at or below SMALLEST stays."""
    if value <= SMALLEST or k == 0:
        return value
    x = value // 4 ** k
    return max(step, (x + step // 2) // step * step)


def ladder_args(args, rungs=RUNGS, multiples=None):
    """ARGS with every size flag's value replaced by the list size, size/4,
    size/16, ... (equal-length lists: the labs zip them), each rounded to the
    multiple the lab requires of that flag (MULTIPLES: size_multiples). Rungs
    stop before any flag would drop below SMALLEST. No size flag: ARGS unchanged."""
    pos = size_positions(args)
    if not pos:
        return list(args), 1
    multiples = multiples or {}
    values = [parse_count(args[i]) for i in pos]
    steps = [multiples.get(args[i - 1], 1) for i in pos]
    count = 1
    for k in range(1, rungs + 1):
        if any(v > SMALLEST and v // 4 ** k < SMALLEST for v in values):
            break
        count = k + 1
    out = list(args)
    for i, v, step in zip(pos, values, steps):
        out[i] = ",".join(str(rung_value(v, k, step)) for k in range(count))
    return out, count


def varying_sizes(records):
    """Flags pinning each size that differs among RECORDS (one run's) at the
    first record's value: [] when the records share every size."""
    sizes = [r.get("size", {}) for r in records]
    keys = [k for k in (sizes[0] if sizes else {}) if len({str(s.get(k)) for s in sizes}) > 1]
    return [a for k in keys for a in ("--" + k, str(sizes[0][k]))]


def args_for_size(args, size):
    """ARGS with each size flag set to the record's size (a record's size dict)."""
    out = list(args)
    for i in size_positions(args):
        flag = args[i - 1].lstrip("-")
        if flag in size and flag != "size":
            out[i] = str(size[flag])
        elif len(size) == 1 or len(set(size.values())) == 1:
            out[i] = str(next(iter(size.values())))
        else:  # --size over several dimensions: the largest is the aliased one
            out[i] = str(max(size.values()))
    return out


# ---- running the lab -----------------------------------------------------------------------

class LabFailed(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def run_lab(program, variant, args, extra=(), timeout=120):
    """The lab, timed, one variant: its JSON records of that variant."""
    with tempfile.TemporaryDirectory(prefix="cudalabs-experiment-") as tmp:
        out = Path(tmp) / "records.jsonl"
        cmd = [str(program), "--variant", variant, "--json", str(out), *TIMING, *args, *extra]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=None)
        if p.returncode != 0:
            raise LabFailed(p.returncode, f"{' '.join(cmd)} exited {p.returncode}:\n{(p.stdout + p.stderr)[-1500:]}")
        records = read_records(out) if out.is_file() else []
    base = variant.split("[")[0]
    return [r for r in records if r.get("variant", "").split("[")[0] == base and r.get("median_ms")], cmd


# ---- arithmetic on records ------------------------------------------------------------------

@dataclass
class Point:
    size: dict
    bytes: float
    flops: float
    ms: float
    gbps: float
    gflops: float
    no_gap_ms: float = None     # the operation timed back to back (the lab's no-gap batch): no host round trip
    launches: int = 1           # kernels in one timed operation (the trace's count, else the lab's extra.launches)

    @staticmethod
    def of(r):
        launches = (r.get("gpu_work") or {}).get("kernels") or (r.get("extra") or {}).get("launches") or 1
        return Point(r.get("size", {}), r.get("bytes") or 0, r.get("flops") or 0, r["median_ms"],
                     r.get("gbps") or 0, r.get("gflops") or 0, r.get("no_gap_ms"), launches)


def points(records):
    """One point per size (the first record of each), largest work first."""
    seen, out = set(), []
    for r in records:
        key = json.dumps(r.get("size", {}), sort_keys=True)
        if key not in seen and r.get("median_ms"):
            seen.add(key)
            out.append(Point.of(r))
    return sorted(out, key=lambda p: (p.bytes, p.flops), reverse=True)


def exponent(a, b, work):
    """How the time grows with WORK ('bytes' or 'flops') from point b to point a."""
    wa, wb = getattr(a, work), getattr(b, work)
    if not (wa and wb and wa != wb and a.ms > 0 and b.ms > 0):
        return None
    return math.log(a.ms / b.ms) / math.log(wa / wb)


@dataclass
class Scaling:
    points: list
    bytes_exponent: float = None   # at the large end: time ~ bytes^e
    flops_exponent: float = None
    launch_bound: bool = False
    time_ratio: float = None       # time at the size / time at the smallest rung
    work_ratio: float = None
    kernel_ms: float = None        # the diagnosed kernel's share of the operation at the size (kernel_time)
    launch_ms: float = None        # one launch at the smallest rung
    back_to_back: bool = False     # kernel_ms and launch_ms from the no-gap times

    def text(self):
        if len(self.points) < 2:
            return "one size only: no scaling measured"
        big, small = self.points[0], self.points[-1]
        rows = "; ".join(f"{p.bytes / 1e6:.3g} MB {p.ms * 1e3:.3g} us" for p in self.points)
        parts = [f"time over {len(self.points)} sizes ({rows})"]
        if self.bytes_exponent is not None:
            parts.append(f"at the large end time grows as bytes^{self.bytes_exponent:.2f}"
                         + (f" and FLOPs^{self.flops_exponent:.2f}" if self.flops_exponent is not None and
                            big.flops and abs(self.flops_exponent - self.bytes_exponent) > 0.05 else ""))
        if self.work_ratio:
            parts.append(f"{self.work_ratio:.0f}x the work of the smallest size takes {self.time_ratio:.2f}x its time")
        return ", ".join(parts)


def kernel_time(big, small):
    """(the diagnosed kernel's time at the size, one launch's time at the smallest rung, from back-to-back
    times?) in ms. The ladder times the lab's operation, which may be several launches (a reduction's passes:
    lab 06's two_loads, 3 at 2^22, 2 below 2^19); the kernel Nsight Compute profiles is one of them, the
    first and largest. The others are taken at one launch's cost at the smallest rung (its operation's time
    over its launches: the later passes reduce a few thousand partial sums, a launch's worth of work) and
    taken off. The times are the back-to-back ones where both rungs have them (no_gap_ms): the timed run's
    host round trip (about 5.6 us on the H200, 7.06 us timed against 1.43 back to back for lab 02's float4 at
    2^14) is not the kernel's, and Nsight Compute's duration leaves it out."""
    back_to_back = bool(big.no_gap_ms and small.no_gap_ms)
    a, b = (big.no_gap_ms, small.no_gap_ms) if back_to_back else (big.ms, small.ms)
    launch = b / small.launches
    return a - (big.launches - 1) * launch, launch, back_to_back


def scaling(pts):
    s = Scaling(pts)
    if len(pts) < 2:
        return s
    a, b = pts[0], pts[1]
    s.bytes_exponent = exponent(a, b, "bytes")
    s.flops_exponent = exponent(a, b, "flops")
    small = pts[-1]
    work = (a.bytes / small.bytes) if a.bytes and small.bytes else (a.flops / small.flops if small.flops else None)
    if work:
        s.work_ratio = work
        s.time_ratio = a.ms / small.ms
        s.kernel_ms, s.launch_ms, s.back_to_back = kernel_time(a, small)
        s.launch_bound = work >= 16 and s.kernel_ms < LAUNCH_RATIO * s.launch_ms
    return s


def l2_rung(pts, l2_bytes):
    """The largest rung whose bytes fit L2_FIT of L2 and that is not launch-bound
    (at least 8 us), or None."""
    fits = [p for p in pts if 0 < p.bytes <= L2_FIT * l2_bytes and p.ms >= 0.008]
    return fits[0] if fits else None


@dataclass
class L2Test:
    size: dict
    bytes: float
    warm_ms: float
    cold_ms: float

    @property
    def ratio(self):
        return self.cold_ms / self.warm_ms if self.warm_ms else None

    def text(self):
        return (f"at {self.bytes / 1e6:.3g} MB (fits L2): {self.warm_ms * 1e3:.3g} us with the data in L2, "
                f"{self.cold_ms * 1e3:.3g} us with L2 flushed before each run ({self.ratio:.2f}x)")


@dataclass
class Sweep:
    """A launch-shape sweep: (label, occupancy fraction, ms) per point."""
    points: list

    def spread(self):
        ms = [p[2] for p in self.points]
        return max(ms) / min(ms) if ms else None

    def occupancy_helps(self):
        """Does the fastest point of the highest occupancy beat that of the lowest by > 10%?"""
        occ = sorted({p[1] for p in self.points if p[1] is not None})
        if len(occ) < 2:
            return None
        best = {o: min(p[2] for p in self.points if p[1] == o) for o in occ}
        return best[occ[0]] / best[occ[-1]] > 1.10

    def text(self):
        best = min(self.points, key=lambda p: p[2])
        worst = max(self.points, key=lambda p: p[2])
        return (f"{len(self.points)} launch shapes: best {best[0]} {best[2] * 1e3:.3g} us "
                f"(occupancy {100 * (best[1] or 0):.0f}%), worst {worst[0]} {worst[2] * 1e3:.3g} us "
                f"(occupancy {100 * (worst[1] or 0):.0f}%), {self.spread():.2f}x apart")


def sweep_of(records):
    pts = []
    for r in records:
        v = r.get("variant", "")
        if "[" in v and r.get("median_ms"):
            pts.append((v[v.index("["):], (r.get("resources") or {}).get("occupancy"), r["median_ms"]))
    return Sweep(pts) if len(pts) >= 2 else None


# ---- ceilings ----------------------------------------------------------------------------

def copy_bandwidth(record, reference_files=()):
    """The device-to-device copy bandwidth (GB/s) for the roofline: the
    record's own ceiling where it is that one, else the median of the copy
    ceilings measured on the same GPU in the recorded results. Returns
    (GB/s, where it came from) or (None, why not)."""
    if record.get("ceiling") == "d2d_copy_gbps" and record.get("ceiling_value"):
        return record["ceiling_value"], "measured in this run"
    values = []
    for f in reference_files:
        path = Path(f)
        if not path.is_file():
            continue
        try:
            records = read_records(path)
        except ValueError:
            continue  # a torn file: its copy bandwidth is not one to lean on
        for r in records:
            if r.get("gpu") == record.get("gpu") and r.get("ceiling") == "d2d_copy_gbps" and r.get("ceiling_value"):
                values.append(r["ceiling_value"])
    if values:
        values.sort()
        return values[len(values) // 2], f"median of {len(values)} copy ceilings recorded on this GPU model"
    return None, "no copy ceiling for this GPU (the lab's ceiling is not a bandwidth)"
