"""The autograder's side of the bridge: in Gradescope's container (run_autograder)
or on a GitHub Classroom runner. No GPU needed here.

  1. the student's files: each lab folder of the assignment, at any depth, or the
     kernel files loose (tools/grade_class.py's normalise: as `make grade-class`
     reads an export);
  2. a compile check, here, in seconds: tools/grade.py --build-only (compile
     errors per lab, the lab named); when no lab compiles, that is the answer
     and the GPU host is not asked;
  3. the labs' kernel files (nothing else) as one .tar.gz over SSH to the GPU
     host, with the autograder's own key: `ssh HOST grade ASSIGNMENT STUDENT`,
     which the host's forced command grades (host.py);
  4. Gradescope's results.json from the host's answer; a host that is down,
     busy past the time limit, refusing the key or the archive gives a
     results.json that says so and what to do.

Exit codes: 0 the GPU host graded it; 1 results.json says why it was not graded
(compile errors, the host); 2 bad usage (a missing key, a bad option).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import archive
import results
from grade_class import normalise
from grader.config import ROOT, GradeError, lab_names, load_config, select
from host import STUDENT

SSH_UNREACHABLE = re.compile(r"Connection refused|timed out|No route to host|Could not resolve|Name or service not known|"
                             r"Network is unreachable|Connection closed by|Connection reset")


class UsageError(Exception):
    """Bad options or files of the autograder itself: exit 2."""


def student_id(args):
    """--student, or `gradescope-<user id>` of the first submitter in Gradescope's
    submission_metadata.json; checked as the host checks it. The user id, not the
    e-mail: a student can change the address on their account, and a new address
    would start a new daily limit and a new queue slot on the GPU host."""
    if args.student:
        sid = args.student
    else:
        try:
            meta = json.loads(Path(args.metadata).read_text())
            user = meta["users"][0]
            uid = user["id"]
        except (OSError, ValueError, AttributeError, KeyError, IndexError, TypeError) as e:
            raise UsageError(f"--metadata {args.metadata}: cannot read the submitter's user id from Gradescope's "
                             f"submission metadata ({e!r}); or give --student ID") from None
        if isinstance(uid, bool) or not isinstance(uid, (int, str)) or not str(uid).isdigit():
            raise UsageError(f"--metadata {args.metadata}: the submitter's user id {uid!r} is not a number; "
                             f"or give --student ID")
        sid = f"gradescope-{uid}"
    if not STUDENT.fullmatch(sid):
        raise UsageError(f"student id {sid!r}: letters, digits and . _ - @ only (at most 128)")
    return sid


def private_key(path, tmp):
    """A copy of the key that ssh accepts (mode 0600: unpacked zips lose it); UsageError
    when it is missing or needs a passphrase (the autograder cannot type one)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"--key {path}: no such file (the autograder's private key: make gradescope-autograder "
                         f"KEY=... puts it in the package)")
    copy = tmp / "key"
    shutil.copyfile(path, copy)
    os.chmod(copy, 0o600)
    r = subprocess.run(["ssh-keygen", "-y", "-P", "", "-f", str(copy)], capture_output=True, text=True)
    if r.returncode != 0:
        raise UsageError(f"--key {path}: not a private key that opens without a passphrase "
                         f"({r.stderr.strip() or 'ssh-keygen -y failed'}); make one with "
                         f"ssh-keygen -t ed25519 -N '' -f cudalabs_bridge")
    return copy


def compile_check(submission, labs, args, tmp):
    """grade.py --build-only on the student's files: (results.json, labs that built)."""
    course_build = tmp / "no-course-build"  # build-only needs no course build; grade.py wants a folder
    course_build.mkdir()
    out = tmp / "compile-check"
    cmd = [sys.executable, str(ROOT / "tools" / "grade.py"), "--build-only", "--submission", str(submission),
           "--labs", ",".join(labs), "--out", str(out), "--build", str(course_build), "--no-sandbox"]
    cmd += ["--arch", args.arch] if args.arch else []
    print(f"bridge: compile check of {', '.join(labs)} (no GPU needed)", flush=True)
    # --no-sandbox: nothing built here runs, and nothing here is trusted: the GPU host
    # builds again, in its sandbox, and its verdict is the grade.
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/local/cuda/bin"))
    if not (out / "results.json").is_file():
        raise UsageError("the compile check failed before building anything:\n" + (r.stdout + r.stderr)[-2000:])
    answer = results.normalised(json.loads((out / "results.json").read_text()))
    built = [lab for lab, info in answer.get("extra_data", {}).get("labs", {}).items() if info["status"] == "built"]
    return answer, built


def ssh_command(args, key):
    known_hosts = Path(args.known_hosts)
    if not known_hosts.is_file():
        raise UsageError(f"--known-hosts {known_hosts}: no such file (the GPU host's public host key: "
                         f"ssh-keyscan -p {args.port} {args.host} > known_hosts, then check its fingerprint)")
    return ["ssh", "-i", str(key), "-p", str(args.port), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}", "-o", "LogLevel=ERROR",
            "-o", f"ConnectTimeout={args.connect_timeout}", "-o", "ServerAliveInterval=30",
            "-o", "ServerAliveCountMax=4", "-T", f"{args.user}@{args.host}", "grade", args.assignment]


