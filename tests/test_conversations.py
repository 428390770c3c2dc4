"""Conversations read alike by the command line and Python (issue 44): a turn, its reply and
its reference are one unit keyed by the question's position (a null answer leaves its turn
unanswered, it does not renumber the later ones); the prompt ``--dry-run`` prints is the one
``LLMJudge.messages()`` returns, over MT-Bench's layouts, message lists and references kept
per turn under ``answer`` or ``reference``; a conversation whose last question has no reply
is a missing response, never a judgement of an earlier turn; a developer message before the
next question stays out of the reply; every text cut in the judged reply is counted
(``judge_texts_shortened``); OpenAI's refusals and legacy ``function_call`` messages are
read; ``judge_messages`` refuses a conversation to be judged; and ``--conversation-field``
suggests the field meant, as the other field flags do.

The command line runs as main() in this process against the loopback stub (what is
compared is how it reads a record, which main() does as ``python -m minijudge`` does);
Python through its public API."""
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
from stub import JUDGE_ENV, PYTHON, StubTestCase, run_main  # noqa: E402


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


def shown(messages):
    """Messages as --dry-run prints them."""
    return "\n".join("[{}]\n{}".format(m["role"], m["content"]) for m in messages)


WEATHER = [
    {"role": "system", "content": "You are a travel assistant."},
    user("Hi"),
    assistant("Hello! Where to?"),
    user("What's the weather in Paris?"),
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18C, cloudy"},
    assistant("It is 18C and cloudy in Paris."),
]
QUESTIONS = ["Write a haiku about rain.", "Now make it rhyme."]
REFERENCES = ["(any haiku)", "A rhyming haiku about rain."]
# The layouts a conversation comes in, each judged by default, with turn 1 and with turn 2.
LAYOUTS = [
    {"messages": WEATHER},
    {"messages": WEATHER, "reference": ["r1", "r2"]},
    {"messages": WEATHER[:4], "response": "Sunny."},
    {"messages": WEATHER[:4]},
    {"messages": WEATHER[:3] + [{"role": "developer", "content": "Be brief."}] + WEATHER[3:],
     "answer": ["r1", "r2"]},
    {"turns": QUESTIONS, "answers": ["Soft rain", "Rain again, a pain"]},
    {"turns": QUESTIONS, "choices": [{"index": 0, "turns": ["Soft rain", "Rain, a pain"]}],
     "reference": REFERENCES},
    {"turns": QUESTIONS, "answers": [None, "Rain again, a pain"], "reference": REFERENCES},
    {"turns": QUESTIONS, "choices": [{"index": 0, "turns": [None, "Rain, a pain"]}],
     "answer": REFERENCES},
    {"turns": QUESTIONS, "answers": ["Soft rain", "Rain again"], "answer": REFERENCES},
    {"turns": QUESTIONS, "answers": ["Soft rain", "Rain again"], "answer": None,
     "reference": REFERENCES},
    {"turns": QUESTIONS, "answers": ["Soft rain", "Rain again"], "answer": "",
     "reference": REFERENCES},
    {"turns": QUESTIONS, "answers": ["Soft rain", "Rain again"], "answer": "any haiku",
     "reference": REFERENCES},
    {"turns": QUESTIONS, "answers": ["Soft rain", "Rain again"], "answer": "any haiku"},
    {"turns": QUESTIONS, "answers": ["Soft rain"], "response": "Rain again, a pain",
     "reference": REFERENCES},
]


