#!/usr/bin/env python3
"""Grades a whole class: every student's submission through tools/grade.py, with
one seed for all, and one table, one report and a similarity check for the class.

    tools/grade_class.py SUBMISSIONS [--out DIR] [--seed N] [--labs 01,04] [--arch 9.0]
    tools/grade_class.py SUBMISSIONS --slurm [--partition P] [--account A] [--time 01:00:00]
    make grade-class SUBMISSIONS=dir [SLURM=1 PARTITION=... ACCOUNT=... TIME=...] [NOGPU=1]

SUBMISSIONS is one entry per student, as the exports give them
(docs/instructor-guide.md, "Grading a class"):
  - Gradescope ("Export Submissions"): submission_NNN/ folders and
    submission_metadata.yml, which names the students;
  - a learning-management system: one folder per student (Moodle's
    "Full Name_123_assignsubmission_file_"), or Canvas's flat files
    "name_123_456_reduction.cuh";
  - a .zip per student.
Inside a student's entry, lab folders at any depth (04_reduction/reduction.cuh),
or the kernel files loose (reduction.cuh: the file name says the lab). Anything
else is named in the report, never graded.

Three steps:
  1. Build, on the CPU, in parallel. Each distinct set of a lab's student files
     is compiled once: the build cache (BUILD/grade-class-cache) keeps each
     program under a hash of the files, the course revision and --arch, so a class
     of near-identical submissions builds fast and a second run builds nothing.
  2. Grade: tools/grade.py --submission ... --prebuilt ... per student, as a
     subprocess with a time limit (--timeout: a hang is recorded, the rest go on),
     one at a time per GPU (CUDA_VISIBLE_DEVICES; GPUs from nvidia-smi -L, at
     most --max-gpus of them). Lanes share the host: their correctness and
     sanitizer runs overlap freely, their benchmark runs take a host-wide lock
     (--bench-lock, tools/grader/benchlock.py) shared, and a lab that times the
     host's links (host_link = true in grading.toml: PCIe copies, host memory) takes
     it exclusive, so it is timed with no other benchmark running. With
     no GPU (or --no-gpu), grade.py --build-only: compile errors only, the GPU
     steps "not run: no GPU". With --slurm the same per-student step runs as one
     task of one Slurm job array per student (--gres=gpu:1 unless --no-gpu;
     --max-gpus K: at most K tasks at once, Slurm's --array=0-N%K); tasks that
     share a node share its lock the same way. The build cache, on the shared
     file system, is then filled by the tasks.
  3. Gather: OUT/class.csv (student x lab: points and flags), OUT/similarity.csv,
     OUT/report.html (self-contained: the class table, each student's best kernels
     on a roofline, points per lab), and OUT/students/ID/grade/ (the grader's own
     results.json, summary.txt, records, logs).

Exit codes: 0 every submission graded (whatever its score; an archive refused as
a whole is graded zero, its row says why), 1 one or more could not be graded (a timeout, a failed task), 2 bad usage.
"""
import argparse
import csv
import datetime
import fcntl
import hashlib
import html
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path

from grader import archive, benchlock, sandbox, sources
from grader.config import NOT_RUN, ROOT, GradeError, lab_names, load_config, select
from grader.process import Run, Untrusted, run, run_untrusted, tail, why_no_gpu
from grader.records import read_records
from grader.scoring import baseline_variants
from grader.submission import (NotPlain, audit_text, fresh_assembler_record, is_plain_file, joined, listed_files,
                               read_plain, shown, student_files_digest)

# Node-local (each host's links are its own), and the same path for every lane and
# every class graded on the host at once.
DEFAULT_BENCH_LOCK = Path("/tmp/cudalabs-bench.lock")
GRADE = ROOT / "tools" / "grade.py"
HIDDEN = ("__MACOSX", ".DS_Store", "__pycache__")
# Flags of the class table, in the order the report shows them; "timeout" is also a
# submission that did not finish within --timeout as a whole.
MAX_ID_CHARS = 64  # a student's folder name under OUT/students/
FLAGS = ("compile error", "rejected", "timeout", "sanitizer", "implausible", "throttled", NOT_RUN)


class ClassError(Exception):
    """Bad usage: exit 2."""


# ---- the submissions ----------------------------------------------------------------------

@dataclass
class Student:
    id: str                 # folder name under OUT/students/, unique
    name: str               # as the export names the student
    source: str             # the entry in SUBMISSIONS
    labs: list = field(default_factory=list)
    extras: list = field(default_factory=list)  # files that belong to no lab: named, never graded
    rejected: str = ""      # "rejected: why. Fix: ..." for an archive refused as a whole: no lab graded


def gradescope_names(folder):
    """{submission_NNN: "Name + Name"} from Gradescope's submission_metadata.yml (Ruby
    symbols as keys; read with a few patterns, so no YAML library is needed)."""
    path = folder / "submission_metadata.yml"
    if not path.is_file():
        return {}
    names, current = {}, None
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"^(submission_\d+):\s*$", line)
        if m:
            current = m.group(1)
            continue
        m = re.match(r"^\s*-?\s*:name:\s*(.+?)\s*$", line)
        if current and m:
            name = m.group(1).strip("'\"")
            names[current] = f"{names[current]} + {name}" if current in names else name
    return names


def lms_name(entry_name):
    """The student's name in an LMS export's folder or file name (Moodle:
    "Ada Lovelace_123_assignsubmission_file_"; Canvas: "lovelaceada_123_456_file")."""
    m = re.match(r"^(.*?)_\d+_assignsubmission_\w*$", entry_name)
    return m.group(1) if m else entry_name


CANVAS_FILE = re.compile(r"^([a-z]+)(?:_late)?_\d+_\d+_(.+?)(?:-\d+)?(\.[^.]+)$")


def safe_id(name, taken):
    # A folder name (students/ID/): bounded, whatever the export calls the student.
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:MAX_ID_CHARS] or "student"
    sid, n = base, 1
    while sid in taken:
        n += 1
        sid = f"{base}_{n}"
    taken.add(sid)
    return sid


