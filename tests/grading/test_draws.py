#!/usr/bin/env python3
"""The drawn correctness runs (tools/grader/draws.py, the `draw` tables of
tools/grading.toml), against the real lab programs; no GPU needed.

For every lab and seeds 1..5: each drawn run's arguments are accepted by the
lab's own program (BUILD/labs/LAB/LAB ARGS --check-only --seed S exits 77, no
usable device, after parsing them; never 2, bad usage: its message is printed);
the draws are the same for the same seed, in this process and in another one,
and differ between seeds; every size list of a run has the same length; every
drawn value lies in its declared space and every point keeps the table's limits;
over the seeds, each size takes a multiple of 8 and a non-multiple (where the
declared space has both). Then a few wrong tables: validate() must name the key,
the value and a fix. A lab whose program is not built is skipped (said in one
line). The programs run with CUDA_VISIBLE_DEVICES empty, so a machine with a GPU
also exits 77 instead of running the draws.
Exit 0: passed, 1: failed.
Run: PYTHONPATH=tools python3 tests/grading/test_draws.py BUILD (meson test sets PYTHONPATH).
"""
import os
import re
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader import draws

try:
    import tomllib
except ImportError:  # Python 3.10 (Ubuntu 22.04): the same parser as the tomli package, as tools/grade.py
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent.parent
CONFIG = ROOT / "tools" / "grading.toml"
SEEDS = (1, 2, 3, 4, 5)
WORKERS = 4          # the programs wait on the CUDA runtime's start more than they compute: 4 on 2 cores
PROGRAM_TIMEOUT_S = 60


def lab_names():
    """The labs in course order, from labs/meson.build's lab_names (as tools/grade.py reads it)."""
    text = (ROOT / "labs" / "meson.build").read_text()
    names = re.findall(r"'([^']+)'", re.search(r"lab_names\s*=\s*\[(.*?)\]", text, re.S).group(1))
    return [n for n in names if (ROOT / "labs" / n / "main.cu").is_file()]


def split_args(args):
    """--name value pairs and --toggle switches -> {name: value or True}."""
    out, i = {}, 0
    while i < len(args):
        name = args[i].removeprefix("--")
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[name], i = args[i + 1], i + 2
        else:
            out[name], i = True, i + 1
    return out


def check_run(lab, decl, args, problems, seen):
    """One drawn run against its declaration; values go into `seen` (dimension -> values)."""
    given = split_args(args)
    lists = {}
    for name, space in decl.sizes.items():
        if name not in given:
            problems.append(f"{lab}: size {name} not drawn in {args}")
            continue
        values = [int(v) for v in given[name].split(",")]
        lists[name] = values
        seen.setdefault(name, []).extend(values)
        for v in values:
            if not space.contains(v):
                problems.append(f"{lab}: --{name} {v} is outside its declared space {space.items}")
    lengths = {len(v) for v in lists.values() if len(v) > 1}
    if len(lengths) > 1 or (lengths and lengths != {max(len(v) for v in lists.values())}):
        problems.append(f"{lab}: size lists of different lengths in {args}")
    points = max((len(v) for v in lists.values()), default=0)
    flags = {}
    for name, flag in decl.flags.items():
        v = given.get(name)
        if flag.kind == "toggle":
            flags[name] = v is True
            if flags[name] not in flag.values:
                problems.append(f"{lab}: --{name} drawn {flags[name]}, declared {flag.values}")
        elif v is None or v is True:
            problems.append(f"{lab}: flag --{name} missing its value in {args}")
        elif flag.kind == "text":
            if v not in flag.values:
                problems.append(f"{lab}: --{name} {v} is not one of {flag.values}")
        elif flag.kind == "integer":
            flags[name] = int(v)
            seen.setdefault(f"flags.{name}", []).append(int(v))
            if not flag.space.contains(int(v)):
                problems.append(f"{lab}: --{name} {v} is outside its declared space {flag.space.items}")
        else:  # a pattern: one shape per point, each field in its space, the pattern's limits kept
            shape = re.compile(re.sub(r"\\\{([a-z0-9_]+)\\\}", r"(?P<\1>[0-9]+)", re.escape(flag.template)))
            parts = v.split(",")
            if len(parts) != points:
                problems.append(f"{lab}: --{name} has {len(parts)} shapes for {points} points")
            for part in parts:
                m = shape.fullmatch(part)
                if not m:
                    problems.append(f"{lab}: --{name} {part} does not match {flag.template}")
                    continue
                fields = {f: int(x) for f, x in m.groupdict().items()}
                for f, x in fields.items():
                    seen.setdefault(f"flags.{name}.{f}", []).append(x)
                    if not flag.fields[f].contains(x):
                        problems.append(f"{lab}: --{name} field {f} = {x} is outside {flag.fields[f].items}")
                problems += [f"{lab}: --{name} {part} breaks {lim.text}"
                             for lim in flag.limits if not lim.holds(fields)]
    for lim in decl.flag_limits:
        if not lim.holds(flags):
            problems.append(f"{lab}: flags {flags} break {lim.text}")
    for i in range(points):
        point = {n: (v[i] if len(v) > 1 else v[0]) for n, v in lists.items()}
        for lim in decl.point_limits:
            if not lim.holds({**flags, **point}):
                problems.append(f"{lab}: point {point} with {flags} breaks {lim.text}")


