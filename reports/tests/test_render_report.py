"""Tests of the renderer and the compare mode on small synthetic runs."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "render_report.py")


def run_json(path, times, reps=1, gpu=True, labels=None):
    rows = []
    for (impl, t, e, k), us in times.items():
        for r in range(reps):
            rows.append({"name": f"routing/impl:{impl}/tokens:{t}/experts:{e}/topk:{k}/dtype:float32/norm:sigmoid/padding:none/manual_time",
                         "run_type": "iteration", "real_time": us * (1 + 0.01 * r), "time_unit": "us",
                         "bytes_per_call": t * e * 4 + t * k * 8 + e * 4})
            if labels and (impl, t, e, k) in labels:
                rows[-1]["label"] = labels[(impl, t, e, k)]
    ctx = {"d2d_copy_gbps": "3000", "gpu_name": "test GPU"} if gpu else {}
    with open(path, "w") as f:
        json.dump({"context": ctx, "benchmarks": rows}, f)


def fake_cubin(kernels):
    """A minimal ELF64 as nvcc -cubin lays one out: per kernel a .text and a
    .nv.shared section, a symbol, and an EIATTR_REGCOUNT entry in .nv.info.
    kernels: {name: (code bytes, registers, shared bytes)}."""
    import struct
    names = list(kernels)
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    sym_off = [1]
    for n in names[:-1]:
        sym_off.append(sym_off[-1] + len(n) + 1)
    symtab = b"\0" * 24 + b"".join(struct.pack("<IBBHQQ", o, 0x12, 0, 0, 0, 0) for o in sym_off)
    info = b"".join(struct.pack("<BBHII", 4, 0x2F, 8, i + 1, kernels[n][1]) for i, n in enumerate(names))
    info = struct.pack("<BBH", 1, 0x0A, 0) + info  # an entry without payload first
    secs = [(".shstrtab", 3, b"", 0), (".strtab", 3, strtab, 0), (".symtab", 2, symtab, 2), (".nv.info", 0x70000000, info, 0)]
    for n in names:
        secs.append((".text." + n, 1, b"\0" * kernels[n][0], 0))
        secs.append((".nv.shared." + n, 8, b"", 0))
    shstr = b"\0" + b"".join(s[0].encode() + b"\0" for s in secs)
    secs[0] = (".shstrtab", 3, shstr, 0)
    body, offsets, at = b"", [], 64
    for s in secs:
        offsets.append(at + len(body))
        body += s[2]
    shoff = 64 + len(body)
    head = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    head += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(secs) + 1, 1)
    shdrs = b"\0" * 64
    name_at = 1
    for i, s in enumerate(secs):
        size = len(s[2])
        if s[0].startswith(".nv.shared."):
            size = kernels[s[0][11:]][2]  # NOBITS: a size, no bytes
        shdrs += struct.pack("<IIQQQQIIQQ", name_at, s[1], 0, 0, offsets[i], size, s[3], 0, 1, 0)
        name_at += len(s[0]) + 1
    return head + body + shdrs


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

    def test_compare_groups_and_filters_by_the_new_runs_path(self):
        with tempfile.TemporaryDirectory() as d:
            base, new = os.path.join(d, "b.json"), os.path.join(d, "n.json")
            cells = {("cuda", 1, 256, 8): 2.0, ("cuda", 16, 256, 8): 2.0, ("cuda", 65536, 256, 8): 40.0,
                     ("cuda", 1, 8, 1): 1.0}
            run_json(base, cells, reps=3, labels={c: "path=register" for c in cells})
            labels = {("cuda", 1, 256, 8): "path=block-threshold", ("cuda", 16, 256, 8): "path=block-threshold",
                      ("cuda", 65536, 256, 8): "path=filter"}  # (1, 8, 1) unlabeled
            run_json(new, {("cuda", 1, 256, 8): 1.5, ("cuda", 16, 256, 8): 1.5, ("cuda", 65536, 256, 8): 40.0,
                           ("cuda", 1, 8, 1): 1.0}, reps=3, labels=labels)
            r = call("compare", new, base, "--group", "path")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("path block-threshold: time new/baseline 0.750 (geomean of 2), 2 faster, 0 slower by > 3%",
                          r.stdout)
            self.assertIn("path filter: time new/baseline 1.000 (geomean of 1), 0 faster, 0 slower by > 3%", r.stdout)
            self.assertIn("path -: time new/baseline 1.000 (geomean of 1)", r.stdout)
            self.assertIn("path all: time new/baseline 0.866 (geomean of 4)", r.stdout)
            r = call("compare", new, base, "--where", "path=block-threshold", "--where", "tokens=16", "--cells")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("cell cuda/16/256/8/float32/sigmoid/none: 2.02 us -> 1.52 us, 0.750 (block-threshold)",
                          r.stdout)
            self.assertIn("compare: 1 cells compared", r.stdout)
            r = call("compare", new, base, "--where", "path=shared")
            self.assertEqual(r.returncode, 2)
            self.assertIn("matches --where", r.stderr)

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

    def test_floors_set_cells_against_their_io_floors(self):
        with tempfile.TemporaryDirectory() as d:
            run, floor = os.path.join(d, "run.json"), os.path.join(d, "floor.json")
            run_json(run, {("cuda", 1, 64, 8): 1.5, ("cuda", 1, 256, 8): 2.5, ("cuda", 16, 64, 8): 1.6,
                           ("cuda", 65536, 64, 8): 20.0})
            run_json(floor, {("io-floor", 1, 64, 8): 1.0, ("io-floor", 1, 256, 8): 1.0,
                             ("io-floor", 65536, 64, 8): 11.0})
            anchor = os.path.join(d, "a.csv")
            with open(anchor, "w") as f:
                f.write("logits_dtype,normalization,experts,topk,tokens,seed_triton_us,torch_eager_us,dram_floor_us\n")
                f.write("float32,sigmoid,64,8,1,3.0,17.1,0.00\nfloat32,sigmoid,256,8,1,3.0,17.1,0.00\n")
            r = call("floors", run, floor, "--anchor", anchor)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| 1 | 64 | 1.00-1.00 | 0.50-0.50 | 1 |", r.stdout)
            self.assertIn("| 1 | 256 | 1.00-1.00 | 1.50-1.50 | 1 |", r.stdout)
            self.assertNotIn("| 16 |", r.stdout)  # no io floor for that cell
            self.assertNotIn("| 65536 |", r.stdout)  # past --max-tokens
            # speedups 2.0 and 1.2 now (geomean 1.55), 3.0 and 3.0 at the floors
            self.assertIn("these 2 cells: 1.55x geomean now, 3.00x if every cell ran at its io floor", r.stdout)
            # Without an anchor cell past 1024 rows, the whole grid is those two cells.
            self.assertIn("over all 2 cells of the run: 1.55x geomean now, 3.00x were every cell at its floor", r.stdout)
            r = call("floors", run, run)
            self.assertEqual(r.returncode, 2)
            self.assertIn("no cell of 'cuda' up to 1024 tokens has an io floor", r.stderr)
            # The same table as a section of the rendered report.
            out = os.path.join(d, "report")
            r = call(run, "--anchor", anchor, "--io-floor", floor, "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(out, "README.md")) as f:
                md = f.read()
            self.assertIn("## The cells against their io floors", md)
            self.assertIn("| 1 | 256 | 1.00-1.00 | 1.50-1.50 | 1 |", md)
            self.assertNotIn("io-floor |", md)  # not an implementation of the speedup tables

    def test_floors_bound_the_whole_grid_with_the_copy_and_launch_floors_past_the_io_floors(self):
        with tempfile.TemporaryDirectory() as d:
            run, floor = os.path.join(d, "run.json"), os.path.join(d, "floor.json")
            # 65536 x 64 fp32, k = 8: 20,971,776 bytes; at run_json's 3000 GB/s the copy floor is 6.99 us.
            # 1 x 8, k = 1: 72 bytes, below the launch floor of 0.5 us.
            run_json(run, {("cuda", 1, 64, 8): 1.5, ("cuda", 65536, 64, 8): 14.16, ("cuda", 2048, 8, 1): 1.0})
            run_json(floor, {("io-floor", 1, 64, 8): 1.0})
            with open(floor) as f:
                doc = json.load(f)
            doc["context"]["launch_floor_us"] = "0.5"
            with open(floor, "w") as f:
                json.dump(doc, f)
            anchor = os.path.join(d, "a.csv")
            with open(anchor, "w") as f:
                f.write("logits_dtype,normalization,experts,topk,tokens,seed_triton_us,torch_eager_us,dram_floor_us\n")
                f.write("float32,sigmoid,64,8,1,3.0,17.1,0.00\nfloat32,sigmoid,64,8,65536,28.32,99.0,0.00\n"
                        "float32,sigmoid,8,1,2048,1.0,9.0,0.00\n")
            r = call("floors", run, floor, "--anchor", anchor)
            self.assertEqual(r.returncode, 0, r.stderr)
            # now: 2.0, 2.0, 1.0 (geomean 1.587); at the floors: 3.0 (io), 28.32 / 6.99 = 4.05 (copy),
            # 1.0 / max(copy 0.0002 us, launch 0.5 us) = 2.0 (launch): geomean 2.897
            self.assertIn("over all 3 cells of the run: 1.59x geomean now, 2.90x were every cell at its floor", r.stdout)
            # The two cells past 1024 rows alone: now 2.0 and 1.0 (1.41x), at the floors 4.05 and 2.0 (2.85x).
            self.assertIn("of them, the 2 cells past 1024 rows: 1.41x geomean now, 2.85x at their floors", r.stdout)
            # A cell up to 1024 rows without an io floor: no bound, rather than one over fewer cells.
            run_json(run, {("cuda", 1, 64, 8): 1.5, ("cuda", 16, 64, 8): 1.6})
            with open(anchor, "a") as f:
                f.write("float32,sigmoid,64,8,16,3.0,17.1,0.00\n")
            r = call("floors", run, floor, "--anchor", anchor)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("cells of the run", r.stdout)

    def test_kernels_reads_code_size_registers_and_shared_memory_of_a_cubin(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.cubin"), os.path.join(d, "b.cubin")
            with open(a, "wb") as f:
                f.write(fake_cubin({"_Z6kernelv": (160 * 16, 40, 2304), "_Z5otherv": (32, 8, 0)}))
            with open(b, "wb") as f:
                f.write(fake_cubin({"_Z6kernelv": (100 * 16, 38, 2304)}))
            r = call("kernels", a, "--baseline", b)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| _Z6kernelv | 160 | 2560 | 40 | 2304 | 100 |", r.stdout)
            self.assertIn("| _Z5otherv | 2 | 32 | 8 | 0 | - |", r.stdout)
            r = call("kernels", a, "--match", "other")
            self.assertNotIn("_Z6kernelv", r.stdout)
            r = call("kernels", a, "--match", "nothing")
            self.assertEqual(r.returncode, 2)
            self.assertIn("no kernel", r.stderr)
            with open(b, "wb") as f:
                f.write(b"not an elf")
            r = call("kernels", b)
            self.assertEqual(r.returncode, 2)
            self.assertIn("not a 64-bit ELF", r.stderr)

    def test_bad_names_are_clear_errors(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.json")
            with open(p, "w") as f:
                json.dump({"benchmarks": [{"name": "routing/impl:cuda", "real_time": 1, "time_unit": "us"}]}, f)
            r = call(p, "--out", os.path.join(d, "rep"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("lacks tokens", r.stderr)


class UnreadableInput(unittest.TestCase):
    """A missing or malformed JSON names the file or the parse error and exits 2, without a traceback."""

    def _run(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_missing_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "absent.json")
            done = self._run("compare", missing, missing)
        self.assertEqual(done.returncode, 2)
        self.assertIn(f"render_report: {missing}: No such file or directory", done.stderr)
        self.assertNotIn("Traceback", done.stderr)

    def test_malformed_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("{bad")
            done = self._run("stand", bad, "--anchor", os.path.join(HERE, "..", "anchors", "h100_seed_router.csv"))
        self.assertEqual(done.returncode, 2)
        self.assertIn("render_report: not JSON", done.stderr)
        self.assertNotIn("Traceback", done.stderr)


if __name__ == "__main__":
    unittest.main()
