#!/usr/bin/env python3
"""The grader's sandbox (tools/grader/sandbox.py), for real; no GPU needed.

A small C program (compiled here with cc) and shell commands, run inside the
sandbox, try what a hostile submission would: write outside its scratch
folder (the caller's $HOME, the host's /tmp, the course tree, /etc), list
and read hidden folders, reach a port this test listens on, fork without
end, write a file past the limit, allocate past the memory limit, run past
the time limit, leave a child behind. Each must fail, or be killed with the
reason said; and it can still write its scratch folder, read a readable one,
and run /usr/bin programs. Exit 0: passed, 1: failed, 77: skipped (bwrap is
missing or cannot start here, said in one line).
Run: PYTHONPATH=tools python3 tests/grading/test_sandbox.py (meson test sets PYTHONPATH).
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import unittest.mock
from pathlib import Path

from grader import sandbox

ROOT = Path(__file__).resolve().parent.parent.parent
MiB = 1 << 20

PROBE_C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(argv[1], "connect")) {  /* connect PORT */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[2]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
      printf("cannot connect: %s\n", strerror(errno));
      return 1;
    }
    printf("connected\n");
    return 0;
  }
  if (!strcmp(argv[1], "forkbomb")) {  /* children that stay, until killed */
    long n = 0, failed = 0;
    for (;;) {
      pid_t pid = fork();
      if (pid == 0) for (;;) pause();
      if (pid > 0) { n++; continue; }
      if (failed++ == 0) printf("fork failed after %ld children: %s\n", n, strerror(errno));
    }
  }
  if (!strcmp(argv[1], "bigfile")) {  /* bigfile PATH MIB */
    FILE *f = fopen(argv[2], "wb");
    static char buf[1 << 16];
    if (!f) { printf("cannot open %s: %s\n", argv[2], strerror(errno)); return 1; }
    for (long i = 0; i < atol(argv[3]) * 16; i++)
      if (fwrite(buf, 1, sizeof buf, f) != sizeof buf) { printf("write failed: %s\n", strerror(errno)); return 1; }
    fclose(f);
    printf("wrote %s MiB\n", argv[3]);
    return 0;
  }
  if (!strcmp(argv[1], "alloc")) {  /* alloc MIB: touch it all, then wait */
    long mib = atol(argv[2]);
    for (long i = 0; i < mib; i += 16) {
      char *p = malloc(16 << 20);
      if (!p) { printf("malloc failed at %ld MiB\n", i); return 1; }
      memset(p, 1, 16 << 20);
    }
    printf("allocated %ld MiB\n", mib);
    for (;;) pause();
  }
  if (!strcmp(argv[1], "spin")) for (;;) {}
  return 2;
}
"""


