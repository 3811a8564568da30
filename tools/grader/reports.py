"""What a grading run writes: the two tables, results.json (Gradescope's
format, with each lab's points and flags as data), junit.xml, records.csv."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import records_to_csv  # tools/records_to_csv.py (tools/ is the command's folder)

from .config import NOT_RUN, SANITIZERS
from .scoring import baseline_variants, size_product, size_text

def fmt_number(v, spec, suffix=""):
    return f"{v:{spec}}{suffix}" if isinstance(v, (int, float)) and v else "-"


def variant_rows(result):
    """One row per variant: the check over all its records, numbers at its largest timed size."""
    rows = []
    baselines = baseline_variants(result.records)
    order = list(dict.fromkeys(r["variant"] for r in result.records))
    for variant in order:
        mine = [r for r in result.records if r["variant"] == variant]
        timed = [r for r in mine if r.get("timed")]
        at = max(timed, key=size_product) if timed else None
        rows.append({
            "variant": variant + (" (baseline)" if variant in baselines else ""),
            "check": ("PASS" if all(r.get("passed") for r in mine) else "FAIL") +
                     ("!" if any(r.get("implausible") for r in mine) else ""),
            "size": size_text(at) if at else "",
            "ms": fmt_number(at and at.get("median_ms"), ".4f"),
            "ceil": fmt_number(at and at.get("pct_of_ceiling"), ".1f", "!" if at and at.get("suspect") else ""),
            "vs": fmt_number(at and at.get("vs_baseline"), ".2f", "x"),
        })
    return rows


def results_table(results):
    head = f"{'lab':<26} {'variant':<28} {'check':<5}  {'size':<24} {'median ms':>10} {'%ceil':>7} {'vs base':>8}"
    lines = [head, "-" * len(head)]
    for res in results:
        if res.status != "graded":
            lines.append(f"{res.lab:<26} {'(' + res.status + ')':<28} {'-' if res.status != 'does not build' else 'FAIL':<5}")
            continue
        rows = variant_rows(res)
        if not rows:
            lines.append(f"{res.lab:<26} {'(no records)':<28} {'FAIL':<5}")
        for row in rows:
            lines.append(f"{res.lab:<26} {row['variant']:<28} {row['check']:<5}  {row['size']:<24} "
                         f"{row['ms']:>10} {row['ceil']:>7} {row['vs']:>8}")
    if any(r.get("implausible") for res in results for r in res.records):
        lines.append("PASS! = correct, but a time faster than the hardware can be (implausible): no performance points")
    return "\n".join(lines)


def score_table(results):
    head = f"{'lab':<26} {'correctness':>11} {'performance':>11} {'score':>9}   notes"
    lines = [head, "-" * len(head)]
    total = maximum = 0
    for res in results:
        if not res.graded:
            lines.append(f"{res.lab:<26} {'-':>11} {'-':>11} {'-':>9}   {res.status}{': ' + res.note if res.note else ''}")
            continue
        c, p, m = res.correctness_score, res.performance_score, res.max_score
        total, maximum = total + c + p, maximum + m
        if res.status == "does not build":
            note = "does not build"
        elif not res.correct:
            note = res.problems[0].splitlines()[0]
        else:
            note = res.perf.get("text", "")
        if res.notes:
            note += "; " + "; ".join(res.notes)
        lines.append(f"{res.lab:<26} {c:>5g}/{res.cfg['correctness']:<5g} {p:>5g}/{res.cfg['performance']:<5g} "
                     f"{c + p:>4g}/{m:<4g}   {note}")
    lines.append(f"{'total':<26} {'':>11} {'':>11} {total:>4g}/{maximum:<4g}")
    return "\n".join(lines)


def correctness_text(res):
    if res.status == "does not build":
        return "does not build:\n" + res.note
    if res.correct:
        checks = len({(r['variant'], size_text(r)) for r in res.records})
        text = (f"all {checks} variant/size checks passed (first run, repeated run, fresh inputs; "
                f"each on a poisoned output; GPU work traced)")
        text += "; compute-sanitizer " + ", ".join(SANITIZERS) + " clean" if res.sanitizer == "clean" else ""
        return text + "".join("\n" + n for n in res.notes)
    shares = res.exercise_shares()
    split = (["exercise variants (points split among them): " +
              ", ".join(f"{v} {points:g}" for v, points in shares.items())] if shares else [])
    return "\n".join(split + res.problems + res.notes)


def tests_of(res):
    """(name, score, max_score, passed, output) for the lab's tests."""
    tests = [("correctness", res.correctness_score, res.cfg["correctness"], res.correct, correctness_text(res))]
    if res.cfg["performance"] > 0:
        if res.correct and res.perf:
            tests.append(("performance", res.performance_score, res.cfg["performance"], res.perf["passed"],
                          res.perf["text"]))
        else:
            why = "not measured: correctness failed" if not res.correct else "not measured (--correctness-only)"
            tests.append(("performance", 0, res.cfg["performance"], False, why))
    return tests