def unpacked(entry, dest):
    """A student's .zip unpacked into dest (tools/grader/archive.py: the limits, links
    never made): (members left out, "" or why the archive is refused and its fix).
    One student's archive never stops the class: a refused one is that student's row."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    try:
        return archive.extract_zip(entry, dest), ""
    except archive.Rejected as e:
        shutil.rmtree(dest, ignore_errors=True)
        return [], f"rejected: {shown(entry.name)}: {e}"
    except OSError as e:  # the instructor's disk (full, unreadable export): not the student's doing
        raise ClassError(f"{entry}: cannot unpack it into {dest}: {e}") from None


def student_entries(submissions, unpack):
    """(name, source, folder, left out, rejected) per student: the export's layout undone.
    Zips unpack under UNPACK/zip/, Canvas's files are gathered under UNPACK/canvas/
    (apart: no zip's name can land on a Canvas student's folder)."""
    names = gradescope_names(submissions)
    entries, canvas = [], {}
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith(".") or entry.name in HIDDEN or entry.name == "submission_metadata.yml":
            continue
        if entry.is_dir():
            entries.append((names.get(entry.name) or lms_name(entry.name), entry.name, entry, [], ""))
        elif entry.suffix == ".zip":
            dest = unpack / "zip" / entry.stem
            left_out, rejected = unpacked(entry, dest)
            entries.append((names.get(entry.stem) or lms_name(entry.stem), entry.name, dest, left_out, rejected))
        elif m := CANVAS_FILE.match(entry.name):
            canvas.setdefault(m.group(1), []).append((entry, m.group(2) + m.group(3)))
    for who, files in sorted(canvas.items()):  # Canvas: flat files, the student's name first
        dest = unpack / "canvas" / who
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        left_out = []
        for path, original in files:
            try:  # read as any submitted file: no link followed, a kernel file's size at most
                (dest / original).write_bytes(read_plain(submissions, path.name))
            except (NotPlain, OSError) as e:
                left_out.append(f"{shown(path.name)} ({e}: not taken)")
        entries.append((who, f"{who}_*", dest, left_out, ""))
    return entries


def normalise(folder, dest, labs, config):
    """Copies a student's files into dest/LAB/..., as tools/grade.py --submission
    reads them: a file under a folder named as a lab goes there (the deepest such
    folder), a loose file named as one lab's kernel file goes to that lab. Returns
    (labs found, files that belong to no lab)."""
    owner = {}
    for lab in labs:
        for name in config[lab]["student_files"]:
            owner.setdefault(name, []).append(lab)
    found, extras, placed, folders = set(), [], set(), set()
    for name in listed_files(folder):
        if name.startswith("... "):  # the listing stopped (thousands of files)
            extras.append(name)
            continue
        path, parts = folder / name, Path(name).parts
        if any(p.startswith(".") or p in HIDDEN for p in parts):
            continue
        at = [i for i, p in enumerate(parts[:-1]) if p in labs]
        if at:
            lab, rel = parts[at[-1]], parts[at[-1] + 1:]
        elif len(owner.get(parts[-1], [])) == 1:
            lab, rel = owner[parts[-1]][0], parts[-1:]
        else:
            extras.append("/".join(parts))
            continue
        place = (lab,) + tuple(rel)
        # Two places of the student's folder can name one place of a lab (a/04_reduction/x
        # and b/04_reduction/x), or a file and a folder of the same name (b/04_reduction/x/y):
        # the first one taken keeps it, the others are named, and the class goes on.
        clash = next((place[:i] for i in range(2, len(place) + 1) if place[:i] in placed), None)
        if clash is not None or place in folders:
            extras.append(f"{shown(name)} ({shown('/'.join(clash or place))} is given twice: not taken)")
            continue
        target = dest / lab / Path(*rel)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                # Never followed with the grader's rights: kept as the link it is, which
                # grade.py then refuses by name (tools/grader/submission.py, read_plain).
                target.symlink_to(os.readlink(path))
            else:
                target.write_bytes(read_plain(folder, name))
        except (NotPlain, OSError) as e:  # OSError: unreadable, gone since it was listed, a name too long
            extras.append(f"{shown(name)} ({shown(str(e))}: not taken)")
            continue
        placed.add(place)
        folders.update(place[:i] for i in range(2, len(place)))
        found.add(lab)
    return sorted(found), extras


def discover(submissions, out, labs, config):
    if not submissions.is_dir():
        raise ClassError(f"SUBMISSIONS={submissions}: no such folder (one entry per student in it)")
    inner = [d for d in submissions.iterdir() if d.is_dir() and not d.name.startswith(".")]
    # Gradescope's export unzips into one folder (assignment_NNN_export/): look inside it.
    if len(inner) == 1 and (inner[0] / "submission_metadata.yml").is_file():
        submissions = inner[0]
    students, taken = [], set()
    for name, source, folder, left_out, rejected in student_entries(submissions, out / "unpacked"):
        s = Student(safe_id(name, taken), name, source, rejected=rejected)
        dest = out / "students" / s.id / "submission"
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        if not rejected:
            s.labs, s.extras = normalise(folder, dest, labs, config)
            s.extras += left_out
        students.append(s)
    if not students:
        raise ClassError(f"SUBMISSIONS={submissions} holds no student's folder or zip")
    return students


# ---- the build cache -------------------------------------------------------------------------

def course_revision():
    """The course's revision, and for a tree with local changes a digest of them: a
    cached program is reused only for the very course code it was built with."""
    rev = subprocess.run(["sh", str(ROOT / "tools" / "revision.sh")], capture_output=True, text=True).stdout.strip()
    if rev.endswith("-dirty"):
        diff = subprocess.run(["git", "-C", str(ROOT), "diff", "HEAD"], capture_output=True).stdout
        rev += "-" + hashlib.sha256(diff).hexdigest()[:12]
    return rev or "unknown"


class Locked:
    """An exclusive flock on a file, shared by the processes of a class (Slurm tasks too)."""

    def __init__(self, path, wait=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(path, "a")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            self.held = True
        except BlockingIOError:
            self.held = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()  # releases the lock


class BuildCache:
    """Each lab's programs, one per distinct set of student files, in
    CACHE/entries/KEY/: LAB (the program) or build-error.txt, rejected.txt (the
    symbol audit), student-files.sha256. They are built in builders, CACHE/builders/bN:
    a build of the course tree whose -Dsubmission folder holds every lab, so it is
    configured once and each build recompiles only one lab's kernel file."""

    def __init__(self, root, revision, arch, builders, jobs, sandboxed=True):
        self.root, self.revision, self.arch, self.builders, self.jobs = root, revision, arch, builders, jobs
        # Every build of student code runs in the sandbox (tools/grader/sandbox.py), as grade.py's do.
        self.untrusted = Untrusted(sandboxed=sandboxed, readable=[ROOT])

    def key(self, lab, digest):
        return hashlib.sha256(f"{self.revision}|{self.arch}|{lab}|{digest}".encode()).hexdigest()[:24]

    def ensure(self, lab, files, cfg):
        """The cache entry for these files of the lab, built if it is not there yet."""
        folder = files
        digest = student_files_digest(folder, cfg["student_files"])
        entry = self.root / "entries" / self.key(lab, digest)
        with Locked(self.root / "locks" / (entry.name + ".lock")):
            if not (entry / "student-files.sha256").is_file():
                self.build(lab, folder, cfg, digest, entry)
        return entry

    def sandboxed(self, what, cmd, timeout, log, work):
        return run_untrusted(what, cmd, timeout, log, self.untrusted, writable=[work],
                             limits=sandbox.Limits.for_build(), env=sources.ASSEMBLER_ENV)

    def builder(self, lab):
        """A free builder (waits for one when all are busy)."""
        for n in range(self.builders):
            lock = Locked(self.root / "builders" / f"b{n}.lock", wait=False)
            if lock.held:
                return n, lock
            lock.f.close()
        n = random.randrange(self.builders)
        return n, Locked(self.root / "builders" / f"b{n}.lock")

    def build(self, lab, folder, cfg, digest, entry):
        n, lock = self.builder(lab)
        with lock:
            work = self.root / "builders" / f"b{n}"
            log_path = work / "log.txt"
            work.mkdir(parents=True, exist_ok=True)
            with open(log_path, "a") as log:
                build = work / "build"
                fresh_assembler_record(build)
                if not (build / "build.ninja").is_file():
                    for other, other_cfg in load_course()[1].items():  # every lab from -Dsubmission: configured once
                        (work / "student" / other).mkdir(parents=True, exist_ok=True)
                        for name in other_cfg["student_files"]:
                            shutil.copyfile(ROOT / "labs" / other / name, work / "student" / other / name)
                    r = self.sandboxed("meson setup", ["meson", "setup", str(build), str(ROOT), f"-Dgpu_arch={self.arch}",
                                                       f"-Dsubmission={(work / 'student').resolve()}"], 900, log, work)
                    if r.rc != 0:
                        shutil.rmtree(build, ignore_errors=True)
                        raise ClassError(f"the course does not configure (not the student's fault; {log_path}):\n"
                                         + tail(r.output, 10))
                for name in cfg["student_files"]:
                    (work / "student" / lab / name).write_bytes(read_plain(folder, name))
                # Includes of files outside the course are refused before anything is compiled.
                refused = sources.problems(work / "student" / lab, cfg["student_files"])
                if refused:
                    r = Run(f"build {lab}", [], 0, "")
                else:
                    r = self.sandboxed(f"build {lab} {digest[:12]}", ["ninja", "-C", str(build), "-j", str(self.jobs),
                                                                       f"labs/{lab}/{lab}"], 1800, log, work)
            tmp = entry.with_name(entry.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            if r.rc != 0:
                if "kernels.cu" not in r.output:
                    # The course's own code failed (not the student's kernel file): not cached.
                    raise ClassError(f"building {lab} failed outside the student's kernel file ({log_path}):\n"
                                     + tail(r.output, 10))
                (tmp / "build-error.txt").write_text(tail(r.output, 25) + "\n")
            elif refused:
                (tmp / "rejected.txt").write_text(joined(refused) + "\n")
            else:
                shutil.copy2(build / "labs" / lab / lab, tmp / lab)
                rejected = audit_text(build, lab, assembled=True)
                if rejected:
                    (tmp / "rejected.txt").write_text(rejected + "\n")
            (tmp / "seconds.txt").write_text(f"{r.seconds:.1f}\n")
            (tmp / "student-files.sha256").write_text(digest + "\n")
            shutil.rmtree(entry, ignore_errors=True)
            tmp.rename(entry)


def load_course():
    labs = lab_names(ROOT)
    return labs, load_config(ROOT / "tools" / "grading.toml", labs)


# ---- grading one student (a worker here, or one Slurm task) ------------------------------------

def grade_student(plan, index, gpu=None):
    """Builds (through the cache) and grades one student; writes OUT/students/ID/status.json."""
    s = Student(**plan["students"][index])
    out = Path(plan["out"])
    home = out / "students" / s.id
    labs, config = load_course()
    chosen = [lab for lab in s.labs if lab in plan["labs"]]
    status = {"student": s.id, "host": os.uname().nodename, "gpu": gpu if gpu is not None else
              os.environ.get("CUDA_VISIBLE_DEVICES", ""), "rc": None, "timed_out": False, "error": ""}
    start, started = time.monotonic(), time.time()
    if s.rejected:  # the archive was refused as a whole: nothing to build or grade
        status["error"] = s.rejected
    elif not chosen:
        status["error"] = "no lab of the course in the submission" + (f" (found: {', '.join(s.extras[:5])})"
                                                                      if s.extras else "")
    else:
        cache = BuildCache(Path(plan["cache"]), plan["revision"], plan["arch"], plan["builders"], plan["jobs"],
                       plan.get("sandbox", True))
        prebuilt = home / "prebuilt"
        try:
            for lab in chosen:
                if not all(is_plain_file(home / "submission" / lab / f) for f in config[lab]["student_files"]):
                    continue  # grade.py names the missing file
                entry = cache.ensure(lab, home / "submission" / lab, config[lab])
                here = prebuilt / "labs" / lab
                shutil.rmtree(here, ignore_errors=True)
                here.mkdir(parents=True)
                for f in entry.iterdir():
                    link_or_copy(f, here / f.name)
        except (ClassError, OSError, GradeError) as e:
            status["error"] = f"build: {e}"
        if not status["error"]:
            cmd = grade_command(plan, home, chosen, gpu)
            shutil.rmtree(home / "grade", ignore_errors=True)
            with open(home / "grade.log", "w") as log:
                r = run("grade", cmd, plan["timeout"], log)
            status.update(rc=r.rc, timed_out=r.timed_out)
            if r.timed_out:
                status["error"] = f"did not finish in {plan['timeout']:g} s (tools/grade_class.py --timeout)"
            elif r.rc not in (0, 1):
                status["error"] = f"grade.py exit {r.rc}: {tail(r.output, 3)}"
    status["seconds"] = round(time.monotonic() - start, 1)
    # Wall-clock start and end: how many lanes or tasks graded at once (tests/class/test_slurm.py).
    status["started"], status["ended"] = round(started, 3), round(time.time(), 3)
    (home / "status.json").write_text(json.dumps(status, indent=1) + "\n")
    return status


def link_or_copy(src, dest):
    """dest as a hard link to src (a class shares a few programs), or a copy
    where the cache is on another file system. Not a symbolic link: the
    sandbox shows a submission its own folders only, and a link into the
    cache would point at nothing there."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def grade_command(plan, home, chosen, gpu=None):
    """tools/grade.py for one student: on its GPU (CUDA_VISIBLE_DEVICES), its benchmark
    runs under the host-wide lock (tools/grader/benchlock.py) when it grades on a GPU."""
    env = [f"CUDA_VISIBLE_DEVICES={gpu}"] if gpu is not None else []
    if not plan["no_gpu"] and plan.get("bench_lock"):
        env += [f"{k}={v}" for k, v in benchlock.environment(plan["bench_lock"], plan.get("host_link_labs", [])).items()]
    cmd = [sys.executable, str(GRADE), "--submission", str(home / "submission"), "--prebuilt", str(home / "prebuilt"),
           "--out", str(home / "grade"), "--seed", str(plan["seed"]), "--labs", ",".join(chosen)]
    cmd += plan["grade_args"] + (["--build-only"] if plan["no_gpu"] else [])
    return (["env"] + env if env else []) + cmd


def gpu_ids():
    """The GPUs nvidia-smi lists (their indices), or [] without one."""
    if why_no_gpu():
        return []
    lines = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.splitlines()
    return [str(i) for i, line in enumerate(x for x in lines if x.startswith("GPU "))]


def lanes(gpus, max_gpus):
    """The GPUs that grade, one submission at a time each: all of them, or the first
    max_gpus (--max-gpus, for a machine the class shares with others)."""
    return gpus[:max_gpus] if max_gpus else gpus


def run_local(plan, students, cpus):
    """Builds every distinct set of files first (CPU), then grades one student per GPU."""
    labs, config = load_course()
    cache = BuildCache(Path(plan["cache"]), plan["revision"], plan["arch"], plan["builders"], plan["jobs"],
                       plan.get("sandbox", True))
    out = Path(plan["out"])
    distinct = {}
    for s in students:
        for lab in s.labs:
            folder = out / "students" / s.id / "submission" / lab
            if lab in plan["labs"] and all(is_plain_file(folder / f) for f in config[lab]["student_files"]):
                distinct.setdefault((lab, student_files_digest(folder, config[lab]["student_files"])), folder)
    cached = sum((cache.root / "entries" / cache.key(lab, digest) / "student-files.sha256").is_file()
                 for lab, digest in distinct)
    print(f"grade-class: {len(students)} submissions, {len(distinct)} distinct sets of lab files, {cached} of them "
          f"in the build cache ({plan['builders']} builder(s), ninja -j{plan['jobs']})", flush=True)
    with ThreadPoolExecutor(plan["builders"]) as pool:
        for (lab, _), future in [(k, pool.submit(cache.ensure, k[0], f, config[k[0]])) for k, f in distinct.items()]:
            try:
                future.result()
            except ClassError as e:  # reported per student by grade_student
                print(f"grade-class: build of {lab} failed: {e}", flush=True)
    gpus = [] if plan["no_gpu"] else lanes(gpu_ids(), plan.get("max_gpus"))
    slots = gpus or [None] * max(1, cpus)
    free = list(slots)
    print(f"grade-class: grading on {', '.join('GPU ' + g for g in gpus) if gpus else f'{len(slots)} CPU worker(s), build-only'}",
          flush=True)
    if len(gpus) > 1:
        print(f"grade-class: benchmarks share the host (lock {plan['bench_lock']}); "
              f"{', '.join(plan.get('host_link_labs', [])) or 'no lab'} time(s) the host's links: alone", flush=True)

    def work(index):
        gpu = free.pop()
        try:
            st = grade_student(plan, index, gpu)
        finally:
            free.append(gpu)
        print(f"  {students[index].id:<30} {st['error'] or 'graded'} ({st['seconds']:g} s)", flush=True)

    with ThreadPoolExecutor(len(slots)) as pool:
        list(pool.map(work, range(len(students))))


def sbatch_script(plan, args, n):
    out = Path(plan["out"])
    # %K: Slurm runs at most K tasks of the array at once (a cluster that caps the
    # GPUs one class may hold).
    throttle = f"%{args.max_gpus}" if args.max_gpus else ""
    lines = ["#!/bin/sh", "#SBATCH --job-name=cudalabs-grade-class", f"#SBATCH --array=0-{n - 1}{throttle}",
             f"#SBATCH --output={out}/slurm/task-%a.out", f"#SBATCH --cpus-per-task={args.cpus_per_task}"]
    if not plan["no_gpu"]:
        lines.append("#SBATCH --gres=gpu:1")
    for flag, value in (("partition", args.partition), ("account", args.account), ("time", args.time)):
        if value:
            lines.append(f"#SBATCH --{flag}={value}")
    lines += [f"#SBATCH {a}" for a in args.sbatch_arg]
    lines += ["# One task per student: build (through the shared cache) and grade; see tools/grade_class.py.",
              f"cd {ROOT} && exec python3 tools/grade_class.py --plan {out}/plan.json --task \"$SLURM_ARRAY_TASK_ID\""]
    return "\n".join(lines) + "\n"


def run_slurm(plan, args, n):
    out = Path(plan["out"])
    (out / "slurm").mkdir(exist_ok=True)
    script = out / "slurm" / "job.sh"
    script.write_text(sbatch_script(plan, args, n))
    if not shutil.which("sbatch"):
        raise ClassError("--slurm: sbatch not found (on a Slurm cluster's login node, or: tools/ensure_deps.sh slurm)")
    print(f"grade-class: sbatch --wait {script} ({n} array tasks)", flush=True)
    # --wait: sbatch returns when every task has ended; its exit status is not the
    # verdict (a failed task is found below, by its missing status.json).
    r = subprocess.run(["sbatch", "--wait", str(script)], text=True, capture_output=True)
    print(r.stdout.strip() + ("\n" + r.stderr.strip() if r.stderr.strip() else ""), flush=True)
    if "Submitted batch job" not in r.stdout:
        raise ClassError(f"sbatch refused the job (exit {r.returncode}): {r.stderr.strip()}")


# ---- similarity --------------------------------------------------------------------------------

CXX_WORDS = set("""alignas alignof auto bool break case catch char const constexpr consteval continue decltype default
delete do double else enum explicit extern false float for friend goto if inline int long mutable namespace new noexcept
nullptr operator private protected public return short signed sizeof static static_assert static_cast reinterpret_cast
const_cast struct switch template this throw true try typedef typename union unsigned using virtual void volatile while
size_t int64_t int32_t uint32_t uint64_t std __global__ __device__ __host__ __shared__ __restrict__ __syncthreads
__syncwarp __shfl_down_sync __shfl_xor_sync __forceinline__ threadIdx blockIdx blockDim gridDim warpSize float2 float4
int2 int4 dim3 cudaStream_t atomicAdd min max pragma once include""".split())
TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|::|->|<<|>>|[<>=!+\-*/&|^%]=|&&|\|\||\+\+|--|\S")


def tokens(text):
    """The file's tokens with comments, strings and layout gone and every identifier
    that is not a keyword or CUDA built-in renamed by first appearance (id1, id2, ...):
    a copy with renamed variables and new comments tokenises the same."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '"s"', text)
    names, out = {}, []
    for t in TOKEN.findall(text):
        if re.match(r"[A-Za-z_]", t) and t not in CXX_WORDS:
            t = names.setdefault(t, f"id{len(names) + 1}")
        out.append(t)
    return out


def shingles(toks, k=8):
    return {tuple(toks[i:i + k]) for i in range(len(toks) - k + 1)}


def starter_texts(lab, cfg):
    """The starter kit's text of the lab's files (tools/starter.py), which every student
    is given, or the course's files where the starter cannot be made."""
    texts = []
    for name in cfg["student_files"]:
        text = (ROOT / "labs" / lab / name).read_text(errors="replace")
        try:
            import starter  # tools/starter.py
            text = starter.render(text, f"labs/{lab}/{name}", cfg.get("exercise_variants") or [])
        except Exception:  # noqa: BLE001  (no starter markers or no starter.py: the course's text)
            pass
        texts.append(text)
    return texts


LISTED_SIMILARITY = 0.5  # pairs at least this similar are listed in similarity.csv, flagged or not


def similarity(students, out, labs, config):
    """Per lab, the Jaccard index of every pair's token 8-grams, without the starter's
    8-grams; a pair is flagged when it is far above the class's own distribution
    (robust z > 3.5, median and MAD of the lab's pairs) and at least 0.8. Returns the
    flagged pairs and those at least LISTED_SIMILARITY (the others only count in the median)."""
    pairs = []
    for lab in labs:
        base = shingles(tokens("\n".join(starter_texts(lab, config[lab]))))
        own = {}
        for s in students:
            folder = out / "students" / s.id / "submission" / lab
            files = [folder / f for f in config[lab]["student_files"]]
            if all(is_plain_file(f) for f in files):
                mine = shingles(tokens("\n".join(f.read_text(errors="replace") for f in files))) - base
                if mine:  # nothing beyond the starter: nothing to compare
                    own[s.id] = mine
        ids = sorted(own)
        # Every pair's index, 8 bytes each (a class of 3,000 has 4.5 million pairs a lab);
        # only the pairs similarity.csv lists are kept as records.
        values = array("d", (len(own[a] & own[b]) / len(own[a] | own[b]) for a, b in combinations(ids, 2)))
        if not values:
            continue
        median = statistics.median(values)
        mad = statistics.median(abs(v - median) for v in values) * 1.4826 or 0.01
        for (a, b), v in zip(combinations(ids, 2), values):
            z = (v - median) / mad
            flagged = v >= 0.8 and z > 3.5
            if flagged or v >= LISTED_SIMILARITY:
                pairs.append({"lab": lab, "student_a": a, "student_b": b, "similarity": round(v, 3),
                              "robust_z": round(z, 1), "flagged": flagged, "class_median": round(median, 3)})
    return pairs


# ---- gathering -----------------------------------------------------------------------------------

def read_json(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def gather(plan, students):
    """One row per student: points and flags per lab, from the grader's results.json."""
    out = Path(plan["out"])
    rows = []
    for s in students:
        home = out / "students" / s.id
        st = read_json(home / "status.json") or {"error": "no result: the task did not finish (killed, or failed "
                                                           "before grading: see slurm/ or the log)"}
        res = read_json(home / "grade" / "results.json")
        row = {"student": s.name, "id": s.id, "source": s.source, "extras": s.extras, "labs": {}, "records": [],
               "submitted": [lab for lab in s.labs if lab in plan["labs"]],
               "status": s.rejected or ("graded" if res and not st.get("error") else st.get("error") or "no results.json"),
               "timed_out": bool(st.get("timed_out")), "seconds": st.get("seconds"), "rejected": bool(s.rejected)}
        if res:
            row["labs"] = res.get("extra_data", {}).get("labs", {})
            records = home / "grade" / "records.jsonl"
            if records.is_file():
                row["records"] = read_records(records)
        rows.append(row)
    return rows


def write_csv(rows, labs, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "id", "source", "status", "total", "max"] +
                   [c for lab in labs for c in (lab, f"{lab} flags")] + ["flags", "not graded (no lab's file)"])
        for r in rows:
            total = sum(x["correctness"] + x["performance"] for x in r["labs"].values())
            maximum = sum(x["max_score"] for x in r["labs"].values())
            cells = []
            for lab in labs:
                x = r["labs"].get(lab)
                cells += [f"{x['correctness'] + x['performance']:g}" if x else "",
                          ";".join(x["flags"]) if x else ("timeout" if r["timed_out"] and lab in r.get("submitted", []) else "")]
            flags = sorted({fl for x in r["labs"].values() for fl in x["flags"]} | ({"timeout"} if r["timed_out"] else set())
                           | ({"rejected"} if r.get("rejected") else set()))
            w.writerow([r["student"], r["id"], r["source"], r["status"], f"{total:g}", f"{maximum:g}"] + cells +
                       [";".join(flags), ";".join(r["extras"])])


def write_similarity(pairs, path):
    keep = sorted((p for p in pairs if p["flagged"] or p["similarity"] >= LISTED_SIMILARITY), key=lambda p: -p["similarity"])
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, ["lab", "student_a", "student_b", "similarity", "robust_z", "class_median", "flagged"])
        w.writeheader()
        w.writerows(keep)


