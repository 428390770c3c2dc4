"""Hold minijudge.py to its two halves (issue 45): the library, then the command line.

    python .ci/layout.py minijudge.py

Part I (what ``import minijudge`` gives) runs from the top to the line
``# == Part II: the command line``; Part II (what ``python -m minijudge`` adds) runs from
there to the end. Fails, naming each place, if a definition in Part I names anything
Part II defines, or if a function in Part I takes the command line's namespace (a
parameter named ``args``). Standard library only.
"""
import ast
import sys

MARKER = "# == Part II: the command line"


def main(path):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    lines = source.splitlines()
    starts = [n for n, line in enumerate(lines, 1) if line.startswith(MARKER)]
    if len(starts) != 1:
        print("layout: {} must have one line starting {!r}; found {}".format(
            path, MARKER, len(starts)))
        return 1
    split = starts[0]
    tree = ast.parse(source)
    part_two = set()
    for node in tree.body:
        if node.lineno > split:
            part_two.update(_defined(node))
    problems = []
    for node in tree.body:
        if node.lineno > split:
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in part_two:
                problems.append("line {}: Part I names {}, which Part II defines".format(
                    inner.lineno, inner.id))
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = inner.args.args + inner.args.kwonlyargs + inner.args.posonlyargs
                if any(a.arg == "args" for a in arguments):
                    problems.append("line {}: {} in Part I takes the command line's args".format(
                        inner.lineno, inner.name))
    for problem in problems:
        print("layout: " + problem)
    print("layout: Part I is lines 1-{}, Part II {}-{}; {} problem{}".format(
        split - 1, split, len(lines), len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


def _defined(node):
    """The names a top-level statement of Part II defines."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    names = set()
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    for target in targets:
        for inner in ast.walk(target):
            if isinstance(inner, ast.Name):
                names.add(inner.id)
    return names


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "minijudge.py"))
