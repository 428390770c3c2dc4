"""Conversations given wrong values from every place they come from
(a record's fields through the real command line, Python's judge()), each ending as that
record's bad_record or the status a single answer gets for the same value, naming what is
wrong in the words of the place it came from."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, run_main  # noqa: E402

ASKED = [{"role": "user", "content": "What is 2+2?"}]
TALK = ASKED + [{"role": "assistant", "content": "4"}]


class CommandLineTest(StubTestCase):
    def judged(self, *records, flags=()):
        path = self.write_jsonl("in.jsonl", list(records))
        out = self.path("out.jsonl")
        run_main(["--judge-url", self.srv.url, "--no-preflight", "-o", out, *flags, path])
        with open(out, encoding="utf-8") as f:
            return [(r["judge_status"], r["judge_error"]) for r in map(json.loads, f)]

    def test_a_null_response_to_a_conversation_is_an_empty_one(self):
        # as a single answer's null response is: empty_response, not "no turn has a reply"
        self.assertEqual(self.judged({"messages": ASKED, "response": None}),
                         [("empty_response", minijudge._EMPTY)])
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_null_response_beside_a_reply_leaves_the_reply_judged(self):
        self.assertEqual(self.judged({"messages": TALK, "response": None}), [("ok", None)])

    def test_a_response_that_is_no_text_is_refused_as_for_a_single_answer(self):
        judged = self.judged({"messages": ASKED, "response": ["4"]},
                             {"messages": ASKED, "response": {"text": "4"}})
        self.assertEqual(judged, [
            ("bad_record", "line 1: field 'messages': the response is a list, expected text"),
            ("bad_record", "line 2: field 'messages': the response is a dict, expected text")])
        self.assertEqual(self.srv.chat_count, 0)

    def test_more_mtbench_answers_than_questions_is_refused(self):
        judged = self.judged({"turns": ["q1"], "answers": ["a1", "a2"]})
        self.assertEqual(judged, [("bad_record", "line 1: field 'turns': 1 question and 2 "
                                                 "answers, expected one answer a question "
                                                 "at most")])


DIALOGUE = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Name a prime."}]


def pair_prompt(question_section, reply_a, reply_b):
    """The pairwise prompt of two text replies, after what ``question_section`` shows."""
    return minijudge.render("pairwise", {}, question="Name a prime.", response_a=reply_a,
                            response_b=reply_b, context_section=question_section)


class PairInContextTest(StubTestCase):
    """A dialogue and two candidate replies to its last message (an arena's layout): the
    dialogue shown once as the conversation so far, each reply as an answer."""
    SO_FAR = ("[The Start of the Conversation So Far]\n[User]\nHi\n\n[Assistant]\nHello!\n"
              "[The End of the Conversation So Far]\n\n")

    def test_two_replies_to_a_records_conversation(self):
        path = self.write_jsonl("in.jsonl", [{"messages": DIALOGUE, "response_a": "7",
                                              "response_b": "8"}])
        self.srv.content = "[[A]]"
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--mode",
                                 "pairwise", "--single-order", "-o", self.path("o.jsonl"), path])
        self.assertEqual(code, 0, err)
        sent = self.srv.requests[-1].json["messages"][-1]["content"]
        self.assertEqual(sent, pair_prompt(self.SO_FAR, "7", "8"))

    def test_a_reply_that_is_no_text_or_a_dialogue_already_answered_is_a_bad_record(self):
        path = self.write_jsonl("in.jsonl", [
            {"messages": DIALOGUE, "response_a": "7", "response_b": {"x": 1}},
            {"messages": DIALOGUE[:2], "response_a": "7", "response_b": "8"}])
        run_main(["--judge-url", self.srv.url, "--no-preflight", "--mode", "pairwise",
                  "-o", self.path("o.jsonl"), path])
        with open(self.path("o.jsonl"), encoding="utf-8") as f:
            errors = [json.loads(line)["judge_error"] for line in f]
        self.assertEqual(errors, [
            "line 1: field 'response_b' is a dict, expected text",
            "line 2: field 'messages' ends with an assistant message and the record has a "
            "response too: which one is judged?"])
        self.assertEqual(self.srv.chat_count, 0)

    def test_python_compares_two_replies_to_an_examples_messages_alike(self):
        pair = minijudge.LLMJudge(self.srv.url, model="m", template="pairwise")
        self.srv.content = "[[A]]"
        result = pair.compare({"messages": DIALOGUE}, "7", "8", both_orders=False)
        self.assertEqual(result.status, "ok")
        sent = self.srv.requests[-1].json["messages"][-1]["content"]
        self.assertEqual(sent, pair_prompt(self.SO_FAR, "7", "8"))


class PythonTest(StubTestCase):
    def judge(self):
        return minijudge.LLMJudge(self.srv.url, model="m")

    def test_a_wrong_turn_is_named_as_python_gives_it(self):
        judge = self.judge()
        for turn in ("2", True, 0, 1.0):
            with self.subTest(turn=turn):
                j = judge.judge({"messages": TALK}, turn=turn)
                self.assertEqual((j.status, j.error), (
                    "bad_record", "turn must be a whole number from 1; got {!r}".format(turn)))
        j = judge.judge({"messages": TALK}, turn=3)
        self.assertEqual(j.error, "field 'messages': 1 turn with a reply; turn=3 asks for the 3rd")

    def test_messages_that_are_no_list_are_a_bad_record(self):
        j = self.judge().judge({"messages": "What is 2+2? 4"})
        self.assertEqual((j.status, j.error), (
            "bad_record", "field 'messages' is a str, expected a list of messages"))

    def test_more_mtbench_answers_than_questions_is_a_bad_record_not_an_exception(self):
        j = self.judge().judge({"turns": ["q1"], "answers": ["a1", "a2"]})
        self.assertEqual(j.status, "bad_record")
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_null_response_is_an_empty_one(self):
        j = self.judge().judge({"messages": ASKED}, {"response": None})
        self.assertEqual(j.status, "empty_response")


if __name__ == "__main__":
    unittest.main()
