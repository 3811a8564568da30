#!/usr/bin/env python3
"""CPU check that every broken case of tests/broken/ still compiles against
today's kernel interface (kernels.hpp, kernels.cu).

A case is a copy of a course kernel file with one bug. When the course changes
the interface of that file (a launcher gains a parameter), a stale case stops
compiling, and its GPU test fails for the wrong reason: a build error, not the
bug it exists to show. The GPU suite would find that late; this test finds it
in CI, in seconds: for each case, a tree that is the course with the case's
files in its lab folder (symbolic links for everything else), and the course
build's own compile command of that lab's kernels.cu moved to the tree (PTX for
one architecture, as tests/starter/build_starter.py does for the starter kit).

A case whose own file the grader's include check (tools/grader/sources.py)
rejects (include_outside_tree), or refuses as no plain file (linked_kernel_file), is not compiled, here or by its GPU test: the
grader rejects it before compiling, so it cannot go stale; this script says so,
with the check's first line, instead of compiling it. Where the check rejects
one of the course's student files that the case does not touch, the case is
still compiled, with a warning: its GPU test would be rejected for the course's
file, not for its bug (a course problem, not the case's).

usage: compile_cases.py WORK --course-build BUILD
"""
import argparse
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# tools/ and tests/starter/ on PYTHONPATH (tests/grading/meson.build); grade_case is this folder's.
import build_starter  # its compile_kernels: the course build's command, moved
import grade_case  # the submission its GPU test grades
from grader import sources  # tools/grader/sources.py: the include check
from grader.submission import take_student_files


def case_tree(case, tree):
    """The course, with the case's lab folders overlaid by the case's files."""
    tree.mkdir(parents=True)
    for top in ROOT.iterdir():
        if top.name not in ("labs", ".git") and not top.name.startswith("build"):
            (tree / top.name).symlink_to(top)
    (tree / "labs").mkdir()
    overlaid = []
    for lab in sorted(p for p in (ROOT / "labs").iterdir()):
        mine = case / lab.name
        if not mine.is_dir():
            (tree / "labs" / lab.name).symlink_to(lab)
            continue
        (tree / "labs" / lab.name).mkdir()
        for f in lab.iterdir():
            if not (mine / f.name).exists():
                (tree / "labs" / lab.name / f.name).symlink_to(f)
        for f in mine.iterdir():
            shutil.copy(f, tree / "labs" / lab.name / f.name)
        overlaid.append(lab.name)
    return overlaid


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work", type=Path)
    p.add_argument("--course-build", required=True)
    p.add_argument("--arch", default="9.0")
    args = p.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    failed, not_compiled = [], []
    cases = sorted(c for c in HERE.iterdir() if c.is_dir() and not c.name.startswith("_"))
    for case in cases:
        # The GPU test grades grade_case's assembly of the case: it must be a
        # submission the grader accepts (every student file present, none stray),
        # or the test would fail for a missing file instead of the bug.
        submission = args.work.resolve() / case.name / "submission"
        grade_case.assemble(case, submission)
        rejected, course_rejected = [], []
        for folder in sorted(submission.iterdir()):
            err, ignored, refused = take_student_files(folder, grade_case.config()[folder.name],
                                                       args.work.resolve() / case.name / "taken")
            if refused:
                # Not a plain file (linked_kernel_file): refused before the include check.
                rejected.append(refused)
                continue
            if err or ignored:
                failed.append(f"{case.name} (as a submission: {err or 'ignored ' + ', '.join(ignored)})")
            files = grade_case.config()[folder.name]["student_files"]
            own = [f for f in files if (case / folder.name / f).is_file()]
            rejected += sources.problems(folder, own)
            course_rejected += sources.problems(folder, [f for f in files if f not in own])
        if course_rejected:
            print(f"{case.name}: WARNING: the include check rejects a course file of this submission, so its GPU "
                  f"test is rejected for that, not for its bug: {course_rejected[0]}")
        if rejected:
            # The grader rejects it before compiling (build_submission): so does this test.
            print(f"{case.name}: not compiled: the grader rejects it before compiling, as its GPU test "
                  f"expects: {rejected[0]}")
            not_compiled.append(case.name)
            continue
        tree = args.work.resolve() / case.name / "tree"
        labs = case_tree(case, tree)
        if not labs:
            failed.append(f"{case.name} (no lab folder)")
            continue
        bad = build_starter.compile_kernels(ROOT, tree, args.course_build, args.work.resolve() / case.name / "objects",
                                            labs, args.arch, what=f"broken case {case.name}:")
        failed += [f"{case.name}/{lab}" for lab in bad]
    if failed:
        print(f"FAIL: these broken cases no longer compile against the course's interface: {', '.join(failed)}"
              " (update the case from the course's file, keeping its one bug)")
        return 1
    compiled = len(cases) - len(not_compiled)
    print(f"ok: all {compiled} broken cases that the grader compiles compile against today's kernels.hpp/kernels.cu"
          + (f" ({len(not_compiled)} rejected before compiling: {', '.join(not_compiled)})"
             if not_compiled else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
