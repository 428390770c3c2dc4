"""Coming from lm-evaluation-harness's `llm_judge` metric: the same prompt, the same score.

lm-eval (a task YAML)                         minijudge
  judge_prompt: "...{{doc.question}}...        template text with {question} (or {doc[question]})
                 Score: X.XX"                  scale=(0, 10): "Score: 8.50" scores 0.85
  response_format: {score: 8.5, ...}           response_format={"score": 8.5, ...}, score_field
  LLM_JUDGE_ACCURACY_API_BASE / _API_KEY        the same variables for a judge named accuracy
  judge_prompt saved per sample                 save_prompts=True (judge_prompt on the CLI)

The command line does the same with --template FILE --scale 0,10 --response-format FILE.

    python examples/from_lm_eval.py                        # a scripted stand-in, no model
    LLM_JUDGE_API_BASE=http://127.0.0.1:8000 python examples/from_lm_eval.py   # a real one
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from minijudge import LLMJudge  # noqa: E402

TEMPLATE = """Rate the answer to the question on a scale of 0 to 10.
Question: {question}
Answer: {response}
Reply in JSON with your score and a one-line explanation."""
EXAMPLE_REPLY = {"score": 8.5, "explanation": "why, in one line"}


def stand_in(messages):
    """Not a model: what a judge constrained to the schema would send back."""
    answer = messages[-1]["content"].split("Answer: ")[1].split("\n")[0]
    return json.dumps({"score": 9.0 if "Paris" in answer else 2.5, "explanation": "scripted"})


def main():
    offline = not os.environ.get("LLM_JUDGE_API_BASE")
    judge = LLMJudge(judge_fn=stand_in if offline else None, template=TEMPLATE, scale=(0, 10),
                     response_format=EXAMPLE_REPLY, save_prompts=True)
    for response in ("Paris.", "Lyon, I think."):
        j = judge.judge({"question": "What is the capital of France?"}, response)
        print("{!r:18} score {} ({}) value {}".format(response, j.score, j.status, j.value))
    schema = judge.params.get("response_format", {}).get("json_schema", {}).get("schema")
    print("schema sent:", json.dumps(schema))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
