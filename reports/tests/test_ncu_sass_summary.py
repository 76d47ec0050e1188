"""scripts/ncu_sass_summary.py on a small CSV of the shape that
`ncu --page source --csv --print-source sass` writes: totals, the stall
reasons, per-row counts and the program-order listing."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "ncu_sass_summary.py")

CSV = """\
"Kernel Name","void route_thread_row_kernel<float, 8, 1, true>(KernelParams)"
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_long_sb","stall_wait"
"0x10","LDG.E.128 R4, desc[UR8][R2.64]","2","8","0","2"
"0x20","STS.128 [R68], R4","30","8","28","2"
"0x30","@P0 BRA 0x10","0","0","0","0"
"0x40","EXIT","1","4","0","1"
"""


def run(*args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ncu_sass.csv")
        with open(path, "w") as f:
            f.write(CSV)
        done = subprocess.run([sys.executable, SCRIPT, path, *args], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


class NcuSassSummaryTest(unittest.TestCase):
    def test_totals_and_reasons(self):
        code, out = run()
        self.assertEqual(code, 0, out)
        self.assertIn("warp instructions executed: 20, stall samples: 33", out)
        self.assertIn("long_sb 28 (85%)", out)
        self.assertNotIn("per row", out)

    def test_per_row_counts_and_listing(self):
        code, out = run("--rows", "4", "--listing")
        self.assertEqual(code, 0, out)
        self.assertIn("warp instructions per row: 5.0 (4 rows)", out)
        listing = out[out.index("program order"):].splitlines()[1:]
        # Executed instructions only, in address order, counts per row.
        self.assertEqual([line.split()[0] for line in listing], ["0", "1", "3"])
        self.assertIn("2.000", listing[1])
        self.assertIn("STS.128", listing[1])

    def test_not_an_ncu_source_page(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "other.csv")
            with open(path, "w") as f:
                f.write('"a","b"\n"1","2"\n')
            done = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("no 'Source' / 'Instructions Executed' header", done.stderr)


if __name__ == "__main__":
    unittest.main()