def processes_with(word: bytes):
    """Pids of running processes (not zombies) whose command line contains word."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if word in cmdline:
            found.append(int(name))
    return found


class Sandbox(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cudalabs-sandbox-test-"))
        # What the sandbox may use: scratch (writable), tools/ with the probe
        # and course/ (readable). What it must not reach: hidden/, and a
        # folder in the caller's $HOME.
        cls.scratch = cls.tmp / "scratch"
        cls.tools = cls.tmp / "tools"
        cls.course = cls.tmp / "course"
        for d in (cls.scratch, cls.tools, cls.course, cls.course / "out", cls.tmp / "hidden"):
            d.mkdir()
        (cls.course / "lesson.txt").write_text("the course\n")
        (cls.tmp / "link-to-course").symlink_to(cls.course)
        cls.token = f"cudalabs-secret-{os.getpid()}-{time.time_ns()}"
        (cls.tmp / "hidden" / "secret.txt").write_text(cls.token)
        home = Path.home() if os.access(Path.home(), os.W_OK) else cls.tmp / "hidden"
        cls.home_dir = Path(tempfile.mkdtemp(prefix=".cudalabs-sandbox-test-", dir=home))
        (cls.home_dir / "secret.txt").write_text(cls.token)
        cc = shutil.which("cc") or shutil.which("gcc")
        compile_cmd = [cc, "-O1", "-o", str(cls.tools / "probe"), "-x", "c", "-"] if cc else \
            ["g++", "-O1", "-o", str(cls.tools / "probe"), "-x", "c", "-"]
        subprocess.run(compile_cmd, input=PROBE_C, text=True, check=True)
        # As root the sandbox runs as nobody: what it reads must let others in.
        for d in (cls.tools, cls.course):
            d.chmod(0o755)
        cls.probe = str(cls.tools / "probe")
        # The course tree itself is readable too, unless, as root, nobody may
        # read it (a clone in a private folder): then course/ stands for it.
        cls.root = ROOT if os.geteuid() != 0 or (ROOT.stat().st_mode & 0o005 == 0o005 and
                                                 (ROOT / "README.md").stat().st_mode & 0o004) else None
        cls.readable = [cls.tools, cls.course, cls.tmp / "link-to-course"] + ([ROOT] if cls.root else [])
        cls.writable = [cls.scratch, cls.course / "out"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        shutil.rmtree(cls.home_dir, ignore_errors=True)

    def sh(self, script, limits=None, **kw):
        kw.setdefault("writable", self.writable)
        kw.setdefault("readable", self.readable)
        return sandbox.run(["/bin/sh", "-c", script], gpu=False, limits=limits, **kw)

    # ---- what it must not do --------------------------------------------------------

    def test_writes_outside_its_folders_fail_and_leave_nothing(self):
        name = f"probe-{self.token}"
        targets = [Path.home() / name, Path("/tmp") / name, (self.root or self.course) / name,
                   Path("/etc") / name, self.tmp / name, self.course / name, self.home_dir / name]
        script = "".join(f"echo x > '{t}' && echo 'wrote {t}'\n" for t in targets)
        r = self.sh(script)
        for t in targets:
            self.assertFalse(t.exists(), f"the sandbox wrote {t} on the host\n{r.output}")
        # Only its private /tmp took files (gone with the sandbox); elsewhere writing failed.
        self.assertIn(f"wrote /tmp/{name}", r.output)
        for t in targets:
            if not str(t).startswith("/tmp/"):
                self.assertNotIn(f"wrote {t}", r.output)

    def test_hidden_folders_are_absent_or_empty(self):
        """/root, /home, /work, /mnt, /srv, /var, /run and the caller's
        folders show at most the path down to a folder it was given."""
        given = [str(p) for p in self.readable + self.writable]
        places = ["/root", "/home", "/work", "/mnt", "/srv", "/var", "/run", str(Path.home()), str(self.tmp)]
        script = "".join(f"echo '== {d}'; ls -A '{d}' 2>/dev/null\n" for d in places)
        r = self.sh(script)
        self.assertEqual(r.rc, 0, r.output)
        listing, current = {}, None
        for line in r.output.splitlines():
            if line.startswith("== "):
                current = line[3:]
                listing[current] = []
            elif current:
                listing[current].append(line)
        for d in places:
            allowed = {Path(g).relative_to(d).parts[0] for g in given if g.startswith(d.rstrip("/") + "/")}
            self.assertLessEqual(set(listing.get(d, [])), allowed, f"{d} shows more than the way to its folders")
        self.assertNotIn("hidden", listing[str(self.tmp)])

    def test_planted_secrets_cannot_be_read(self):
        r = self.sh(f"cat '{self.tmp}/hidden/secret.txt' '{self.home_dir}/secret.txt' /etc/shadow; "
                    f"cat /proc/1/environ; grep -rs '{self.token}' /tmp /dev/shm; true")
        self.assertNotIn(self.token, r.output)
        if os.geteuid() == 0:
            self.assertIn("Permission denied", r.output)  # /etc/shadow: nobody may not read it

    def test_no_network_even_to_localhost(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            server.settimeout(0.5)
            port = server.getsockname()[1]
            r = sandbox.run([self.probe, "connect", str(port)], writable=self.writable, readable=self.readable,
                            gpu=False)
            self.assertIn("cannot connect", r.output)
            self.assertNotIn("connected\n", r.output)
            with self.assertRaises(socket.timeout):
                server.accept()

    def test_fork_bomb_is_contained_and_killed(self):
        limits = sandbox.Limits(processes=64, wall_s=20)
        r = sandbox.run([self.probe, "forkbomb"], writable=self.writable, readable=self.readable, gpu=False,
                        limits=limits)
        self.assertIn("processes", r.killed_why, r.output)
        self.assertLess(r.seconds, 10, r.killed_why)
        # The watchdog saw it reach the limit; the kernel's backstop caps what
        # it may fork between two samples.
        self.assertGreaterEqual(r.peak_processes, 64, r.killed_why)
        self.assertLessEqual(r.peak_processes, sandbox.NPROC_BACKSTOP + 64, r.killed_why)
        self.assertEqual(processes_with(self.probe.encode()), [], "fork bomb children outlived run()")

    def test_file_larger_than_the_limit_is_stopped(self):
        big = self.scratch / "big"
        r = sandbox.run([self.probe, "bigfile", str(big), "8"], writable=self.writable, readable=self.readable,
                        gpu=False, limits=sandbox.Limits(file_bytes=1 * MiB))
        self.assertLessEqual(big.stat().st_size, 1 * MiB)
        self.assertNotIn("wrote 8 MiB", r.output)
        self.assertEqual(r.rc, -25, r.output)  # SIGXFSZ
        self.assertIn("file larger than 1048576 bytes", r.killed_why)
        big.unlink()

    def test_disk_space_past_the_limit_is_killed(self):
        """Many files, each far under the per-file limit, one of them in a folder it
        then makes unreadable: killed once they add up past Limits.disk_bytes, with
        the limit and how to raise it said; what was there before is not counted."""
        (self.scratch / "before").write_bytes(bytes(16 * MiB))  # already there: not the command's
        script = ("mkdir hidden && head -c 1048576 /dev/urandom > hidden/f && chmod 000 hidden && "
                  "i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/urandom > f$i; i=$((i+1)); done; sleep 30")
        for enabled in (True, False):
            with self.subTest(sandboxed=enabled):
                r = self.sh(f"cd {self.scratch} && {script}", limits=sandbox.Limits(disk_bytes=16 * MiB, wall_s=60),
                            enabled=enabled)
                self.assertIn(f"over the limit of {16 * MiB} bytes", r.killed_why, r.output)
                self.assertIn(f"{sandbox.DISK_LIMIT_ENV}=N", r.killed_why)
                self.assertEqual(r.rc, -9)
                self.assertLess(r.seconds, 20)
                os.chmod(self.scratch / "hidden", 0o755)
                shutil.rmtree(self.scratch / "hidden")
                for f in self.scratch.glob("f*"):
                    f.unlink()
        r = self.sh(f"cd {self.scratch} && head -c 1048576 /dev/urandom > small && sleep 2",
                    limits=sandbox.Limits(disk_bytes=16 * MiB, wall_s=60))
        self.assertEqual((r.rc, r.killed_why), (0, ""), r.output)
        (self.scratch / "small").unlink()
        (self.scratch / "before").unlink()

    def test_the_disk_limit_is_raised_by_its_variable(self):
        saved = os.environ.get(sandbox.DISK_LIMIT_ENV)
        try:
            os.environ[sandbox.DISK_LIMIT_ENV] = "12"
            self.assertEqual(sandbox.Limits.for_build().disk_bytes, 12 << 30)
            os.environ[sandbox.DISK_LIMIT_ENV] = "lots"
            with self.assertRaisesRegex(ValueError, sandbox.DISK_LIMIT_ENV):
                sandbox.Limits()
        finally:
            os.environ.pop(sandbox.DISK_LIMIT_ENV, None)
            if saved is not None:
                os.environ[sandbox.DISK_LIMIT_ENV] = saved
        self.assertEqual(sandbox.Limits().disk_bytes, sandbox.DISK_BYTES)

    def test_a_nearly_full_disk_stops_the_largest_writer(self):
        """Under each command's own limit, a disk with less than its reserve free
        (here: reported so) kills the command that added the most among those
        running, with the reason and the fix said; one that added nothing runs on."""
        saved = sandbox._disk_space
        sandbox._disk_space = lambda path: (1 * MiB, 100 << 30, 1 << 20, 1 << 22)  # 1 MiB free of 100 GiB
        try:
            r = self.sh(f"cd {self.scratch} && head -c 4194304 /dev/urandom > f && sleep 30",
                        limits=sandbox.Limits(wall_s=60))
            self.assertIn("GiB kept free", r.killed_why, r.output)
            self.assertIn("--parallel 1", r.killed_why)
            self.assertEqual(r.rc, -9)
            self.assertLess(r.seconds, 20)
            (self.scratch / "f").unlink()
            r = self.sh("sleep 3", limits=sandbox.Limits(wall_s=60))
            self.assertEqual((r.rc, r.killed_why), (0, ""), r.output)
            # Two running at once: only the one that added more is stopped.
            small, large = (Path(tempfile.mkdtemp(dir=self.scratch)) for _ in range(2))
            watches = [sandbox._DiskWatch([small], 1 << 40), sandbox._DiskWatch([large], 1 << 40)]
            try:
                (small / "f").write_bytes(os.urandom(1 * MiB))
                (large / "f").write_bytes(os.urandom(3 * MiB))
                time.sleep(3 * sandbox.DISK_POLL_S)
                self.assertEqual([w.over() for w in watches], [False, True])
            finally:
                for w in watches:
                    w.stop()
            self.assertFalse(sandbox._DiskWatch.live - set(watches))  # stopped watches leave the registry
            shutil.rmtree(small)
            shutil.rmtree(large)
        finally:
            sandbox._disk_space = saved

    def test_a_disk_short_of_inodes_stops_the_largest_writer(self):
        """Bytes to spare but the inodes nearly gone (here: reported so), as a flood of
        empty files leaves a disk: the command that added the most is killed, saying
        so; a filesystem that counts no inodes (btrfs reports 0) is not held to it."""
        saved = sandbox._disk_space
        try:
            for inodes, killed in ((6_500_000, True), (0, False)):
                sandbox._disk_space = lambda path, n=inodes: (50 << 30, 100 << 30, 100, n)
                r = self.sh(f"cd {self.scratch} && mkdir d && touch d/1 d/2 d/3 d/4 && sleep 5",
                            limits=sandbox.Limits(wall_s=60))
                if killed:
                    self.assertIn("100 inodes free", r.killed_why, r.output)
                    self.assertIn("--parallel 1", r.killed_why)
                    self.assertEqual(r.rc, -9)
                else:
                    self.assertEqual((r.rc, r.killed_why), (0, ""), r.output)
                shutil.rmtree(self.scratch / "d")
        finally:
            sandbox._disk_space = saved

    def test_memory_past_the_limit_is_killed(self):
        for enabled in (True, False):
            with self.subTest(sandboxed=enabled):
                r = sandbox.run([self.probe, "alloc", "1024"], writable=self.writable, readable=self.readable,
                                gpu=False, enabled=enabled, limits=sandbox.Limits(memory_bytes=256 * MiB, wall_s=30))
                self.assertIn("memory", r.killed_why, r.output)
                self.assertIn(f"limit of {256 * MiB} bytes", r.killed_why)
                self.assertEqual(r.rc, -9)
                self.assertFalse(r.timed_out)
                self.assertLess(r.seconds, 10)
                self.assertEqual(processes_with(self.probe.encode()), [])

    def test_time_limit_kills_it(self):
        for enabled in (True, False):
            with self.subTest(sandboxed=enabled):
                r = self.sh("echo started; sleep 30", limits=sandbox.Limits(wall_s=1), enabled=enabled)
                self.assertTrue(r.timed_out, r)
                self.assertIn("wall-clock", r.killed_why)
                self.assertEqual(r.rc, -9)
                self.assertIn("started", r.output)
                self.assertLess(r.seconds, 4)

    def test_cpu_limit_kills_it(self):
        r = sandbox.run([self.probe, "spin"], writable=self.writable, readable=self.readable, gpu=False,
                        limits=sandbox.Limits(cpu_s=1, wall_s=20))
        self.assertEqual(r.rc, -24, r)  # SIGXCPU
        self.assertIn("CPU time", r.killed_why)
        self.assertLess(r.seconds, 10)

    def test_background_child_does_not_outlive_it(self):
        for enabled in (True, False):
            with self.subTest(sandboxed=enabled):
                seconds = str(900000 + os.getpid() % 1000 + (0 if enabled else 1000))
                r = self.sh(f"sleep {seconds} & echo started; exit 0", enabled=enabled)
                self.assertEqual(r.rc, 0, r.output)
                self.assertIn("started", r.output)
                self.assertLess(r.seconds, 5)
                self.assertEqual(processes_with(b"sleep\0" + seconds.encode()), [], "the background sleep survived")

    def test_environment_is_scrubbed(self):
        os.environ["CUDALABS_TEST_SECRET"] = self.token
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        try:
            r = self.sh("env")
        finally:
            del os.environ["CUDALABS_TEST_SECRET"], os.environ["CUDA_VISIBLE_DEVICES"]
        env = dict(line.split("=", 1) for line in r.output.splitlines() if "=" in line)
        self.assertNotIn(self.token, r.output)
        self.assertEqual(env.get("HOME"), str(self.scratch))
        self.assertEqual(env.get("LANG"), "C.UTF-8")
        self.assertEqual(env.get("TMPDIR"), "/tmp")
        self.assertEqual(env.get("CUDA_VISIBLE_DEVICES"), "0")

    # ---- what it may do ----------------------------------------------------------------

    def test_writes_its_folders_reads_readable_ones_runs_system_programs(self):
        readme = (self.root or self.course) / ("README.md" if self.root else "lesson.txt")
        r = self.sh(f"echo ok > '{self.scratch}/ok.txt' && echo done > '{self.course}/out/done.txt' && "
                    f"cat '{self.course}/lesson.txt' '{self.tmp}/link-to-course/lesson.txt' && "
                    f"head -c 40 '{readme}' && echo && /usr/bin/env true && uname -s && "
                    f"echo hi > /dev/null && echo tmp > /tmp/t && cat /tmp/t")
        self.assertEqual(r.rc, 0, r.output)
        self.assertEqual(r.killed_why, "")
        self.assertEqual((self.scratch / "ok.txt").read_text(), "ok\n")
        self.assertEqual((self.course / "out" / "done.txt").read_text(), "done\n")
        self.assertGreaterEqual(r.output.count("the course"), 2, r.output)
        self.assertIn(readme.read_text()[:40], r.output)
        self.assertIn("Linux", r.output)
        self.assertIn("tmp", r.output)

    def test_exit_codes_signals_stdin_and_a_missing_command(self):
        for enabled in (True, False):
            with self.subTest(sandboxed=enabled):
                self.assertEqual(self.sh("exit 3", enabled=enabled).rc, 3)
                self.assertEqual(self.sh("kill -SEGV $$", enabled=enabled).rc, -11)
                r = sandbox.run(["/bin/cat"], writable=self.writable, gpu=False, stdin="fed\n", enabled=enabled)
                self.assertEqual(r.output, "fed\n")
                r = sandbox.run(["/no/such/program"], writable=self.writable, gpu=False, enabled=enabled)
                self.assertEqual(r.rc, 127, r.output)
                self.assertEqual(r.killed_why, "")

    def test_a_path_it_would_not_show_is_refused_by_name(self):
        # A program reached through a link into a folder the sandbox hides
        # (a build cache, say) would fail inside as "No such file": refused
        # before it starts, naming the path, so no run is scored for it.
        hidden = self.tmp / "hidden" / "prog"
        shutil.copy(self.probe, hidden)
        link = self.scratch / "prog-link"
        link.symlink_to(hidden)
        for cmd in ([str(link)], ["/bin/sh", "-c", "true", str(hidden)]):
            with self.subTest(cmd=cmd), self.assertRaises(ValueError) as e:
                sandbox.run(cmd, writable=self.writable, readable=self.readable, gpu=False)
            self.assertIn(str(hidden), str(e.exception))
        copy = self.scratch / "prog-copy"
        shutil.copy(hidden, copy)
        r = sandbox.run([str(copy), "bigfile", str(self.scratch / "w.bin"), "1"], writable=self.writable,
                        readable=self.readable, gpu=False)
        self.assertEqual((r.rc, r.output.strip()), (0, "wrote 1 MiB"))

    def test_output_is_capped_and_keeps_its_end(self):
        """A flood of output (printing is allowed to a kernel file) keeps its first and
        last half of the limit: the message that ends a run after it is kept."""
        r = self.sh("head -c 100000 /dev/zero | tr '\\0' x; echo; echo the end", limits=sandbox.Limits(output_bytes=1000))
        head, _, tail = r.output.partition("\n[sandbox:")
        self.assertEqual(head, "x" * 500)
        self.assertIn("99009 more bytes of output were dropped", r.output)
        self.assertTrue(tail.endswith("x" * 491 + "\nthe end\n"), tail[-40:])
        self.assertLessEqual(sandbox.Limits().output_bytes, 4 * MiB)

    def test_wrap_makes_the_command_line(self):
        cmd = sandbox.wrap(["./prog"], writable=[self.scratch], readable=[self.course], gpu=True, cwd=self.scratch,
                           limits=sandbox.Limits())
        for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session", "--clearenv"):
            self.assertIn(flag, cmd)
        self.assertEqual(cmd[-1], "./prog")
        self.assertIn("--fsize=4294967296:4294967296", cmd)
        with self.assertRaises(ValueError):
            sandbox.wrap(["true"], writable=[Path("/")], gpu=False)


class DiskWalk(unittest.TestCase):
    """The disk watchdog walks a command's folders while it runs (no sandbox needed)."""

    def test_a_folder_swapped_for_a_link_is_not_followed(self):
        """A folder the command made unreadable is opened again with chmod; the command,
        still running, can put a link to any file of the grader's user in its place
        between the failed listing and the chmod. Here that moment is made certain."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "run" / "hidden").mkdir(parents=True)
            victim = tmp / "instructor-only.txt"
            victim.write_text("the answers")
            victim.chmod(0o600)
            hidden, real_scandir = str(tmp / "run" / "hidden"), os.scandir

            def scandir(path):
                if os.fspath(path) == hidden and not os.path.islink(hidden):
                    os.rename(hidden, hidden + ".was")
                    os.symlink(victim, hidden)
                    raise PermissionError(13, "Permission denied", hidden)  # as a 000 folder does to a non-root grader
                return real_scandir(path)

            with unittest.mock.patch("os.scandir", scandir):
                sandbox._disk_usage([tmp / "run"])
            self.assertEqual(victim.stat().st_mode & 0o777, 0o600)

    def test_an_unreadable_folder_is_opened_and_counted(self):
        with tempfile.TemporaryDirectory() as tmp:
            hidden = Path(tmp) / "hidden"
            hidden.mkdir()
            (hidden / "f").write_bytes(bytes(MiB))
            hidden.chmod(0)
            sandbox._let_owner_in(hidden)
            self.assertEqual(hidden.stat().st_mode & 0o700, 0o700)
            self.assertGreaterEqual(sandbox._disk_usage([Path(tmp)]), MiB)


def main():
    try:
        said = sandbox.check_available()
    except sandbox.SandboxUnavailable as e:
        print(f"test_sandbox: skipped: {e}")
        return 77
    print(f"sandbox: {said}; running as uid {os.geteuid()}")
    result = unittest.main(verbosity=2, exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
