"""Tests of the block-threshold candidate counts (perfreport/candidates.py)."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from perfreport import candidates  # noqa: E402

SCRIPT = os.path.join(HERE, "..", "render_report.py")


class CandidatesTest(unittest.TestCase):
    def test_groups_follow_the_threads_experts(self):
        # 4 warps of two experts, half-warp groups: thread t holds t and t + 128.
        self.assertEqual(candidates.group_of(0, 4, 2), 0)
        self.assertEqual(candidates.group_of(16, 4, 2), 1)
        self.assertEqual(candidates.group_of(47, 4, 2), 2)
        self.assertEqual(candidates.group_of(128 + 47, 4, 2), 2)
        self.assertEqual(candidates.group_of(255, 4, 2), 7)
        self.assertEqual(candidates.group_of(300, 8, 1), 1)  # 8 warps: t = 44, warp 1
        self.assertEqual(candidates.group_of(128 + 47, 4, 4), 5)  # quarter-warps: t = 47, warp 1, lanes 8-15

    def test_ties_at_tau_are_all_candidates(self):
        self.assertEqual(candidates.row_candidates([0.5] * 64, [0.0] * 64, 2, False, 2, 1), 64)
        self.assertEqual(candidates.row_candidates([0.5] * 64, [0.0] * 64, 2, True, 2, 1), 64)

    def test_k_one_is_the_row_maximum_alone_and_k_past_the_groups_is_every_expert(self):
        x = [float(e % 37) - 0.01 * e for e in range(96)]
        self.assertEqual(candidates.row_candidates(x, [0.0] * 96, 1, True, 3, 1), 1)
        self.assertEqual(candidates.row_candidates(x, [0.0] * 96, 4, False, 3, 1), 96)  # 3 groups < k

    def test_bias_enters_the_selection_input(self):
        x = [0.0] * 64
        b = [0.0] * 64
        b[40] = 1.0
        self.assertEqual(candidates.row_candidates(x, b, 1, False, 2, 1), 1)

    def test_bench_values_are_float32_and_bfloat16_rounds_to_nearest_even(self):
        v = candidates.bench_value(12345, 1)
        self.assertEqual(v, candidates.f32(v))
        self.assertLess(abs(v), 2 * 1.7320508 + 1e-6)
        self.assertEqual(candidates.bench_value(12345, 1), v)
        self.assertNotEqual(candidates.bench_value(12345, 2), v)
        self.assertEqual(candidates.bf16(1.0), 1.0)
        self.assertEqual(candidates.bf16(1.00390625), 1.0)           # halfway: to even
        self.assertEqual(candidates.bf16(1.01171875), 1.015625)      # halfway: to even, upwards
        self.assertEqual(candidates.bf16(1.0048828125), 1.0078125)   # above halfway

    def test_counts_cover_every_row_and_name_bad_values(self):
        ns = candidates.counts(3, 160, 6, True, "bfloat16", 4, 2, 2)
        self.assertEqual(len(ns), 3)
        self.assertTrue(all(6 <= n <= 160 for n in ns))
        with self.assertRaisesRegex(ValueError, "groups per warp = 3"):
            candidates.counts(1, 160, 6, True, "float32", 4, 2, 3)
        with self.assertRaisesRegex(ValueError, "fewer than 160"):
            candidates.counts(1, 160, 6, True, "float32", 4, 1, 2)
        with self.assertRaisesRegex(ValueError, "k = 9"):
            candidates.counts(1, 8, 9, True, "float32", 1, 1, 1)

    def test_the_command_prints_the_bands_and_refuses_bad_input(self):
        ok = subprocess.run([sys.executable, SCRIPT, "candidates", "--tokens", "4", "--experts", "64", "--topk", "2",
                             "--norm", "sigmoid", "--warps", "2"], capture_output=True, text=True)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertRegex(ok.stdout, r"^4 rows: candidates \d+-\d+, median \d+; \d+ rows over 32$")
        bad = subprocess.run([sys.executable, SCRIPT, "candidates", "--experts", "64", "--topk", "2", "--norm",
                              "sigmoid", "--warps", "2", "--dtype", "float16"], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("'float16'", bad.stderr)


if __name__ == "__main__":
    unittest.main()
