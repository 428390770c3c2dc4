"""Agreement of the parsers with what each originating project extracted, on real judge outputs.

The rows are real completions (MT-Bench, Arena-Hard, Vicuna reviews, LLMBar), read from
../shared/data/judge-outputs (override with MINIJUDGE_JUDGE_OUTPUTS); the tests skip when
the folder is absent. Figures for docs/templates-and-parsers.md:

    python tests/test_real_data.py --report [--show N]

(without the data, --report says which files are missing and exits 1: a clone has none).

The overall thresholds (ratings 99%, pairs 98%) are asserted on the raw figure, against
the original label. OVERRIDES lists rows where a reading shows the original label is wrong;
the parser must return exactly our value there (a claim, not an excuse), and the report
gives agreement both raw and with overrides. The per-file pair floor (95%) uses the
corrected labels: no correct parser gets llmbar_pair above 82% raw.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minijudge  # noqa: E402

DATA_DIR = os.environ.get("MINIJUDGE_JUDGE_OUTPUTS") or os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "judge-outputs"))
RATING_FILES = ("mtbench_single", "arena_bench_v1_single", "llmbar_rating")
PAIR_FILES = ("mtbench_pair", "arena_hard_pair", "llmbar_pair", "vicuna_review_scorepair")
MISSING = [name + ".jsonl" for name in RATING_FILES + PAIR_FILES
           if not os.path.exists(os.path.join(DATA_DIR, name + ".jsonl"))]
HAVE_DATA = not MISSING

_OUT_OF_SCALE = "[[{}]] on the 1-10 scale the prompt asked for: no rating, never clamped"
_LLMBAR_B = ("final verdict 'Output (b) is better'; the original regex tries '(a) is better' "
             "first and matched the judge's restatement of Assistant (a)'s argument")
OVERRIDES = {
    # row id: (our value, why the original label is wrong)
    **{row_id: (None, _OUT_OF_SCALE.format(n)) for row_id, n in [
        ("mtb1-2286499da2ab", 90), ("mtb1-27e495397039", 40), ("mtb1-8211286189d6", 50),
        ("mtb1-8ab9bd507f19", 90), ("mtb1-b90dcc385555", 95), ("mtb1-f0e06580d5e7", 90),
        ("mtb1-002f42ea1cec", 60), ("mtb1-3fb1cce05a32", 95), ("mtb1-5076987dbec7", 95),
        ("mtb1-655258eed287", 95), ("mtb1-779215ff0063", 20), ("mtb1-8bcf475ccad6", 95),
        ("mtb1-973deb95e7ee", 20), ("mtb1-9efe748a1c0a", 70), ("mtb1-a0e09367e613", 90),
        ("mtb1-acac4ac3e65c", 60), ("mtb1-b3fc5e5510f2", 95), ("mtb1-db3c7266ab80", 100),
        ("mtb1-e9322120310f", 100), ("mtb1-f7b4191dfb9d", 85), ("mtb1-ffa876367921", 95),
        ("mtb1-1609b7e10b75", 50), ("mtb1-39c998a3949c", 70), ("mtb1-5fb50997af4a", 95),
        ("mtb1-f499fc120c27", 20)]},
    "mtb1-510cdd58a709": (None, "the 0 is `array[0]` in quoted code; the judge gave no rating"),
    "llmr-b1d5781111d8": (None, "'10' on the 0-9 scale LLMBar asked for: out of range"),
    "mtbp-e67e2eedcdbe": ("B", "'[[B]] is better than [[A]]'; the original rule tests A first"),
    **{row_id: (None, "cut off (finish_reason=length) before any verdict; the '(a) is better' "
                      "the original regex found is the judge's summary of Assistant (a)'s argument")
       for row_id in "llmp-6c3a1611d930 llmp-d3aa5d05a74c llmp-1e4d16c3e39e llmp-8919fbdf38fd".split()},
    **{row_id: ("B", _LLMBAR_B) for row_id in """
        llmp-5eb832a41183 llmp-611ed5a16371 llmp-70ddbba50b01 llmp-a686907f808a
        llmp-eb67d9fc8a8e llmp-0bdd707605a6 llmp-0da44e648c96 llmp-17eeb5e61fca
        llmp-25455fd2140f llmp-7366020337ab llmp-8eec67facb0d llmp-a1695a643588
        llmp-c56ed76fe0cc llmp-dd2ce18ef386 llmp-df1d13b6e298 llmp-f2dbf90b44c3
        llmp-14038b640e19 llmp-1466b8fa3530 llmp-d70c48f2b35a llmp-08826f45d112
        llmp-2b65d11560d9 llmp-30f5b9b391d9 llmp-7763fb5ce4eb llmp-16e2f2b36ebe
        llmp-8a6cbd5e7c5f llmp-89d9718aedc8 llmp-169f56934576 llmp-4baf4b0020bf
        llmp-adab162253fa llmp-c009a4471e13 llmp-fea1c05809a6 llmp-95868e067a12
        llmp-29590c8ee81b llmp-49172e68b02b llmp-5f75bacf4e4f llmp-7ac8125942d5
        llmp-7efd0c86acee llmp-8f919d730038 llmp-e2b581c44172 llmp-ec9beb4c568c
        llmp-14c60ac0e29b llmp-394054910651 llmp-57166ef70309 llmp-7b19f1fd1695
        llmp-a81b2ac42c9a llmp-d922449f1f60 llmp-f70947332478 llmp-fbfe051a8ad0""".split()},
}

# Hand-picked real rows, one trap each, so a format-specific regression shows up by name.
NAMED_ROWS = [
    ("mtbench_single", "mtb1-06bdc05d9dc4", 9),        # prose, then "Rating: [[9]]"
    ("mtbench_single", "mtb1-1888f05b9257", 8.5),      # [[8.5]]
    ("mtbench_single", "mtb1-b4801c1699c7", 2),        # "[[rating]]: [[2]]"
    ("mtbench_single", "mtb1-e0dde869b1d2", 9),        # sub-scores 9/10, 10/10, 10/10, then [[9]]
    ("mtbench_single", "mtb1-8a21154bc6b7", 9),        # "The rating of [[9]] is appropriate, ..."
    ("mtbench_single", "mtb1-88614af0d41f", 9),        # "Rating: [[9]]" then "Confidence: 90%"
    ("mtbench_single", "mtb1-04ab0baa5174", 9),        # "评分: [[9]]" then an explanation
    ("arena_bench_v1_single", "abv1-7e46397ec7d6", 9),  # "as [[9]] out of 10. The ..."
    ("arena_bench_v1_single", "abv1-93c04f9fcd55", 1),  # code with [[sg.Listbox(...)]] first
    ("arena_bench_v1_single", "abv1-b7229b635635", 6),  # code with `[[]]` first
    ("llmbar_rating", "llmr-b6589fc6ab0d", 0),         # bare "0", the bottom of 0-9
    # whose rating (issue 44): a number the reply gives something else is no verdict
    ("mtbench_single", "mtb1-57e052a6b42a", None),     # "the Google Pixel has a rating of 7.8"
    ("arena_bench_v1_single", "abv1-ed1ec8a9cc66", 9),  # "the movie has a rating of 5.8", [[9]]
    ("mtbench_single", "mtb1-b7f85e8ee0d2", 6),        # "Assistant A's answer, I'd rate it [[6]]"
    ("mtbench_single", "mtb1-2fd08b934fba", 9),        # "The assistant's rating is 9, while ..."
    ("mtbench_single", "mtb1-7414f5519e98", 3),        # "**Revised Answer**:" (the judge's), [[3]]
    ("mtbench_single", "mtb1-4fdb31b21574", 10),       # "the rewritten response" (judged), [[10]]
    ("arena_bench_v1_single", "abv1-a3454373a1a3", 9.5),  # "the assistant's response as a [[9.5]]"
    ("mtbench_pair", "mtbp-01b1bd5f6e9b", "A"),        # restates [[A]]/[[B]]/[[C]], then [[A]]
    ("mtbench_pair", "mtbp-17a9ce0525f3", "tie"),      # "[[C]] for a tie."
    ("mtbench_pair", "mtbp-7908f54d04e6", "A"),        # "[[A]]" first, explanation after
    ("arena_hard_pair", "ah-13d9d8f6ee51", "tie"),     # "[[A=B]]"
    ("arena_hard_pair", "ah-0c01b9386b04", "A"),       # "**[[A>>B]]**"
    ("arena_hard_pair", "ah-969663b4f384", "B"),       # "[[B>A]]" twice
    ("arena_hard_pair", "ah-04d5fd622ff1", "B"),       # "[[B>>A]]"
    ("llmbar_pair", "llmp-b1f5170e5a9a", "A"),         # bare "Output (a)"
    ("llmbar_pair", "llmp-937b575e742f", "B"),         # "Output (b) (Output (a) is inappropriate)"
    ("llmbar_pair", "llmp-9a7063b3dd4e", "A"),         # "Output (a) (Output (b) provides ...)"
    ("llmbar_pair", "llmp-2fe32e14a61e", "B"),         # "Output (b) is better as it ..."
    ("vicuna_review_scorepair", "vic-05630963891a", (7.0, 9.0)),   # "7 9"
    ("vicuna_review_scorepair", "vic-1ee47cd9ea98", (9.0, 8.5)),   # "9 8.5"
    ("vicuna_review_scorepair", "vic-6d09848ebad5", (9.0, 10.0)),  # "9 10"
    ("vicuna_review_scorepair", "vic-5421b72d10a2", (0.0, 9.0)),   # "0 9": no answer, 0
]

_ROWS, _RESULTS = {}, {}


def rows(name):
    """All rows of one file, loaded once."""
    if name not in _ROWS:
        with open(os.path.join(DATA_DIR, name + ".jsonl"), encoding="utf-8") as f:
            _ROWS[name] = [json.loads(line) for line in f if line.strip()]
    return _ROWS[name]


def parse(name, row):
    """(expected, ours) for one row under the file's parser."""
    if name == "vicuna_review_scorepair":
        got = minijudge.parse_comparative(row["raw"])
        return tuple(row["expected"]), None if got is None else tuple(got)
    if row["kind"] == "rating":
        return row["expected_norm"], minijudge.parse_rating(row["raw"], scale=tuple(row["scale"]))
    return row["expected_norm"], minijudge.parse_verdict(row["raw"])


