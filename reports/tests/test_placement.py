"""`render_report.py placement` on JSON shaped as `gpu_run.sh placement`
writes it: a column per offset (the median over rounds), the slowest
offset over the fastest per cell, the mark past 1.05x, and a clear error
for a file without its offset."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "render_report.py")


def name(tokens, experts=128, topk=1):
    return (f"routing/impl:cuda/tokens:{tokens}/experts:{experts}/topk:{topk}/dtype:float32/norm:softmax"
            "/padding:none/iterations:20/manual_time")


def doc(offset, times):
    """times: {run name: [repetition us]}; iteration rows, as routing_benchmark writes them."""
    rows = [{"name": run, "run_name": run, "run_type": "iteration", "real_time": us, "time_unit": "us",
             "label": "path=register"}
            for run, reps in times.items() for us in reps]
    context = {} if offset is None else {"buffer_offset": str(offset)}
    return {"context": context, "benchmarks": rows}


def run(docs):
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, content in enumerate(docs):
            path = os.path.join(tmp, f"placement_{i}.json")
            with open(path, "w") as f:
                json.dump(content, f)
            paths.append(path)
        done = subprocess.run([sys.executable, SCRIPT, "placement", *paths], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


class PlacementTable(unittest.TestCase):
    def test_columns_medians_and_mark(self):
        code, out, err = run([
            doc(0, {name(1): [1.35, 1.34, 1.36], name(128): [1.50, 1.50, 1.51]}),
            doc(0, {name(1): [1.37, 1.37, 1.38], name(128): [1.50, 1.49, 1.50]}),
            doc(4096, {name(1): [1.65, 1.62, 1.66], name(128): [1.52, 1.51, 1.52]}),
        ])
        self.assertEqual(code, 0, err)
        self.assertIn("| +0 B | +4096 B | max / min |", out)
        # tokens 1: the two rounds' medians at offset 0 are 1.35 and 1.37, so 1.36; 1.65 at 4096.
        row1 = next(line for line in out.splitlines() if line.startswith("| 1 |"))
        self.assertIn("| 1.360 | 1.650 | 1.213 <== |", row1)
        self.assertIn("register", row1)
        row128 = next(line for line in out.splitlines() if line.startswith("| 128 |"))
        self.assertIn("| 1.500 | 1.520 | 1.013 |", row128)
        self.assertNotIn("<==", row128)
        self.assertIn("placement: 1 of 2 cells take more than 1.05x", out)
        self.assertIn("1.213x at most", out)
        # Offset 0's two rounds (1.35 and 1.37 at one row) hold the offsets against the process.
        self.assertIn("placement control: at one offset, 0 of 2 (cell, offset) pairs take more than 1.05x", out)

    def test_control_names_a_process_shift(self):
        code, out, err = run([
            doc(256, {name(1): [1.72, 1.73, 1.72]}),
            doc(256, {name(1): [2.20, 2.21, 2.19]}),
            doc(0, {name(1): [1.73, 1.72, 1.74]}),
        ])
        self.assertEqual(code, 0, err)
        self.assertIn("placement control: at one offset, 1 of 1 (cell, offset) pairs", out)
        self.assertIn("1.279x at most", out)

    def test_file_without_offset_is_an_error(self):
        code, out, err = run([doc(None, {name(1): [1.0]})])
        self.assertEqual(code, 2)
        self.assertIn("has no buffer_offset", err)


if __name__ == "__main__":
    unittest.main()
