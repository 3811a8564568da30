#!/usr/bin/env python3
"""The Gradescope bridge for real (tools/gradescope/): Debian's sshd on
127.0.0.1, started here on a free port with a throwaway host key, its own
sshd_config and authorized_keys in a temporary folder; this machine is the "GPU
host" (no GPU: the host grades build-only, the GPU steps "not run: no GPU").

  - a correct submission (the course's own lab 01 file, loose, as a student
    uploads it): compile check, sent, graded with the host's seed, results.json
    in Gradescope's format, the seed not in it, one usage-log line, GitHub
    Classroom's record;
  - one that does not compile: the lab and the compiler's error in results.json,
    the host never asked;
  - archives that try to leave their folder ("../", an absolute path, a link, a
    device file, too many files, a file of no lab): refused, nothing written;
  - a key the host does not know, a host that is down, a missing key, a shell
    command, a student id with a ';', a pty, the daily limit: each a clear
    message and its exit code;
  - the autograder zip (make gradescope-autograder) and its bad inputs.

Exits 77 only when sshd cannot be installed (tools/ensure_deps.sh bridge) or
started; every failure of the bridge fails it. Stops the sshd it started.
usage: test_bridge.py [--keep DIR]
"""
import argparse
import base64
import fcntl
import getpass
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = ROOT / "tools" / "gradescope" / "bridge.py"
import archive  # tools/gradescope/ (PYTHONPATH: tests/gradescope/meson.build)
import results

SKIP = 77
SEED = 4242
failures = []


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def expect(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


class Sshd:
    """sshd -D on 127.0.0.1:port, everything in `tmp`; stopped on exit."""

    def __init__(self, tmp, authorized):
        self.tmp, self.port = tmp, free_port()
        host_pub = keygen(tmp / "host_key")
        (tmp / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {' '.join(host_pub.split()[:2])}\n")
        (tmp / "authorized_keys").write_text(authorized)
        os.chmod(tmp / "authorized_keys", 0o600)
        self.config = tmp / "sshd_config"
        self.config.write_text(f"""# tests/gradescope/test_bridge.py: a throwaway sshd
Port {self.port}
ListenAddress 127.0.0.1
HostKey {tmp / 'host_key'}
PidFile {tmp / 'sshd.pid'}
AuthorizedKeysFile {tmp / 'authorized_keys'}
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin forced-commands-only
AllowUsers {getpass.getuser()}
Subsystem sftp none
LogLevel VERBOSE
""")
        self.proc = None

    def __enter__(self):
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
            Path("/run/sshd").mkdir(mode=0o755)  # sshd's privilege-separation folder (the package's service makes it)
        r = subprocess.run([sshd, "-t", "-f", str(self.config)], capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"sshd refuses its test configuration: {r.stderr.strip()}")
        self.log = open(self.tmp / "sshd.log", "w")
        self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(self.config)], stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.__exit__()
        skip(f"sshd did not start: {(self.tmp / 'sshd.log').read_text()[-1500:]}")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def pax_bomb(size):
    """A .tar.gz whose one member carries a PAX header of `size` bytes: zeros, a
    thousandfold smaller compressed (tarfile reads such a header whole)."""
    info = tarfile.TarInfo("01_vector_add/vector_add.cuh")
    info.pax_headers = {"comment": "0" * size}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(b""))
    return buffer.getvalue()


def tar_of(entries):
    """A .tar.gz from (TarInfo fields, content) pairs, as an attacker would make one."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, kind, content in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.size = len(content) if kind == tarfile.REGTYPE else 0
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = "/etc/passwd"
            tar.addfile(info, io.BytesIO(content) if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


def checked_results(path, what):
    """results.json read and checked against Gradescope's format."""
    try:
        answer = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        expect(False, f"{what}: results.json readable ({e})")
        return {"score": 0, "output": "", "tests": [], "extra_data": {}}
    problems = results.problems(answer)
    expect(not problems, f"{what}: results.json is Gradescope's format {problems or ''}")
    return answer


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--keep", type=Path, help="work in this folder and keep it")
    p.add_argument("--gpu", type=Path, metavar="BUILD",
                   help="a GPU host for real: grade on this machine's GPU 0, judged by the course build BUILD "
                        "(lab 01 built); the correct submission must score 10/10")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    r = subprocess.run(["sh", str(ROOT / "tools" / "ensure_deps.sh"), "bridge"], capture_output=True, text=True)
    if r.returncode != 0 or not (shutil.which("sshd") or Path("/usr/sbin/sshd").is_file()) or not shutil.which("ssh"):
        skip(f"OpenSSH's server cannot be installed here: {(r.stdout + r.stderr).strip()}")
    tmp_obj = None if args.keep else tempfile.TemporaryDirectory(prefix="cudalabs-bridge-test-")
    tmp = args.keep or Path(tmp_obj.name)
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        return run_cases(tmp, args.gpu)
    finally:
        if tmp_obj:
            tmp_obj.cleanup()


