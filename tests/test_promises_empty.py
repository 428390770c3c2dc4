"""Issue 28, a flag the user named is never silently dropped: an empty value (`-o ""`,
`--judges ""`, `--reference-field ""`, a `--batch-import ""` among others) is exit 2
naming the flag, not a run that quietly ignores it; a JSON file nested too deeply
(`--judges`, `--criteria`, `--response-format`) is exit 2 naming the file, not a traceback.
Through the real command line against the loopback stub.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, run_main  # noqa: E402


class EmptyValueTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.data = self.write_jsonl("data.jsonl", [{"question": "q", "response": "r"}])

    def run_cli(self, *flags):
        return run_main(["--judge-url", self.srv.url, "--judge-model", "m", *flags, self.data])

    def test_an_empty_value_is_refused_naming_the_flag(self):
        for flag in ("-o", "--cache", "--summary", "--html", "--judges", "--criteria",
                     "--template", "--response-format", "--batch-export", "--batch-import",
                     "--reference-field", "--question-field", "--response-field",
                     "--criteria-field", "--image-field", "--human-field", "--judge-model",
                     "--header", "--image-root"):
            with self.subTest(flag=flag):
                code, out, err = self.run_cli(flag, "")
                self.assertEqual(code, 2, err)
                shown = {"-o": "-o/--output"}.get(flag, flag)
                self.assertIn("minijudge: error: argument {}: expected a value, got an "
                              "empty string".format(shown), err)
                self.assertEqual(out, "")
        self.assertEqual(self.srv.chat_count, 0)

    def test_an_empty_system_message_is_still_allowed(self):
        code, _, err = self.run_cli("--system", "", "-q")
        self.assertEqual(code, 0, err)


class DeepJsonFileTest(StubTestCase):
    def test_a_json_file_nested_too_deeply_is_a_clear_error(self):
        data = self.write_jsonl("data.jsonl", [{"question": "q", "response": "r"}])
        deep = self.write("deep.json", "[" * 100000 + "]" * 100000)
        for flag, start in (("--judges", "--judges {}: expected a JSON list of judges"),
                            ("--criteria", "--criteria {}: not JSON (nested too deeply)"),
                            ("--response-format",
                             "--response-format {}: not JSON (nested too deeply)")):
            with self.subTest(flag=flag):
                code, _, err = run_main(["--judge-url", self.srv.url, flag, deep, data])
                self.assertEqual(code, 2, err)
                self.assertIn("minijudge: error: " + start.format(deep), err)
                self.assertNotIn("Traceback", err)
        self.assertEqual(self.srv.chat_count, 0)
