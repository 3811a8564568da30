"""Gradescope's results.json as the bridge writes it, and GitHub Classroom's
grading-reporter record made from it.

Gradescope (https://gradescope-autograders.readthedocs.io, "Autograder
Specifications"): {"score", "output", "tests": [{"name", "score", "max_score",
"status": "passed"|"failed", "output"}], "extra_data"}. tools/grade.py writes it;
the bridge passes it on, fills a test's missing status from its points, and
writes one of its own (score 0, the reason in "output") when there is nothing to
pass on: the host is down or busy, it refused the key or the archive.
"""
import base64
import json

STATUSES = ("passed", "failed")


def message(text, tests=None):
    """results.json for a submission that was not graded on the GPU: why, and what to do."""
    return {"score": 0, "output": text, "tests": tests or [], "extra_data": {"bridge": {"graded": False}}}


def normalised(results):
    """results.json with every test complete (name, score, max_score, status, output)
    and the score the sum of the tests'. ValueError if it is not results.json at all."""
    if not isinstance(results, dict) or not isinstance(results.get("tests", []), list):
        raise ValueError("not a results.json object (no tests list)")
    tests = []
    for t in results.get("tests", []):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise ValueError(f"a test without a name: {t!r}")
        score, max_score = t.get("score", 0), t.get("max_score", 0)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (score, max_score)):
            raise ValueError(f"test {t['name']!r}: score and max_score must be numbers")
        status = t.get("status")
        if status not in STATUSES:  # grade.py's not-run tests (--build-only) carry none
            status = "passed" if max_score > 0 and score >= max_score else "failed"
        tests.append({**t, "score": score, "max_score": max_score, "status": status, "output": str(t.get("output", ""))})
    score = results.get("score", sum(t["score"] for t in tests))
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        raise ValueError("score must be a number")
    return {**results, "score": score, "output": str(results.get("output", "")), "tests": tests}


def problems(results):
    """What makes `results` not Gradescope's format ([] when it is): the test's check."""
    found = []
    if not isinstance(results, dict):
        return ["not a JSON object"]
    if not isinstance(results.get("score"), (int, float)) or isinstance(results.get("score"), bool):
        found.append("score is not a number")
    if not isinstance(results.get("output"), str):
        found.append("output is not text")
    tests = results.get("tests")
    if not isinstance(tests, list):
        return found + ["tests is not a list"]
    for t in tests:
        for key, kind in (("name", str), ("score", (int, float)), ("max_score", (int, float)), ("output", str)):
            if not isinstance(t.get(key), kind):
                found.append(f"test {t.get('name')!r}: {key} missing or not {getattr(kind, '__name__', 'a number')}")
        if t.get("status") not in STATUSES:
            found.append(f"test {t.get('name')!r}: status {t.get('status')!r} is not passed or failed")
    if tests and abs(sum(t.get("score", 0) for t in tests) - results.get("score", 0)) > 0.011:
        found.append("score is not the sum of the tests' scores")
    return found


def classroom_record(results):
    """GitHub Classroom's grading reporter (classroom-resources/autograding-grading-reporter)
    reads each runner's record, base64 JSON, from RUNNER_RESULTS: the same tests and points."""
    tests = [{"name": t["name"], "status": "pass" if t["status"] == "passed" else "fail", "message": t["output"],
              "score": t["score"], "test_code": "", "line_no": 0, "execution_time": ""} for t in results["tests"]]
    max_score = sum(t["max_score"] for t in results["tests"])
    status = "pass" if tests and all(t["status"] == "pass" for t in tests) else "fail" if tests else "error"
    record = {"version": 1, "status": status, "max_score": max_score, "tests": tests}
    if not tests:  # nothing graded: the reason, as one failed test of no points
        record["tests"] = [{"name": "GPU grading", "status": "error", "message": results["output"], "score": 0,
                            "test_code": "", "line_no": 0, "execution_time": ""}]
    return base64.b64encode(json.dumps(record).encode()).decode()