# ---- the report ------------------------------------------------------------------------------------

CSS = """body{font:16px/1.4 system-ui,'DejaVu Sans',sans-serif;margin:24px;color:#222}
h1{font-size:24px}h2{font-size:20px;margin-top:32px}table{border-collapse:collapse}
td,th{border:1px solid #bbb;padding:4px 8px;text-align:left}th{background:#eee}
td.full{background:#c8ecc8}td.part{background:#f6e7b0}td.zero{background:#f3c0c0}td.none{background:#f4f4f4}
.flag{font-size:12px;background:#555;color:#fff;border-radius:3px;padding:0 4px;margin-left:4px;white-space:nowrap}
.note{color:#555;max-width:60em}.roof{display:inline-block;margin:4px;vertical-align:top}"""


def esc(x):
    return html.escape(str(x))


def class_table(rows, labs):
    head = "".join(f"<th>{esc(lab)}</th>" for lab in labs)
    body = []
    for r in rows:
        cells = []
        for lab in labs:
            x = r["labs"].get(lab)
            if not x:
                cells.append('<td class="none">-</td>')
                continue
            got = x["correctness"] + x["performance"]
            kind = "full" if got >= x["max_score"] else "zero" if got == 0 else "part"
            flags = "".join(f'<span class="flag">{esc(fl)}</span>' for fl in x["flags"] if fl != NOT_RUN)
            points = f'{got:g}/{x["max_score"]:g}'
            if NOT_RUN in x["flags"]:  # built, not graded: no points either way
                kind, points = "none", f"built, {NOT_RUN}"
            cells.append(f'<td class="{kind}" title="{esc(x["why"])}">{points}{flags}</td>')
        graded = [x for x in r["labs"].values() if NOT_RUN not in x["flags"]]
        total = sum(x["correctness"] + x["performance"] for x in graded)
        maximum = sum(x["max_score"] for x in graded)
        # A refused archive's whole message (why and the fix: what the student is told).
        status = "" if r["status"] == "graded" else \
            f'<span class="flag">{esc(r["status"] if r.get("rejected") else r["status"][:80])}</span>'
        extras = f'<br><span class="note">not graded: {esc(", ".join(r["extras"][:4]))}</span>' if r["extras"] else ""
        body.append(f"<tr><td>{esc(r['student'])}{status}{extras}</td><td>{f'{total:g}/{maximum:g}' if graded else '-'}</td>"
                    f"{''.join(cells)}</tr>")
    return f'<table id="class"><tr><th>student</th><th>total</th>{head}</tr>{"".join(body)}</table>'


