"""Tests of the renderer and the compare mode on small synthetic runs."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "render_report.py")


def run_json(path, times, reps=1, gpu=True):
    rows = []
    for (impl, t, e, k), us in times.items():
        for r in range(reps):
            rows.append({"name": f"routing/impl:{impl}/tokens:{t}/experts:{e}/topk:{k}/dtype:float32/norm:sigmoid/padding:none/manual_time",
                         "run_type": "iteration", "real_time": us * (1 + 0.01 * r), "time_unit": "us",
                         "bytes_per_call": t * e * 4 + t * k * 8 + e * 4})
    ctx = {"d2d_copy_gbps": "3000", "gpu_name": "test GPU"} if gpu else {}
    with open(path, "w") as f:
        json.dump({"context": ctx, "benchmarks": rows}, f)


def call(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class RenderTest(unittest.TestCase):
    def test_renders_markdown_and_svgs(self):
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "run.json")
            run_json(run, {("cuda", 1, 64, 8): 2.0, ("cuda", 65536, 64, 8): 20.0,
                           ("torch-recipe", 1, 64, 8): 20.0, ("torch-recipe", 65536, 64, 8): 200.0})
            r = call(run, "--out", os.path.join(d, "rep"), "--command", "routing_benchmark --preset=x")
            self.assertEqual(r.returncode, 0, r.stderr)
            md = open(os.path.join(d, "rep", "README.md")).read()
            self.assertIn("routing_benchmark --preset=x", md)
            self.assertIn("| torch-recipe | 2 | 10.00x | 10.00x | 0 |", md)
            svgs = [f for f in os.listdir(os.path.join(d, "rep")) if f.endswith(".svg")]
            self.assertTrue(any(f.startswith("time_") for f in svgs))
            self.assertTrue(any(f.startswith("floor_") for f in svgs))
            for f in svgs:
                self.assertTrue(open(os.path.join(d, "rep", f)).read().startswith("<svg"))

    def test_anchor_cells_join_on_axes(self):
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "run.json")
            run_json(run, {("cuda", 1, 8, 1): 0.5})
            anchor = os.path.join(d, "a.csv")
            with open(anchor, "w") as f:
                f.write("logits_dtype,normalization,experts,topk,tokens,seed_triton_us,torch_eager_us,dram_floor_us\n")
                f.write("float32,sigmoid,8,1,1,1.06,17.1,0.00\nfloat32,sigmoid,8,1,16,1.21,19.3,0.00\n")
            r = call(run, "--anchor", anchor, "--out", os.path.join(d, "rep"))
            self.assertEqual(r.returncode, 0, r.stderr)
            md = open(os.path.join(d, "rep", "README.md")).read()
            self.assertIn("| seed-triton | 1 | 2.12x |", md)

    def test_compare_flags_a_regression_and_passes_noise(self):
        with tempfile.TemporaryDirectory() as d:
            base, slow, same = (os.path.join(d, n) for n in ("b.json", "s.json", "n.json"))
            run_json(base, {("cuda", 1, 64, 8): 2.0}, reps=3)
            run_json(slow, {("cuda", 1, 64, 8): 2.5}, reps=3)
            run_json(same, {("cuda", 1, 64, 8): 2.02}, reps=3)
            r = call("compare", slow, base, "--threshold", "0.05")
            self.assertEqual(r.returncode, 1)
            self.assertIn("REGRESSION cuda/1/64/8", r.stdout)
            self.assertIn("tokens 1: time new/baseline 1.250 (geomean of 1), 0 faster, 1 slower by > 3%", r.stdout)
            self.assertEqual(call("compare", same, base).returncode, 0)

    def test_compare_groups_filters_and_lists_cells(self):
        with tempfile.TemporaryDirectory() as d:
            base, new = os.path.join(d, "b.json"), os.path.join(d, "n.json")
            run_json(base, {("cuda", 1, 8, 8): 2.0, ("cuda", 1, 64, 8): 2.0, ("cuda", 16, 8, 8): 2.0}, reps=3)
            run_json(new, {("cuda", 1, 8, 8): 1.0, ("cuda", 1, 64, 8): 2.0, ("cuda", 16, 8, 8): 1.0}, reps=3)
            r = call("compare", new, base, "--group", "experts")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("experts 8: time new/baseline 0.500 (geomean of 2), 2 faster, 0 slower by > 3%", r.stdout)
            self.assertIn("experts 64: time new/baseline 1.000 (geomean of 1), 0 faster, 0 slower by > 3%", r.stdout)
            r = call("compare", new, base, "--where", "experts=8", "--where", "tokens=16", "--cells")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("cell cuda/16/8/8/float32/sigmoid/none: 2.02 us -> 1.01 us, 0.500", r.stdout)
            self.assertIn("compare: 1 cells compared", r.stdout)
            r = call("compare", new, base, "--where", "experts=512")
            self.assertEqual(r.returncode, 2)
            self.assertIn("matches --where", r.stderr)
            r = call("compare", new, base, "--where", "expert=8")
            self.assertEqual(r.returncode, 2)
            self.assertIn("'expert=8'", r.stderr)

    def test_loader_runs_render_as_a_table_with_speedups(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "loader.json")
            rows = [{"name": f"loader/impl:{i}/tp:8/cache:warm/device:{dev}/iterations:5/manual_time", "run_type": "iteration",
                     "real_time": t, "time_unit": "ms", "GB_per_s": g}
                    for i, dev, t, g in (("block-copies", "cpu", 4.0, 3.0), ("per-expert-rows", "cpu", 12.0, 1.0),
                                         ("staged-engine", "cuda", 1.0, 35.0), ("per-expert-memcpy2d", "cuda", 7.0, 5.0))]
            rows[2]["pct_of_pinned_h2d"] = 87.5
            with open(p, "w") as f:
                json.dump({"context": {"layer": "E=4"}, "benchmarks": rows}, f)
            r = call(p, "--out", os.path.join(d, "rep"))
            self.assertEqual(r.returncode, 0, r.stderr)
            md = open(os.path.join(d, "rep", "README.md")).read()
            self.assertIn("| block-copies | 8 | warm | cpu | 3.00x |", md)
            self.assertIn("| staged-engine | 8 | warm | cuda | 7.00x |", md)
            self.assertIn("| staged-engine | 8 | warm | cuda | 1.00 | 35.00 | 88% |", md)
            self.assertIn("| block-copies | 8 | warm | cpu | 4.00 | 3.00 | - |", md)

    def test_stand_reports_speedups_slow_cells_decode_and_floor(self):
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "run.json")
            # 65536 x 64 fp32 at k = 8: 16.78 MB + 4.19 MB + 256 B = 20.97 MB, 6.99 us at 3000 GB/s
            run_json(run, {("cuda", 1, 64, 8): 2.5, ("cuda", 16, 64, 8): 1.0, ("cuda", 65536, 64, 8): 13.98,
                           ("torch-recipe", 1, 64, 8): 25.0})
            anchor = os.path.join(d, "a.csv")
            with open(anchor, "w") as f:
                f.write("logits_dtype,normalization,experts,topk,tokens,seed_triton_us,torch_eager_us,dram_floor_us\n")
                f.write("float32,sigmoid,64,8,1,2.0,17.1,0.00\nfloat32,sigmoid,64,8,16,2.0,19.3,0.00\n")
                f.write("float32,sigmoid,64,8,65536,27.96,300,7.0\n")
            r = call("stand", run, "--anchor", anchor)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| 1 | 0.80x | 0.80x | 0.80x | 1 of 1 (1 by > 3%) |", r.stdout)
            self.assertIn("| 65536 | 2.00x |", r.stdout)
            self.assertIn("  1 64 8 float32 sigmoid: 2.50 / 2.00, 0.80x", r.stdout)
            self.assertIn("decode: 2 cells, 1.00-2.50 us, 1 over 2 us", r.stdout)
            self.assertIn("large batches, float32: 50-50% of the copy floor (1 cells)", r.stdout)
            self.assertIn("over the torch recipe: 10.0x geomean", r.stdout)
            r = call("stand", run, "--anchor", anchor, "--impl", "nothing")
            self.assertEqual(r.returncode, 2)
            self.assertIn("no cells of implementation 'nothing'", r.stderr)

    def test_bad_names_are_clear_errors(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.json")
            with open(p, "w") as f:
                json.dump({"benchmarks": [{"name": "routing/impl:cuda", "real_time": 1, "time_unit": "us"}]}, f)
            r = call(p, "--out", os.path.join(d, "rep"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("lacks tokens", r.stderr)


if __name__ == "__main__":
    unittest.main()
