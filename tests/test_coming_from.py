"""Issue 13's features for users coming from lm-eval, lmms-eval and unitxt: a structured
reply from an example object (--response-format, --score-field), images in the prompt
(--image-field), 0/1 binary prompts (--binary-format), criteria per record
(--criteria-field), named context sections (--context-field), each system's ranking per
record. Each checked on the wire of a stub judge, through the command line."""
import base64
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import CommandLineTestCase, run_main  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 3
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x01\x02" * 50
GIF = b"GIF89a" + b"\x00" * 40
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x07" * 40

SCHEMAS = [  # (an example reply, the JSON schema inferred from it)
    ({"score": 8.5}, {"type": "object", "properties": {"score": {"type": "number"}},
                      "required": ["score"], "additionalProperties": False}),
    ({"score": 8, "ok": True, "why": "..."},
     {"type": "object", "properties": {"score": {"type": "integer"}, "ok": {"type": "boolean"},
                                       "why": {"type": "string"}},
      "required": ["score", "ok", "why"], "additionalProperties": False}),
    ({"tags": ["a", "b"], "marks": [1.5, 2]},  # a list's first item types them all
     {"type": "object", "properties": {
         "tags": {"type": "array", "items": {"type": "string"}},
         "marks": {"type": "array", "items": {"type": "number"}}},
      "required": ["tags", "marks"], "additionalProperties": False}),
    ({"detail": {"score": 3, "notes": [{"line": 1}]}},
     {"type": "object", "properties": {"detail": {
         "type": "object", "properties": {
             "score": {"type": "integer"},
             "notes": {"type": "array", "items": {
                 "type": "object", "properties": {"line": {"type": "integer"}},
                 "required": ["line"], "additionalProperties": False}}},
         "required": ["score", "notes"], "additionalProperties": False}},
      "required": ["detail"], "additionalProperties": False}),
    ({"any": []}, {"type": "object", "properties": {"any": {"type": "array"}},
                   "required": ["any"], "additionalProperties": False}),
]


class ResponseFormatTest(CommandLineTestCase):
    def test_the_schema_inferred_from_an_example(self):
        for example, schema in SCHEMAS:
            with self.subTest(example=example):
                self.assertEqual(minijudge._json_schema(example), schema)

    def test_the_example_becomes_the_schema_sent_and_its_score_field_the_score(self):
        example = self.write("format.json", '{"score": 8.5, "explanation": "why"}')
        self.srv.content = json.dumps({"explanation": "fine", "score": 7.5})
        out, err = self.main("--response-format", example, items=[
            {"question": "q", "response": "r"}])
        self.assertEqual(out[0]["judge_status"], "ok", out[0])
        self.assertEqual(out[0]["judge_score"], 0.75)  # 7.5 on the default 0-10
        self.assertEqual(out[0]["judge_value"], {"explanation": "fine", "score": 7.5})
        sent = self.sent()["response_format"]
        self.assertEqual(sent["type"], "json_schema")
        self.assertEqual(sent["json_schema"]["schema"]["properties"], {
            "score": {"type": "number", "minimum": 0, "maximum": 10},
            "explanation": {"type": "string"}})
        prompt = self.srv.requests[-1].prompt  # no {response_format}: the form is appended
        self.assertTrue(prompt.endswith('in this form:\n{\n  "score": 8.5,\n  "explanation": '
                                        '"why"\n}'), prompt[-200:])

    def test_a_template_places_the_example_and_the_scale_and_field_are_chosen(self):
        example = self.write("format.json", '{"reason": "...", "grade": 4}')
        template = self.write("t.txt", "Grade {response}.\nAnswer as:\n{response_format}")
        self.srv.content = '{"reason": "ok", "grade": 5}'
        out, err = self.main("--response-format", example, "--score-field", "grade",
                             "--scale", "1,5", "--template", template,
                             items=[{"response": "r"}])
        self.assertEqual((out[0]["judge_status"], out[0]["judge_score"]), ("ok", 1.0))
        self.assertEqual(self.srv.requests[-1].prompt, 'Grade r.\nAnswer as:\n{\n  "reason": '
                                                       '"...",\n  "grade": 4\n}')
        self.srv.content = '{"reason": "ok"}'  # no grade: a parse error that names it
        out, err = self.main("--response-format", example, "--score-field", "grade",
                             items=[{"question": "q", "response": "r"}], code=1)
        self.assertEqual(out[0]["judge_status"], "parse_error")
        self.assertIn("JSON object with grade", out[0]["judge_error"])

    def test_bad_examples_and_an_unknown_score_field_are_usage_errors(self):
        cases = [("[1, 2]", "a JSON object"), ('{"score": 1', "Expecting ',' delimiter"),
                 ('{"score": 1, "why": null}', "'why' is null"),
                 ('{"why": "x"}', "an example reply must be a JSON object holding the number "
                  "that scores as 'score' (score_field, --score-field); got {\"why\": \"x\"}"),
                 ('{"score": "8"}', 'got {"score": "8"}')]
        for text, says in cases:
            with self.subTest(text=text):
                path = self.write("bad.json", text)
                source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
                code, out, err = run_main(["--judge-url", self.srv.url, "--response-format",
                                           path, source])
                self.assertEqual((code, out), (2, ""))
                self.assertIn("--response-format " + path, err)
                self.assertIn(says, err)
        code, out, err = run_main(["--judge-url", self.srv.url, "--response-format",
                                   self.path("missing.json"), source])
        self.assertEqual(code, 2)
        self.assertIn("missing.json", err)
        self.assertEqual(self.srv.chat_count, 0)

    def test_python_takes_the_example_object(self):
        self.srv.content = '{"score": 4}'
        judge = minijudge.LLMJudge(self.srv.url, response_format={"score": 1}, scale=(1, 5))
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.score, j.value), ("ok", 0.75, {"score": 4}))