def histogram_svg(values, maximum, width=320, height=140):
    """Points of one lab, one bar per bin (up to 10 bins from 0 to the lab's maximum)."""
    bins = max(1, min(10, int(maximum) or 1))
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int(v / maximum * bins) if maximum else 0)] += 1
    top, bar = max(counts) or 1, (width - 40) / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">']
    for i, c in enumerate(counts):
        h = (height - 40) * c / top
        x = 30 + i * bar
        parts.append(f'<rect x="{x:.1f}" y="{height - 20 - h:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" fill="#4a7ebb">'
                     f'<title>{c} student(s)</title></rect>')
        if c:
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{height - 24 - h:.1f}" font-size="11" text-anchor="middle">{c}</text>')
    parts.append(f'<line x1="30" y1="{height - 20}" x2="{width - 10}" y2="{height - 20}" stroke="#333"/>'
                 f'<text x="30" y="{height - 5}" font-size="11">0</text>'
                 f'<text x="{width - 10}" y="{height - 5}" font-size="11" text-anchor="end">{maximum:g} points</text></svg>')
    return "".join(parts)


def best_kernels(records):
    """Each lab's best kernel at its largest size, as make_plots.py's roofline picks them:
    timed, passed, not a baseline or library pipeline, with FLOPs and bytes."""
    import make_plots  # tools/make_plots.py: which records are the course's kernels
    best = []
    for lab in sorted({r["lab"] for r in records}):
        recs = [r for r in records if r["lab"] == lab and r.get("timed") and r.get("passed")]
        base = baseline_variants(recs)
        kernels = [r for r in recs if r["variant"] not in base and make_plots.is_lab_kernel(r["variant"])
                   and r.get("flops") and r.get("bytes") and r.get("gflops")]
        if kernels:
            best.append(max(make_plots.largest(kernels), key=lambda r: r["gflops"]))
    return best


