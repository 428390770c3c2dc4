"""Conversations under a hostile pass (issue 44): records a careless or hostile user writes,
read alike by the command line and Python, and never a crash nor a silent lie. Each class
names the defect the pass found: a null 'messages' beside MT-Bench's layout; a record's own
field named like a built-in template's section; one field named as both the conversation
and the response; MT-Bench's bad entries named by their place; 100,000 messages; nesting
too deep to show; a null reply beside a dialogue; a response keyword beside a finished
conversation; a lone surrogate in --dry-run; judge_messages given what is not a list of
messages; a failed panel's turn; a turn its reference list has no entry for; a refusal
beside empty content; an empty reply in --dry-run; a null role or a list part type
(tracebacks that stopped the run); the Responses API's text parts.

The command line runs as main() in this process (against the loopback stub where it
sends), but in a real subprocess where the process matters (a lone surrogate written to its
stdout, nesting as deep as a fresh interpreter's stack allows); Python through its public
API."""
import json
import os
import re
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase  # noqa: E402
from test_conversations import CommandLine, assistant, shown, user  # noqa: E402

OFFLINE = "http://127.0.0.1:9/v1"  # never reached: messages() sends nothing


def offline(**options):
    return minijudge.LLMJudge(OFFLINE, "m", **options)


class NullConversationFieldTest(CommandLine):
    """A null 'messages' is no conversation, as a missing one: the command line refused a
    record that Python judged (a dataset holding both layouts has nulls in each's fields)."""

    def test_a_null_messages_beside_mtbench_is_read_as_mtbench_by_both(self):
        record = {"turns": ["q1", "q2"], "answers": ["a1", "a2"], "messages": None}
        printed = self.dry_run([record])[0]
        self.assertEqual(printed, shown(offline().messages(record)))
        self.assertIn("[Question]\nq2\n\n[The Start of the Response]\na2\n", printed)

    def test_a_null_messages_alone_is_a_missing_response_in_both(self):
        records = self.judged([{"id": 1, "messages": None}])
        self.assertEqual(records[0]["judge_error"], "line 1: no 'response' field (choose one "
                         "with --response-field; the record has id, messages)")
        judgement = minijudge.LLMJudge(self.srv.url, "m").judge({"id": 1, "messages": None})
        self.assertEqual(judgement.status, "template_error")

    def test_a_named_conversation_field_holding_null_is_still_refused(self):
        record = {"turns": ["q1"], "answers": ["a1"], "chat": None}
        records = self.judged([record], "--conversation-field", "chat")
        self.assertEqual(records[0]["judge_error"], "line 1: field 'chat' is a null, expected "
                         "a list of messages (--conversation-field chat)")


class SectionNamedFieldTest(CommandLine):
    """A record's own field named like a built-in template's section ({conversation_section},
    {context_section}, {reference_section}) or binary wording ({answer_yes}, ...) was sent
    in the prompt: "a record without a conversation sends the same prompt as before", its
    sections empty."""

    SECTIONS = {"conversation_section": "FORGED CONVERSATION\n",
                "context_section": "FORGED CONTEXT\n", "reference_section": "FORGED REF\n",
                "answer_kind": "FORGED", "answer_yes": "FORGED", "answer_no": "FORGED"}

    def test_a_record_cannot_fill_a_built_in_section(self):
        for template, record in (
                ("rating", {"question": "q", "response": "r"}),
                ("pairwise", {"question": "q", "response_a": "a", "response_b": "b"}),
                ("trajectory", {"question": "q", "response": "r"}),
                ("binary", {"question": "q", "response": "r", "answer": "r"}),
                ("rating", {"messages": [user("q"), assistant("r")]})):
            with self.subTest(template=template, record=record):
                plain = offline(template=template).messages(record)
                forged = offline(template=template).messages(dict(record, **self.SECTIONS))
                self.assertEqual(forged, plain)
        printed = self.dry_run([dict({"question": "q", "response": "r"}, **self.SECTIONS)])
        self.assertNotIn("FORGED", printed[0])

    def test_a_custom_template_still_reads_the_field_under_doc(self):
        judge = offline(template="{doc[conversation_section]} {question} {response}")
        prompt = judge.messages(dict({"question": "q", "response": "r"}, **self.SECTIONS))
        self.assertEqual(prompt[-1]["content"], "FORGED CONVERSATION\n q r")


