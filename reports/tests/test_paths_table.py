"""`render_report.py paths` on JSON shaped as `gpu_run.sh paths` writes it:
the cell table (medians over rounds, "-" where a path cannot run, the
"<==" mark) and the grid of ratios by shape and rows."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "render_report.py")


def name(tokens, experts=96, topk=4, dtype="float32", norm="sigmoid"):
    return (f"routing/impl:cuda/tokens:{tokens}/experts:{experts}/topk:{topk}/dtype:{dtype}/norm:{norm}"
            "/padding:none/iterations:20/manual_time")


def doc(times):
    """times: {run name: median us}; aggregate rows only, as with --benchmark_report_aggregates_only."""
    rows = []
    for run, us in times.items():
        for agg, value in (("mean", us + 1.0), ("median", us), ("stddev", 0.1)):
            rows.append({"name": f"{run}_{agg}", "run_name": run, "run_type": "aggregate",
                         "aggregate_name": agg, "real_time": value, "time_unit": "us"})
    return {"context": {}, "benchmarks": rows}


def run(files, *args):
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for filename, content in files.items():
            path = os.path.join(tmp, filename)
            with open(path, "w") as f:
                json.dump(content, f)
            paths.append(path)
        done = subprocess.run([sys.executable, SCRIPT, "paths", *args, *paths], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


class PathsTableTest(unittest.TestCase):
    def test_table_takes_the_median_over_rounds_and_marks_wins(self):
        files = {
            "sweep_0_r1.json": doc({name(8192): 4.0, name(12288): 5.0}),
            "sweep_0_r2.json": doc({name(8192): 4.2, name(12288): 5.2}),
            "sweep_5l2_r1.json": doc({name(8192): 4.4, name(12288): 4.0}),
            "sweep_5l2_r2.json": doc({name(8192): 4.6, name(12288): 4.2}),
        }
        code, out, err = run(files)
        self.assertEqual(code, 0, err)
        lines = out.splitlines()
        self.assertIn("path 0", lines[0])
        self.assertIn("path 5l2", lines[0])
        row_8192 = next(line for line in lines if "tokens:8192/" in line)
        self.assertIn("4.10", row_8192)        # median of 4.0 and 4.2
        self.assertIn("4.50", row_8192)
        self.assertTrue(row_8192.rstrip().endswith("1.000"), row_8192)
        row_12288 = next(line for line in lines if "tokens:12288/" in line)
        self.assertIn("path 5l2", row_12288)   # the best column
        self.assertIn("0.804  <==", row_12288)  # 4.1 / 5.1

    def test_grid_folds_shapes_by_rows_with_dashes_where_a_path_cannot_run(self):
        files = {
            "p_0_r1.json": doc({name(8192): 4.0, name(16384): 8.0, name(8192, topk=8): 2.0}),
            "p_5l2_r1.json": doc({name(8192): 2.0, name(16384): 6.0, name(8192, topk=8): 3.0}),
            "p_5l4_r1.json": doc({name(16384): 4.0}),
        }
        code, out, err = run(files, "--grid")
        self.assertEqual(code, 0, err)
        self.assertIn("time over path 0, fields path 5l2 / path 5l4, by rows", out)
        self.assertIn("E=96   sigmoid float32  k=4  8192:0.50/-  16384:0.75/0.50", out)
        self.assertIn("E=96   sigmoid float32  k=8  8192:1.50/-", out)

    def test_a_file_not_named_as_the_step_writes_it_is_refused_by_name(self):
        code, _, err = run({"sweep.json": doc({name(8192): 4.0})})
        self.assertEqual(code, 2)
        self.assertIn("sweep.json", err)
        self.assertIn("TAG_PATH_rROUND.json", err)

    def test_runs_without_a_timed_cell_are_an_error(self):
        errored = {"benchmarks": [{"name": name(8192), "run_name": name(8192), "run_type": "iteration",
                                   "error_occurred": True, "error_message": "skipped: path cannot run",
                                   "real_time": 0, "time_unit": "us"}]}
        code, _, err = run({"p_5l4_r1.json": errored})
        self.assertEqual(code, 2)
        self.assertIn("no timed cell", err)


if __name__ == "__main__":
    unittest.main()