def roofline_svg(points, bandwidth, peak, box, width=300, height=200):
    """One student's best kernels: GFLOP/s against FLOP/byte, log-log, under the
    class's measured copy bandwidth (and the fastest library GFLOP/s where measured)."""
    (x0, x1), (y0, y1) = box
    def px(v): return 40 + (width - 50) * (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))
    def py(v): return height - 25 - (height - 35) * (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
             f'<rect x="40" y="10" width="{width - 50}" height="{height - 35}" fill="none" stroke="#999"/>']
    if bandwidth:
        knee = peak / bandwidth if peak else x1
        xs = [x0, min(knee, x1)]
        parts.append(f'<polyline fill="none" stroke="#c33" points="' +
                     " ".join(f"{px(x):.1f},{py(max(y0, min(y1, x * bandwidth))):.1f}" for x in xs) + '"/>')
        if peak and knee < x1:
            parts.append(f'<line x1="{px(knee):.1f}" y1="{py(peak):.1f}" x2="{px(x1):.1f}" y2="{py(peak):.1f}" stroke="#c33"/>')
    for r in points:
        x, y = r["flops"] / r["bytes"], r["gflops"]
        parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="#246"><title>{esc(r["lab"])} '
                     f'{esc(r["variant"])}: {y:.0f} GFLOP/s at {x:.3g} FLOP/byte</title></circle>'
                     f'<text x="{px(x) + 5:.1f}" y="{py(y) - 4:.1f}" font-size="10">{esc(r["lab"][:2])}</text>')
    parts.append(f'<text x="40" y="{height - 8}" font-size="10">{x0:.2g}</text>'
                 f'<text x="{width - 10}" y="{height - 8}" font-size="10" text-anchor="end">{x1:.2g} FLOP/byte</text>'
                 f'<text x="2" y="20" font-size="10">{y1:.3g} GFLOP/s</text><text x="2" y="{height - 27}" font-size="10">{y0:.2g}</text>'
                 '</svg>')
    return "".join(parts)