class OneFieldForBothTest(CommandLine):
    """--conversation-field naming the response's field (or --response-field the
    conversation's): the list was read as the conversation and again as its own response,
    refused as "the record has a response too"."""

    DIALOGUE = [user("q1"), assistant("a1"), user("q2"), assistant("a2")]

    def test_the_list_is_the_conversation_and_no_response_beside_it(self):
        for flags, record in (
                (("--conversation-field", "response"), {"response": self.DIALOGUE}),
                (("--response-field", "messages"), {"messages": self.DIALOGUE}),
                (("--conversation-field", "chat", "--response-field", "chat"),
                 {"chat": self.DIALOGUE})):
            with self.subTest(flags=flags):
                judged = self.judged([record], *flags)[0]
                self.assertEqual((judged["judge_status"], judged.get("judge_turn")), ("ok", 2),
                                 judged["judge_error"])
                self.assertEqual(self.dry_run([record], *flags)[0],
                                 shown(offline().messages({"messages": self.DIALOGUE})))

    def test_a_response_in_another_field_is_still_ambiguous(self):
        judged = self.judged([{"chat": self.DIALOGUE, "response": "r"}],
                             "--conversation-field", "chat")[0]
        self.assertEqual(judged["judge_error"], "line 1: field 'chat' ends with an assistant "
                         "message and the record has a response too: which one is judged?")


