#!/usr/bin/env python3
"""The GPU host's side of the bridge (tools/gradescope/host.py), called as sshd's
forced command calls it (host.serve: the command line, the archive on stdin), with
a stand-in for tools/grade.py: what the host does around a grading, in seconds.

  - the state folder is the grading account's alone: usage.log and daily/ (every
    student's verdicts) unreadable by the host's other accounts;
  - a grading that fails: the message quotes grade.py's last lines, the seed
    taken out of them as out of every answer;
  - one student's requests at the same time are graded one after another, not
    on two GPUs at once; another student's is not held up by them;
  - the autograder's side names a Gradescope student by the account's user id,
    which a changed e-mail address leaves as it was (tools/gradescope/client.py).

usage: PYTHONPATH=tools:tools/gradescope python3 tests/gradescope/test_host.py
"""
import io
import json
import stat
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import client  # tools/gradescope/
import host  # tools/gradescope/ (PYTHONPATH: tests/gradescope/meson.build)
import results

ROOT = Path(__file__).resolve().parents[2]
SEED = 918273
failures = []

# The stand-in for grade.py: argv[1] the output folder (run_dir/grade), argv[2] what
# to do. "ok": one line per grading (student, start, end) in argv[3], after
# argv[4] seconds, then results.json; "fail": grade.py's header with the seed,
# then exit 2, as a grader that stopped after its first lab.
FAKE = """
import json, sys, time
from pathlib import Path
out, mode, seed = Path(sys.argv[1]), sys.argv[2], int(sys.argv[5])
if mode == "fail":
    print("cudalabs grade: seed %d (repeat with --seed %d); submission x" % (seed, seed))
    print("  01_vector_add  checked")
    print("grade: error: the sandbox stopped")
    sys.exit(2)
student = json.loads((out.parent / "request.json").read_text())["student"]
start = time.time()
time.sleep(float(sys.argv[4]))
with open(sys.argv[3], "a") as f:
    f.write(f"{student} {start} {time.time()}\\n")
out.mkdir(parents=True)
(out / "results.json").write_text(json.dumps({"score": 0, "output": "graded", "tests": [
    {"name": "01_vector_add: correctness", "score": 0, "max_score": 10}]}))
""".replace("SEED", str(SEED))