def rooflines(rows):
    every = [r for row in rows for r in row["records"]]
    copies = [r["ceiling_value"] for r in every if r.get("ceiling") == "d2d_copy_gbps" and r.get("ceiling_value")]
    library = [r["gflops"] for r in every if r.get("timed") and r.get("passed") and r.get("gflops")
               and r["variant"] in baseline_variants([r]) and "cublas" in r["variant"]]
    bandwidth = statistics.median(copies) if copies else 0
    peak = max(library) if library else 0
    best = {row["id"]: best_kernels(row["records"]) for row in rows}
    pts = [r for b in best.values() for r in b]
    if not pts:
        return ("<p class=\"note\">No timed kernel records: nothing to draw (a build-only run has none; "
                "the roofline needs the benchmark runs on a GPU).</p>")
    xs = [r["flops"] / r["bytes"] for r in pts] + ([peak / bandwidth] if peak and bandwidth else [])
    ys = [r["gflops"] for r in pts] + ([peak] if peak else [])
    box = ((min(xs) / 3, max(xs) * 3), (min(ys) / 3, max(ys) * 3))
    ceiling = (f"copy bandwidth {bandwidth:.0f} GB/s (median of the records)" if bandwidth else "no copy bandwidth measured") + \
              (f", fastest library {peak:.0f} GFLOP/s" if peak else "")
    figs = [f'<div class="roof"><div>{esc(row["student"])}</div>{roofline_svg(best[row["id"]], bandwidth, peak, box)}</div>'
            for row in rows if best[row["id"]]]
    return f'<p class="note">Red: the roof ({esc(ceiling)}). Points: each lab\'s best kernel at its largest size.</p>' + \
        "".join(figs)


