#!/usr/bin/env python3
"""Checks that docs/guide.md shows the tested code of every guide snippet, verbatim.

The snippets live in the tests, between marker comments:
  Swift  Tests/SwiftQueuesTests/GuideTests.swift   // guide:begin NAME ... // guide:end NAME
  C      Tests/guide/guide_*.c                      /* guide:begin NAME */ ... /* guide:end NAME */
Each region (its lines between the markers, with the region's common indentation removed) must
appear as the whole content of one fenced block of docs/guide.md (```swift or ```c). Fenced
blocks of those languages that match no region are reported too, so the guide holds no
untested code. Exit status 0 when everything matches, 1 otherwise (the ctest
guide_snippets_match runs this).
"""

import argparse
import pathlib
import re
import sys
import textwrap

SWIFT_BEGIN = re.compile(r"^\s*// guide:begin (\S+)\s*$")
SWIFT_END = re.compile(r"^\s*// guide:end (\S+)\s*$")
C_BEGIN = re.compile(r"^\s*/\* guide:begin (\S+) \*/\s*$")
C_END = re.compile(r"^\s*/\* guide:end (\S+) \*/\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")


def regions(path, begin, end, language, problems):
    """Yields (language, name, code) for every marked region of one file."""
    found = []
    current = None
    lines = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        opened = begin.match(line)
        closed = end.match(line)
        if opened:
            if current is not None:
                problems.append(f"{path}:{number}: guide:begin {opened.group(1)} inside {current}")
            current, lines = opened.group(1), []
        elif closed:
            if current != closed.group(1):
                problems.append(f"{path}:{number}: guide:end {closed.group(1)} without its begin")
            else:
                code = textwrap.dedent("\n".join(lines)).strip("\n")
                if not code.strip():
                    problems.append(f"{path}:{number}: region {current} is empty")
                found.append((language, current, code, f"{path}:{number}"))
            current = None
        elif current is not None:
            lines.append(line)
    if current is not None:
        problems.append(f"{path}: region {current} is never closed")
    return found


def fenced_blocks(text):
    """Returns (language, code) for every fenced block of a Markdown text."""
    blocks = []
    language = None
    lines = []
    for line in text.splitlines():
        fence = FENCE.match(line)
        if language is None:
            if fence and fence.group(1):
                language, lines = fence.group(1), []
            elif fence:
                language, lines = "", []
        elif fence and not fence.group(1):
            blocks.append((language, "\n".join(lines).strip("\n")))
            language = None
        else:
            lines.append(line)
    return blocks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent,
                        type=pathlib.Path, help="the repository root")
    args = parser.parse_args()
    root = args.root
    problems = []
    snippets = []
    swift = root / "Tests/SwiftQueuesTests/GuideTests.swift"
    if swift.exists():
        snippets += regions(swift, SWIFT_BEGIN, SWIFT_END, "swift", problems)
    else:
        problems.append(f"{swift} is missing")
    c_files = sorted((root / "Tests/guide").glob("guide_*.c"))
    if not c_files:
        problems.append("no Tests/guide/guide_*.c")
    for path in c_files:
        snippets += regions(path, C_BEGIN, C_END, "c", problems)

    guide = root / "docs/guide.md"
    blocks = fenced_blocks(guide.read_text()) if guide.exists() else []
    if not guide.exists():
        problems.append(f"{guide} is missing")

    names = {}
    for language, name, code, where in snippets:
        key = (language, name)
        if key in names:
            problems.append(f"{where}: {language} region {name} also at {names[key]}")
        names[key] = where
        if (language, code) not in blocks:
            problems.append(f"{where}: {language} region {name} is not in docs/guide.md "
                            f"verbatim as a ```{language} block")
    tested = {(language, code) for language, _, code, _ in snippets}
    for language, code in blocks:
        if language in ("swift", "c") and (language, code) not in tested:
            first = code.splitlines()[0] if code else ""
            problems.append(f"docs/guide.md: a ```{language} block matches no tested region "
                            f"(it begins: {first!r})")

    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"guide_check: {len(snippets)} snippets, all shown verbatim in docs/guide.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