def spaces_of(decl):
    """Every drawn dimension's space: sizes, integer flags, pattern fields (keys as check_run's `seen`)."""
    out = dict(decl.sizes)
    for name, flag in decl.flags.items():
        if flag.kind == "integer":
            out[f"flags.{name}"] = flag.space
        elif flag.kind == "pattern":
            out.update({f"flags.{name}.{f}": s for f, s in flag.fields.items()})
    return out


def run_program(build, lab, args, seed):
    cmd = [str(build / "labs" / lab / lab), *args, "--check-only", "--seed", str(seed)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no device even on a GPU machine: parse, then exit 77
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return cmd, None, f"no exit within {PROGRAM_TIMEOUT_S} s"
    return cmd, p.returncode, (p.stdout + p.stderr).strip()


def check_validator(problems):
    """Wrong tables: each must raise ValueError naming the key and the value."""
    cases = [
        ({"n": "0..10"}, "n", "'0..10'"),                        # a size starts at 1
        ({"n": "10..1"}, "n", "'10..1'"),                        # an empty range
        ({"n": "1..ten"}, "n", "'1..ten'"),                      # not a number
        ({"n": "1..100", "points": 0}, "points", "0"),
        ({"n": "1..100", "runs": "some"}, "runs", "'some'"),
        ({"n": "1..100", "limits": ["n*q <= 64"]}, "limits", "'n*q <= 64'"),  # q is not declared
        ({"n": "2..100", "limits": ["n*n <= 3"]}, "limits", "'n*n <= 3'"),    # even the smallest breaks it
        ({"n": "1..100", "flags": {"dtype": ["fp16", 3]}}, "flags.dtype", "['fp16', 3]"),
        ({"n": {"range": "1..3", "multiple_of": 4}}, "n.range", "'1..3'"),
        ({"n": "1..100", "flags": {"dtype": "fp16"}}, "flags.dtype", "'fp16'"),  # a value, not a list
        ({"n": "1..100", "flags": {"gemm": {"pattern": "{m}x{n}", "m": "1..9"}}}, "flags.gemm", "{'pattern'"),
        ({"flags": {"causal": [False, True]}}, "draw", "{'flags'"),  # no size declared
    ]
    for table, key, value in cases:
        try:
            draws.validate("[labs.test.draw]", table)
        except ValueError as e:
            text = str(e)
            if f"{key} = " not in text or value not in text:
                problems.append(f"validate({table}): the message must name {key} and {value}: {text}")
            continue
        problems.append(f"validate({table}) accepted a wrong table")


def main(argv):
    if len(argv) != 2:
        print("usage: test_draws.py BUILD_DIR (the meson build root)")
        return 1
    build = Path(argv[1])
    start = time.monotonic()
    with open(CONFIG, "rb") as f:
        config = tomllib.load(f).get("labs", {})
    problems = []
    check_validator(problems)

    jobs = {}  # (lab, seed) -> [(label, args)]
    for lab in lab_names():
        table = config.get(lab, {}).get("draw")
        if table is None:
            problems.append(f"{lab}: tools/grading.toml has no [labs.{lab}.draw] table")
            continue
        try:
            decl = draws.parse(f"[labs.{lab}.draw]", table)
        except ValueError as e:
            problems.append(str(e))
            continue
        seen = {}
        per_seed = []
        for seed in SEEDS:
            runs = draws.drawn_runs(lab, table, seed)
            if runs != draws.drawn_runs(lab, table, seed):
                problems.append(f"{lab}: seed {seed} drew different runs twice")
            if not runs:
                problems.append(f"{lab}: seed {seed} drew no run")
            for _, args in runs:
                check_run(lab, decl, args, problems, seen)
            per_seed.append(runs)
            jobs[(lab, seed)] = runs
        random_space = any(isinstance(i, draws.Range) for s in spaces_of(decl).values() for i in s.items)
        for i in range(len(SEEDS)):
            for j in range(i + 1, len(SEEDS)):
                if random_space and per_seed[i] == per_seed[j]:
                    problems.append(f"{lab}: seeds {SEEDS[i]} and {SEEDS[j]} drew the same runs")
        for name, space in spaces_of(decl).items():
            if space.has_multiple_and_non_multiple(8):
                values = seen.get(name, [])
                if not any(v % 8 == 0 for v in values) or not any(v % 8 for v in values):
                    problems.append(f"{lab}: {name} over seeds {SEEDS} drew {sorted(set(values))}: "
                                    "a multiple of 8 and a non-multiple are both wanted")

    # The same draws from another process (str seeds, not hash()): the instructor's command.
    seed = SEEDS[0]
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "grader" / "draws.py"), "--seed", str(seed),
                        "--config", str(CONFIG), "--build", str(build)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONHASHSEED="12345"))
    printed = [shlex.split(line) for line in p.stdout.splitlines() if not line.startswith("#")]
    expected = [[str(build / "labs" / lab / lab), *args, "--check-only", "--seed", str(seed)]
                for (lab, s), runs in sorted(jobs.items()) if s == seed for _, args in runs]
    if p.returncode != 0 or printed != expected:
        problems.append(f"draws.py --seed {seed} (another process) printed other runs (exit {p.returncode}): "
                        f"{p.stderr.strip() or printed[:2]}")

    # The lab programs: each distinct command once.
    todo, skipped = {}, []
    for (lab, seed), runs in jobs.items():
        if not (build / "labs" / lab / lab).is_file():
            if lab not in skipped:
                skipped.append(lab)
            continue
        for _, args in runs:
            todo[(lab, tuple(args), seed)] = None
    # The benchmark run's own arguments (benchmark_args), as the grader adds them to --largest.
    for lab, table in config.items():
        if table.get("benchmark_args") and (build / "labs" / lab / lab).is_file():
            variant = table.get("variant", "best")
            args = ["--largest"] + (["--variant", variant] if variant != "best" else []) + table["benchmark_args"]
            todo[(lab, tuple(args), SEEDS[0])] = None
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda k: (k[0], run_program(build, *k)), todo))
    for lab, (cmd, rc, output) in results:
        if rc != 77:
            said = "\n    ".join(output.splitlines()[-5:])
            problems.append(f"{lab}: exit {rc} (wanted 77: arguments accepted, no device) for\n  "
                            f"{' '.join(cmd)}\n    {said}")
    for lab in skipped:
        print(f"skipped: {lab} is not built in {build}")

    runs = sum(len(r) for r in jobs.values())
    labs = len({lab for lab, _ in jobs})
    print(f"{labs} labs x {len(SEEDS)} seeds: {runs} drawn runs, {len(todo)} programs run, "
          f"{time.monotonic() - start:.1f} s")
    for line in problems:
        print(f"FAIL: {line}")
    if problems:
        return 1
    built = labs - len(skipped)
    print(f"ok: every drawn run is within its declared space and limits, the same for a seed and different across "
          f"seeds, each size drew multiples of 8 and non-multiples; the {built} built labs' programs accept them all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
