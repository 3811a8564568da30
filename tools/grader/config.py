"""The course as the grader sees it: its labs, their named test runs, and
tools/grading.toml's points, thresholds and runs, checked key by key."""
from __future__ import annotations

import re
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10 (Ubuntu 22.04): the same parser as the tomli package
    try:
        import tomli as tomllib
    except ImportError:
        print("grade: error: Python " + sys.version.split()[0] + " has no tomllib; install python3-tomli "
              "(sudo apt-get install python3-tomli) or use Python 3.11+", file=sys.stderr)
        sys.exit(2)

from . import draws

ROOT = Path(__file__).resolve().parent.parent.parent
METRICS = ("auto", "vs_baseline", "pct_of_ceiling")
SETTINGS = {"correctness", "performance", "variant", "metric", "threshold", "runs", "timeout_s",
            "student_files", "sanitize_args", "exercise_variants", "draw", "host_link", "benchmark_args"}
# Flags the grader itself gives a lab program: benchmark_args may not name them.
GRADER_FLAGS = {"--seed", "--json", "--evidence", "--judge", "--largest", "--variant", "--quick", "--check-only",
                "--list", "--help"}
SANITIZERS = ("memcheck", "racecheck", "synccheck", "initcheck")
NOT_RUN = "not run: no GPU"  # --build-only: a lab that built, its GPU steps not run


class GradeError(Exception):
    """A problem with how the grader was called or configured: exit 2."""


# ---- the course ---------------------------------------------------------------

def lab_names(root):
    """The labs in course order, from labs/meson.build's lab_names list."""
    text = (root / "labs" / "meson.build").read_text()
    m = re.search(r"lab_names\s*=\s*\[(.*?)\]", text, re.S)
    if not m:
        raise GradeError(f"{root}/labs/meson.build has no lab_names = [...] list")
    names = re.findall(r"'([^']+)'", m.group(1))
    # Listed labs without a program yet are skipped by the build, and here.
    return [n for n in names if (root / "labs" / n / "main.cu").is_file()]


def select(labs, wanted):
    """The labs that --labs names (by number or name: 02,04_reduction), in its order; all for none."""
    if not wanted:
        return labs
    chosen = []
    for w in wanted.split(","):
        w = w.strip()
        match = [lab for lab in labs if lab == w or lab.split("_")[0] == w.zfill(2)]
        if not match:
            raise GradeError(f"--labs {w}: no such lab (labs: {', '.join(labs)})")
        chosen += [m for m in match if m not in chosen]
    return chosen


def edge_runs(cfg):
    """A lab's named correctness runs ([labs.NAME.runs] of tools/grading.toml:
    edge sizes and the inputs that expose shortcuts) as (label, args). The test
    suite runs the same ones (labs/meson.build reads them through
    tools/lab_runs.py); a grader takes them from the course tree, never from a
    submission."""
    return list(cfg.get("runs", {}).items())


def load_config(path, labs):
    """Per-lab settings: [defaults] merged with [labs.NAME]. Checks every key and value."""
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise GradeError(f"{path}: {e}") from None
    defaults = {"correctness": 6, "performance": 4, "variant": "best", "metric": "auto",
                "threshold": 0.5, "runs": {}, "timeout_s": 600, "student_files": [], "sanitize_args": [],
                "exercise_variants": [], "draw": {}, "host_link": False, "benchmark_args": []}
    # [bridge]: tools/gradescope (the GPU host's limits).
    unknown_top = set(raw) - {"defaults", "labs", "bridge"}
    if unknown_top:
        raise GradeError(f"{path}: unknown section(s) {sorted(unknown_top)}; expected [defaults], [labs.NAME] "
                         "and [bridge]")
    defaults.update(check_settings(path, "defaults", raw.get("defaults", {})))
    per_lab = raw.get("labs", {})
    stray = sorted(set(per_lab) - set(labs))
    if stray:
        raise GradeError(f"{path}: [labs.{stray[0]}] is not a lab of labs/meson.build (the labs are {', '.join(labs)})")
    return {lab: {**defaults, **check_settings(path, f"labs.{lab}", per_lab.get(lab, {}))} for lab in labs}


def check_settings(path, where, table):
    for key, value in table.items():
        bad = None
        if key not in SETTINGS:
            bad = f"unknown key; the keys are {', '.join(sorted(SETTINGS))}"
        elif key == "draw":
            if where == "defaults":
                bad = "belongs to a lab: each lab declares the space of its own sizes and flags ([labs.NAME.draw])"
            else:
                try:
                    draws.validate(f"{path}: [{where}.draw]", value)
                except ValueError as e:
                    raise GradeError(str(e)) from None
        elif key in ("correctness", "performance", "timeout_s"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                bad = "must be a number >= 0"
        elif key == "threshold":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 10:
                bad = "must be a fraction > 0 (e.g. 0.8 = 80% of the baseline or ceiling)"
        elif key == "metric" and value not in METRICS:
            bad = f"must be one of {', '.join(METRICS)}"
        elif key == "variant" and not (isinstance(value, str) and value):
            bad = "must be a variant name or \"best\""
        elif key == "student_files" and not (isinstance(value, list) and all(
                isinstance(f, str) and f and "/" not in f and not f.startswith(".") for f in value)):
            bad = "must be a list of file names in the lab's folder, e.g. [\"reduction.cuh\"]"
        elif key == "exercise_variants" and not (isinstance(value, list) and len(set(value)) == len(value) and all(
                isinstance(v, str) and re.fullmatch(r"[a-z0-9_]+", v) for v in value)):
            bad = "must be a list of distinct variant names (as --list prints them), e.g. [\"shared\", \"warp_shuffle\"]"
        elif key == "host_link" and not isinstance(value, bool):
            bad = "must be true or false"
        elif key == "benchmark_args" and not (isinstance(value, list) and all(
                isinstance(a, str) and a and a.split("=")[0] not in GRADER_FLAGS for a in value)):
            bad = (f"must be one argument list of the lab's own flags (not {', '.join(sorted(GRADER_FLAGS))}: the "
                   "grader gives those), e.g. [\"--inputs\", \"positive_v\"]")
        elif key == "sanitize_args" and not (isinstance(value, list) and all(isinstance(a, str) for a in value)):
            bad = "must be one argument list, e.g. [\"--size\", \"100003\"]"
        elif key == "runs" and (where == "defaults" or not isinstance(value, dict) or not all(
                re.fullmatch(r"[a-z0-9_]+", label) and isinstance(a, list) and a and
                all(isinstance(x, str) and x and "\t" not in x for x in a) for label, a in value.items())):
            bad = ("belongs to a lab: a table of named argument lists, e.g. [labs.NAME.runs] edge = [\"--size\", "
                   "\"1,255,257\"]" if where != "defaults" else
                   "belongs to a lab: each lab names its own runs ([labs.NAME.runs])")
        if bad:
            raise GradeError(f"{path}: [{where}] {key} = {value!r}: {bad}")
    return table


