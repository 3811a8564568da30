#!/usr/bin/env python3
"""Builds a starter kit (tools/starter.py) as a student would get it.

usage: build_starter.py WORK [--programs 21_transpose,...] [--gpu]

CPU (CI): writes the starter tree to WORK/tree, configures it for one
architecture (9.0) and compiles, on 2 jobs, the kernel translation unit of every
lab whose kernel files the starter changed (each stub must compile) and the
whole program of a few labs (--programs); those programs' --list must name every
exercise. The labs the starter leaves alone are the course's own files, which
the course build compiles already.

--gpu (the GPU suite): exit 77 without a GPU, before building; otherwise builds
every lab of the starter tree and runs them (tools/starter.py --verify-run):
exactly the exercise variants fail, each with "not implemented yet".
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402
import starter  # noqa: E402


def step(cmd, **kw):
    print("+ " + " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, **kw).returncode


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work", type=Path)
    p.add_argument("--programs", default="21_transpose")
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--arch", default="9.0")
    args = p.parse_args()
    if args.gpu and grade.why_no_gpu():
        print(f"skipped: {grade.why_no_gpu()}")
        return 77
    env = dict(os.environ)
    if not shutil.which("nvcc", path=env.get("PATH")) and Path("/usr/local/cuda/bin/nvcc").is_file():
        env["PATH"] = env.get("PATH", "") + ":/usr/local/cuda/bin"
    tree, build = args.work / "tree", args.work / "build"
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    if step([sys.executable, str(ROOT / "tools" / "starter.py"), str(tree)]) != 0:
        return 1
    marks = starter.course(ROOT)  # the course's markers: the starter tree has none left
    changed = [lab for lab, m in marks.items() if m.exercises and m.marked]
    if step(["meson", "setup", str(build), str(tree), f"-Dgpu_arch={args.arch}", "-Dtests=disabled"], env=env,
            stdout=subprocess.DEVNULL) != 0:
        return 1
    if args.gpu:
        targets = [f"labs/{lab}/{lab}" for lab in grade.lab_names(tree)]
    else:
        programs = [lab for lab in args.programs.split(",") if lab]
        targets = [f"labs/{lab}/lib{lab}_kernels.a" for lab in changed if lab not in programs]
        targets += [f"labs/{lab}/{lab}" for lab in programs]
    if step(["ninja", "-C", str(build), "-j", "2"] + targets, env=env) != 0:
        print("FAIL: the starter tree does not compile (above: the file and line)")
        return 1
    if args.gpu:
        status, lines = starter.verify_run(tree, build, marks)
        print("\n".join(lines))
        return status
    built = {lab: m for lab, m in marks.items() if lab in args.programs.split(",")}
    problems = starter.check_variant_names(built, build)
    for problem in problems:
        print(f"FAIL: {problem}")
    print(f"ok: the starter's kernel files of {len(changed)} labs compile ({', '.join(changed)})" if not problems else "")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
