"""--dry-run and --tpm: a record whose request is estimated over --tpm is not sent by the
run (http_error, 'not sent: ...'); the dry run, which estimates the run before it sends
anything, says how many such requests there are, not only the run."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402


class DryRunTpmTest(StubTestCase):
    def test_the_requests_over_tpm_are_counted_before_the_run(self):
        data = self.write_jsonl("in.jsonl", [
            {"question": "q" * 40000, "response": "r"},  # about 10,000 tokens
            {"question": "short", "response": "r"}])
        code, _, err = run_main(["--judge-url", self.srv.url, "--tpm", "6000", "--dry-run",
                                 data])
        self.assertEqual(code, 0, err)
        self.assertIn("; 1 request over --tpm 6000 will not be sent (a request's estimated "
                      "tokens and max_tokens must fit in a minute)", err)
        self.assertEqual(self.srv.chat_count, 0)

    def test_each_judge_of_a_panel_says_its_own(self):
        judges = self.write("judges.json", '[{"name": "a", "options": {"tpm": 6000}}, '
                                           '{"name": "b"}]')
        data = self.write_jsonl("in.jsonl", [{"question": "q" * 40000, "response": "r"}])
        code, _, err = run_main(["--judge-url", self.srv.url, "--judges", judges,
                                 "--dry-run", data])
        self.assertEqual(code, 0, err)
        lines = [line for line in err.splitlines() if "--dry-run: judge" in line]
        self.assertIn("1 request over --tpm 6000 will not be sent", lines[0])
        self.assertNotIn("over --tpm", lines[1])

    def test_no_tpm_no_words(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q" * 40000, "response": "r"}])
        code, _, err = run_main(["--judge-url", self.srv.url, "--dry-run", data])
        self.assertEqual(code, 0, err)
        self.assertNotIn("--tpm", err)
