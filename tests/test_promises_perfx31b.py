"""What the offline paths' shortcuts must keep: the same answers as the full readings.

_read_rating reads a whole reply of only "Rating: [[4]]" or "[[4]]" with one regex, not
mention by mention; here both readings agree on every real judge reply (7,217, where the
data is: see test_real_data), on every text in the parser tests, and on the near misses.
"""
import ast
import itertools
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), HERE]
import minijudge  # noqa: E402
from test_real_data import DATA_DIR, HAVE_DATA, PAIR_FILES, RATING_FILES  # noqa: E402

SCALES = [(1, 5), (1, 10), (0, 9), (0, 100), (4, 4)]
PARSER_TESTS = ("test_parsers.py", "test_parse13.py", "test_promises_parse28.py",
                "test_promises_host2B.py", "test_servers.py", "test_real_data.py")


def texts_in(path):
    """Every string constant of a test module."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def near_misses():
    """The short forms and what differs from them by a character."""
    numbers = [str(n) for n in range(101)] + ["00", "07", "4.5", "-1", "٤", "4 ", " 4"]
    forms = ["[[{}]]", "Rating: [[{}]]", "rating: [[{}]]", "Rating:  [[{}]]", "Rating:[[{}]]",
             "Rating: [[{}]]\n", "\nRating: [[{}]]", " [[{}]]", "[[{}]] ", "[[{}]]]",
             "[[[{}]]", "Rating: [[{}]] or [[5]]", "[[3]] or [[{}]]", "**Rating: [[{}]]**",
             "Rating: [{}]", "Rating: {}", "<think>[[2]]</think>Rating: [[{}]]",
             "Rating: [[\u200b{}]]", "Rating: [[{}]].", "Score: [[{}]]"]
    return [form.format(n) for form, n in itertools.product(forms, numbers)]


class ShortRatingTest(unittest.TestCase):
    def assert_same(self, texts):
        """Both readings agree on each text the pre-check reads (any other text goes to
        _read_rating_fully itself: read fully once per scale, a real reply takes 0.3 ms)."""
        short = [text for text in texts if minijudge._SHORT_RATING_RE.fullmatch(text)]
        for text, scale in itertools.product(short, SCALES):
            expected = minijudge._read_rating_fully(text, scale)
            got = minijudge._read_rating(text, scale)
            if got != expected or type(got[1]) is not type(expected[1]):
                self.fail("{!r} on {}: {} read at once, {} fully".format(
                    text[:200], scale, got, expected))
        return len(short)

    def test_near_misses(self):
        self.assert_same(near_misses())
        self.assertEqual(minijudge._read_rating("Rating: [[4]] or [[5]]", (1, 5)), (None, None))
        self.assertEqual(minijudge._read_rating("Rating: [[4]]", (1, 5)), (4, 4))
        self.assertEqual(minijudge._read_rating("[[50]]", (1, 10)), (None, 50))

    def test_parser_tests_texts(self):
        texts = set()
        for name in PARSER_TESTS:
            texts.update(texts_in(os.path.join(HERE, name)))
        self.assertGreater(len(texts), 500)
        self.assertGreaterEqual(self.assert_same(sorted(texts)), 4)

    @unittest.skipUnless(HAVE_DATA, "no real judge outputs in " + DATA_DIR)
    def test_real_replies(self):
        texts = []
        for name in RATING_FILES + PAIR_FILES:
            with open(os.path.join(DATA_DIR, name + ".jsonl"), encoding="utf-8") as f:
                texts.extend(json.loads(line)["raw"] for line in f if line.strip())
        self.assertEqual(len(texts), 7217)
        self.assertGreaterEqual(self.assert_same(texts), 2)  # "Rating: [[50]]", ...


if __name__ == "__main__":
    unittest.main()
