"""Issue 32 items 1, 2 and 4 for single answers: a conversation as input (OpenAI messages
with tool calls, or MT-Bench's turns and answers), one turn judged in the context of the
turns before it, each turn labelled by its role, long turns shortened with a visible
marker, and a malformed conversation as that record's bad_record naming what is wrong.
The reader and renderer are tested as units; the rest through the real command line
against the loopback stub, whose recorded requests show the exact prompt sent."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, run_main  # noqa: E402

WEATHER = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello! Where to?"},
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18C, cloudy"},
    {"role": "assistant", "content": "It is 18C and cloudy in Paris."},
]


def read(messages):
    return minijudge._conversation(messages, "field 'messages'")


class ReaderTest(unittest.TestCase):
    def test_roles_tool_calls_and_content_parts_are_read(self):
        messages = read(WEATHER + [{"role": "user", "content": [
            {"type": "text", "text": "And this?"},
            {"type": "image_url", "image_url": {"url": "data:..."}}]}])
        self.assertEqual([m["role"] for m in messages],
                         ["system", "user", "assistant", "user", "assistant", "tool",
                          "assistant", "user"])
        self.assertEqual(messages[4]["calls"], [("call_1", "get_weather", '{"city": "Paris"}')])
        self.assertEqual(messages[4]["text"], "")
        self.assertEqual(messages[5]["call_id"], "call_1")
        self.assertEqual(messages[7]["text"], "And this?\n[image]")

    def test_malformed_conversations_name_what_is_wrong(self):
        cases = [
            ("text", "field 'messages' is a str, expected a list of messages"),
            ({"role": "user"}, "field 'messages' is a dict, expected a list of messages"),
            ([], "field 'messages' is an empty list, expected messages"),
            ([{"role": "user", "content": "q"}, {"content": "a"}],
             "field 'messages': message 2 has no role, expected one of system, developer, "
             "user, assistant, tool"),
            ([{"role": "robot", "content": "a"}],
             "field 'messages': message 1 has role 'robot', expected one of system, "
             "developer, user, assistant, tool"),
            (["hi"], "field 'messages': message 1 is a str, expected an object with a role"),
            ([{"role": "user", "content": 5}],
             "field 'messages': message 1 has content of kind int, expected text or a list "
             "of content parts"),
            ([{"role": "user", "content": None}],
             "field 'messages': message 1 has content of kind null, expected text or a list "
             "of content parts"),
            ([{"role": "user", "content": [{"type": "video"}]}],
             "field 'messages': message 1, content part 1 is not a text or image part"),
            ([{"role": "assistant", "content": None, "tool_calls": {"id": "x"}}],
             "field 'messages': message 1 has tool_calls of kind dict, expected a list"),
            ([{"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]}],
             "field 'messages': message 1, tool call 1 has no function name, expected "
             "{\"function\": {\"name\", \"arguments\"}}"),
        ]
        for value, error in cases:
            with self.subTest(value=value):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    read(value)
                self.assertEqual(str(caught.exception), error)

    def test_mtbench_layout_becomes_user_and_assistant_messages(self):
        for record in ({"turns": ["q1", "q2"], "answers": ["a1", "a2"]},
                       {"turns": ["q1", "q2"], "choices": [{"index": 0, "turns": ["a1", "a2"]}]}):
            with self.subTest(record=record):
                self.assertEqual(minijudge._mtbench_messages(record), [
                    {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                    {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}])
        self.assertIsNone(minijudge._mtbench_messages({"turns": ["q1"]}))
        self.assertIsNone(minijudge._mtbench_messages({"question": "q", "response": "r"}))


class TurnTest(unittest.TestCase):
    def test_the_last_turn_with_a_reply_is_judged_by_default(self):
        turn = minijudge._judged_turn(read(WEATHER), None, "field 'messages'")
        self.assertEqual(turn.number, 2)
        self.assertEqual(turn.user["text"], "What's the weather in Paris?")
        self.assertEqual([m["role"] for m in turn.reply], ["assistant", "tool", "assistant"])
        self.assertEqual([m["role"] for m in turn.before], ["system", "user", "assistant"])

    def test_turn_n_judges_the_nth_turn_with_a_reply(self):
        turn = minijudge._judged_turn(read(WEATHER), 1, "field 'messages'")
        self.assertEqual((turn.number, turn.user["text"]), (1, "Hi"))
        self.assertEqual([m["role"] for m in turn.before], ["system"])

    def test_no_reply_or_a_turn_past_the_end_is_an_error(self):
        cases = [
            (WEATHER, 5, "field 'messages': 2 turns with a reply; --turn 5 asks for the 5th"),
            (WEATHER[:3], 3, "field 'messages': 1 turn with a reply; --turn 3 asks for the 3rd"),
            (WEATHER[:2], None, "field 'messages': no turn has an assistant reply"),
            ([{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}], None,
             "field 'messages': no turn has an assistant reply"),
        ]
        for messages, turn, error in cases:
            with self.subTest(turn=turn, messages=len(messages)):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge._judged_turn(read(messages), turn, "field 'messages'")
                self.assertEqual(str(caught.exception), error)

    def test_a_response_field_is_the_reply_to_a_conversation_that_ends_with_the_user(self):
        messages = minijudge._with_response(read(WEATHER[:4]), "Sunny.", "field 'messages'")
        self.assertEqual(minijudge._judged_turn(messages, None, "x").reply[0]["text"], "Sunny.")
        with self.assertRaises(minijudge.JudgeError) as caught:
            minijudge._with_response(read(WEATHER), "Sunny.", "field 'messages'")
        self.assertEqual(str(caught.exception), "field 'messages' ends with an assistant message "
                         "and the record has a response too: which one is judged?")


class RendererTest(unittest.TestCase):
    def test_each_turn_is_labelled_in_order(self):
        self.assertEqual(minijudge._turns_text(read(WEATHER), 4000), """\
