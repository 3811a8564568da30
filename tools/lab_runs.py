#!/usr/bin/env python3
"""Prints a lab's named correctness runs ([labs.NAME.runs] of tools/grading.toml)
for labs/meson.build, which cannot read TOML: one line per run, the label and
its arguments separated by tabs. The grader reads the same table
(tools/grader/config.py), so the test suite and the grader run the same runs.

usage: lab_runs.py LAB [GRADING_TOML]
Exit codes: 0 printed (nothing for a lab without runs), 2 a bad table or lab.
"""
import sys
from pathlib import Path

from grader.config import ROOT, GradeError, edge_runs, lab_names, load_config  # noqa: E402


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(argv) not in (1, 2) or argv[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    lab = argv[0]
    config_path = Path(argv[1]) if len(argv) == 2 else ROOT / "tools" / "grading.toml"
    try:
        config = load_config(config_path, lab_names(ROOT))
    except GradeError as e:
        print(f"lab_runs: {e}", file=sys.stderr)
        return 2
    if lab not in config:
        print(f"lab_runs: {lab} is not a lab of labs/meson.build", file=sys.stderr)
        return 2
    for label, args in edge_runs(config[lab]):
        print("\t".join([label, *args]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
