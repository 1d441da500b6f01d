#!/usr/bin/env python3
"""scripts/kernel_coverage.py's reading of gcov's text reports (merge()).

gcov prints a line once with its summed count, then once per instance (a
template instance, an inlined copy) with that instance's blocks and branches.
It labels an arc "(throw)" only in an instance where the arc's block ran; in
an instance that never reaches the block the same arc reads "never executed".
The script must leave such an arc out in every instance, keep an ordinary
branch that no instance took, and leave out an arc whose block is exceptional
($$$$$) in every instance.
"""
import unittest

import attnbench_testing

ARGS = None

FILE = "kernels/cuda/tile_copy.hpp"  # a kernel file of the list (it must exist; its text is not read)

# Line 20: an if whose true side calls a function gcov thinks may throw; the
# first instance runs the call, the second never does. Line 21: a branch
# neither instance takes. Line 22: a call only an exception reaches.
GCOV_TEXT = f"""        -:    0:Source:{FILE}
       20*:   20:  if (x > 0) f(x);
       20:   21:  if (y) g();
    =====:   22:  h();
------------------
_Z5firstv:
       10:   20:  if (x > 0) f(x);
       10:   20-block  0
branch  0 taken 5 (fallthrough)
branch  1 taken 5
        5:   20-block  1
call    2 returned 5
branch  3 taken 5 (fallthrough)
branch  4 taken 0 (throw)
       10:   21:  if (y) g();
       10:   21-block  0
branch  0 taken 10 (fallthrough)
branch  1 taken 0
    $$$$$:   22-block  0
branch  0 never executed
------------------
_Z6secondv:
       10*:   20:  if (x > 0) f(x);
       10:   20-block  0
branch  0 taken 0 (fallthrough)
branch  1 taken 10
    %%%%%:   20-block  1
call    2 never executed
branch  3 never executed
branch  4 never executed
       10:   21:  if (y) g();
       10:   21-block  0
branch  0 taken 10 (fallthrough)
branch  1 taken 0
    $$$$$:   22-block  0
branch  0 never executed
------------------
"""


class MergeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.coverage = attnbench_testing.load_script(ARGS.source_dir, "kernel_coverage")
        cls.lines = cls.coverage.merge([GCOV_TEXT], str(ARGS.source_dir / "build-coverage"))[FILE]

    def test_an_arc_labelled_a_throw_in_one_instance_is_left_out_in_all(self):
        # [taken, excluded] per branch index 0, 1, 3, 4
        self.assertEqual(self.lines[20]["branches"], [[True, False], [True, False], [True, False], [False, True]])

    def test_a_branch_no_instance_took_stays_counted(self):
        self.assertEqual(self.lines[21]["branches"], [[True, False], [False, False]])

    def test_a_line_only_an_exception_reaches_is_left_out(self):
        self.assertNotIn(22, self.lines)
        self.assertEqual(self.lines[20]["count"], 20)


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(source_dir="the checkout")
    attnbench_testing.run_unittests(rest)