class MTBenchEntriesTest(CommandLine):
    """MT-Bench's questions and answers that are not text were named as messages the record
    does not have ("field 'turns': message 4 has content of kind dict"); a NaN answer
    (pandas' missing value) is an unanswered turn, as a null one."""

    ROWS = [
        ({"turns": ["q1", None], "answers": ["a1", "a2"]},
         "field 'turns': question 2 is of kind null, expected text"),
        ({"turns": ["q1", "q2"], "answers": ["a1", {"text": "a2"}]},
         "field 'turns': answer 2 is of kind dict, expected text (null: unanswered)"),
        ({"turns": ["q1", "q2"], "choices": [{"index": 0, "turns": [7, "a2"]}]},
         "field 'turns': answer 1 is of kind int, expected text (null: unanswered)"),
    ]

    def test_a_bad_entry_is_named_by_its_place_in_both(self):
        judge = minijudge.LLMJudge(self.srv.url, "m")
        records = self.judged([record for record, _ in self.ROWS])
        for (record, error), judged in zip(self.ROWS, records):
            with self.subTest(record=record):
                self.assertEqual(judged["judge_error"], "line {}: {}".format(
                    judged["judge_line"], error))
                self.assertEqual(judge.judge(record).error, error)

    def test_a_nan_answer_is_an_unanswered_turn(self):
        path = self.path("nan.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"turns": ["q1", "q2", "q3"], "answers": ["a1", NaN, "a3"]}\n')
        code, out, err = self.cli("--dry-run", "--turn", "2", path)
        self.assertEqual(out, "--- line 1: field 'turns': turn 2 has no assistant reply; "
                         "--turn 2 asks for it\n")
        record = {"turns": ["q1", "q2", "q3"], "answers": ["a1", float("nan"), "a3"]}
        self.assertIn("[User]\nq2\n[The End of the Conversation So Far]\n\n[Question]\nq3\n",
                      offline().messages(record)[-1]["content"])
        self.assertEqual(offline().judge(record, turn=2).error,
                         "field 'turns': turn 2 has no assistant reply; turn=2 asks for it")


class LongConversationTest(CommandLine):
    """100,000 messages: each turn held a copy of every message before it (50,000 copies of
    up to 100,000), so one record took minutes and gigabytes; now a second or so."""

    MESSAGES = [message for n in range(50000)
                for message in (user("q{}".format(n)), assistant("a{}".format(n)))]

    def test_a_long_conversation_is_judged_in_seconds_by_both(self):
        judge = minijudge.LLMJudge(self.srv.url, "m", judge_fn=lambda messages: "Rating: 4")
        for turn in (None, 1, 50000):
            started = time.perf_counter()
            judgement = judge.judge({"messages": self.MESSAGES}, turn=turn)
            self.assertEqual((judgement.status, judgement.details["turn"]),
                             ("ok", turn or 50000))
            self.assertLess(time.perf_counter() - started, 10)
        started = time.perf_counter()
        record = self.judged([{"messages": self.MESSAGES}], "--turn", "2")[0]
        self.assertEqual((record["judge_status"], record["judge_turn"]), ("ok", 2))
        self.assertLess(time.perf_counter() - started, 30)


def nested(depth, inner="x"):
    for _ in range(depth):
        inner = [inner]
    return inner


class DeepNestingTest(CommandLine):
    """A value nested deeper than Python's stack (a tool call's arguments, a reference, a
    question) raised RecursionError out of judge(), stopped --dry-run with a traceback and
    was the command line's internal_error, "a bug in minijudge": it is the record's
    bad_record."""

    def test_python_says_bad_record(self):
        judge = minijudge.LLMJudge(self.srv.url, "m")
        deep = nested(5000)
        call = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": deep}}]}
        for n, example in enumerate(({"messages": [user("q"), call]},
                                     {"messages": [user("q"), assistant("a")],
                                      "reference": [deep]},
                                     {"question": deep, "response": "r"},
                                     {"question": "q", "response": "r", "answer": deep})):
            with self.subTest(example=n):
                judgement = judge.judge(example)
                self.assertEqual((judgement.status, judgement.error),
                                 ("bad_record", "a list nested too deeply to send as text"))
        self.assertEqual(self.srv.chat_count, 0)

    def test_the_command_line_says_bad_record_at_every_depth(self):
        rows = []
        for depth in range(900, 1000, 5):  # json reads some that json cannot write back
            arguments = "[" * depth + "]" * depth
            rows.append('{"messages": [{"role": "user", "content": "q"}, {"role": '
                        '"assistant", "content": null, "tool_calls": [{"id": "c", "function": '
                        '{"name": "f", "arguments": ' + arguments + '}}]}]}')
            rows.append('{"question": ' + arguments + ', "response": "r", "answer": ' +
                        arguments + '}')
        path = self.path("deep.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
        # a real process: how deep json and minijudge can go depends on the stack's depth,
        # which in this process unittest's frames already take a part of
        code, out, err = self.process("--dry-run", path)  # each line read on the main thread
        self.assertEqual(code, 0, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(out.count("--- line "), len(rows))
        self.srv.content = "Rating: 4"
        code, _, err = self.process("--no-preflight", "--judge-model", "m", "--judge-url",
                                self.srv.url, "--max-error-rate", "1", "-o",
                                self.path("out.jsonl"), path)
        self.assertIn(code, (0, 1), err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:  # too deep to load here
            statuses = set(re.findall(r'"judge_status": "(\w+)"', f.read()))
        self.assertLessEqual(statuses, {"ok", "bad_record"})


class NullReplyToDialogueTest(CommandLine):
    """A dialogue and two replies, one null: the command line said so, Python judged the
    null as an empty answer (and asked the judge)."""

    DIALOGUE = [user("Hi"), assistant("Hello!"), user("Name a prime.")]

    def test_a_null_reply_is_refused_by_both(self):
        rows = [{"messages": self.DIALOGUE, "response_a": "7", "response_b": None},
                {"messages": self.DIALOGUE, "response_a": None, "response_b": "7"}]
        records = self.judged(rows, "--mode", "pairwise")
        pair = minijudge.LLMJudge(self.srv.url, "m", template="pairwise")
        for row, record in zip(rows, records):
            side = "response_a" if row["response_a"] is None else "response_b"
            error = "field {!r} is null, expected text".format(side)
            self.assertEqual(record["judge_error"], "line {}: {}".format(
                record["judge_line"], error))
            judgement = pair.compare({"messages": self.DIALOGUE}, row["response_a"],
                                     row["response_b"])
            self.assertEqual((judgement.status, judgement.error), ("bad_record", error))
        self.assertEqual(self.srv.chat_count, 0)


class ResponseKeywordTest(StubTestCase):
    """judge(example, response=...) replaced a finished conversation's last reply silently,
    where judge(example, output) refuses the two as ambiguous; the keyword is the item's
    response, as ``output`` is."""

    FINISHED = {"messages": [user("q1"), assistant("a1")]}
    OPEN = {"messages": [user("q1"), assistant("a1"), user("q2")]}

    def test_the_keyword_reads_as_output_does(self):
        judge = minijudge.LLMJudge(self.srv.url, "m")
        ambiguous = ("bad_record", "field 'messages' ends with an assistant message and the "
                     "record has a response too: which one is judged?")
        for judgement in (judge.judge(self.FINISHED, "x"),
                          judge.judge(self.FINISHED, response="x")):
            self.assertEqual((judgement.status, judgement.error), ambiguous)
        self.assertEqual(self.srv.chat_count, 0)
        self.assertEqual(judge.messages(self.OPEN, response="x"), judge.messages(self.OPEN, "x"))
        self.srv.content = "Rating: 4"
        self.assertEqual(judge.judge(self.OPEN, response="x").details["turn"], 2)

    def test_a_missing_response_names_no_private_field(self):
        with self.assertRaises(minijudge.TemplateError) as caught:
            offline().messages(self.OPEN, response=None)
        self.assertEqual(str(caught.exception), "template needs field 'response'; got "
                         "conversation, conversation_section, messages, question, turn")


class DryRunSurrogateTest(CommandLine):
    """A lone surrogate in a record (json reads "\\ud800" as one) stopped --dry-run with a
    UnicodeEncodeError traceback; it is shown escaped, as on stderr and in the records."""

    def test_a_lone_surrogate_is_shown_escaped(self):
        path = self.path("in.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"messages": [{"role": "user", "content": "q\\ud800"}, '
                    '{"role": "assistant", "content": "a"}]}\n')
            f.write('{"q\\udc00": 1, "messages": [{"role": "user", "content": "q"}]}\n')
        # a real process: its stdout encodes what it prints, which a StringIO would not
        code, out, err = self.process("--dry-run", path)
        self.assertEqual(code, 0, err)
        self.assertIn("[Question]\nq\\ud800\n", out)
        self.assertIn("--- line 2: no 'response' field (choose one with --response-field; "
                      "the record has messages, q\\udc00)\n", out)


class JudgeMessagesKindsTest(StubTestCase):
    """judge_messages given a tuple ending with the assistant sent it, and given a text or a
    single message raised AttributeError from deep inside; each is a JudgeError saying what
    it expects, before any request."""

    def test_what_is_not_a_list_of_messages_is_refused(self):
        judge = minijudge.LLMJudge(self.srv.url, "m")
        with self.assertRaisesRegex(minijudge.JudgeError, "ending with an assistant message"):
            judge.judge_messages((user("What is 2+2?"), assistant("4")))
        for messages, kind in (("What is 2+2?", "a str"), (user("What is 2+2?"), "a dict"),
                               ([], "an empty list"), ([user("q"), "4"], "a list holding a str")):
            with self.subTest(messages=messages):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    judge.judge_messages(messages)
                self.assertEqual(str(caught.exception), "judge_messages expected a list of chat "
                                 "messages (dicts with a role); got " + kind)
        self.assertEqual(self.srv.chat_count, 0)
        self.srv.content = "Rating: 4"
        self.assertEqual(judge.judge_messages((user("Rate 2+2=4 from 1 to 5."),)).value, 4)


class FailedPanelTurnTest(CommandLine):
    """A panel short of its quorum dropped judge_turn, which a failed judge, failed repeats
    and a panel that answered all write: each record says which turn was judged."""

    def test_a_failed_panel_says_the_turn_its_judges_were_asked(self):
        judges = self.path("judges.json")
        with open(judges, "w", encoding="utf-8") as f:
            json.dump([{"name": "a", "url": self.srv.url, "model": "m"},
                       {"name": "b", "url": self.srv.url, "model": "m", "mode": "rating",
                        "template": "trajectory"}], f)  # asks yes/no: "Rating: 4" unread
        row = {"messages": [user("q1"), assistant("a1"), user("q2"), assistant("a2")]}
        for quorum, status in (("2", "parse_error"), ("1", "ok")):
            with self.subTest(quorum=quorum):
                record = self.judged([row], "--judges", judges, "--jury", "mean",
                                     "--quorum", quorum, "--turn", "1")[0]
                self.assertEqual((record["judge_status"], record.get("judge_turn")),
                                 (status, 1))
                self.assertEqual(record["judge_members"]["b"]["turn"], 1)


class TurnWithoutReferenceTest(CommandLine):
    """A per-turn reference list with no entry for the judged turn (shorter than the turns,
    or null there): the template read the record's whole list as the reference, and the
    judge was told the ground truth is "['r1']". The turn has none, as a single answer
    without one: a template that needs it says so."""

    QUESTIONS = ["q1", "q2", "q3"]

    def test_the_whole_list_is_never_the_reference(self):
        rows = [{"turns": self.QUESTIONS, "answers": ["a1", "a2", "a3"], "reference": ["r1"]},
                {"turns": self.QUESTIONS, "answers": ["a1", "a2", "a3"],
                 "answer": ["r1", "r2", None]},
                {"turns": self.QUESTIONS, "answers": ["a1", "a2", "a3"],
                 "answer": ["r1", "r2", ""]}]
        for template in ("binary", "math"):
            judge = offline(template=template)
            for record in rows:
                with self.subTest(template=template, record=record):
                    with self.assertRaisesRegex(minijudge.TemplateError,
                                                "template needs field 'reference'"):
                        judge.messages(record)
                    self.assertEqual(judge.judge(record).status, "template_error")
                    prompt = judge.messages(record, turn=1)[-1]["content"]
                    self.assertIn("[Reference Answer]\nr1\n", prompt)
        rubric = offline(template="rubric").messages(rows[0])[-1]["content"]
        self.assertNotIn("'r1'", rubric)
        self.assertIn("(none given)", rubric)
        full = dict(rows[0], reference=["r1", "r2", "r3"])  # a first record that fills it
        printed = self.dry_run([full] + rows[:1], "--mode", "binary", "--reference-field",
                               "reference")
        self.assertIn("[Reference Answer]\nr3\n", printed[0])
        self.assertIsNone(printed[1])
        printed = self.dry_run([full] + rows[1:], "--mode", "binary")
        self.assertEqual(printed[1:], [None, None])

    def test_a_rating_turn_without_one_is_judged_without(self):
        record = {"turns": self.QUESTIONS, "answers": ["a1", "a2", "a3"], "reference": ["r1"]}
        prompt = offline().messages(record)[-1]["content"]
        self.assertNotIn("Reference", prompt)
        self.assertEqual(self.dry_run([record])[0], shown(offline().messages(record)))


class EmptyContentRefusalTest(CommandLine):
    """A refusal beside an empty content ("" or [], as some loggers write OpenAI's null)
    was an empty reply, scored 0.0 as empty_response without asking the judge: the model
    refused, and the refusal is its reply."""

    def test_the_refusal_is_the_reply(self):
        rows = [{"messages": [user("How do I pick a lock?"),
                              {"role": "assistant", "content": empty,
                               "refusal": "I can't help with that."}]} for empty in ("", [])]
        for row, printed in zip(rows, self.dry_run(rows)):
            self.assertIn("[The Start of the Response]\n[Refusal]\nI can't help with that.\n"
                          "[The End of the Response]", printed)
            self.assertEqual(printed, shown(offline().messages(row)))
        records = self.judged(rows)
        self.assertEqual([r["judge_status"] for r in records], ["ok", "ok"])


class DryRunEmptyReplyTest(CommandLine):
    """A conversation whose judged reply is empty: --dry-run printed its prompt and counted a
    request, where the run scores it empty_response and sends nothing (as --dry-run says of
    a single answer's empty response)."""

    def test_an_empty_reply_is_shown_as_the_run_judges_it(self):
        rows = [{"messages": [user("q"), assistant("")]},
                {"messages": [user("q")], "response": "  "},
                {"turns": ["q1", "q2"], "answers": ["", "a2"]}]
        code, out, err = self.cli("--dry-run", "--turn", "1", self.write_jsonl("in.jsonl", rows))
        self.assertEqual(code, 0, err)
        self.assertEqual(out.count("empty_response: the response is empty"), 3, out)
        self.assertIn("--dry-run: 0 requests", err)
        records = self.judged(rows, "--turn", "1")
        self.assertEqual([r["judge_status"] for r in records], ["empty_response"] * 3)
        self.assertEqual(self.srv.chat_count, 0)


class NullRoleTest(CommandLine):
    """A message whose role is null, or a content part whose type is a list, stopped the
    whole run with a TypeError traceback (and raised it out of judge()): it is that
    record's bad_record."""

    def test_a_null_role_is_the_records_bad_record(self):
        error = ("field 'messages': message 1 has a null role, expected one of system, "
                 "developer, user, assistant, tool")
        rows = [{"messages": [{"role": None, "content": "q"}, assistant("a")]},
                {"messages": [user("q"), assistant("a")]}]
        records = self.judged(rows)
        self.assertEqual([(r["judge_status"], r["judge_error"]) for r in records],
                         [("bad_record", "line 1: " + error), ("ok", None)])
        judgement = minijudge.LLMJudge(self.srv.url, "m").judge(rows[0])
        self.assertEqual((judgement.status, judgement.error), ("bad_record", error))

    def test_a_part_whose_type_is_a_list_is_the_records_bad_record(self):
        error = "field 'messages': message 1, content part 1 is not a text or image part"
        rows = [{"messages": [user([{"type": ["image_url"], "text": "q"}]), assistant("a")]},
                {"messages": [user("q"), assistant("a")]}]
        records = self.judged(rows)
        self.assertEqual([(r["judge_status"], r["judge_error"]) for r in records],
                         [("bad_record", "line 1: " + error), ("ok", None)])
        judgement = minijudge.LLMJudge(self.srv.url, "m").judge(rows[0])
        self.assertEqual((judgement.status, judgement.error), ("bad_record", error))


class ResponsesTextPartTest(CommandLine):
    """OpenAI's Responses API text parts (input_text, output_text) were refused as "not a
    text or image part", beside its input_image, which was read."""

    def test_input_and_output_text_parts_are_text(self):
        row = {"messages": [
            user([{"type": "input_text", "text": "What is in it?"},
                  {"type": "input_image", "image_url": "https://example.com/a.png"}]),
            {"role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]}]}
        printed = self.dry_run([row])[0]
        self.assertIn("[Question]\nWhat is in it?\n[image]\n\n[The Start of the Response]\n"
                      "A cat.\n[The End of the Response]", printed)
        self.assertEqual(printed, shown(offline().messages(row)))


if __name__ == "__main__":
    unittest.main()