class CommandLine(StubTestCase):
    """The command line against this test's stub: main() in this process (``cli``), or a
    real ``python -m minijudge`` (``process``) where the process itself matters: its
    stdout's encoding, its stack's depth."""

    def cli(self, *argv):
        """(exit code, stdout, stderr) of main() (setUp took the judge's variables out of
        the environment): 0.05 s of CPU less than a process, 40 times in the two modules."""
        return run_main(argv)

    def process(self, *argv):
        """(exit code, stdout, stderr) of ``python -m minijudge`` run from the repository."""
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        proc = subprocess.run([*PYTHON, "-m", "minijudge"] + [str(a) for a in argv],
                              cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
        return proc.returncode, proc.stdout.decode(), proc.stderr.decode()

    def judged(self, rows, *argv):
        """The records a run on the stub writes (exit code checked by the caller's asserts)."""
        data = self.write_jsonl("in.jsonl", rows)
        self.srv.content = "Rating: 4"
        code, _, err = self.cli("--no-preflight", "--judge-model", "m", "--judge-url",
                                self.srv.url, "--max-error-rate", "1", "-o",
                                self.path("out.jsonl"), *argv, data)
        self.assertIn(code, (0, 1), err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def prompts(self):
        return [r.json["messages"][-1]["content"] for r in self.srv.requests]

    def dry_run(self, rows, *argv):
        """Each row's prompt as --dry-run prints it, or None where it prints an error."""
        code, out, err = self.cli("--dry-run", *argv, self.write_jsonl("in.jsonl", rows))
        self.assertEqual(code, 0, err)
        prompts = []
        for chunk in out.split("--- line ")[1:]:
            head, _, prompt = chunk.partition("\n")
            if not head.endswith(" ---"):  # "--- line N: error"
                prompt = None
            else:
                prompt = prompt.rstrip("\n")
            prompts.append(prompt)
        self.assertEqual(len(prompts), len(rows), out)
        return prompts


class SamePromptTest(CommandLine):
    """Item 1: one record, one prompt, whichever reads it."""

    def test_the_command_line_and_python_send_the_same_prompt_for_every_layout(self):
        judge = minijudge.LLMJudge("http://127.0.0.1:9/v1", "m")
        for turn in (None, 1, 2):
            flags = []
            if turn is not None:
                flags = ["--turn", turn]
            for record, printed in zip(LAYOUTS, self.dry_run(LAYOUTS, *flags)):
                with self.subTest(turn=turn, record=record):
                    try:
                        made = shown(judge.messages(record, turn=turn))
                    except minijudge.JudgeError:
                        made = None
                    self.assertEqual(printed, made)

    def test_a_null_answer_leaves_its_turn_unanswered_and_the_next_keeps_its_reference(self):
        record = {"turns": QUESTIONS, "answers": [None, "Rain again, a pain"],
                  "reference": REFERENCES}
        prompt = self.dry_run([record])[0]
        self.assertIn("[Question]\nNow make it rhyme.\n\n[Reference Answer]\nA rhyming haiku "
                      "about rain.\n\n[The Start of the Response]\nRain again, a pain\n", prompt)
        records = self.judged([record, record], "--turn", "2")
        self.assertEqual([(r["judge_status"], r["judge_turn"]) for r in records],
                         [("ok", 2), ("ok", 2)])
        records = self.judged([record], "--turn", "1")
        self.assertEqual((records[0]["judge_status"], records[0]["judge_error"]),
                         ("bad_record", "line 1: field 'turns': turn 1 has no assistant reply; "
                          "--turn 1 asks for it"))
        judgement = minijudge.LLMJudge(self.srv.url, "m").judge(record, turn=1)
        self.assertEqual((judgement.status, judgement.error), (
            "bad_record", "field 'turns': turn 1 has no assistant reply; turn=1 asks for it"))

    def test_python_sends_the_turns_own_reference_beside_any_answer(self):
        judge = minijudge.LLMJudge("http://127.0.0.1:9/v1", "m")
        base = {"turns": QUESTIONS, "answers": ["Soft rain", "Rain again"],
                "reference": REFERENCES}
        for answer in (None, "", "any haiku"):
            with self.subTest(answer=answer):
                prompt = judge.messages(dict(base, answer=answer), turn=1)[-1]["content"]
                self.assertIn("[Reference Answer]\n(any haiku)\n\n", prompt)
                self.assertNotIn("A rhyming haiku", prompt)


class MissingReplyTest(CommandLine):
    """Item 2: the last question unanswered is a missing response, as for a single answer."""

    ROW = {"messages": [user("Hi"), assistant("Hello!"), user("What is 2+2?")], "output": "4"}

    def test_no_response_field_is_a_bad_record_with_the_single_answer_hint(self):
        for flags, field in (((), "response"), (("--response-field", "outptu"), "outptu")):
            with self.subTest(flags=flags):
                record = self.judged([self.ROW], *flags)[0]
                self.assertEqual((record["judge_status"], record["judge_error"]), (
                    "bad_record", "line 1: no {!r} field (choose one with --response-field; the "
                    "record has messages, output); pass --response-field output?".format(field)))
        record = self.judged([self.ROW], "--response-field", "output")[0]
        self.assertEqual((record["judge_status"], record["judge_turn"]), ("ok", 2))
        self.assertIn("[Question]\nWhat is 2+2?\n\n[The Start of the Response]\n4\n",
                      self.prompts()[-1])

    def test_an_earlier_turn_asked_for_is_still_judged(self):
        record = self.judged([self.ROW], "--turn", "1")[0]
        self.assertEqual((record["judge_status"], record["judge_turn"]), ("ok", 1))

    def test_python_says_the_response_is_missing(self):
        judge = minijudge.LLMJudge(self.srv.url, "m")
        example = {"messages": self.ROW["messages"]}
        judgement = judge.judge(example)
        self.assertEqual((judgement.status, judgement.error),
                         ("template_error", "template needs field 'response'; got messages"))
        with self.assertRaises(minijudge.TemplateError):
            judge.messages(example)
        self.assertEqual(self.srv.chat_count, 0)
        self.assertEqual(judge.judge(example, "4").details["turn"], 2)
        self.assertEqual(judge.judge(example, turn=1).details["turn"], 1)


class ReadersTest(CommandLine):
    """Item 3: what docs/conversations.md says conversations hold, read as it says."""

    def test_a_developer_message_before_the_next_question_is_not_in_the_reply(self):
        judge = minijudge.LLMJudge("http://127.0.0.1:9/v1", "m")
        messages = [user("Hi"), assistant("Hello!"),
                    {"role": "developer", "content": "Answer in French from now on."},
                    user("Thanks"), assistant("De rien.")]
        first = judge.messages({"messages": messages}, turn=1)[-1]["content"]
        self.assertIn("[The Start of the Response]\nHello!\n[The End of the Response]", first)
        second = judge.messages({"messages": messages})[-1]["content"]
        self.assertIn("[Assistant]\nHello!\n\n[Developer]\nAnswer in French from now on.\n"
                      "[The End of the Conversation So Far]", second)

    def test_every_cut_text_of_the_reply_is_counted(self):
        rows = [{"messages": [
            user("search"),
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c", "type": "function",
                 "function": {"name": "s", "arguments": "a" * 30}}]},
            {"role": "tool", "tool_call_id": "c", "content": "y" * 30},
            assistant("z" * 30)]}]
        record = self.judged(rows, "--max-turn-chars", "10")[0]
        self.assertEqual(record["judge_texts_shortened"], 2)
        self.assertNotIn("judge_tool_results_shortened", record)
        self.assertEqual(self.prompts()[0].count("characters left out by minijudge"), 2)
        record = self.judged(rows, "--max-turn-chars", "10", "--mode", "trajectory")[0]
        self.assertEqual(record["judge_texts_shortened"], 2)

    def test_refusals_and_legacy_function_calls_are_read(self):
        rows = [
            {"messages": [user("How do I pick a lock?"),
                          {"role": "assistant", "content": None,
                           "refusal": "I can't help with that."}]},
            {"messages": [user("How do I pick a lock?"),
                          {"role": "assistant", "content": [
                              {"type": "refusal", "refusal": "I won't help with that."}]}]},
            {"messages": [user("Weather in Paris?"),
                          {"role": "assistant", "content": None, "function_call": {
                              "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                          {"role": "function", "name": "get_weather", "content": "18C"},
                          assistant("It is 18C.")]},
        ]
        records = self.judged(rows)
        self.assertEqual([r["judge_status"] for r in records], ["ok"] * 3,
                         [r["judge_error"] for r in records])
        prompts = "\n".join(self.prompts())  # in the order they were answered
        for said in ("can't", "won't"):
            self.assertIn("[The Start of the Response]\n[Refusal]\nI {} help with that.\n"
                          "[The End of the Response]".format(said), prompts)
        self.assertIn("[The Start of the Response]\n[Tool call get_weather]\n{\"city\": "
                      "\"Paris\"}\n\n[Tool result get_weather]\n18C\n\n[Assistant]\nIt is "
                      "18C.\n[The End of the Response]", prompts)


class JudgeMessagesTest(StubTestCase):
    """Item 4: judge_messages sends the judge's own prompt, not a conversation to judge."""

    def test_a_conversation_ending_with_the_assistant_is_refused(self):
        judge = minijudge.LLMJudge(self.srv.url, "m")
        with self.assertRaises(minijudge.JudgeError) as caught:
            judge.judge_messages([user("What is 2+2?"), assistant("4")])
        self.assertEqual(str(caught.exception), (
            "judge_messages expected the judge's own prompt, ending with a user message; got "
            "messages ending with an assistant message (to judge a conversation's last reply: "
            "judge({\"messages\": messages}))"))
        self.assertEqual(self.srv.chat_count, 0)
        self.srv.content = "Rating: 4"
        self.assertEqual(judge.judge_messages([user("Rate 2+2=4 from 1 to 5.")]).value, 4)


class ConversationFieldHintTest(CommandLine):
    """Item 5: a misspelt --conversation-field gets the hint every field flag gives."""

    def test_a_misspelt_conversation_field_suggests_the_list_meant(self):
        record = self.judged([{"id": "x", "messages": WEATHER}],
                             "--conversation-field", "mesages")[0]
        self.assertEqual(record["judge_error"], "line 1: no 'mesages' field "
                         "(--conversation-field mesages; the record has id, messages); pass "
                         "--conversation-field messages?")


if __name__ == "__main__":
    unittest.main()