def results(name):
    """[(id, expected, ours, raw)] for the measured rows (expected_norm not null)."""
    if name not in _RESULTS:
        _RESULTS[name] = [(r["id"],) + parse(name, r) + (r["raw"],)
                          for r in rows(name) if r["expected_norm"] is not None]
    return _RESULTS[name]


def same(a, b):
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return a == b
    return a == b if isinstance(a, tuple) else float(a) == float(b)


def tally(names):
    """(rows, raw agreements, agreements with overrides) over files."""
    n = raw = fixed = 0
    for name in names:
        for row_id, expected, got, _ in results(name):
            n, raw = n + 1, raw + same(expected, got)
            fixed += same(OVERRIDES[row_id][0], got) if row_id in OVERRIDES else same(expected, got)
    return n, raw, fixed


def summary(names):
    return "; ".join("{3}: raw {1}/{0}, with overrides {2}/{0}".format(*tally([name]), name)
                     for name in names)


@unittest.skipUnless(HAVE_DATA, "judge outputs not found in " + DATA_DIR)
class RealDataTest(unittest.TestCase):
    def test_rating_agreement(self):
        n, raw, _ = tally(RATING_FILES)
        self.assertGreaterEqual(raw / n, 0.99, summary(RATING_FILES))

    def test_pair_agreement(self):
        n, raw, _ = tally(PAIR_FILES)
        self.assertGreaterEqual(raw / n, 0.98, summary(PAIR_FILES))
        for name in PAIR_FILES:
            with self.subTest(name):
                # Per file against the corrected labels: 52 of llmbar_pair's 289 original
                # labels are wrong (OVERRIDES), so even a perfect parser gets 82% raw there.
                n, _, fixed = tally([name])
                self.assertGreaterEqual(fixed / n, 0.95, summary([name]))

    def test_overrides_hold(self):
        found = {}
        for name in RATING_FILES + PAIR_FILES:
            found.update((row_id, got) for row_id, _, got, _ in results(name))
        for row_id, (ours, reason) in sorted(OVERRIDES.items()):
            with self.subTest(row_id):
                self.assertIn(row_id, found, "override for a row that is not measured")
                self.assertTrue(same(ours, found[row_id]), "{}: got {!r}".format(reason, found[row_id]))

    def test_named_rows(self):
        for name, row_id, want in NAMED_ROWS:
            with self.subTest(row_id):
                row = next(r for r in rows(name) if r["id"] == row_id)
                self.assertTrue(same(want, parse(name, row)[1]), repr(row["raw"][-200:]))


