#!/usr/bin/env python3
"""Grades one broken case of tests/broken/ as a complete submission.

A case holds only the file it breaks (tests/broken/CASE/LAB/FILE). A real
submission must hold every one of the lab's student_files (tools/grading.toml),
edited or not, so this script assembles one: the course's student files of each
lab the case touches, overlaid by the case's files, in OUT/submission. Then it
runs tools/grade.py on it with the remaining arguments. Keeping only the broken
file in the case means the other files can never go stale against the course.

usage: grade_case.py CASE --out OUT [grade.py arguments...]
"""
import argparse
import os
import shutil
import sys
from pathlib import Path

from grader.config import lab_names, load_config  # tools/grader/ (PYTHONPATH: tests/grading/meson.build)

ROOT = Path(__file__).resolve().parent.parent.parent


def exit_usage(message):
    """A bad case folder: the message and exit 2 (bad usage), as the course's tools do."""
    print(message, file=sys.stderr)
    sys.exit(2)


def config():
    return load_config(ROOT / "tools" / "grading.toml", lab_names(ROOT))


def assemble(case, dest):
    """dest/LAB/ for each lab of the case: the course's student files, then the case's."""
    config_ = config()
    if not case.is_dir():
        exit_usage(f"grade_case: {case} is not a folder; name a case of tests/broken/, e.g. tests/broken/wrong_result")
    shutil.rmtree(dest, ignore_errors=True)
    touched = sorted(p for p in case.iterdir() if p.is_dir())
    if not touched:
        exit_usage(f"grade_case: {case} holds no lab folder (expected {case}/LAB/FILE)")
    for lab_dir in touched:
        if lab_dir.name not in config_:
            exit_usage(f"grade_case: {lab_dir} is not a lab of the course")
        wanted = config_[lab_dir.name]["student_files"]
        stray = [f.name for f in lab_dir.iterdir() if f.name not in wanted]
        if stray:
            exit_usage(f"grade_case: {lab_dir} has {', '.join(stray)}, which is not one of the lab's "
                     f"student files ({', '.join(wanted)}); the grader would ignore it")
        (dest / lab_dir.name).mkdir(parents=True)
        for name in wanted:
            src = lab_dir / name if os.path.lexists(lab_dir / name) else ROOT / "labs" / lab_dir.name / name
            (dest / lab_dir.name / name).parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():  # a case of a linked file (linked_kernel_file): the link itself
                (dest / lab_dir.name / name).symlink_to(os.readlink(src))
            else:
                shutil.copyfile(src, dest / lab_dir.name / name)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", type=Path)
    p.add_argument("--out", type=Path, required=True)
    args, rest = p.parse_known_args()
    submission = args.out.resolve() / "submission"
    assemble(args.case.resolve(), submission)
    cmd = [sys.executable, str(ROOT / "tools" / "grade.py"), "--submission", str(submission),
           "--out", str(args.out)] + rest
    os.execv(sys.executable, cmd)


if __name__ == "__main__":
    main()
