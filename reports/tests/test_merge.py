"""`render_report.py merge`: runs of the same cells in separate processes
become one run whose cell median is over every process's repetitions, so
one process's shift does not move it; runs of another commit or GPU are
refused with the key that differs."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from perfreport import load  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "render_report.py")
NAME = ("routing/impl:cuda/tokens:1/experts:128/topk:1/dtype:float32/norm:softmax"
        "/padding:none/iterations:20/manual_time")


def doc(reps, commit="74daf8b"):
    rows = [{"name": NAME, "run_name": NAME, "run_type": "iteration", "real_time": us, "time_unit": "us",
             "label": "path=register"} for us in reps]
    rows.append({"name": NAME + "_median", "run_name": NAME, "run_type": "aggregate", "aggregate_name": "median",
                 "real_time": sorted(reps)[len(reps) // 2], "time_unit": "us"})
    return {"context": {"gpu_name": "NVIDIA H100 80GB HBM3", "git_commit": commit, "preset": "anchor"},
            "benchmarks": rows}


def run(docs):
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, content in enumerate(docs):
            path = os.path.join(tmp, f"perf_p{i}.json")
            with open(path, "w") as f:
                json.dump(content, f)
            paths.append(path)
        out = os.path.join(tmp, "merged.json")
        done = subprocess.run([sys.executable, SCRIPT, "merge", *paths, "--out", out], capture_output=True, text=True)
        merged = None
        if os.path.exists(out):
            context, cells = load.load_benchmark_json(out)
            merged = (context, cells)
    return done.returncode, done.stdout, done.stderr, merged


class MergeProcesses(unittest.TestCase):
    def test_one_shifted_process_does_not_move_the_median(self):
        code, out, err, merged = run([doc([1.35, 1.34, 1.36]), doc([1.65, 1.62, 1.66]), doc([1.34, 1.35, 1.35])])
        self.assertEqual(code, 0, err)
        self.assertIn("merge: 3 runs, 9 repetitions", out)
        context, cells = merged
        self.assertEqual(context["processes"], "3")
        (cell,) = cells.values()
        self.assertEqual(len(cell.times_us), 9)   # the per-process aggregates are dropped
        self.assertAlmostEqual(cell.median_us, 1.35)
        self.assertEqual(cell.path, "register")

    def test_report_says_over_how_many_processes(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, reps in enumerate(([1.35, 1.34, 1.36], [1.65, 1.62, 1.66], [1.34, 1.35, 1.35])):
                paths.append(os.path.join(tmp, f"p{i}.json"))
                with open(paths[-1], "w") as f:
                    json.dump(doc(reps), f)
            merged = os.path.join(tmp, "merged.json")
            subprocess.run([sys.executable, SCRIPT, "merge", *paths, "--out", merged], check=True, capture_output=True)
            out_dir = os.path.join(tmp, "report")
            subprocess.run([sys.executable, SCRIPT, merged, "--out", out_dir, "--title", "t"], check=True,
                           capture_output=True)
            with open(os.path.join(out_dir, "README.md")) as f:
                readme = f.read()
        self.assertIn("| processes | 3 |", readme)
        self.assertIn("Times are medians of the repetitions of 3 processes", readme)

    def test_another_commit_is_refused(self):
        code, out, err, merged = run([doc([1.35]), doc([1.36], commit="483f6be")])
        self.assertEqual(code, 2)
        self.assertIn("git_commit is '483f6be'", err)
        self.assertIsNone(merged)


if __name__ == "__main__":
    unittest.main()