def report(show, out=sys.stdout):
    line = "{:<24} {:>5} {:>6} {:>7} {:>10} {:>7}"
    print(line.format("file", "rows", "agreed", "raw %", "agreed ovr", "ovr %"), file=out)
    for label, names in [(n, [n]) for n in RATING_FILES] + [("all ratings", RATING_FILES)] + \
            [(n, [n]) for n in PAIR_FILES] + [("all pairs", PAIR_FILES)]:
        n, raw, fixed = tally(names)
        print(line.format(label, n, raw, "%.2f" % (100.0 * raw / n), fixed,
                          "%.2f" % (100.0 * fixed / n)), file=out)
    for name in RATING_FILES + PAIR_FILES:
        bad = [r for r in results(name) if not same(r[1], r[2])][:show]
        for row_id, expected, got, raw in bad:
            note = " [override: {!r}]".format(OVERRIDES[row_id][0]) if row_id in OVERRIDES else ""
            print("\n{} {}: expected {!r}, ours {!r}{}\n  {!r}".format(
                name, row_id, expected, got, note, raw[-300:]), file=out)


def no_data():
    """Why --report cannot run here: the data is not in a clone (exit 1, not "not found", 0)."""
    where = "none of the {} files is in {}".format(len(MISSING), DATA_DIR)
    if len(MISSING) < len(RATING_FILES + PAIR_FILES):
        where = "{} lacks {}".format(DATA_DIR, ", ".join(MISSING))
    return ("test_real_data: error: --report needs the real judge outputs, which a clone does "
            "not hold: {}; put them in ../shared/data/judge-outputs beside the clone, or name "
            "their folder in MINIJUDGE_JUDGE_OUTPUTS".format(where))


def main(argv):
    import argparse
    parser = argparse.ArgumentParser(description="the parsers' agreement on real judge outputs")
    parser.add_argument("--report", action="store_true", required=True)
    parser.add_argument("--show", type=int, default=0, metavar="N",
                        help="list the first N rows of each file where a parser disagrees")
    args = parser.parse_args(argv)
    if not HAVE_DATA:
        sys.exit(no_data())
    report(args.show)


if __name__ == "__main__":
    if "--report" in sys.argv:
        main(sys.argv[1:])
    else:
        unittest.main()