def write_report(plan, rows, pairs, labs, path):
    shown = [lab for lab in labs if any(lab in r["labs"] for r in rows)]
    dist = []
    for lab in shown:
        graded = [r["labs"][lab] for r in rows if lab in r["labs"] and NOT_RUN not in r["labs"][lab]["flags"]]
        if not graded:
            dist.append(f'<div class="roof">{esc(lab)}: no submission graded on a GPU</div>')
            continue
        got = [x["correctness"] + x["performance"] for x in graded]
        maximum = max(x["max_score"] for x in graded)
        dist.append(f'<div class="roof"><div>{esc(lab)} ({len(got)} submitted, median {statistics.median(got):g})</div>'
                    f'{histogram_svg(got, maximum)}</div>')
    flagged = [p for p in pairs if p["flagged"]]
    names = {r["id"]: r["student"] for r in rows}
    # Token-identical files (similarity 1) as groups, not as every pair among them.
    groups = {}
    for p in flagged:
        if p["similarity"] >= 1.0:
            mine = groups.setdefault(p["lab"], [])
            touching = [g for g in mine if p["student_a"] in g or p["student_b"] in g]
            merged = set().union({p["student_a"], p["student_b"]}, *touching)
            mine[:] = [g for g in mine if g not in touching] + [merged]
    close = [p for p in flagged if p["similarity"] < 1.0]
    sim_rows = "".join(f"<tr><td>{esc(lab)}</td><td colspan=\"2\">{len(g)} students, token-identical: "
                       f"{esc(', '.join(sorted(names[s] for s in g)))}</td><td>1.00</td><td></td></tr>"
                       for lab, gs in sorted(groups.items()) for g in sorted(gs, key=len, reverse=True))
    sim_rows += "".join(f"<tr><td>{esc(p['lab'])}</td><td>{esc(names[p['student_a']])}</td><td>{esc(names[p['student_b']])}</td>"
                        f"<td>{p['similarity']:.2f}</td><td>{p['class_median']:.2f}</td></tr>" for p in close[:200])
    mode = "build-only: no GPU, compile errors only, the GPU steps not run" if plan["no_gpu"] else "graded on the GPU"
    doc = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>cudalabs class report</title><style>{CSS}</style></head><body>
