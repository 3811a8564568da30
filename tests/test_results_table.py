#!/usr/bin/env python3
"""CPU tests of tools/results_table.py: records made under different lab flags
(lab 17's --causal) are told apart in the table, and --flags selects them."""
import unittest

import results_table  # tools/results_table.py (PYTHONPATH: tests/meson.build)


def record(variant, ms, flags=None, git="abc1234"):
    r = {"lab": "17_x", "variant": variant, "size": {"seq": 4096}, "timed": True, "median_ms": ms,
         "gpu": "G", "toolkit": "13.0", "driver": "13.0", "git": git, "timestamp": "2026-11-23T00:00:00Z"}
    if flags is not None:
        r["flags"] = flags
    return r


class Flags(unittest.TestCase):
    RECORDS = [record("fa2", 2.0, {"causal": "0"}), record("fa2", 1.0, {"causal": "1"}, git="def5678")]

    def test_differing_flags_go_in_the_size_column(self):
        text = results_table.table("17_x", columns="ms", records=self.RECORDS)
        self.assertIn("| seq=4096 causal=0 | fa2 | 2 |", text)
        self.assertIn("| seq=4096 causal=1 | fa2 | 1 |", text)
        self.assertIn("git abc1234, def5678", text)

    def test_flags_select(self):
        text = results_table.table("17_x", columns="ms", flags="causal=1", records=self.RECORDS)
        self.assertIn("| seq=4096 | fa2 | 1 |", text)
        self.assertNotIn("| 2 |", text)

    def test_same_flags_everywhere_stay_out_of_the_size(self):
        same = [record("a", 1.0, {"dtype": "fp16"}), record("b", 2.0, {"dtype": "fp16"}), record("c", 3.0)]
        text = results_table.table("17_x", columns="ms", records=same[:2])
        self.assertIn("| seq=4096 | a | 1 |", text)
        text = results_table.table("17_x", columns="ms", records=same)  # a record without flags differs
        self.assertIn("| seq=4096 dtype=- | c | 3 |", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
