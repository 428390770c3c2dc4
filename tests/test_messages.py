"""Issue 18's misleading messages: what a user reads, against a loopback stub that behaves
as the server named (llama-server, llama-cpp-python, LiteLLM, vLLM), through the command
line (main() in this process; one test end to end in a real subprocess) or, for the Python
API, on the module's logger.

    python -m unittest tests.test_messages -v
"""
import json
import logging
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)  # so `python -m unittest tests.test_messages` finds stub too
import minijudge  # noqa: E402
from stub import PYTHON, JUDGE_ENV, StubTestCase, chat, error, rating_logprobs, run_main  # noqa: E402

KEY = "sk-wrong-0123456789abcdef"
NO_THINKING = 'extra_body {"chat_template_kwargs": {"enable_thinking": false}}'


def llama_server_logprobs(token):
    """llama-server's logprobs for a one-token reply: 20 alternatives (it sends 20 when
    top_logprobs is not honoured), then an entry for the end-of-sequence token."""
    probs = dict({token: 0.6}, **{str(d): 0.4 / 19 for d in range(1, 11) if str(d) != token})
    lp = rating_logprobs(probs)
    lp["content"].append({"token": "", "logprob": 0.0, "bytes": [], "top_logprobs": []})
    return lp


class MessagesTest(StubTestCase):
    def cli(self, *argv, env=None, subprocess_=False):
        """(exit code, stdout, stderr) of the command line: main() in this process (the same
        output, ~0.2 s quicker), or ``python -m minijudge`` run from the repository."""
        if not subprocess_:
            return run_main(argv, env)  # StubTestCase took JUDGE_ENV out of os.environ
        env = dict({k: v for k, v in os.environ.items() if k not in JUDGE_ENV}, **env or {})
        proc = subprocess.run([*PYTHON, "-m", "minijudge"] + [str(a) for a in argv],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    def run_records(self, rows, *argv, env=None, subprocess_=False):
        """Judge rows on the stub: (exit code, output records, stderr)."""
        source = self.write_jsonl("in.jsonl", rows)
        url = ["--judge-url", self.srv.url + "/v1"]
        if "--judge-url" in argv:  # a second --judge-url is a replica, not an override
            url = []
        code, out, err = self.cli(*url, "--max-retries", "0", "--max-error-rate", "1", *argv,
                                  source, env=env, subprocess_=subprocess_)
        return code, [json.loads(line) for line in out.splitlines()], err

    # -- 1. --logprobs on a 1-10 scale ------------------------------------------------
    def test_logprobs_on_a_two_digit_scale_say_they_were_not_used(self):
        # llama-server sends logprobs; a 1-10 rating is read from the text on purpose
        self.srv.responder = lambda request: chat("8", logprobs=llama_server_logprobs("8"))
        template = self.write("t.txt", "Rate from 1 to 10.\n{question}\n{response}")
        code, records, err = self.run_records(
            [{"question": "q", "response": "r"}] * 2, "--template", template, "--scale", "1,10",
            "--logprobs")
        self.assertEqual(code, 0, err)
        self.assertTrue(all(r["judge_score_source"] == "text" for r in records), records)
        self.assertIs(self.srv.requests[-1].json["logprobs"], True)
        self.assertIn("  scores from logprobs: 0, from the text: 2 (the logprobs were not "
                      "used: they are read only for one-digit ratings, 0-9)\n", err)
        self.assertNotIn("no usable logprobs", err)

    def test_logprobs_missing_on_a_one_digit_scale_still_blame_the_server(self):
        self.srv.content = "4"  # transformers serve ignores the flag
        code, records, err = self.run_records([{"question": "q", "response": "r"}],
                                              "--logprobs")
        self.assertEqual(code, 0, err)
        self.assertIn("  scores from logprobs: 0, from the text: 1 (the server sent no usable "
                      "logprobs for those)\n", err)

    # -- 2. truncated without reasoning -------------------------------------------------
    def test_truncated_hint_only_when_the_reply_holds_reasoning(self):
        plain = ("the reply was cut off (finish_reason length) before a verdict: raise "
                 "max_tokens")
        replies = {  # llama-server's grammar spends the tokens on whitespace; gibberish
            "grammar": chat('{\n\n\t"rating"\n:\n\n\n\n', finish_reason="length"),
            "gibberish": chat("zq zq zq zq zq zq zq zq", finish_reason="length"),
            "think": chat("<think>The user wants a rating", finish_reason="length"),
            "field": chat("", reasoning_content="The user wants", finish_reason="length"),
        }
        self.srv.responder = lambda request: next(
            reply for name, reply in replies.items() if "\n" + name + "\n" in request.prompt)
        code, records, err = self.run_records(
            [{"question": "q", "response": name} for name in replies])
        errors = {r["response"]: r["judge_error"] for r in records}
        self.assertEqual(set(r["judge_status"] for r in records), {"truncated"})
        self.assertEqual(errors["grammar"], plain)
        self.assertEqual(errors["gibberish"], plain)
        for name in ("think", "field"):
            self.assertEqual(errors[name], "the reply was cut off (finish_reason length) "
                             "before a verdict: raise max_tokens (reasoning models need "
                             "~1024) or disable thinking with " + NO_THINKING)
        self.assertIn("  first truncated: " + plain + "\n", err)

    # -- 3. reasoning_only with finish_reason stop --------------------------------------
    def test_reasoning_only_that_stopped_gives_advice_that_can_help(self):
        # vLLM with a reasoning parser: all the text in reasoning_content, content null
        self.srv.content = chat(None, reasoning_content="It is right. Rating: 5")
        code, (record,), err = self.run_records([{"question": "q", "response": "r"}])
        self.assertEqual(record["judge_status"], "reasoning_only")
        expected = ("the judge reasoned but gave no answer (content None, finish_reason "
                    "stop): it stopped in its reasoning, so more max_tokens cannot help; "
                    "disable thinking with " + NO_THINKING)
        self.assertEqual(record["judge_error"], expected)
        self.assertIn("  first reasoning_only: " + expected + "\n", err)

    # -- 4. --dry-run ------------------------------------------------------------------
    def test_dry_run_says_each_line_once_and_what_would_not_be_sent(self):
        template = self.write("t.txt", "{question} {doc[extra]}: {response}")
        source = self.write("in.jsonl", "\n".join([
            '{"question": "q", "response": "r", "extra": "x"}', "not json",
            '{"question": "q", "response": ""}', '{"question": "q", "response": null}',
            '{"question": "q", "response": "r"}']) + "\n")
        code, out, err = self.cli("--dry-run", "--template", template, source)
        err = "".join(line for line in err.splitlines(True)  # but the estimate
                      if not line.startswith("minijudge: --dry-run: "))
        self.assertEqual((code, err), (0, ""))  # but the run's estimate
        empty = "empty_response: the response is empty: scored 0.0 without calling the judge"
        self.assertEqual(out, "--- line 1 ---\n[user]\nq x: r\n"
                         "--- line 2: not JSON (Expecting value: line 1 column 1 (char 0))\n"
                         "--- line 3: " + empty + "\n--- line 4: " + empty + "\n"
                         "--- line 5: template field {doc[extra]}: the record has no "
                         "'extra'\n")
        self.assertEqual(self.srv.requests, [])

    def test_dry_run_with_no_prompt_rendered_fails(self):
        source = self.write("in.jsonl", 'not json\n[1]\n{"question": "q"}\n')
        code, out, err = self.cli("--dry-run", source)
        self.assertEqual(code, 2, err)
        self.assertEqual(out, "--- line 1: not JSON (Expecting value: line 1 column 1 (char 0))\n"
                         "--- line 2: a JSON list, not an object\n--- line 3: no 'response' "
                         "field (choose one with --response-field; the record has question)\n")
        self.assertEqual(err, "minijudge: error: --dry-run: no record of {} could be made "
                         "into a prompt (see each line above)\n".format(source))

    def test_a_first_record_with_no_response_is_judged_not_refused(self):
        # the template check of the first record took a null response for a missing field
        code, records, err = self.run_records([{"question": "q", "response": None},
                                               {"question": "q", "response": "r"}])
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in records], ["empty_response", "ok"])
        self.assertEqual(self.srv.chat_count, 1)

    # -- 5. template_error lists only the fields given ---------------------------------
    def test_template_error_lists_only_the_fields_the_record_has(self):
        template = self.write("t.txt", "{question} {extra}: {response}")
        code, records, err = self.run_records(
            [{"question": "q", "response": "r", "extra": "x"}, {"id": 7, "response": "r"}],
            "--template", template)
        self.assertEqual(records[1]["judge_status"], "template_error")
        self.assertEqual(records[1]["judge_error"], "line 2: template needs field 'question' "
                         "(choose one with --question-field; the record has id, response)")
        source = self.write_jsonl("first.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = self.cli("--judge-url", self.srv.url, "--template", template, source)
        self.assertEqual((code, err), (2, "minijudge: error: line 1 (the first record): "
                         "template needs field 'extra' (the template reads the record's field "
                         "of that name, or --var extra=VALUE's; the record has question, "
                         "response)\n"))

    def test_library_template_error_names_the_callers_fields(self):
        with self.assertRaises(minijudge.TemplateError) as caught:
            minijudge.render("{missing}", {"answer": "a"}, output="o")
        self.assertEqual(str(caught.exception), "template needs field 'missing'; got answer, "
                         "output")
        with self.assertRaises(minijudge.TemplateError) as caught:
            minijudge.render("rubric", {"question": "q"})  # its reference has a default
        self.assertEqual(str(caught.exception), "template needs field 'response'; got question")

    # -- 6. multi-line server errors in the summary -------------------------------------
    def test_multi_line_server_error_is_one_summary_line(self):
        message = ("Internal error:\nTraceback (most recent call last):\n  File "
                   "\"/app/server.py\", line 10, in create\nRuntimeError: llama_decode "
                   "returned -1")
        self.srv.content = error(500, message)  # llama-cpp-python
        code, (record,), err = self.run_records([{"question": "q", "response": "r"}])
        self.assertIn(message, record["judge_error"])  # the record keeps it whole
        line = next(line for line in err.splitlines() if "first http_error" in line)
        self.assertTrue(line.endswith("Internal error: Traceback (most recent call last): File "
                                      "\"/app/server.py\", line 10, in create RuntimeError: "
                                      "llama_decode returned -1"), line)
        self.assertNotIn("\nTraceback", err)
        self.assertNotIn("\n  File", err)

    # -- 7. --judge-url .../v1/models -----------------------------------------------------
    def test_judge_url_of_the_model_list_is_accepted(self):
        for url in ("/v1/models", "/v1/models/"):
            with self.subTest(url=url):
                self.srv.clear()
                code, records, err = self.run_records([{"question": "q", "response": "r"}],
                                                      "--judge-url", self.srv.url + url)
                self.assertEqual((code, records[0]["judge_status"]), (0, "ok"), err)
                self.assertEqual({r.path for r in self.srv.requests},
                                 {"/v1/models", "/v1/chat/completions"})
                self.assertIn("at {}/v1/chat/completions\n".format(self.srv.url), err)

    # -- 8. an unexplained 400/500 on a keyed request -----------------------------------
    def test_litellm_wrong_key_400_suggests_checking_the_key(self):
        no_db = error(400, "No connected db.", type="no_db_connection", code="400")
        cases = [  # (the reply, the key, the hint expected)
            (no_db, KEY, True),
            (error(500, "Internal Server Error"), KEY, True),
            (no_db, None, False),  # no key sent: the key cannot be wrong
            (error(400, "Invalid token in the request"), KEY, False),
            (error(400, "max_tokens must be at most 4096"), KEY, False),
            (error(404, "Not Found"), KEY, False),
        ]
        for reply, key, hint in cases:
            with self.subTest(reply=reply.body, key=key):
                self.srv.content = reply
                code, (record,), err = self.run_records(
                    [{"question": "q", "response": "r"}], "--no-preflight",
                    env={"LLM_JUDGE_API_KEY": key} if key else None)
                said = record["judge_error"].endswith(
                    " (check the API key: some proxies answer a wrong one so)")
                self.assertEqual(said, hint, record["judge_error"])
                self.assertEqual(err.count("check the API key"), hint, err)
                self.assertNotIn(KEY, err + json.dumps(record))

    # -- 9. LLMJudge.score(): never a silent zero ---------------------------------------
    def test_score_logs_each_failure_kind_once_and_never_the_key(self):
        # a server that echoes the key it refuses (as OpenAI did)
        self.srv.content = error(401, "Incorrect API key provided: " + KEY, code="invalid_api_key")
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", api_key=KEY,
                                   max_retries=0)
        with self.assertLogs("minijudge", "WARNING") as logs:
            scores = [judge.score({"question": "q"}, {"response": "r"}) for _ in range(3)]
            judge.score({"question": "q"}, {"response": ""})  # empty: 0.0 by design, no log
            self.srv.content = "no rating here"
            scores += [judge.score({"question": "q"}, {"response": "r"}) for _ in range(2)]
        self.assertEqual(scores, [{"judge_score": 0.0}] * 5)
        self.assertEqual(len(logs.records), 2, logs.output)
        self.assertEqual([r.levelno for r in logs.records], [logging.WARNING] * 2)
        self.assertRegex(logs.output[0], r"judge_score 0\.0: http_error: http 401 from "
                         r"POST http://127\.0\.0\.1:\d+/v1/chat/completions: Incorrect API "
                         r"key provided: <hidden>")
        self.assertIn("judge_score 0.0: parse_error: no rating", logs.output[1])
        self.assertNotIn(KEY, "\n".join(logs.output))
        unreachable = minijudge.LLMJudge(self.down_url(), model="m")
        with self.assertLogs("minijudge", "WARNING") as logs:
            self.assertEqual(unreachable.score({"question": "q"}, "r"), {"judge_score": 0.0})
        self.assertIn("connection_error: connection refused by POST", logs.output[0])

    def test_cli_says_each_failure_once(self):
        # end to end in a real process: the key from its environment, nowhere in its stderr.
        # One request at a time, the 401 stops the run before the others are sent: their
        # not_judged says the 401 stopped it, and the summary names that, not says it again
        # (a busy machine did the same at --concurrency 8)
        self.srv.content = error(401, "Incorrect API key provided: " + KEY)
        for concurrency in ("8", "1"):
            with self.subTest(concurrency=concurrency):
                code, records, err = self.run_records(
                    [{"question": "q", "response": "r"}] * 3, "--no-preflight",
                    "--concurrency", concurrency, "--html", self.path("page.html"),
                    env={"LLM_JUDGE_API_KEY": KEY}, subprocess_=True)
                self.assertEqual(err.count("Incorrect API key provided"), 1, err)
                self.assertNotIn(KEY, err)
                with open(self.path("page.html"), encoding="utf-8") as f:
                    table = f.read().split("<th>first error</th>")[1].split("</table>")[0]
                self.assertEqual(table.count("Incorrect API key provided"), 1, table)
        self.assertEqual([r["judge_status"] for r in records],
                         ["http_error", "not_judged", "not_judged"])
        self.assertIn("\n  first not_judged: not judged: the run stopped: the first "
                      "http_error\n", err)
        self.assertTrue(records[1]["judge_error"].endswith("Incorrect API key provided: "
                                                           "<hidden>"), records[1])


if __name__ == "__main__":
    unittest.main()
