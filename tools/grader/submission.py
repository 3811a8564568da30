"""A student's submission, built: which lab folders it holds, the lab's
student_files taken from each (every other file ignored and named), the include
check (tools/grader/sources.py), the build of those files in a build of the
course tree made apart (-Dsubmission), in the sandbox, and the import audit of
the objects (tools/grader/audit.py). prebuilt_submission takes labs already
built that way (tools/grade_class.py's build cache)."""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from . import audit, sandbox, sources
from .config import ROOT, GradeError
from .process import run_untrusted, tail


def submitted_labs(submission, labs):
    if not submission.is_dir():
        raise GradeError(f"--submission {submission}: no such folder")
    folders = [submission] if submission.name in labs else sorted(d for d in submission.iterdir() if d.is_dir())
    unknown = [d.name for d in folders if d.name not in labs]
    if unknown or not folders:
        raise GradeError(f"--submission {submission}: {'folder ' + unknown[0] + ' is not a lab' if unknown else 'holds no lab folder'}. "
                         f"Put each lab in a folder named as in the course, e.g. {submission}/{labs[0]}/ (labs: {', '.join(labs)})")
    return folders


def take_student_files(folder, cfg, dest):
    """Copies the lab's student files from the submitted folder into dest/LAB/.
    Returns (error or None, the files that were ignored)."""
    wanted = cfg["student_files"]
    given = sorted(str(f.relative_to(folder)) for f in folder.rglob("*")
                   if f.is_file() and "__pycache__" not in f.parts and not f.name.startswith("."))
    ignored = [f for f in given if f not in wanted]
    if not wanted:
        # A lab with no student files (none today: each lab has some) would have
        # nothing of the student's built into it, so the course's own build of it
        # is checked, as when the course tree is graded. A "does not build" here
        # zeroed such labs in every submission (a starter kit graded on the H100,
        # git 20c1eb4).
        return None, ignored
    missing = [f for f in wanted if f not in given]
    if missing:
        return (f"the submission lacks {', '.join(missing)} (the lab's kernel files are {', '.join(wanted)}; "
                f"submit all of them, edited or not)"), ignored
    target = dest / folder.name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for f in wanted:
        shutil.copyfile(folder / f, target / f)
    return None, ignored


def build_submission(folders, config, work, arch, jobs, log, untrusted):
    """Builds the submitted labs in a build of the course tree made apart, with
    -Dsubmission pointing at the student files, in the sandbox (the compiler runs
    the student's preprocessor directives and templates). Returns ({lab: build
    error or None}, {lab: ignored files}, {lab: why the include check or the
    import audit rejected it, or None})."""
    student, build = work / "student", work / "build"
    errors, ignored, rejected = {}, {}, {}
    for folder in folders:
        errors[folder.name], ignored[folder.name] = take_student_files(folder, config[folder.name], student)
        if not errors[folder.name] and config[folder.name]["student_files"]:
            rejected[folder.name] = joined(sources.problems(student / folder.name, config[folder.name]["student_files"]))
    building = [f for f in folders if not errors[f.name] and not rejected.get(f.name)]

    def sandboxed(what, cmd, timeout):
        return run_untrusted(what, cmd, timeout, log, untrusted, writable=[work], limits=sandbox.Limits.for_build())

    setup = ["meson", "setup"] + (["--reconfigure"] if (build / "build.ninja").exists() else [])
    r = sandboxed("meson setup", setup + [str(build), str(ROOT), f"-Dgpu_arch={arch}",
                                          f"-Dsubmission={student.resolve()}"], 900)
    if r.rc != 0:
        return {f.name: "meson setup failed:\n" + tail(r.output, 25) for f in folders}, ignored, rejected
    ninja = ["ninja", "-C", str(build)] + (["-j", str(jobs)] if jobs else [])
    targets = [f"labs/{f.name}/{f.name}" for f in building]
    if len(targets) > 1:
        # Every lab in one ninja run first, -k 0 (go on past a lab that fails): one
        # lab at a time leaves most cores idle (a lab is 2-3 compile units); on the
        # H100's 16 cores a whole starter tree did not finish building in 230 s.
        # The per-lab runs below then only confirm, or give each lab its own error.
        sandboxed("build all labs", ninja + ["-k", "0"] + targets, 3600)
    for folder in building:
        r = sandboxed(f"build {folder.name}", ninja + [f"labs/{folder.name}/{folder.name}"], 1800)
        errors[folder.name] = None if r.rc == 0 else tail(r.output, 25)
        if not errors[folder.name]:
            rejected[folder.name] = audit_text(build, folder.name)
    return errors, ignored, rejected


def joined(found):
    """A rejection's one report line: its first three problems, and how many more; None for none."""
    if not found:
        return None
    return "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")


def audit_text(build, lab):
    """None, or why the import audit (tools/grader/audit.py, tools/allowed_imports.toml)
    rejects the lab's student objects."""
    return joined(audit.audit_lab(build, lab))


def student_files_digest(folder, files):
    """sha256 over a lab's student files, names and contents: what a prebuilt lab was built from."""
    h = hashlib.sha256()
    for name in files:
        h.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return h.hexdigest()


def prebuilt_submission(folders, config, prebuilt):
    """build_submission's answer for labs already built elsewhere (tools/grade_class.py
    builds each distinct set of student files once, then grades every student who
    submitted it): PREBUILT/labs/LAB/ holds the program LAB, or build-error.txt, the
    symbol audit's rejected.txt if it rejected the lab, and student-files.sha256, which
    must be the digest of the student's own files (else the program is someone else's)."""
    errors, ignored, rejected = {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="cudalabs-prebuilt-") as tmp:
        for folder in folders:
            lab, here = folder.name, prebuilt / "labs" / folder.name
            errors[lab], ignored[lab] = take_student_files(folder, config[lab], Path(tmp))
            if errors[lab]:
                continue
            digest = here / "student-files.sha256"
            if not digest.is_file() or digest.read_text().strip() != student_files_digest(folder, config[lab]["student_files"]):
                errors[lab] = f"{here} was not built from this submission's files (student-files.sha256 differs)"
            elif (here / "build-error.txt").is_file():
                errors[lab] = (here / "build-error.txt").read_text()
            elif (here / "rejected.txt").is_file():
                rejected[lab] = (here / "rejected.txt").read_text()
    return errors, ignored, rejected

