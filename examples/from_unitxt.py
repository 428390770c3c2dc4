"""Coming from unitxt's LLMJudgeDirect: criteria with options, assess then select, a
positional-bias check, criteria per instance, named context fields.

unitxt                                         minijudge
  CriteriaWithOptions(name, description,       criterion={"name", "description",
      options=[...], option_map={...})             "options": {option: score}}
  criteria_field="criteria"                    criterion= per item (--criteria-field F)
  context_fields={"Passage": "doc"}            context={"Passage": text} (--context-field)
  assessment, then option selection            assess=True (--assess)
  check_positional_bias=True                   check_position=True (--check-position)
  {c}_selected_option, {c}_assessment,         judge_option, judge_assessment,
  {c}_positional_bias                          judge_positional_bias (see the README table)

    python examples/from_unitxt.py                         # a scripted stand-in, no model
    LLM_JUDGE_API_BASE=http://127.0.0.1:8000 python examples/from_unitxt.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from minijudge import LLMJudge  # noqa: E402

CONCISE = {"name": "conciseness", "description": "Is the response short and to the point?",
           "options": {"Yes": 1.0, "Somewhat": 0.5, "No": 0.0}}
GROUNDED = {"name": "groundedness", "description": "Does the response follow the passage?",
            "options": {"Grounded": 1.0, "Not grounded": 0.0}}


def stand_in(messages):
    """Not a model: an assessment for the first turn, then the same option in either order."""
    prompt = messages[-1]["content"]
    if "Do not name an option yet" in prompt:
        return "The response is brief and matches the passage."
    return "Yes" if "\n- Yes" in prompt else "Grounded"


def main():
    offline = not os.environ.get("LLM_JUDGE_API_BASE")
    judge = LLMJudge(judge_fn=stand_in if offline else None, template="criterion",
                     assess=True, check_position=True)
    item = {"question": "Where is the Eiffel Tower?"}
    for criterion in (CONCISE, GROUNDED):
        j = judge.judge(item, "In Paris.", criterion=criterion,
                        context={"Passage": "The Eiffel Tower stands in Paris."})
        print("{:12} option {!r} score {} positional bias {} ({})".format(
            criterion["name"], j.value, j.score, j.details.get("positional_bias"), j.status))
        print("  assessment:", j.details.get("assessment"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