def run_cases(tmp, gpu_build=None):
    key_pub = keygen(tmp / "client_key")
    keygen(tmp / "wrong_key")  # the host never hears of it
    (tmp / "no-build").mkdir()
    grading = tmp / "grading.toml"  # the course's, with the bridge's policy table
    # The course's grading config with the test's own limits: the [bridge] table last, replaced.
    course = (ROOT / "tools" / "grading.toml").read_text()
    course = course[:course.index("\n[bridge]")] if "\n[bridge]" in course else course
    grading.write_text(course + "\n[bridge]\nmax_per_day = 1\nmax_files = 8\n")
    host_toml = tmp / "host.toml"
    host_toml.write_text(f"""state = "{tmp / 'state'}"
build = "{gpu_build.resolve() if gpu_build else tmp / 'no-build'}"
grading = "{grading}"
gpus = {"[0]" if gpu_build else "[]"}
arch = "9.0"
queue_wait_s = 3
[assignments.lab01]
labs = ["01"]
seed = {SEED}
""")
    r = subprocess.run([sys.executable, str(BRIDGE), "serve", "--config", str(host_toml), "--check"],
                       capture_output=True, text=True)
    expect(r.returncode == 0 and "lab01: labs 01_vector_add" in r.stdout, f"serve --check reads the host's config: {r.stdout.strip()} {r.stderr.strip()}")
    forced = f"{sys.executable} {BRIDGE} serve --config {host_toml}"
    authorized = f'restrict,command="{forced}" {key_pub}\n'
    with Sshd(tmp, authorized) as sshd:
        base = ["--host", "127.0.0.1", "--port", str(sshd.port), "--user", getpass.getuser(),
                "--known-hosts", str(tmp / "known_hosts"), "--assignment", "lab01", "--labs", "01", "--arch", "9.0"]
        ssh = ["ssh", "-i", str(tmp / "client_key"), "-p", str(sshd.port), "-o", "BatchMode=yes",
               "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={tmp / 'known_hosts'}",
               "-o", "StrictHostKeyChecking=yes", f"{getpass.getuser()}@127.0.0.1"]
        usage = tmp / "state" / "usage.log"

        def submit(name, files, extra, key="client_key"):
            sub = tmp / name / "submission"
            for rel, text in files.items():
                (sub / rel).parent.mkdir(parents=True, exist_ok=True)
                (sub / rel).write_text(text)
            meta = tmp / name / "submission_metadata.json"
            meta.write_text(json.dumps({"id": 7, "users": [{"email": "ada.lovelace@example.edu", "id": 123}]}))
            out = tmp / name / "results" / "results.json"
            start = time.monotonic()
            r = subprocess.run([sys.executable, str(BRIDGE), "submit", "--submission", str(sub), "--metadata", str(meta),
                                "--results", str(out), "--key", str(tmp / key)] + base + extra,
                               capture_output=True, text=True)
            print(f"--- {name}: exit {r.returncode} in {time.monotonic() - start:.0f} s\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
            return r, out

        course_file = (ROOT / "labs" / "01_vector_add" / "vector_add.cuh").read_text()

        # 1. A correct submission: the kernel file loose, as a student uploads it.
        r, out = submit("correct", {"vector_add.cuh": course_file}, ["--classroom", str(tmp / "github_output")])
        answer = checked_results(out, "correct")
        expect(r.returncode == 0, f"correct: submit exits 0 when the host graded it (exit {r.returncode})")
        bridge = answer.get("extra_data", {}).get("bridge", {})
        expect(bridge.get("graded") and bridge.get("student") == "gradescope-123",
               f"correct: graded on the host for the student of submission_metadata.json ({bridge})")
        names = {t["name"]: t for t in answer["tests"]}
        test = names.get("01_vector_add: correctness", {})
        if gpu_build:
            expect(test.get("score") == 10 and test.get("status") == "passed" and bridge.get("on") == "gpu0",
                   f"correct: 10/10 on the host's first GPU ({test}, {bridge})")
        else:
            expect(test.get("max_score") == 10 and "not run: no GPU" in test.get("output", ""),
                   f"correct: the lab's test, build-only on a host without GPU ({test})")
        expect(str(SEED) not in json.dumps(answer), "correct: the assignment's seed is not in the student's results")
        runs = sorted((tmp / "state" / "runs").glob("*/grade/results.json"))
        expect(len(runs) == 1 and f"seed {SEED}" in runs[0].read_text(),
               "correct: the host graded with the seed of its own config")
        lines = usage.read_text().splitlines() if usage.is_file() else []
        fields = lines[-1].split("\t") if lines else []
        expect(len(lines) == 1 and fields[1:3] == ["gradescope-123", "lab01"] and float(fields[3]) > 0
               and fields[4] == ("10/10" if gpu_build else "0/10 build-only"), f"correct: one usage-log line: time, student, assignment, seconds, verdict ({lines})")
        gh = (tmp / "github_output").read_text() if (tmp / "github_output").is_file() else ""
        record = json.loads(base64.b64decode(gh.strip().split("=", 1)[1])) if gh.startswith("result=") else {}
        expect(record.get("max_score") == 10 and record.get("status") == ("pass" if gpu_build else "fail") and record.get("tests", [{}])[0].get("name") == "01_vector_add: correctness",
               f"correct: GitHub Classroom's reporter record ({record})")

        # 2. It does not compile: the compile check answers, naming the lab; the host is not asked.
        r, out = submit("compile_error", {"01_vector_add/vector_add.cuh": course_file.replace(
            "if (i < n) c[i]", "if (i < n) c[i] = not_declared_anywhere +")}, [])
        answer = checked_results(out, "compile error")
        labs = answer.get("extra_data", {}).get("labs", {})
        expect(r.returncode == 1 and "compile error" in labs.get("01_vector_add", {}).get("flags", [])
               and "01_vector_add" in answer["output"] and "not_declared_anywhere" in answer["output"],
               f"compile error: results.json names the lab and the error (exit {r.returncode}): {answer['output'][:300]}")
        expect(len(usage.read_text().splitlines()) == 1, "compile error: nothing was sent to the GPU host")

        # 3. Archives that try to leave their folder, straight to the host as an attacker would send them.
        evil = tar_of([("01_vector_add/../../escaped.cuh", tarfile.REGTYPE, b"x"), ("../escaped", tarfile.REGTYPE, b"x")])
        r = subprocess.run(ssh + ["grade", "lab01", "mallory"], input=evil, capture_output=True)
        said = json.loads(r.stdout or b"{}")
        expect(r.returncode == 2 and "refused" in said.get("output", "") and "'..'" in said.get("output", "")
               and not results.problems(said), f"'../' archive: refused over SSH, exit 2: {said.get('output')}")
        expect(not list(tmp.rglob("escaped*")) and not list(Path("/").glob("escaped*")),
               "'../' archive: nothing written, inside or outside its folder")
        allowed = {"01_vector_add": ["vector_add.cuh", "other.cuh"]}
        for what, data in {
            "an absolute path": tar_of([("/tmp/x.cuh", tarfile.REGTYPE, b"x")]),
            "a symbolic link": tar_of([("01_vector_add/vector_add.cuh", tarfile.SYMTYPE, b"")]),
            "a hard link": tar_of([("01_vector_add/vector_add.cuh", tarfile.LNKTYPE, b"")]),
            "a device file": tar_of([("01_vector_add/vector_add.cuh", tarfile.CHRTYPE, b"")]),
            "a folder": tar_of([("01_vector_add", tarfile.DIRTYPE, b"")]),
            "a file of no lab": tar_of([("01_vector_add/main.cu", tarfile.REGTYPE, b"x")]),
            "a lab of another assignment": tar_of([("04_reduction/reduction.cuh", tarfile.REGTYPE, b"x")]),
            "too many files": tar_of([("01_vector_add/vector_add.cuh", tarfile.REGTYPE, b"x"),
                                      ("01_vector_add/other.cuh", tarfile.REGTYPE, b"x")]),
            "a file twice": tar_of([("01_vector_add/vector_add.cuh", tarfile.REGTYPE, b"x")] * 2),
            "no archive": b"not a tar at all",
            "too large unpacked": tar_of([("01_vector_add/vector_add.cuh", tarfile.REGTYPE, b"x" * 5000)]),
            "a 64 MiB header": pax_bomb(64 << 20),
            "a cut gzip stream": tar_of([("01_vector_add/vector_add.cuh", tarfile.REGTYPE, b"x")])[:-12],
        }.items():
            try:
                archive.unpack(data, tmp / "unpacked", allowed, max_files=1 if what == "too many files" else 2,
                               max_bytes=4096)
                expect(False, f"archive with {what}: refused")
            except archive.ArchiveError as e:
                expect(not (tmp / "unpacked").exists(), f"archive with {what}: refused, nothing written ({e})")

        # A link in the upload (to the autograder's own key): refused before anything reads it.
        linked = tmp / "linked" / "01_vector_add"
        linked.mkdir(parents=True)
        (linked / "vector_add.cuh").symlink_to(tmp / "client_key")
        r = subprocess.run([sys.executable, str(BRIDGE), "submit", "--submission", str(linked.parent), "--student", "eve",
                            "--results", str(tmp / "linked.json"), "--key", str(tmp / "client_key")] + base,
                           capture_output=True, text=True)
        answer = checked_results(tmp / "linked.json", "symbolic link")
        secret = (tmp / "client_key").read_text().splitlines()[1]
        expect(r.returncode == 1 and "symbolic link" in answer["output"] and secret not in json.dumps(answer) + r.stdout,
               f"a symbolic link in the upload: refused, the key not read ({r.returncode}): {answer['output'][:160]}")

        # 4. The host refuses the key; 5. the host is down; 6. no key at all.
        r, out = submit("refused_key", {"vector_add.cuh": course_file}, ["--no-compile-check"], key="wrong_key")
        answer = checked_results(out, "wrong key")
        expect(r.returncode == 1 and "refused the autograder's key" in answer["output"],
               f"wrong key: results.json says the host refused the key (exit {r.returncode}): {answer['output'][:200]}")
        down = [a if a != str(sshd.port) else str(free_port()) for a in base]
        sub = tmp / "correct" / "submission"
        r = subprocess.run([sys.executable, str(BRIDGE), "submit", "--submission", str(sub), "--student", "ada",
                            "--results", str(tmp / "down.json"), "--key", str(tmp / "client_key"), "--no-compile-check"]
                           + down, capture_output=True, text=True)
        answer = checked_results(tmp / "down.json", "host down")
        expect(r.returncode == 1 and "cannot be reached" in answer["output"] and "Traceback" not in r.stderr,
               f"host down: a clear message, no traceback (exit {r.returncode}): {answer['output'][:200]}")
        r = subprocess.run([sys.executable, str(BRIDGE), "submit", "--submission", str(sub), "--student", "ada",
                            "--results", str(tmp / "nokey.json"), "--key", str(tmp / "no_such_key")] + base,
                           capture_output=True, text=True)
        expect(r.returncode == 2 and "no_such_key: no such file" in r.stderr,
               f"missing key: exit 2 and the file named ({r.returncode}): {r.stderr.strip()}")

        # 7. The forced command: no shell, no pty, validated ids, the daily limit.
        r = subprocess.run(ssh + ["sh", "-c", "id"], capture_output=True, stdin=subprocess.DEVNULL)
        expect(r.returncode == 2 and b"only sends a submission" in r.stdout and b"uid=" not in r.stdout,
               f"a shell command: refused, not run ({r.returncode}): {r.stdout[:200]!r}")
        one = tar_of([("01_vector_add/vector_add.cuh", tarfile.REGTYPE, course_file.encode())])
        for sid in ("x;id", "$(id)", "-rf"):
            r = subprocess.run(ssh + ["grade", "lab01", sid], input=one, capture_output=True)
            expect(r.returncode == 2 and b"student id" in r.stdout and b"uid=" not in r.stdout,
                   f"student id {sid!r}: refused, nothing run ({r.returncode}): {r.stdout[:160]!r}")
        r = subprocess.run(ssh + ["-tt", "grade", "lab01", "ada"], input=b"", capture_output=True, timeout=60)
        expect(b"PTY allocation request failed" in r.stderr, f"a pty: denied ({r.stderr[:200]!r})")
        r = subprocess.run(ssh + ["grade", "lab01", "gradescope-123"], input=one, capture_output=True)
        said = json.loads(r.stdout or b"{}")
        expect(r.returncode == 2 and "limit per day" in said.get("output", ""),
               f"daily limit (max_per_day = 1 in [bridge]): the second grading refused: {said.get('output')}")
        # 8. Busy: every GPU's lock held (here the one "cpu" slot) past queue_wait_s = 3, and past
        # the autograder's own time limit; neither counts against the daily limit.
        (tmp / "state" / "locks").mkdir(parents=True, exist_ok=True)
        with open(tmp / "state" / "locks" / ("gpu0.lock" if gpu_build else "cpu.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            r = subprocess.run(ssh + ["grade", "lab01", "bob"], input=one, capture_output=True, timeout=120)
            said = json.loads(r.stdout or b"{}")
            expect(r.returncode == 3 and "busy" in said.get("output", "") and not results.problems(said),
                   f"busy host: 'busy' after queue_wait_s, exit 3 ({r.returncode}): {said.get('output')}")
            r = subprocess.run([sys.executable, str(BRIDGE), "submit", "--submission", str(sub), "--student", "bob",
                                "--results", str(tmp / "late.json"), "--key", str(tmp / "client_key"),
                                "--no-compile-check", "--timeout", "1"] + base, capture_output=True, text=True)
            answer = checked_results(tmp / "late.json", "no answer in time")
            expect(r.returncode == 1 and "did not answer within 1 s" in answer["output"],
                   f"no answer within the autograder's limit: a clear message ({r.returncode}): {answer['output'][:200]}")
        daily = "".join(p.read_text() for p in (tmp / "state" / "daily").glob("*.tsv"))
        expect("\tbob\t" not in daily, "busy host: the gradings that found no GPU are not counted")
        r = subprocess.run(ssh + ["grade", "lab99", "ada"], input=one, capture_output=True)
        expect(r.returncode == 2 and b"no assignment 'lab99'" in r.stdout, f"unknown assignment: refused ({r.stdout[:200]!r})")

    # 9. The autograder zip.
    make = ["make", "--no-print-directory", "-C", str(ROOT), "gradescope-autograder", f"OUT={tmp / 'autograder.zip'}",
            "HOST=gpu.example.edu", f"KNOWN_HOSTS={tmp / 'known_hosts'}", "ASSIGNMENT=lab01", "LABS=01"]
    r = subprocess.run(make + [f"KEY={tmp / 'no_such_key'}"], capture_output=True, text=True)
    expect(r.returncode != 0 and "no_such_key: no such file" in r.stderr + r.stdout,
           f"package without the key: a clear message ({(r.stderr + r.stdout).strip()[-200:]})")
    r = subprocess.run(make + [f"KEY={tmp / 'client_key.pub'}"], capture_output=True, text=True)
    expect(r.returncode != 0 and "not a private key" in r.stderr + r.stdout,
           f"package with the public key: a clear message ({(r.stderr + r.stdout).strip()[-200:]})")
    r = subprocess.run(make + [f"KEY={tmp / 'client_key'}"], capture_output=True, text=True)
    names = zipfile.ZipFile(tmp / "autograder.zip").namelist() if (tmp / "autograder.zip").is_file() else []
    script = zipfile.ZipFile(tmp / "autograder.zip").read("run_autograder").decode() if "run_autograder" in names else ""
    expect(r.returncode == 0 and {"setup.sh", "run_autograder", "bridge/key", "bridge/known_hosts",
                                  "cudalabs/tools/grade.py", "cudalabs/labs/01_vector_add/vector_add.cuh"} <= set(names)
           and not any(n.startswith("cudalabs/results/") for n in names)
           and "--host gpu.example.edu" in script and "--assignment lab01" in script,
           f"the autograder zip: setup.sh, run_autograder, the key, the course ({len(names)} files) {r.stderr.strip()}")

    for f in failures:
        print("FAIL:", f)
    print(f"{'ok' if not failures else str(len(failures)) + ' failed'}: the Gradescope bridge")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
