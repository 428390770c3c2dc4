"""Coming from lmms-eval's judge utils: images in the judge's prompt, and 0/1 answers.

lmms-eval                                      minijudge
  a judge request carrying images              images=[path or URL, ...] per item
                                               (--image-field F on the command line)
  output_format "0/1" in the prompt builder    binary_format="01" (--binary-format 01)
  ResponseParser for yes/no and 0/1            the binary parser reads both

A path is read and sent as a base64 data: URL of its type, told by its bytes (PNG, JPEG,
WebP, GIF; at most 20 MiB); http(s) and data: URLs are sent as they are.

    python examples/from_lmms_eval.py                      # a scripted stand-in, no model
    LLM_JUDGE_API_BASE=http://127.0.0.1:8000 python examples/from_lmms_eval.py  # a VLM
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from minijudge import LLMJudge  # noqa: E402

# a 1x1 red PNG
PIXEL = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
                      "0000000c4944415478da63f8cfc000000301010018dd8db00000000049454e44ae426082")


def stand_in(messages):
    """Not a model: says 1 when an image came with the prompt and the response says red."""
    parts = messages[-1]["content"]
    response = parts[0]["text"].split("[The Start of the Response]")[1]
    return "1" if parts[1:] and "red" in response.split("[The End")[0] else "0"


def main():
    offline = not os.environ.get("LLM_JUDGE_API_BASE")
    judge = LLMJudge(judge_fn=stand_in if offline else None, template="binary",
                     binary_format="01")
    with tempfile.TemporaryDirectory() as folder:
        image = os.path.join(folder, "pixel.png")
        with open(image, "wb") as f:
            f.write(PIXEL)
        item = {"question": "What colour is the image?", "answer": "red"}
        for response in ("It is red.", "Blue."):
            j = judge.judge(item, response, images=[image])
            print("{!r:12} score {} ({}) raw {!r}".format(response, j.score, j.status, j.raw))
        j = judge.judge(item, "red", images=[os.path.join(folder, "missing.png")])
        print("a missing image:", j.status, "-", j.error)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