def ask_host(cmd, student, data, timeout):
    """Sends the archive; returns (results.json, graded) — an answer that says why when
    the host could not be reached, refused, timed out, or said nothing readable."""
    where = cmd[-3]
    try:
        r = subprocess.run(cmd + [student], input=data, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return results.message(f"The GPU host {where} did not answer within {timeout:g} s (the autograder's time "
                               f"limit): it is busy or down. Nothing was graded; submit again later, or ask "
                               f"your instructor."), False
    err = r.stderr.decode(errors="replace").strip()
    sys.stderr.write(err + ("\n" if err else ""))
    if r.returncode == 255:
        if "Permission denied" in err:
            why = ("refused the autograder's key: it is not in the host's authorized_keys (or not for this user). "
                   "Instructor: add the key's line with its forced command, as docs/instructor-guide.md shows")
        elif "Host key verification failed" in err or "IDENTIFICATION HAS CHANGED" in err:
            why = ("did not prove its identity: its host key is not the one in the autograder's known_hosts. "
                   "Instructor: rebuild the package with the host's current key (KNOWN_HOSTS=)")
        elif SSH_UNREACHABLE.search(err):
            why = "cannot be reached (down, or a wrong host name or port)"
        else:
            why = "could not be reached over SSH"
        return results.message(f"The GPU host {where} {why}. ssh said: {err[-500:].rstrip('.') or 'nothing'}. "
                               f"Nothing was graded; submit again later."), False
    try:
        answer = results.normalised(json.loads(r.stdout.decode(errors="replace")))
    except ValueError as e:
        return results.message(f"The GPU host {where} answered something that is not results.json ({e}; exit "
                               f"{r.returncode}): {r.stdout[:300]!r} {err[-300:]}"), False
    return answer, r.returncode == 0 and answer.get("extra_data", {}).get("bridge", {}).get("graded", False)


def write_outputs(answer, args):
    problems = results.problems(answer)
    if problems:  # never hand Gradescope a file it cannot read
        answer = results.message("the bridge made a results.json that is not Gradescope's format: " + "; ".join(problems))
    path = Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(answer, indent=2) + "\n")
    if args.classroom:
        with open(args.classroom, "a") as f:  # GitHub Actions' $GITHUB_OUTPUT: the step's `result`
            f.write(f"result={results.classroom_record(answer)}\n")
    print(f"bridge: {path}: {answer['score']:g} points", flush=True)
    print(answer["output"], flush=True)


def submit(args):
    """The whole autograder step; returns the exit code."""
    try:
        with tempfile.TemporaryDirectory(prefix="cudalabs-bridge-") as t:
            tmp = Path(t)
            answer, graded = submit_in(args, tmp)
    except UsageError as e:
        print(f"bridge: error: {e}", file=sys.stderr)
        write_outputs(results.message(f"The autograder is misconfigured: {e}"), args)
        return 2
    write_outputs(answer, args)
    return 0 if graded else 1


def submit_in(args, tmp):
    try:
        all_labs = lab_names(ROOT)
        labs = select(all_labs, args.labs)
        config = load_config(ROOT / "tools" / "grading.toml", all_labs)
    except GradeError as e:
        raise UsageError(str(e)) from None
    student = student_id(args)
    key = private_key(args.key, tmp)
    cmd = ssh_command(args, key)
    source = Path(args.submission)
    if not source.is_dir():
        raise UsageError(f"--submission {source}: no such folder")
    # A whole course tree (a GitHub Classroom repository, a GitHub upload to Gradescope):
    # its labs/ folder only; tests/broken/ holds lab folders too, with broken kernels.
    if any((source / "labs" / lab).is_dir() for lab in labs):
        source = source / "labs"
    # A link could point at anything this container can read (the autograder's key, for
    # one) and the compiler would echo it into the results: only the files themselves.
    links = sorted(str(p.relative_to(source)) for p in source.rglob("*") if p.is_symlink())
    if links:
        return results.message(f"The submission holds a symbolic link ({', '.join(links[:5])}): submit the files "
                               f"themselves. Nothing was graded."), False
    submission = tmp / "submission"
    submission.mkdir()
    found, extras = normalise(source, submission, labs, config)
    if not found:
        wanted = "; ".join(f"{lab}/ with {', '.join(config[lab]['student_files']) or '(no files)'}" for lab in labs)
        return results.message(f"No lab of this assignment in the submission. Submit the lab folders ({wanted}), "
                               f"or the kernel files themselves." + (f" Found only: {', '.join(extras[:10])}" if extras else "")), False
    if not args.no_compile_check:
        checked, built = compile_check(submission, found, args, tmp)
        if not built:
            checked["output"] = "Nothing compiled, so nothing was sent to the GPU host.\n" + "\n".join(
                f"{lab}: {info['why']}" for lab, info in checked["extra_data"]["labs"].items())
            return checked, False
    files = [f"{lab}/{name}" for lab in found for name in config[lab]["student_files"] if (submission / lab / name).is_file()]
    data = archive.pack(submission, files)
    print(f"bridge: sending {len(files)} files ({len(data)} bytes) to {args.host} for {student}", flush=True)
    answer, graded = ask_host(cmd, student, data, args.timeout)
    if extras:
        answer["output"] += f"\nNot graded (no lab of this assignment): {', '.join(extras[:20])}"
    return answer, graded
