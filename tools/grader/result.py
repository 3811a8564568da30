"""What grading one lab found (LabResult: its records, its problems, its
sanitizer verdict, what its performance test judged) and the points that earns:
all or nothing, or a share per exercise variant (exercise_variants)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .scoring import judge_performance


@dataclass
class LabResult:
    lab: str
    cfg: dict
    status: str = "graded"          # graded | not built | does not build | skipped
    note: str = ""                  # why not graded, or the build error
    records: list = field(default_factory=list)
    correct: bool = False
    problems: list = field(default_factory=list)  # why correctness failed
    sanitizer: str = ""             # "" (not run), "clean", or the failure
    perf: dict = field(default_factory=dict)      # what the performance test judged
    notes: list = field(default_factory=list)     # said in the reports, not scored (a re-run, ignored files)
    seconds: float = 0.0
    variant_problems: list = field(default_factory=list)  # the problems that are a variant's wrong result (exit 1)

    @property
    def graded(self):
        return self.status in ("graded", "does not build")  # "not graded here", "skipped", "not built": no score

    @property
    def lab_wide(self):
        """Problems no variant's record explains (a crash, a hang, the sanitizer, a
        rejected or unbuilt submission): they zero the whole lab."""
        return [p for p in self.problems if p not in self.variant_problems]

    def variants_passed(self):
        """{variant: whether every record of it passed}; a record of a variant derived
        from an exercise (lab 08's sweep rows pinned_streams_s2_c4 run pinned_streams's
        code) counts as that exercise's."""
        exercises = self.cfg.get("exercise_variants") or []
        passed = {}
        for r in self.records:
            v = exercise_of(r["variant"], exercises) or r["variant"]
            passed[v] = passed.get(v, True) and bool(r.get("passed"))
        return passed

    def exercise_shares(self):
        """{exercise variant: points} for a lab with exercise_variants that is not all
        correct: its correctness points split evenly among its exercise variants, a
        share for each one right at every size. Zero for all when anything else is
        wrong: a variant the course gives (the student may have broken what it uses),
        a lab-wide problem. Empty for a lab without exercise_variants (all or nothing)."""
        exercises = self.cfg.get("exercise_variants") or []
        if not exercises:
            return {}
        passed = self.variants_passed()
        given_ok = all(ok for v, ok in passed.items() if v not in exercises)
        share = self.cfg["correctness"] / len(exercises)
        earns = self.graded and self.status == "graded" and not self.lab_wide and given_ok
        return {v: round(share, 2) if earns and passed.get(v, False) else 0 for v in exercises}

    @property
    def correctness_score(self):
        if not self.graded:
            return 0
        if self.correct:
            return self.cfg["correctness"]
        return round(sum(self.exercise_shares().values()), 2)

    @property
    def performance_score(self):
        return self.perf.get("score", 0) if self.graded and self.correct else 0

    @property
    def max_score(self):
        return self.cfg["correctness"] + self.cfg["performance"]


def exercise_of(variant, exercises):
    """The exercise a record's variant belongs to, or None: the exercise itself, or
    one whose name it extends with "_..." or "[...]" (lab 08's sweep rows
    pinned_streams_s2_c4, lab 28's sweep points name[block=256]); the longest wins,
    so lab 18's warp_tiling_bk16 stays its own."""
    if variant in exercises:
        return variant
    derived = [e for e in exercises if variant.startswith(e + "_") or variant.startswith(e + "[")]
    return max(derived, key=len) if derived else None


def finish_lab(result, args):
    if not result.records and not result.problems and result.status == "graded":
        result.problems.append("the program recorded no results")
    if result.status == "graded" and not result.problems and result.records and \
            all(r.get("library_baseline") for r in result.records):
        # Only the vendor library ran (32_multi_gpu on one GPU): nothing of the
        # lab's own kernels was checked, so nothing is scored, either way.
        result.status = "not graded here"
        result.note = ("none of the lab's own variants ran on this machine (only its library baseline did); "
                       + next((n for n in result.notes if "not run here" in n), "grade it where it can run"))
    result.correct = result.status == "graded" and not result.problems
    result.perf = judge_performance(result.records, result.cfg) if result.correct and not args.correctness_only else {}

