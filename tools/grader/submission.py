"""A student's submission, built: which lab folders it holds, the lab's
student_files taken from each (every other file ignored and named), the include
check (tools/grader/sources.py), the build of those files in a build of the
course tree made apart (-Dsubmission), in the sandbox, and the import audit of
the objects (tools/grader/audit.py). prebuilt_submission takes labs already
built that way (tools/grade_class.py's build cache)."""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from . import audit, sandbox, sources
from .config import ROOT, GradeError
from .process import run_untrusted, tail


def submitted_labs(submission, labs):
    if not submission.is_dir():
        raise GradeError(f"--submission {submission}: no such folder")
    if submission.name not in labs:
        links = sorted(d.name for d in submission.iterdir() if d.is_symlink() and d.is_dir())
        if links:
            # Followed, a link would have the grader, with its rights, read another folder
            # of the machine (another student's submission, the instructor's tree).
            raise GradeError(f"--submission {submission}: {shown(links[0])} is a symbolic link to a folder: the grader "
                             f"reads only plain folders and files of a submission (not a plain file). "
                             f"Fix: copy the folder's files in (cp -rL)")
    folders = [submission] if submission.name in labs else sorted(d for d in submission.iterdir() if d.is_dir())
    unknown = [d.name for d in folders if d.name not in labs]
    if unknown or not folders:
        raise GradeError(f"--submission {submission}: {'folder ' + unknown[0] + ' is not a lab' if unknown else 'holds no lab folder'}. "
                         f"Put each lab in a folder named as in the course, e.g. {submission}/{labs[0]}/ (labs: {', '.join(labs)})")
    return folders


# What a lab folder of a submission may hold, read with the grader's rights
# (outside the sandbox): plain files, read without following a link.
MAX_FILE_BYTES = 4 << 20   # a kernel file of the course is at most ~100 KB
MAX_LISTED = 5000          # entries of a lab folder looked at to name the ignored ones
MAX_DEPTH = 8
MAX_NAMED = 20             # ignored files named in a report, then "and N more"


class NotPlain(Exception):
    """A submitted file that is a link, a special file or too large: the message says which and why."""


def shown(name):
    """A submitted name as a report shows it: odd characters (a newline, a terminal's
    escape) written out, so a file name cannot forge a line of the report."""
    return name if name.isprintable() and len(name) <= 120 else ascii(name[:120])


def file_kind(mode):
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode)
            else "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device node" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a plain file")


def read_plain(folder, name):
    """The bytes of folder/name, where name may hold folders: no component is followed
    if it is a link (each is opened relative to the one before, O_NOFOLLOW), the file
    must be a regular file of at most MAX_FILE_BYTES. NotPlain otherwise, FileNotFoundError
    when it is not there. The folder itself is the caller's (the submission's lab folder,
    checked by submitted_labs)."""
    parts = Path(name).parts
    if not parts or any(p in ("..", "/") for p in parts):
        raise NotPlain(f"{shown(name)}: not a plain name")
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            last = i == len(parts) - 1
            if (last and not stat.S_ISREG(st.st_mode)) or (not last and not stat.S_ISDIR(st.st_mode)):
                target = ""
                if stat.S_ISLNK(st.st_mode):
                    target = f" (to {shown(os.readlink(part, dir_fd=fd))})"
                raise NotPlain(f"{shown('/'.join(parts[:i + 1]))} is {file_kind(st.st_mode)}{target}")
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | (0 if last else os.O_DIRECTORY)
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as e:  # replaced by a link since the stat (ELOOP)
                raise NotPlain(f"{shown('/'.join(parts[:i + 1]))} changed while it was read ({e.strerror})") from None
            os.close(fd)
            fd = nxt
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotPlain(f"{shown(name)} is {file_kind(st.st_mode)}")
        if st.st_size > MAX_FILE_BYTES:
            raise NotPlain(f"{shown(name)} is {st.st_size} bytes, more than a kernel file's limit of "
                           f"{MAX_FILE_BYTES} bytes")
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = None
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise NotPlain(f"{shown(name)} grew past a kernel file's limit of {MAX_FILE_BYTES} bytes while it was read")
        return data
    finally:
        if fd is not None:
            os.close(fd)


