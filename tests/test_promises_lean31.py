"""Issue 31, item 1: an import reads each distinct reply once. Records whose replies are
alike (a judge's short verdicts repeat) share one judgement, written from its text made
once and tallied by the tally's plain path; every record, reply and flag that this does not
cover takes the general path. These tests hold the shared path to the general one over
hostile records and replies, through the real command line.
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402


class RecordsNamingTwoModels(StubTestCase):
    def test_a_rating_record_with_model_a_and_model_b_is_judged_and_reported(self):
        # a rating has one response: the tally took a record naming model_a and model_b for
        # a pairwise verdict and read a second length it has not (IndexError: the run died)
        data = self.write_jsonl("data.jsonl", [
            {"question": "q", "response": "r", "model_a": "x", "model_b": "y"}])
        out = self.path("out.jsonl")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q",
                                 data, "-o", out])
        self.assertEqual(code, 0, err)
        with open(out) as f:
            self.assertEqual(json.loads(f.readline())["judge_status"], "ok")
        code, _, err = run_main(["report", "-q", out])
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    unittest.main()
