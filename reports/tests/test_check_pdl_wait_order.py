"""scripts/check_pdl_wait_order.py on small PTX kernels: an access before
the wait on the entry's path fails, whether reached by fall-through or by a
branch; a block laid out above the wait that only a branch from after the
wait reaches passes, as does everything after the wait; a kernel without a
wait fails."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_pdl_wait_order.py")


def kernel(name, body):
    return f".visible .entry {name}(\n\t.param .align 8 .b8 p[64]\n)\n{{\n{body}\n}}\n"


WAIT = "\t// begin inline asm\n\tgriddepcontrol.wait;\n\t// end inline asm\n"

# The row loop's shape: setup, a jump over a tail block to the loop head,
# the wait, the loads, and a branch back into the tail block above the wait.
TAIL_ABOVE_WAIT = kernel("tail_above_wait", f"""\
\tld.param.u64 \t%rd1, [p];
\tbra.uni \t$L__BB0_4;
$L__BB0_85:
\tst.global.u32 \t[%rd195], %r61;
\tbra.uni \t$L__BB0_86;
$L__BB0_4:
\tsetp.ne.s64 \t%p12, %rd199, %rd2;
\t@%p12 bra \t$L__BB0_7;
{WAIT}$L__BB0_7:
\tld.global.f32 \t%f1, [%rd43];
\t@%p9 bra \t$L__BB0_85;
$L__BB0_86:
\tret;""")

FALL_THROUGH = kernel("load_before_wait", f"""\
\tld.param.u64 \t%rd1, [p];
\tld.global.f32 \t%f1, [%rd1];
{WAIT}\tret;""")

BRANCHED = kernel("branch_to_a_load", f"""\
\t@%p1 bra \t$L__BB1_2;
\tbra.uni \t$L__BB1_3;
$L__BB1_2:
\tld.f32 \t%f1, [%rd1];
$L__BB1_3:
{WAIT}\tret;""")

SHARED_ONLY = kernel("shared_before_wait", f"""\
\tst.shared.u32 \t[%r1], %r2;
\tld.param.u64 \t%rd1, [p];
{WAIT}\tret;""")

NO_WAIT = kernel("no_wait", "\tld.global.f32 \t%f1, [%rd1];\n\tret;")


def check(ptx):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        return subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)


class CheckPdlWaitOrderTest(unittest.TestCase):
    def test_a_tail_block_above_the_wait_reached_only_from_after_it_passes(self):
        r = check(TAIL_ABOVE_WAIT + SHARED_ONLY)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("2 kernels in 1 PTX files, 0 failing", r.stdout)

    def test_an_access_on_the_entrys_path_fails_by_fall_through_or_branch(self):
        r = check(FALL_THROUGH + BRANCHED + TAIL_ABOVE_WAIT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("load_before_wait accesses memory before its PDL wait", r.stdout)
        self.assertIn("ld.global.f32 \t%f1, [%rd1];", r.stdout)
        self.assertIn("branch_to_a_load accesses memory before its PDL wait", r.stdout)
        self.assertIn("ld.f32", r.stdout)  # generic: may be global
        self.assertNotIn("tail_above_wait", r.stdout)
        self.assertIn("3 kernels in 1 PTX files, 2 failing", r.stdout)

    def test_a_kernel_without_a_wait_fails(self):
        r = check(NO_WAIT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no_wait has no griddepcontrol.wait", r.stdout)


if __name__ == "__main__":
    unittest.main()