class ImageTest(CommandLineTestCase):
    def image(self, name, data):
        path = self.path(name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_paths_urls_and_data_urls_go_as_image_parts_after_the_text(self):
        png, jpeg = self.image("a.png", PNG), self.image("photo.png", JPEG)  # by content
        gif, webp = self.image("g", GIF), self.image("w.bin", WEBP)
        url, data_url = "https://example.com/cat.png", "data:image/png;base64,AAAA"
        out, err = self.main("--image-field", "image", items=[
            {"question": "q", "response": "r", "image": png},
            {"question": "q", "response": "r", "image": [jpeg, gif, webp, url, data_url]}])
        self.assertEqual([r["judge_status"] for r in out], ["ok", "ok"])
        first, second = sorted((self.sent(n)["messages"][-1]["content"] for n in (0, 1)),
                               key=len)  # the records were judged at once: in either order
        self.assertEqual(first[0]["type"], "text")
        self.assertTrue(first[0]["text"].startswith("Please act as an impartial judge"))
        self.assertEqual(first[1]["type"], "image_url")
        head, _, encoded = first[1]["image_url"]["url"].partition(",")
        self.assertEqual(head, "data:image/png;base64")
        self.assertEqual(base64.b64decode(encoded), PNG)  # the bytes, whole
        urls = [part["image_url"]["url"] for part in second[1:]]
        self.assertEqual([u.split(";")[0] for u in urls[:3]],
                         ["data:image/jpeg", "data:image/gif", "data:image/webp"])
        self.assertEqual([base64.b64decode(u.partition(",")[2]) for u in urls[:3]],
                         [JPEG, GIF, WEBP])
        self.assertEqual(urls[3:], [url, data_url])

    def test_a_bad_image_is_that_records_error_and_nothing_else_is_lost(self):
        text = self.image("notes.png", b"just some text, not an image")
        big = self.image("big.png", PNG)
        os.truncate(big, 20 * 1024 * 1024 + 1)  # sparse: over the 20 MiB cap
        good = self.image("ok.png", PNG)
        missing = self.path("gone.png")
        out, err = self.main("--image-field", "image", "--max-error-rate", "1", items=[
            {"question": "q", "response": "r", "image": image}
            for image in (missing, text, big, good, 7, "a\0b.png")])
        self.assertEqual([r["judge_status"] for r in out], ["bad_record"] * 3 + ["ok"]
                         + ["bad_record"] * 2)
        self.assertIn("'a\\x00b.png': embedded null byte", out[5]["judge_error"])
        self.assertIn(missing, out[0]["judge_error"])
        self.assertIn("line 1", out[0]["judge_error"])
        self.assertIn(text + " is not a PNG, JPEG, WebP or GIF image", out[1]["judge_error"])
        self.assertIn(big + " is over 20 MiB", out[2]["judge_error"])
        self.assertIn("paths or URLs", out[4]["judge_error"])
        self.assertEqual(self.srv.chat_count, 1)

    def test_the_cache_keys_on_the_bytes_not_the_path(self):
        cache = self.path("cache.jsonl")
        first, other = self.image("a.png", PNG), self.image("b.png", PNG)
        item = {"question": "q", "response": "r"}
        self.main("--image-field", "image", "--cache", cache, items=[dict(item, image=first)])
        self.main("--image-field", "image", "--cache", cache, items=[dict(item, image=other)])
        self.assertEqual(self.srv.chat_count, 1)  # the same bytes elsewhere: cached
        self.image("b.png", PNG + b"more")
        self.main("--image-field", "image", "--cache", cache, items=[dict(item, image=other)])
        self.assertEqual(self.srv.chat_count, 2)  # new bytes at the same path: asked

    def test_python_images_and_the_real_command_line(self):
        png = self.image("a.png", PNG)
        judge = minijudge.LLMJudge(self.srv.url, model="m")
        j = judge.judge({"question": "q"}, "r", images=png)
        self.assertEqual(j.status, "ok")
        self.assertEqual(self.sent()["messages"][-1]["content"][1]["image_url"]["url"],
                         "data:image/png;base64," + base64.b64encode(PNG).decode())
        j = judge.judge({"question": "q"}, "r", images=[self.path("none.png")])
        self.assertEqual(j.status, "bad_record")
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r",
                                                "img": png}])
        proc = subprocess.run(
            [sys.executable, "-m", "minijudge", "--judge-url", self.srv.url, "--image-field",
             "img", "--dry-run", source], cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("[image: data:image/png;base64,iVBORw0KGgoAAQIDBA...]", proc.stdout)
        self.assertNotIn(base64.b64encode(PNG).decode()[:40], proc.stdout)


class BinaryFormatTest(CommandLineTestCase):
    def test_01_asks_for_a_digit_and_yesno_stays_as_it_was(self):
        items = [{"question": "q", "answer": "a", "response": "r"}]
        self.srv.content = "1"
        out, _ = self.main("--mode", "binary", "--binary-format", "01", items=items)
        self.assertEqual(out[0]["judge_score"], 1.0)
        self.assertTrue(self.srv.requests[-1].prompt.endswith(
            "Reply with one digit: 1 if the response is correct, 0 if it is not."))
        self.srv.content = "0"
        out, _ = self.main("--mode", "math", "--binary-format", "01", items=items)
        self.assertEqual(out[0]["judge_score"], 0.0)
        self.assertTrue(self.srv.requests[-1].prompt.endswith(
            "Reply with one digit: 1 if the final answers are equivalent, 0 if they are not."))
        self.srv.content = "yes"
        self.main("--mode", "binary", items=items)
        self.assertTrue(self.srv.requests[-1].prompt.endswith(
            "Reply with one word: yes if the response is correct, no if it is not."))
        code, out, err = run_main(["--judge-url", self.srv.url, "--binary-format", "01",
                                   self.write_jsonl("in.jsonl", items)])
        self.assertEqual((code, out), (2, ""))
        self.assertIn("binary_format (--binary-format) is yesno or 01, for a yes/no judge "
                      "(--mode binary or math); got '01'", err)


class SystemsRankingTest(CommandLineTestCase):
    def test_each_record_ranks_its_systems(self):
        self.srv.responder = lambda request: "[[A]]" if "\nbest\n" in request.prompt.split(
            "Assistant B")[0] else "[[B]]"
        out, err = self.main("--mode", "systems", items=[
            {"question": "q", "responses": {"x": "worst", "y": "best", "z": "mid"}}])
        self.assertEqual(out[0]["judge_ranking"][0], "y")


class ExamplesTest(unittest.TestCase):
    """Each "coming from" example runs offline, in a real process, and says what it shows."""
    EXPECTED = {
        "from_lm_eval.py": ["'Paris.'           score 0.9 (ok)", '"minimum": 0, "maximum": 10'],
        "from_lmms_eval.py": ["'It is red.' score 1.0 (ok) raw '1'",
                              "'Blue.'      score 0.0 (ok) raw '0'",
                              "a missing image: bad_record - image "],
        "from_unitxt.py": ["conciseness  option 'Yes' score 1.0 positional bias False (ok)",
                           "groundedness option 'Grounded' score 1.0"],
        "from_a_harness.py": ["score 0.85 PASS", "score 0.35 FAIL",
                              "strict: JudgeError: no JSON object with correctness"],
    }

    def test_every_example_runs_offline(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_JUDGE", "OPENAI"))}
        # side by side: the interpreters start on both cores
        procs = {name: subprocess.Popen([sys.executable, os.path.join(REPO, "examples", name)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=env, universal_newlines=True)
                 for name in self.EXPECTED}
        for proc in procs.values():
            self.addCleanup(lambda proc=proc: proc.poll() is None and proc.kill())
        for name, lines in self.EXPECTED.items():
            with self.subTest(name):
                stdout, stderr = procs[name].communicate(timeout=60)
                self.assertEqual((procs[name].returncode, stderr), (0, ""))
                for line in lines:
                    self.assertIn(line, stdout)


if __name__ == "__main__":
    unittest.main()
