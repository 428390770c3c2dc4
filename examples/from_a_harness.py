"""Coming from a small harness scorer (LLMJudgeScorer, context-bench's LLMJudge): a judge
function instead of a server, a JSON rubric, PASS/FAIL at a threshold, an exception
instead of a silent 0.

a harness                                      minijudge
  judge = MyJudge(llm=callable)                LLMJudge(judge_fn=callable): messages -> str
  rubric prompt, json.loads(reply)             template="rubric" (or response_format=)
  passed = score >= threshold                  pass_threshold=0.7: details["pass"]
  raise on an unparseable reply                strict=True: JudgeError with .judgement

    python examples/from_a_harness.py                      # a scripted stand-in, no model
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from minijudge import JudgeError, LLMJudge  # noqa: E402


def my_model(messages):
    """Your in-process model (here scripted): chat messages in, the reply's text out."""
    response = messages[-1]["content"].split("[The Start of the Response]\n")[1]
    if response.startswith("???"):
        return "I cannot grade this."
    good = response.startswith("4")
    return json.dumps({"reasoning": "scripted", "correctness": 9 if good else 2,
                       "relevance": 8 if good else 5})


def main():
    judge = LLMJudge(judge_fn=my_model, template="rubric", pass_threshold=0.7)
    item = {"question": "What is 2 + 2?", "answer": "4"}
    for response in ("4, because 2 + 2 = 4.", "5"):
        j = judge.judge(item, response)
        print("{!r:24} score {:.2f} {}".format(response, j.score,
                                                "PASS" if j.details["pass"] else "FAIL"))
    strict = LLMJudge(judge_fn=my_model, template="rubric", strict=True)
    try:
        strict.judge(item, "??? no idea")
    except JudgeError as exc:
        print("strict: JudgeError:", exc, "- status", exc.judgement.status)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
