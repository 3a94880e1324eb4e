#!/usr/bin/env python3
"""The README's "How a scheduler uses it" code block must be examples/embed/main.cpp's text between
its `// README begin` and `// README end` markers, verbatim: each marked region with its common
indentation removed, regions separated by one blank line. Exits 1 with a diff when they differ.

usage: scripts/check-readme-example.py [REPO_ROOT]
"""
import difflib
import re
import sys
import textwrap
from pathlib import Path

SECTION = "## How a scheduler uses it"


def readme_block(readme: str) -> str:
    start = readme.index(SECTION)
    match = re.compile(r"```cpp\n(.*?)```", re.S).search(readme, start)
    if match is None:
        raise ValueError(f"README.md: no ```cpp block after '{SECTION}'")
    return match.group(1)


def marked_regions(source: str) -> str:
    regions, current = [], None
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        marker = line.strip()
        if marker == "// README begin":
            if current is not None:
                raise ValueError(f"main.cpp:{number}: README begin inside a region")
            current = []
        elif marker == "// README end":
            if current is None:
                raise ValueError(f"main.cpp:{number}: README end without a begin")
            regions.append(textwrap.dedent("".join(current)))
            current = None
        elif current is not None:
            current.append(line)
    if current is not None or not regions:
        raise ValueError("main.cpp: README regions are missing or unclosed")
    return "\n".join(regions)


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    try:
        block = readme_block((root / "README.md").read_text())
        example = marked_regions((root / "examples/embed/main.cpp").read_text())
    except (OSError, ValueError) as error:
        print(f"check-readme-example: {error}", file=sys.stderr)
        return 1
    if block == example:
        print("check-readme-example: README.md and examples/embed/main.cpp agree")
        return 0
    print("check-readme-example: README.md's example differs from examples/embed/main.cpp "
          "(between its README markers):", file=sys.stderr)
    sys.stderr.writelines(difflib.unified_diff(
        example.splitlines(keepends=True), block.splitlines(keepends=True),
        "examples/embed/main.cpp", "README.md"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