[System]
You are a travel assistant.

[User]
Hi

[Assistant]
Hello! Where to?

[User]
What's the weather in Paris?

[Tool call get_weather (call_1)]
{"city": "Paris"}

[Tool result (call_1)]
18C, cloudy

[Assistant]
It is 18C and cloudy in Paris.""")

    def test_long_turns_are_shortened_with_a_visible_marker(self):
        messages = read([{"role": "user", "content": "a" * 50 + "b" * 50}])
        self.assertEqual(minijudge._turns_text(messages, 10), "[User]\naaaaa\n[... 90 "
                         "characters left out by minijudge (--max-turn-chars 10) ...]\nbbbbb")
        self.assertEqual(minijudge._turns_text(messages, 0), "[User]\n" + "a" * 50 + "b" * 50)
        self.assertEqual(minijudge._turns_text(messages, 10, keep=("user",)),
                         "[User]\n" + "a" * 50 + "b" * 50)

    def test_the_fields_a_conversation_fills(self):
        fields = minijudge._conversation_fields(read(WEATHER), None, limit=4000)
        self.assertEqual(fields["question"], "What's the weather in Paris?")
        self.assertEqual(fields["response"], "[Tool call get_weather (call_1)]\n"
                         "{\"city\": \"Paris\"}\n\n[Tool result (call_1)]\n18C, cloudy\n\n"
                         "[Assistant]\nIt is 18C and cloudy in Paris.")
        self.assertEqual(fields["conversation_section"], "[The Start of the Conversation So "
                         "Far]\n[System]\nYou are a travel assistant.\n\n[User]\nHi\n\n"
                         "[Assistant]\nHello! Where to?\n[The End of the Conversation So Far]\n\n")
        self.assertEqual(fields["turn"], 2)
        self.assertEqual(fields["tool_results_shortened"], 0)
        first = minijudge._conversation_fields(read(WEATHER), 1, limit=4000,
                                               references=["r1", "r2"])
        self.assertEqual((first["response"], first["reference"]), ("Hello! Where to?", "r1"))
        short = minijudge._conversation_fields(read(WEATHER), None, limit=8)
        self.assertEqual(short["tool_results_shortened"], 1)
        self.assertIn("It is 18C and cloudy in Paris.", short["response"])  # never cut


if __name__ == "__main__":
    unittest.main()