def expect(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def archive_of_lab01():
    data = (ROOT / "labs" / "01_vector_add" / "vector_add.cuh").read_bytes()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("01_vector_add/vector_add.cuh")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Host:
    """A host config in a fresh folder (its state folder made 0755, as `sudo mkdir -p`
    makes it), the stand-in for grade.py, and serve() as sshd's forced command runs it."""

    def __init__(self, tmp, mode="ok", seconds=0, seed=SEED):
        self.tmp, self.state, self.log = tmp, tmp / "state", tmp / "gradings.txt"
        self.state.mkdir(mode=0o755)
        self.state.chmod(0o755)
        fake = tmp / "fake_grade.py"
        fake.write_text(FAKE)
        self.config = tmp / "host.toml"
        self.config.write_text(f'state = "{self.state}"\nbuild = "{tmp}"\ngpus = [0, 1]\nbuild_only = true\n'
                               f'queue_wait_s = 60\n[assignments.lab01]\nlabs = ["01"]\nseed = {json.dumps(seed)}\n')
        host.grade_command = lambda h, labs, seed, submission, out: [sys.executable, str(fake), str(out), mode,
                                                                     str(self.log), str(seconds), str(seed)]
        self.data = archive_of_lab01()

    def serve(self, student, answers):
        out, err = io.StringIO(), io.StringIO()
        code = host.serve(self.config, f"grade lab01 {student}", io.BytesIO(self.data), out, err)
        answers.append((student, code, json.loads(out.getvalue())))


def state_is_private(tmp):
    h, answers = Host(tmp), []
    h.serve("ada", answers)
    usage = h.state / "usage.log"
    expect(answers[0][1] == 0 and usage.is_file(), f"a grading: graded and logged ({answers[0][2]['output'][:200]})")
    opened = stat.S_IMODE(h.state.stat().st_mode)
    readable = [p.name for p in [usage, *h.state.glob("daily/*.tsv")] if stat.S_IMODE(p.stat().st_mode) & 0o044]
    expect(opened & 0o077 == 0,
           f"the state folder ({oct(opened)}) is closed to other accounts, whose files {readable} name every "
           f"student and verdict")


def failure_without_seed(tmp):
    h, answers = Host(tmp, mode="fail"), []
    h.serve("carol", answers)
    _, code, answer = answers[0]
    expect(code == 3 and "not graded" in answer["output"] and "sandbox stopped" in answer["output"]
           and str(SEED) not in json.dumps(answer),
           f"a failed grading: grade.py's last lines without the seed (exit {code}): {answer['output'][:300]}")


def fresh_seeds(tmp):
    """seed = "fresh": each grading its own seed, kept in the host's run folder and said in
    no answer, a failed grading's neither (its message quotes grade.py's header)."""
    h, answers = Host(tmp, seed="fresh"), []
    h.serve("dan", answers)
    h.serve("dan", answers)
    seeds = [json.loads(p.read_text())["seed"] for p in sorted(h.state.glob("runs/*/request.json"))]
    expect(len(seeds) == 2 and seeds[0] != seeds[1] and all(isinstance(s, int) for s in seeds)
           and all(code == 0 for _, code, _ in answers),
           f"two gradings of one assignment with seed = \"fresh\": two seeds, each in its run folder ({seeds})")
    (tmp / "failed").mkdir()
    failed, answers = Host(tmp / "failed", mode="fail", seed="fresh"), []
    failed.serve("erin", answers)
    seed = [json.loads(p.read_text())["seed"] for p in failed.state.glob("runs/*/request.json")]
    _, code, answer = answers[0]
    expect(code == 3 and len(seed) == 1 and "sandbox stopped" in answer["output"]
           and str(seed[0]) not in json.dumps(answer),
           f"a failed grading with a fresh seed: grade.py's last lines without it ({answer['output'][:300]})")


def one_grading_per_student(tmp):
    """Three requests of one student at once and one of another's, two GPUs free."""
    h, answers = Host(tmp, seconds=3), []
    threads = [threading.Thread(target=h.serve, args=(s, answers)) for s in ("ada", "ada", "ada", "bob")]
    for t in threads:
        t.start()
        time.sleep(0.2)
    for t in threads:
        t.join()
    expect(sorted((s, c) for s, c, _ in answers) == [("ada", 0), ("ada", 0), ("ada", 0), ("bob", 0)]
           and not any(results.problems(a) for _, _, a in answers),
           f"four requests at once: each graded ({[(s, c, a['output'][:80]) for s, c, a in answers]})")
    runs = sorted((line.split()[0], float(line.split()[1]), float(line.split()[2]))
                  for line in h.log.read_text().splitlines())
    ada = [(start, end) for who, start, end in runs if who == "ada"]
    overlaps = [(a, b) for i, a in enumerate(ada) for b in ada[i + 1:] if a[0] < b[1] and b[0] < a[1]]
    expect(len(ada) == 3 and not overlaps,
           f"one student's requests: graded one after another, never two on the host's two GPUs ({runs})")
    bob = [(start, end) for who, start, end in runs if who == "bob"]
    expect(len(bob) == 1 and bob[0][0] < min(end for _, end in ada),
           f"another student's request: graded on the other GPU before the first student's are done ({runs})")


def student_from_metadata(tmp):
    def sid(users):
        meta = tmp / "submission_metadata.json"
        meta.write_text(json.dumps({"id": 7, "users": users}))
        try:
            return client.student_id(type("Args", (), {"student": None, "metadata": str(meta)}))
        except client.UsageError as e:
            return f"UsageError: {e}"
    first = sid([{"email": "ada.lovelace@example.edu", "id": 123}])
    moved = sid([{"email": "countess@example.org", "id": 123}])
    expect(first == "gradescope-123" and moved == first,
           f"a student is their Gradescope user id, whatever the e-mail ({first!r}, then {moved!r})")
    expect(sid([{"email": "x@example.edu", "id": 124}]) == "gradescope-124", "another account, another id")
    for users, what in (([{"email": "ada@example.edu"}], "no user id"), ([{"id": "12; rm -rf ~"}], "an id with a command"),
                        ([{"id": True}], "an id that is a boolean"), ([], "no submitter")):
        got = sid(users)
        expect(got.startswith("UsageError:") and ("user id" in got or "--student" in got),
               f"metadata with {what}: a usage error naming the user id ({got!r})")


def main():
    for case in (state_is_private, failure_without_seed, fresh_seeds, one_grading_per_student, student_from_metadata):
        with tempfile.TemporaryDirectory(prefix="cudalabs-host-test-") as tmp:
            case(Path(tmp))
    for f in failures:
        print("FAIL:", f)
    print(f"{'ok' if not failures else str(len(failures)) + ' failed'}: the GPU host's side of the bridge")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
