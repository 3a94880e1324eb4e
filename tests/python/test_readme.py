"""The README's Python quick start runs as written (the block under "## From Python")."""

import os
import re

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def test_the_readme_python_block_runs(capsys):
    text = open(README).read()
    start = text.index("## From Python")
    block = re.compile(r"```python\n(.*?)```", re.S).search(text, start)
    assert block, "README.md: no ```python block under '## From Python'"
    exec(compile(block.group(1), "README.md (From Python)", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "freed 16 slots"
    assert 0.5 < float(out[1]) < 1.0