def is_plain_file(path):
    """Whether path is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def plain_problem(name, why):
    """The rejection line for a student file that is not a plain file."""
    return (f"{why}: the grader reads only plain files of the submission and follows no link "
            f"(not a plain file). Fix: put the file itself in the folder, as a regular file "
            f"of at most {MAX_FILE_BYTES >> 20} MiB")


def listed_files(folder):
    """The names of what a lab folder holds (relative, '/'-separated), links and special
    files included but never followed; at most MAX_LISTED entries and MAX_DEPTH folders
    deep (then the last name says how the listing stopped)."""
    found, todo, seen = [], [(Path(folder), "", 0)], 0
    while todo:
        path, prefix, depth = todo.pop()
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            seen += 1
            if seen > MAX_LISTED:
                return sorted(found) + [f"... (the folder holds more than {MAX_LISTED} entries: not listed further)"]
            if e.name.startswith(".") or e.name == "__pycache__":
                continue
            rel = prefix + e.name
            if e.is_dir(follow_symlinks=False):
                if depth < MAX_DEPTH:
                    todo.append((Path(e.path), rel + "/", depth + 1))
            else:
                found.append(rel)
    return sorted(found)


def take_student_files(folder, cfg, dest):
    """Copies the lab's student files from the submitted folder into dest/LAB/ (dest
    None: only reads them), each read as a plain file (read_plain). Returns (error or
    None, the files that were ignored, why the files were refused or None)."""
    wanted = cfg["student_files"]
    given = listed_files(folder)
    ignored = [shown(f) for f in given if f not in wanted]
    if len(ignored) > MAX_NAMED:
        ignored = ignored[:MAX_NAMED] + [f"and {len(ignored) - MAX_NAMED} more"]
    if not wanted:
        # A lab with no student files (none today: each lab has some) would have
        # nothing of the student's built into it, so the course's own build of it
        # is checked, as when the course tree is graded. A "does not build" here
        # zeroed such labs in every submission (a starter kit graded on the H100,
        # git 20c1eb4).
        return None, ignored, None
    contents, missing, refused = {}, [], []
    for f in wanted:
        try:
            contents[f] = read_plain(folder, f)
        except FileNotFoundError:
            missing.append(f)
        except NotPlain as e:
            refused.append(plain_problem(f, str(e)))
    if refused:
        return None, ignored, joined(refused)
    if missing:
        return (f"the submission lacks {', '.join(missing)} (the lab's kernel files are {', '.join(wanted)}; "
                f"submit all of them, edited or not)"), ignored, None
    if dest is not None:
        target = dest / folder.name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for f, data in contents.items():
            (target / f).parent.mkdir(parents=True, exist_ok=True)
            (target / f).write_bytes(data)
    return None, ignored, None


def build_submission(folders, config, work, arch, jobs, log, untrusted):
    """Builds the submitted labs in a build of the course tree made apart, with
    -Dsubmission pointing at the student files, in the sandbox (the compiler runs
    the student's preprocessor directives and templates). Returns ({lab: build
    error or None}, {lab: ignored files}, {lab: why the include check or the
    import audit rejected it, or None})."""
    student, build = work / "student", work / "build"
    errors, ignored, rejected = {}, {}, {}
    for folder in folders:
        errors[folder.name], ignored[folder.name], refused = take_student_files(folder, config[folder.name], student)
        if refused:
            rejected[folder.name] = refused
        elif not errors[folder.name] and config[folder.name]["student_files"]:
            rejected[folder.name] = joined(sources.problems(student / folder.name, config[folder.name]["student_files"]))
    building = [f for f in folders if not errors[f.name] and not rejected.get(f.name)]

    def sandboxed(what, cmd, timeout):
        return run_untrusted(what, cmd, timeout, log, untrusted, writable=[work], limits=sandbox.Limits.for_build(),
                             env=sources.ASSEMBLER_ENV)

    fresh_assembler_record(build)
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
            rejected[folder.name] = audit_text(build, folder.name, assembled=True)
    return errors, ignored, rejected


def joined(found):
    """A rejection's one report line: its first three problems, and how many more; None for none."""
    if not found:
        return None
    return "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")


def audit_text(build, lab, assembled=False):
    """None, or why the import audit (tools/grader/audit.py, tools/allowed_imports.toml)
    rejects the lab's student objects; assembled: also what their assembly read
    (sources.assembler_reads: a build made with sources.ASSEMBLER_ENV)."""
    found = sources.assembler_reads(student_objects(build, lab)) if assembled else []
    return joined(found + audit.audit_lab(build, lab))


def student_objects(build, lab):
    """{"libLAB_kernels.a(kernels.cu.o)": the object's path in the build} for every
    member of the lab's student archives (meson keeps them in ARCHIVE.p/; a lab's own
    custom command, such as lab 31's, elsewhere in the lab's folder)."""
    lab_dir, found = Path(build) / "labs" / lab, {}
    for archive in audit.student_archives(build, lab):
        for member in audit.tool("ar", "t", str(archive)).split():
            name = Path(member).name
            here = lab_dir / (archive.name + ".p") / name
            if not here.is_file():
                here = next((p for p in sorted(lab_dir.rglob(name)) if p.is_file()), here)
            found[f"{archive.name}({name})"] = here
    return found


def fresh_assembler_record(build):
    """A build folder made before the grader recorded what the assembler read has
    objects without records, which ninja would not make again: it is started afresh."""
    stamp = Path(build) / "cudalabs-assembler-record"
    if Path(build).exists() and not stamp.is_file():
        shutil.rmtree(build)
    Path(build).mkdir(parents=True, exist_ok=True)
    stamp.write_text("objects of this build are assembled with tools/grader/asm/as (tools/grader/sources.py)\n")


def student_files_digest(folder, files):
    """sha256 over a lab's student files, names and contents: what a prebuilt lab was built from."""
    h = hashlib.sha256()
    for name in files:
        h.update(name.encode() + b"\0" + read_plain(folder, name) + b"\0")
    return h.hexdigest()


def prebuilt_submission(folders, config, prebuilt):
    """build_submission's answer for labs already built elsewhere (tools/grade_class.py
    builds each distinct set of student files once, then grades every student who
    submitted it): PREBUILT/labs/LAB/ holds the program LAB, or build-error.txt, the
    symbol audit's rejected.txt if it rejected the lab, and student-files.sha256, which
    must be the digest of the student's own files (else the program is someone else's)."""
    errors, ignored, rejected = {}, {}, {}
    for folder in folders:
        lab, here = folder.name, prebuilt / "labs" / folder.name
        errors[lab], ignored[lab], refused = take_student_files(folder, config[lab], None)
        if refused:
            rejected[lab] = refused
        if errors[lab] or refused:
            continue
        digest = here / "student-files.sha256"
        if not digest.is_file() or digest.read_text().strip() != student_files_digest(folder, config[lab]["student_files"]):
            errors[lab] = f"{here} was not built from this submission's files (student-files.sha256 differs)"
        elif (here / "build-error.txt").is_file():
            errors[lab] = (here / "build-error.txt").read_text()
        elif (here / "rejected.txt").is_file():
            rejected[lab] = (here / "rejected.txt").read_text()
    return errors, ignored, rejected

