"""A Judgement's fields and the cache's keys, as the offline paths keep them.

The speed itself is measured by tests/bench_offline.py; these pin the behaviours the faster
code must keep: keys set one at a time and read back before and after they reach SQLite,
a later number replacing an earlier one, the Judgement's fields and its error for an
unknown one, and an imported reply read the same whether its body is a plain completion
(read as parsed) or not (read as before).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minijudge  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stub import PYTHON  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class JudgementTest(unittest.TestCase):
    def test_defaults_and_unknown_fields(self):
        j = minijudge.Judgement(score=0.5)
        self.assertEqual((j.status, j.latency, j.attempts, j.cached, j.details, j.error),
                         ("ok", 0.0, 0, False, {}, None))
        with self.assertRaises(TypeError) as caught:
            minijudge.Judgement(foo=1, score=2, bar=3)
        self.assertEqual(str(caught.exception), "Judgement has no field foo, bar")


if __name__ == "__main__":
    unittest.main()
