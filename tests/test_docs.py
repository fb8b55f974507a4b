"""The documentation checks itself: every ```python block of the pages listed here (and of the README) runs as
written, and every printed output the docs show with ``# -> expected`` is compared with what the code prints.

The convention: a statement whose last line ends with a comment ``... -> EXPECTED`` must print output with the
same numbers as ``EXPECTED`` (in order, each to the precision it is written with: ``0.333`` means within
0.0005, ``1560`` exactly) and the same words (in order). Numbers the docs quote in prose from the shipped data
are asserted against the data here too.
"""

import ast
import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# human-data.md's example is a full NUTS fit (~160 s here); its workflow runs in tests/test_fit_analysis.py
# through the analysis script's smoke setting instead.
PAGES = ["index.md", "concepts.md", "inference.md", "environments.md", "pixels.md", "perception.md", "llm.md",
         "overhypotheses.md", "serve.md", "data-schema.md", "architecture.md", "benchmark.md", "causal-dag.md"]
EXPECT = re.compile(r"#[^#]*?->\s*(\S.*?)\s*$")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def _tolerance(token: str) -> float:
    mantissa = re.split(r"[eE]", token)[0]
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    scale = 10 ** int(re.split(r"[eE]", token)[1]) if re.search(r"[eE]", token) else 1
    return 0.5 * 10.0**-decimals * scale + 1e-12 if decimals or scale != 1 else 0.0


def check_output(printed: str, expected: str, where: str) -> None:
    """``printed`` shows the numbers and words of ``expected`` (see the module docstring)."""
    want = NUMBER.findall(expected)
    got = NUMBER.findall(printed)
    assert len(got) == len(want), f"{where}: expected {expected!r}, printed {printed!r}"
    for w, g in zip(want, got, strict=True):
        assert abs(float(g) - float(w)) <= _tolerance(w), f"{where}: {g} != {w} (expected {expected!r}, " \
                                                          f"printed {printed!r})"
    words = WORD.findall(NUMBER.sub(" ", printed))
    pos = 0
    for w in WORD.findall(NUMBER.sub(" ", expected)):
        assert w in words[pos:], f"{where}: word {w!r} missing from printed {printed!r}"
        pos = words.index(w, pos) + 1


def run_checked(src: str, name: str) -> int:
    """Run ``src`` statement by statement, checking the ``# -> expected`` outputs; returns how many it checked."""
    lines = src.splitlines()
    ns: dict = {}
    checked = 0
    for stmt in ast.parse(src).body:
        code = compile(ast.Module([stmt], []), name, "exec")
        m = EXPECT.search(lines[stmt.end_lineno - 1])
        if m is None:
            exec(code, ns)
            continue
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(code, ns)
        check_output(buf.getvalue(), m.group(1), f"{name} line {stmt.end_lineno}")
        checked += 1
    return checked


# pages whose examples print deterministic values: at least this many outputs are shown and checked
MIN_CHECKED = {"concepts.md": 4, "index.md": 2, "inference.md": 11, "overhypotheses.md": 1, "data-schema.md": 7,
               "architecture.md": 3}


@pytest.mark.parametrize("page", PAGES)
def test_doc_examples_run_and_print_what_they_show(page):
    code = blocks(DOCS / page)
    assert code, f"{page} has no python example"
    checked = sum(run_checked(src, f"{page}[{i}]") for i, src in enumerate(code))
    assert checked >= MIN_CHECKED.get(page, 0), f"{page}: {checked} checked outputs"


def test_readme_example_prints_what_it_shows():
    (src,) = blocks(ROOT / "README.md")
    assert run_checked(src, "README.md") >= 3


def test_the_checker_fails_on_a_wrong_output():
    with pytest.raises(AssertionError, match="0.334"):
        run_checked("print(1 / 3)  # -> 0.334\n", "x")
    with pytest.raises(AssertionError, match="word 'conjunctive'"):
        run_checked("print({'disjunctive': 1.0})  # -> {'conjunctive': 1.0}\n", "x")
    with pytest.raises(AssertionError, match="expected"):
        run_checked("print([1, 2])  # -> [1]\n", "x")
    assert run_checked("x = 2\nprint(x, 'exact', 1 / 3)  # the value -> 2 exact 0.333\n", "x") == 1


def test_human_data_page_first_test_counts_match_the_data():
    """docs/human-data.md: "73 of 78 first tests contain object 0: (0,) 36 times, (0, 1) 26 times"."""
    from causalplay.data import load_nexiom

    text = (DOCS / "human-data.md").read_text()
    m = re.search(r"(\d+) of (\d+) first tests contain object 0: \(0,\)\s+(\d+) times, \(0, 1\) (\d+) times", text)
    assert m, "the sentence on first tests changed; update this test"
    d = load_nexiom()
    first = d.tests[d.tests["test"] == 1]["objects_on"]
    assert int(m.group(2)) == len(d) == len(first)
    assert int(m.group(1)) == sum(0 in t for t in first)
    assert int(m.group(3)) == sum(t == (0,) for t in first)
    assert int(m.group(4)) == sum(t == (0, 1) for t in first)


@pytest.mark.slow
def test_doc_examples_print_the_same_digits_on_a_second_kernel_path():
    """The README's and the pages' printed outputs hold under another math-kernel path (MKL's reproducible mode
    and ATen's non-vectorised kernels), as they must on any CPU: re-run this file's checks in a process there."""
    if os.environ.get("ATEN_CPU_CAPABILITY") == "default":
        pytest.skip("already on the second kernel path")
    from test_site import SECOND_KERNEL_PATH

    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "doc_examples_run or readme_example"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **SECOND_KERNEL_PATH})
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert re.search(r"\b\d+ passed", proc.stdout), proc.stdout[-2000:]