def gradescope_json(results, header):
    tests = []
    for res in results:
        if not res.graded:
            continue
        for name, score, max_score, passed, output in tests_of(res):
            tests.append({"name": f"{res.lab}: {name}", "score": score, "max_score": max_score,
                          "status": "passed" if passed else "failed", "output": output})
    skipped = [f"{r.lab} ({r.status})" for r in results if not r.graded]
    output = header + (f"\nnot graded: {', '.join(skipped)}" if skipped else "")
    return {"score": round(sum(t["score"] for t in tests), 2), "output": output, "tests": tests}


def junit_xml(results, header):
    suites = ET.Element("testsuites", name="cudalabs grade")
    for res in results:
        suite = ET.SubElement(suites, "testsuite", name=res.lab, time=f"{res.seconds:.2f}")
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="grader", value=header)
        if not res.graded:
            case = ET.SubElement(suite, "testcase", classname=res.lab, name="correctness", time="0")
            ET.SubElement(case, "skipped", message=res.status + (": " + res.note if res.note else ""))
            suite.set("tests", "1"), suite.set("failures", "0"), suite.set("skipped", "1")
            continue
        failures = 0
        for name, score, max_score, passed, output in tests_of(res):
            case = ET.SubElement(suite, "testcase", classname=res.lab, name=name,
                                 time=f"{res.seconds:.2f}" if name == "correctness" else "0")
            if passed:
                ET.SubElement(case, "system-out").text = f"{score:g}/{max_score:g}: {output}"
            else:
                failures += 1
                first = output.splitlines()[0] if output else "failed"
                ET.SubElement(case, "failure", message=f"{score:g}/{max_score:g}: {first}").text = output
        suite.set("tests", str(len(suite.findall("testcase"))))
        suite.set("failures", str(failures))
        suite.set("skipped", "0")
    for key in ("tests", "failures", "skipped"):
        suites.set(key, str(sum(int(s.get(key)) for s in suites)))
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_reports(results, out, header, trust=None):
    records = [r for res in results for r in res.records]
    records_to_csv.write_csv(records, out / "records.csv")
    junit_xml(results, header).write(out / "junit.xml", encoding="utf-8", xml_declaration=True)
    gradescope = with_class_data(gradescope_json(results, header), results)
    if trust is not None:
        gradescope["extra_data"]["trust"] = trust
    (out / "results.json").write_text(json.dumps(gradescope, indent=2) + "\n")
    text = f"{header}\n\n{results_table(results)}\n\n{score_table(results)}\n"
    (out / "summary.txt").write_text(text)
    return text



def first_line(res):
    """The one line that says why a lab lost points: the compiler's first error, the first problem."""
    if res.status == "does not build":
        # The compilers' own "file:line: error: ..." (GCC) and "file(line): error: ..." (nvcc),
        # before any line that only mentions an error: a warning quotes source lines too, and
        # a comment there ("an error inside it surfaces here") is not the compiler's error.
        lines = res.note.splitlines()
        errors = [line for line in lines if ": error" in line or ": fatal error" in line]
        errors += [line for line in lines if "error" in line and line not in errors]
        return (errors or lines or [""])[0].strip()
    text = res.note if not res.graded else res.problems[0] if res.problems else res.perf.get("text", "")
    return next(iter(text.splitlines()), "")


def with_class_data(gradescope, results):
    """results.json plus, in Gradescope's free-form extra_data, each lab's points and
    flags as data (tools/grade_class.py makes the class table from them), and in
    --build-only mode each built lab's tests, listed as not run."""
    # Gradescope knows only passed and failed: a test not run earns nothing, and says why.
    gradescope["tests"] += [{"name": f"{res.lab}: {name}", "score": 0, "max_score": res.cfg[name], "status": "failed",
                             "output": res.note}
                            for res in results if res.status == "built"
                            for name in ("correctness", "performance") if res.cfg[name] > 0]
    labs = {}
    for res in results:
        flags = {"compile error": res.status == "does not build",
                 "rejected": any(p.startswith("rejected:") for p in res.problems),
                 "timeout": any("did not finish in" in p for p in res.problems),
                 "sanitizer": res.sanitizer not in ("", "clean"),
                 "implausible": bool(res.perf.get("implausible")) or any(r.get("implausible") for r in res.records),
                 "throttled": any(r.get("throttled") for r in res.records),
                 NOT_RUN: res.status == "built"}
        labs[res.lab] = {"status": res.status, "correct": res.correct, "correctness": res.correctness_score,
                         "performance": res.performance_score, "max_score": res.max_score,
                         "flags": [name for name, on in flags.items() if on],
                         "why": first_line(res)}
    gradescope["extra_data"] = {"labs": labs}
    return gradescope


