"""Every ```python block of the documentation pages listed here runs as written."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
# human-data.md's example is a full NUTS fit (~160 s here); its workflow runs in tests/test_fit_analysis.py
# through the analysis script's smoke setting instead.
PAGES = ["inference.md", "environments.md", "pixels.md", "perception.md", "llm.md", "overhypotheses.md",
         "serve.md"]


def blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.mark.parametrize("page", PAGES)
def test_doc_examples_run(page, capsys):
    code = blocks(page)
    assert code, f"{page} has no python example"
    for i, src in enumerate(code):
        exec(compile(src, f"{page}[{i}]", "exec"), {})
