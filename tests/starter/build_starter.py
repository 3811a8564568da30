#!/usr/bin/env python3
"""Builds a starter kit (tools/starter.py) as a student would get it.

usage: build_starter.py WORK --course-build BUILD      (CPU, CI)
       build_starter.py WORK --gpu                      (the GPU suite)

CPU: writes the starter tree to WORK/tree and compiles the kernel translation
units (kernels.cu, and kernels_hopper.cu where a lab has one) of every lab whose
kernel files the starter changed: each stub must compile. Cheap on purpose
(seconds a unit, 2 at a time): no Meson configure and no build of common/; each
compile is the course build's own command for that file (BUILD/compile_commands.json,
or build.ninja for a unit Meson compiles as a custom target: lab 31's kernels.cu
for sm_90a alone) with the sources moved to the starter tree, PTX for one
architecture (--arch; a unit built for an arch-specific target such as sm_90a
keeps that target, whose code alone holds its kernels' bodies) and its output
in WORK. The labs the starter leaves alone are the course's own files, which
the course build compiles already.

--gpu: exit 77 without a GPU, before building; otherwise configures and builds
every lab of the starter tree and runs them (tools/starter.py --verify-run):
exactly the exercise variants fail, each with "not implemented yet".
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
import starter  # tools/ (PYTHONPATH: tests/starter/meson.build)
from grader.config import lab_names
from grader.process import why_no_gpu


def step(cmd, **kw):
    print("+ " + " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, **kw).returncode


def starter_compile(entry, root, tree, work, arch):
    """The course build's compile command of a lab's kernels.cu (a
    compile_commands.json entry), for the same file in the starter tree: source
    and include paths moved there, PTX for one architecture, outputs in work."""
    build = Path(entry["directory"])
    course = [str(root) + "/", os.path.relpath(root, build) + "/"]
    args, out = [], []
    cc = arch.replace(".", "")
    words = iter(shlex.split(entry["command"]))
    for w in words:
        if w in ("-o", "-MF"):
            next(words)
            args += [w, str(work / ("kernels.o" if w == "-o" else "kernels.d"))]
        elif w.startswith("-gencode") or w.startswith("--generate-code") or w.startswith("-arch"):
            specific = re.search(r"compute_(\d+a)\b", w)  # sm_90a: its code alone compiles the wgmma bodies
            if specific:
                cc = specific.group(1)
            continue
        else:
            for prefix in course:
                for flag in ("", "-I"):
                    if w.startswith(flag + prefix):
                        w = flag + str(tree) + "/" + w[len(flag + prefix):]
                        break
            args.append(w)
    return args + [f"-gencode=arch=compute_{cc},code=compute_{cc}"], build


def custom_compiles(course_build):
    """Compile commands Meson leaves out of compile_commands.json: its custom
    targets that run nvcc -c on a .cu (lab 31 compiles its kernels.cu for sm_90a
    alone so), read from build.ninja, as compile_commands.json entries."""
    try:
        lines = (Path(course_build) / "build.ninja").read_text().splitlines()
    except OSError:
        return []
    entries = []
    for i, line in enumerate(lines):
        m = re.match(r"build (\S+): CUSTOM_COMMAND\S* (\S+\.cu)\b", line)
        if not m:
            continue
        for follow in lines[i + 1:i + 6]:
            if follow.startswith(" COMMAND = ") and "nvcc" in follow and " -c " in follow:
                command = follow[len(" COMMAND = "):].replace("$$", "$")
                entries.append({"directory": str(Path(course_build).resolve()), "command": command,
                                "file": m.group(2), "output": m.group(1)})
                break
    return entries


def kernel_units(entries, lab):
    """The compile commands of a lab's kernel translation units: each .cu of
    labs/LAB/ compiled into one of the lab's libraries (lib<lab>_kernels, lab 30's
    lib<lab>_hopper) or by a custom target (lab 31's kernels_sm90a.o); not main.cu."""
    units = []
    for e in entries:
        file = e.get("file", "").replace("\\", "/")
        output = e.get("output", "")
        if (f"labs/{lab}/" in file and file.endswith(".cu") and not file.endswith("/main.cu")
                and (f"lib{lab}_" in output or output.endswith(".o") and f"labs/{lab}/" in output
                     and ".p/" not in output)):
            units.append((Path(file).stem, e))
    return sorted({name: e for name, e in units}.items())


def compile_kernels(root, tree, course_build, work, labs, arch, what="the starter's"):
    """Compiles each lab's kernel translation units (kernels.cu, and
    kernels_hopper.cu where there is one) in `tree` (the starter kit, or a broken
    case of tests/broken/); returns the labs that failed."""
    path = Path(course_build) / "compile_commands.json"
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        print(f"FAIL: {path}: {e} (configure the course build first)")
        return list(labs)
    entries += custom_compiles(course_build)
    jobs = []  # (lab, file name, (command, cwd) or None)
    for lab in labs:
        units = kernel_units(entries, lab)
        if not any(name == "kernels" for name, _ in units):
            print(f"FAIL: {lab}: no compile command of labs/{lab}/kernels.cu in {path} or build.ninja")
            jobs.append((lab, "kernels.cu", None))
            continue
        for name, entry in units:
            (work / lab / name).mkdir(parents=True, exist_ok=True)
            jobs.append((lab, f"{name}.cu", starter_compile(entry, root, tree, work / lab / name, arch)))

    def run(job):
        lab, name, command = job
        if command is None:
            return lab, name, 1, ""
        cmd, cwd = command
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        return lab, name, p.returncode, p.stdout + p.stderr

    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for lab, name, rc, output in pool.map(run, jobs):
            print(f"{'ok  ' if rc == 0 else 'FAIL'} {lab}: {what} {name} {'compiles' if rc == 0 else 'does not compile'}")
            if output.strip():
                print(output.rstrip())
            if rc != 0 and lab not in failed:
                failed.append(lab)
    return failed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("work", type=Path)
    p.add_argument("--course-build", help="(CPU) the course's build folder: its compile commands are reused")
    p.add_argument("--gpu", action="store_true")
    p.add_argument("--arch", default="9.0")
    args = p.parse_args()
    if args.gpu and why_no_gpu():
        print(f"skipped: {why_no_gpu()}")
        return 77
    if not args.gpu and not args.course_build:
        p.error("name the course's build folder: --course-build BUILD (or --gpu)")
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
    if not args.gpu:
        failed = compile_kernels(ROOT, tree.resolve(), args.course_build, args.work.resolve() / "objects", changed,
                                 args.arch)
        print(f"FAIL: the starter's kernels.cu of {', '.join(failed)} do not compile (above: the file and line)" if failed
              else f"ok: the starter's kernel files of {len(changed)} labs compile ({', '.join(changed)})")
        return 1 if failed else 0
    if step(["meson", "setup", str(build), str(tree), f"-Dgpu_arch={args.arch}", "-Dtests=disabled"], env=env,
            stdout=subprocess.DEVNULL) != 0:
        return 1
    if step(["ninja", "-C", str(build)] + [f"labs/{lab}/{lab}" for lab in lab_names(tree)], env=env) != 0:
        print("FAIL: the starter tree does not compile (above: the file and line)")
        return 1
    status, lines = starter.verify_run(tree, build, marks)
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