<h1>Class report</h1>
<p class="note">{len(rows)} submissions; seed {plan['seed']} for all; course revision {esc(plan['revision'])}; {esc(mode)};
{esc(plan['started'])}. Points per lab (correctness + performance); hover a cell for the reason. Each student's own
results.json, summary.txt and logs: students/ID/grade/.</p>
<h2>Class table</h2>
{class_table(rows, shown)}
<h2>Points per lab</h2>
{''.join(dist)}
<h2>Best kernels on the roofline</h2>
{rooflines(rows)}
<h2>Similar submissions</h2>
<p class="note">A flag for the instructor to look at, never a verdict: students may share a common approach,
and short kernel files leave little room to differ. Compared: each lab's kernel files as tokens (comments, strings
and layout dropped, identifiers renamed), as sets of 8-token sequences without those of the starter code every
student was given; a pair is listed when its Jaccard index is at least 0.8 and far above the class's median for
that lab (robust z &gt; 3.5). {len(flagged)} pair(s) flagged: token-identical files as groups, then the other close
pairs{' (the first 200)' if len(close) > 200 else ''}; every pair in similarity.csv.</p>
<table><tr><th>lab</th><th>student</th><th>student</th><th>similarity</th><th>class median</th></tr>{sim_rows}</table>
</body></html>
"""
    path.write_text(doc)


# ---- main ----------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description="Grade a whole class: one submission per student, one seed for all.",
                                epilog="Exit codes: 0 every submission graded, 1 some could not be, 2 bad usage.")
    p.add_argument("submissions", type=Path, nargs="?", help="one folder or zip per student (or a Gradescope export)")
    p.add_argument("--out", type=Path, help="output folder (default: BUILD/grade-class/<UTC time>)")
    p.add_argument("--build", default="build", help="the course build folder, for the default --out and --cache")
    p.add_argument("--cache", type=Path, help="the build cache (default: BUILD/grade-class-cache)")
    p.add_argument("--seed", type=int, help="the one input seed for every submission (default: a fresh one, printed)")
    p.add_argument("--labs", help="only these labs: 01,04_reduction")
    p.add_argument("--arch", default="auto", help="gpu_arch of the builds (default: auto)")
    p.add_argument("--no-gpu", action="store_true", help="build-only: compile errors per lab, GPU steps not run "
                   "(the default where nvidia-smi finds no GPU; with --slurm: no --gres)")
    p.add_argument("--no-sanitize", action="store_true", help="pass --no-sanitize to grade.py")
    p.add_argument("--no-sandbox", dest="sandbox", action="store_false", default=True,
                   help="build and run the submissions WITHOUT the sandbox (bubblewrap): their code gets your rights; "
                        "passed to grade.py, warned on every run and recorded in each results.json")
    p.add_argument("--correctness-only", action="store_true", help="pass --correctness-only to grade.py")
    p.add_argument("--timeout", type=float, default=7200, help="seconds one submission's grading may take (default 7200)")
    p.add_argument("--jobs", type=int, help="CPU workers (default: the CPU count)")
    p.add_argument("--max-gpus", type=int, metavar="K",
                   help="grade on at most K GPUs at once (here: the first K; with --slurm: at most K array tasks "
                        "at once, --array=0-N%%K); default: every GPU here, no cap under Slurm")
    p.add_argument("--bench-lock", type=Path, default=DEFAULT_BENCH_LOCK, metavar="PATH",
                   help="the host-wide lock file of the benchmark runs, on a node-local file system (default "
                        f"{DEFAULT_BENCH_LOCK}; under Slurm with a private /tmp per job, a path every job on a node "
                        "sees, e.g. /var/tmp/cudalabs-bench.lock)")
    p.add_argument("--slurm", action="store_true", help="one Slurm job array, one task per student; waits for it")
    p.add_argument("--partition", help="--slurm: the partition")
    p.add_argument("--account", help="--slurm: the account")
    p.add_argument("--time", help="--slurm: each task's time limit, e.g. 01:00:00")
    p.add_argument("--cpus-per-task", type=int, default=2, help="--slurm: CPUs per task (default 2)")
    p.add_argument("--sbatch-arg", action="append", default=[], help="--slurm: one more #SBATCH line, e.g. --qos=short")
    p.add_argument("--gather", type=Path, metavar="OUT",
                   help="only gather again an earlier run's OUT (after re-running some tasks): class.csv, report.html")
    p.add_argument("--plan", type=Path, help=argparse.SUPPRESS)  # a Slurm task: the class's plan.json
    p.add_argument("--task", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.task is None and not args.gather and not args.submissions:
        p.error("name the submissions folder: tools/grade_class.py SUBMISSIONS")
    if args.timeout <= 0 or (args.jobs is not None and args.jobs < 1):
        p.error("--timeout and --jobs must be > 0")
    if args.max_gpus is not None and args.max_gpus < 1:
        p.error(f"--max-gpus {args.max_gpus}: at least 1 GPU (leave it out to use every GPU)")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.task is not None:  # one Slurm array task
        plan = json.loads(args.plan.read_text())
        st = grade_student(plan, args.task)
        print(json.dumps(st))
        return 0 if not st["error"] else 1
    if args.gather:
        plan = read_json(args.gather / "plan.json")
        if not plan:
            print(f"grade-class: error: {args.gather}/plan.json: not a grade-class output folder", file=sys.stderr)
            return 2
        return finish(plan, [Student(**s) for s in plan["students"]], load_course()[1], time.monotonic())
    try:
        labs, config = load_course()
        try:
            sandbox.Limits()  # reads CUDALABS_DISK_LIMIT_GIB: a bad value is said before anything runs
        except ValueError as e:
            raise ClassError(str(e)) from None
        host_links = benchlock.host_link_labs(config)
        chosen = select(labs, args.labs)
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        out = (args.out or Path(args.build) / "grade-class" / stamp).resolve()
        out.mkdir(parents=True, exist_ok=True)
        students = discover(args.submissions.resolve(), out, labs, config)
    except (ClassError, GradeError) as e:
        print(f"grade-class: error: {e}", file=sys.stderr)
        return 2
    cpus = args.jobs or os.cpu_count() or 1
    gpus = [] if args.no_gpu or args.slurm else lanes(gpu_ids(), args.max_gpus)
    no_gpu = args.no_gpu or (not args.slurm and not gpus)
    if no_gpu and not args.no_gpu:
        print(f"grade-class: {why_no_gpu()}: build-only (compile errors per lab; the GPU steps not run)")
    wanted = {lab for s in students for lab in s.labs if lab in chosen}
    plan = {"out": str(out), "seed": args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31),
            "labs": chosen, "arch": args.arch, "no_gpu": no_gpu, "timeout": args.timeout,
            "cache": str((args.cache or Path(args.build) / "grade-class-cache").resolve()),
            "revision": course_revision(), "started": stamp,
            # Each builder builds common/ once: few of them, each with several compile jobs.
            "builders": max(1, min(len(wanted) * 4, cpus // 4)), "jobs": max(1, min(cpus, 4)),
            "sandbox": args.sandbox, "max_gpus": args.max_gpus,
            "bench_lock": str(args.bench_lock), "host_link_labs": host_links,
            "grade_args": (["--no-sanitize"] if args.no_sanitize else []) + ([] if args.sandbox else ["--no-sandbox"]) +
                          (["--correctness-only"] if args.correctness_only else []) +
                          ["--parallel", str(args.cpus_per_task if args.slurm else max(1, cpus // max(1, len(gpus))))],
            "students": [asdict(s) for s in students]}
    (out / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    print(f"grade-class: seed {plan['seed']} for every submission; output in {out}", flush=True)
    start = time.monotonic()
    try:
        if args.slurm:
            run_slurm(plan, args, len(students))
        else:
            run_local(plan, students, cpus)
    except ClassError as e:
        print(f"grade-class: error: {e}", file=sys.stderr)
        return 2
    return finish(plan, students, config, start)


def finish(plan, students, config, start):
    """Gathers every student's results: class.csv, similarity.csv, report.html."""
    out, chosen = Path(plan["out"]), plan["labs"]
    rows = gather(plan, students)
    pairs = similarity(students, out, chosen, config)
    shown = [lab for lab in chosen if any(lab in s.labs for s in students)]
    write_csv(rows, shown, out / "class.csv")
    write_similarity(pairs, out / "similarity.csv")
    write_report(plan, rows, pairs, chosen, out / "report.html")
    # A refused archive is graded: zero points, and the student is told why (its row).
    rejected = [r for r in rows if r.get("rejected")]
    failed = [r for r in rows if r["status"] != "graded" and not r.get("rejected")]
    print(f"grade-class: {len(rows) - len(failed)}/{len(rows)} submissions graded in {time.monotonic() - start:.0f} s; "
          f"{sum(p['flagged'] for p in pairs)} similar pair(s) flagged"
          + (f"; {len(rejected)} archive(s) rejected (zero points, the reason in their row)" if rejected else ""))
    for r in failed[:20]:
        print(f"  not graded: {r['id']}: {r['status']}")
    print(f"class.csv, similarity.csv, report.html and students/ in {out}/")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
