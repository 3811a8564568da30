#!/usr/bin/env python3
"""The bridge from Gradescope (or GitHub Classroom) to the course's GPU host.

Gradescope's autograders are CPU containers; the course's grading needs a GPU.
The container compiles the submission (compile errors in seconds) and sends its
kernel files over SSH to the GPU host, where tools/grade.py grades them in its
sandbox; the answer is Gradescope's results.json. docs/instructor-guide.md,
"Gradescope and GitHub Classroom", gives the set-up step by step.

    bridge.py package --out autograder.zip --key KEY --known-hosts FILE --host HOST --assignment NAME --labs 02
        the autograder zip to upload (make gradescope-autograder)
    bridge.py submit --submission DIR (--metadata FILE | --student ID) --labs 02 --assignment NAME
                     --host HOST --key KEY --known-hosts FILE [--results FILE] [--classroom FILE]
        the autograder's step: compile check, send, results.json (run_autograder;
        the GitHub Classroom workflow, with --classroom $GITHUB_OUTPUT)
    bridge.py serve --config /etc/cudalabs-bridge.toml
        on the GPU host: the forced command of the autograder's key in
        authorized_keys; reads SSH_ORIGINAL_COMMAND and the archive on stdin
    bridge.py serve --config FILE --check
        check the host's config and print its assignments

Modules: archive.py (the archive, checked as hostile), client.py (submit),
host.py (serve: queue, daily limit, usage log, seed), package.py, results.py.
"""
import argparse
import os
import sys
from pathlib import Path

# The course's grader (tools/grade_class.py, tools/grader/) is one level up. This
# script is a command run from anywhere with no PYTHONPATH set: run_autograder in
# Gradescope's container, and the forced command of the autograder's SSH key on
# the GPU host. So it, alone among the tools, puts tools/ on the path itself
# (its own folder, with client.py and host.py, is first already: it is the script's).
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import client  # noqa: E402
import host  # noqa: E402
import package  # noqa: E402
from grader.config import GradeError  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Exit codes: 0 done (submit: the GPU host graded it), 1 submit: results.json "
                                       "says why it was not graded, 2 bad usage or refused, 3 serve: not graded now.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{package,submit,serve}")

    def connection(q):
        q.add_argument("--host", required=True, help="the GPU host's name or address")
        q.add_argument("--port", type=int, default=22, help="its SSH port (default 22)")
        q.add_argument("--user", default="cudalabs", help="the account whose authorized_keys has the key (default cudalabs)")
        q.add_argument("--key", required=True, help="the autograder's private key (no passphrase)")
        q.add_argument("--known-hosts", required=True, help="the GPU host's public host key, as ssh-keyscan prints it")
        q.add_argument("--assignment", required=True, help="the assignment's name in the host's [assignments.NAME]")
        q.add_argument("--labs", required=True, help="the assignment's labs, by number or name: 02,04_reduction")
        q.add_argument("--arch", default="", help="gpu_arch of the compile check (default: meson's auto)")

    q = sub.add_parser("package", help="write the Gradescope autograder zip (make gradescope-autograder)")
    q.add_argument("--out", required=True, help="the zip to write")
    q.add_argument("--host", default="")
    q.add_argument("--port", type=int, default=22)
    q.add_argument("--user", default="cudalabs")
    q.add_argument("--key", default="")
    q.add_argument("--known-hosts", default="")
    q.add_argument("--assignment", default="")
    q.add_argument("--labs", default="")
    q.add_argument("--arch", default="9.0", help="gpu_arch of the compile check (default 9.0: one architecture, fast)")
    q.add_argument("--timeout", type=float, default=2400,
                   help="seconds to wait for the GPU host; below Gradescope's autograder timeout (default 2400)")

    q = sub.add_parser("submit", help="the autograder's step: compile check, send to the GPU host, results.json")
    connection(q)
    q.add_argument("--submission", required=True, help="the student's files (Gradescope: /autograder/submission)")
    who = q.add_mutually_exclusive_group(required=True)
    who.add_argument("--metadata", help="Gradescope's submission_metadata.json: the student id is "
                                        "gradescope-<user id> of the first submitter")
    who.add_argument("--student", help="the student id (GitHub Classroom: the GitHub user name)")
    q.add_argument("--results", default="/autograder/results/results.json", help="where results.json goes")
    q.add_argument("--classroom", help="also append `result=<base64 record>` for GitHub Classroom's grading "
                                       "reporter to this file ($GITHUB_OUTPUT)")
    q.add_argument("--timeout", type=float, default=2400, help="seconds to wait for the GPU host (default 2400)")
    q.add_argument("--connect-timeout", type=int, default=20, help="seconds to wait for the SSH connection (default 20)")
    q.add_argument("--no-compile-check", action="store_true",
                   help="skip the local compile check (on a runner that is the GPU host itself)")

    q = sub.add_parser("serve", help="on the GPU host: the forced command of the autograder's key")
    q.add_argument("--config", required=True, help="the host's bridge config (tools/gradescope/host.example.toml)")
    q.add_argument("--check", action="store_true", help="only check the config and print the assignments")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.command == "submit":
        return client.submit(args)
    if args.command == "package":
        try:
            out, labs = package.build(args)
        except (package.PackageError, GradeError) as e:
            print(f"gradescope-autograder: error: {e}", file=sys.stderr)
            return 2
        print(f"wrote {out}: upload it as the assignment's autograder (Configure Autograder > Zip file upload); "
              f"labs {', '.join(labs)}, assignment {args.assignment}, GPU host {args.user}@{args.host}:{args.port}")
        return 0
    if args.check:
        try:
            cfg, _ = host.load_host_config(args.config)
            rules = host.policy(cfg.grading)
        except (host.ConfigError, GradeError) as e:
            print(f"bridge: error: {e}", file=sys.stderr)
            return 2
        mode = "Slurm" if cfg.slurm.get("enabled") else f"GPUs {cfg.gpus}" if cfg.gpus else "no GPU"
        print(f"{args.config}: ok: {mode}{', build-only' if cfg.build_only else ''}; state {cfg.state}; "
              f"policy {rules}")
        for name, a in sorted(cfg.assignments.items()):
            seed = "a fresh seed for each grading" if a["seed"] == host.FRESH else "one seed for all, set"
            print(f"  {name}: labs {', '.join(a['labs'])} ({seed})")
        return 0
    return host.serve(args.config, os.environ.get("SSH_ORIGINAL_COMMAND", ""), sys.stdin.buffer, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
