#!/usr/bin/env python3
"""Writes a synthetic class: N students' submissions of labs 01 and 04, made from
the course's own kernel files, some broken on purpose, as an export gives them.

    make_submissions.py OUT [--students 200] [--layout gradescope|lms] [--seed 1]

Each student's lab 01 (vector_add.cuh) and lab 04 (reduction.cuh) is one of:
  course         the course's file unchanged
  renamed        the same code, variables renamed and comments rewritten
  wrong          compiles, wrong result (01: a - b; 04: the tree overwrites instead of adding)
  compile_error  does not compile
  extra_file     (01) the course's file plus notes.txt and a main.cu, which the grader ignores
  missing        (04) the lab is not submitted
Few distinct contents on purpose (the build cache builds each once). The student's
own files sit in lab folders, in lab folders under a project folder, or loose.
Layouts: gradescope (submission_NNN/ + submission_metadata.yml, as "Export
Submissions" writes them) or lms (Moodle's "Name_ID_assignsubmission_file_/"
folders, every fourth student a zip, and two Canvas-style flat files).
OUT/../expected.json (or --expected) says what each student was given.
"""
import argparse
import json
import random
import re
import shutil
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John", "Margaret", "Ken", "Radia", "Niklaus",
         "Katherine", "Dennis", "Hedy", "Claude", "Sophie", "Tim", "Annie", "Linus"]
LAST = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Backus", "Hamilton", "Thompson",
        "Perlman", "Wirth", "Johnson", "Ritchie", "Lamarr", "Shannon", "Wilson", "Berners", "Easley", "Torvalds"]


def variants():
    """{lab: {kind: {file name: text}}}: every content a student can submit."""
    add = (ROOT / "labs/01_vector_add/vector_add.cuh").read_text()
    red = (ROOT / "labs/04_reduction/reduction.cuh").read_text()
    renamed_add = re.sub(r"//[^\n]*", "// my own words", add)
    renamed_add = re.sub(r"\bi\b", "idx", renamed_add)
    renamed_red = re.sub(r"//[^\n]*", "// reduce it", red)
    renamed_red = re.sub(r"\bcache\b", "tile", re.sub(r"\bstride\b", "step", renamed_red))
    out = {
        "01_vector_add": {
            "course": {"vector_add.cuh": add},
            "renamed": {"vector_add.cuh": renamed_add},
            "wrong": {"vector_add.cuh": add.replace("c[i] = a[i] + b[i];", "c[i] = a[i] - b[i];")},
            "compile_error": {"vector_add.cuh": add.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + b[i]")},
            "extra_file": {"vector_add.cuh": add, "notes.txt": "I tried 512 threads too.\n",
                           "main.cu": "int main() { return 0; }  // a student's own host program: ignored\n"},
        },
        "04_reduction": {
            "course": {"reduction.cuh": red},
            "renamed": {"reduction.cuh": renamed_red},
            "wrong": {"reduction.cuh": red.replace("cache[threadIdx.x] += cache[threadIdx.x + stride];",
                                                    "cache[threadIdx.x] = cache[threadIdx.x + stride];")},
            "compile_error": {"reduction.cuh": red.replace("partials[blockIdx.x] = cache[0];",
                                                           "partials[blockIdx.x] = cache_of_block[0];")},
            "missing": {},
        },
    }
    for lab, kinds in out.items():
        for kind, files in kinds.items():
            if kind not in ("course", "missing", "extra_file"):
                for name, text in files.items():
                    assert text != kinds["course"].get(name), f"{lab} {kind}: the edit did not apply to {name}"
    return out


WEIGHTS = {"01_vector_add": {"course": 5, "renamed": 2, "wrong": 1, "compile_error": 1, "extra_file": 1},
           "04_reduction": {"course": 5, "renamed": 2, "wrong": 1, "compile_error": 1, "missing": 1}}


def write_student(folder, given, contents, style):
    """One student's files: lab folders (style 0), under a project folder (1), or loose (2)."""
    for lab, kind in given.items():
        for name, text in contents[lab][kind].items():
            if style == 2 and name in ("vector_add.cuh", "reduction.cuh"):
                path = folder / name
            else:  # extra files stay in the lab folder, where a student would leave them
                path = folder / ("cudalabs" if style == 1 else "") / lab / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--layout", choices=("gradescope", "lms"), default="gradescope")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--expected", type=Path, help="where to write expected.json (default: OUT/../expected.json)")
    args = p.parse_args()
    rng = random.Random(args.seed)
    contents = variants()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    expected, metadata = {}, []
    for n in range(args.students):
        name = f"{FIRST[n % len(FIRST)]} {LAST[(n // len(FIRST) + n) % len(LAST)]}" + (f" {n // 400 + 1}" if n >= 400 else "")
        given = {lab: rng.choices(list(w), weights=list(w.values()))[0] for lab, w in WEIGHTS.items()}
        if n < len(WEIGHTS["01_vector_add"]):  # every kind at least once, whatever the seed
            given["01_vector_add"] = list(WEIGHTS["01_vector_add"])[n]
            given["04_reduction"] = list(WEIGHTS["04_reduction"])[n]
        given = {lab: kind for lab, kind in given.items() if kind != "missing"}
        style = n % 3
        if args.layout == "gradescope":
            sub = f"submission_{100000 + n}"
            write_student(args.out / sub, given, contents, style)
            metadata.append(f"{sub}:\n  :submitters:\n  - :name: {name}\n    :sid: '{n}'\n"
                            f"    :email: s{n}@example.edu\n  :created_at: 2026-11-20 10:00:00.000000000 +00:00\n"
                            f"  :score: 0.0\n")
        elif n in (5, 6):  # Canvas: flat files, "login_ID_ID_file"
            login = name.split()[1].lower() + name.split()[0].lower()
            name = login
            for lab, kind in given.items():
                for fname, text in contents[lab][kind].items():
                    if fname.endswith(".cuh"):
                        (args.out / f"{login}_{1000 + n}_{2000 + n}_{fname}").write_text(text)
        else:
            folder = args.out / f"{name}_{300000 + n}_assignsubmission_file_"
            write_student(folder, given, contents, style)
            if n % 4 == 0:  # a zip per student
                with zipfile.ZipFile(folder.with_suffix(".zip"), "w") as z:
                    for f in sorted(folder.rglob("*")):
                        if f.is_file():
                            z.write(f, f.relative_to(folder))
                shutil.rmtree(folder)
        expected[name] = given
    if metadata:
        (args.out / "submission_metadata.yml").write_text("---\n" + "".join(metadata))
    target = args.expected or args.out.parent / "expected.json"
    target.write_text(json.dumps(expected, indent=1) + "\n")
    print(f"{args.students} submissions ({args.layout}) in {args.out}; what each was given: {target}")


if __name__ == "__main__":
    main()
