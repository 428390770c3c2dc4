"""Issue 28's second independent campaign, other inputs for each class: batch files read
back that hold no reply are not counted as imported replies. Through the real command
line against the loopback stub, on real files.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402

RECORDS = [{"id": k, "question": "q%d" % k, "response": "r%d" % k} for k in range(3)]


class ImportOfAnExportPartTest(StubTestCase):
    def test_a_request_file_imported_as_replies_imports_none(self):
        # importing the export's own part (requests, not replies) said "3 replies imported"
        # while the run judged all 3 live, exit 0: the summary's figure was wrong
        self.srv.content = "Rating: 4"
        data = self.write_jsonl("data.jsonl", RECORDS)
        code, _, err = run_main(["--judge-model", "m", "-q", data, "--batch-export",
                                 self.path("req")])
        self.assertEqual(code, 0, err)
        part = self.path("req.000.jsonl")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", data,
                                 "--batch-import", part, "-o", self.path("out.jsonl"),
                                 "--summary", self.path("s.json")])
        self.assertEqual(code, 0, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            summary = json.load(f)
        self.assertEqual((summary["batch"]["imported"], summary["batch"]["unasked"],
                          summary["batch"]["malformed"], summary["requests"]),
                         (0, 0, {"not a batch output line": 3}, 3))
        self.assertIn("\n  batch: 0 replies imported, 0 not asked for (ignored); malformed "
                      "lines: 3 not a batch output line\n", err)
