"""Checks of what the pages say, without building the site: links and anchors resolve (site pages and README), no
guide names a page as plain ``docs/...`` text, user pages use no team language, every object a docs code block
imports from causalplay has an API reference entry, and every env id, agent name and CLI flag a page names exists.

Each checker is a function of a page's text, so a test plants one instance of the fault it catches and asserts the
checker reports it (``test_*_catches_*``).
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import shlex
import warnings
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)


def user_pages() -> list[Path]:
    """README and every page of the site except the development logs (``docs/dev/``)."""
    return [README] + sorted(p for p in DOCS.rglob("*.md") if "dev" not in p.relative_to(DOCS).parts)


def all_pages() -> list[Path]:
    return [README] + sorted(DOCS.rglob("*.md"))


def prose(text: str) -> str:
    """The text outside fenced code blocks (blank lines keep the line numbers)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def code_blocks(text: str, lang: str | None = None) -> list[str]:
    """The bodies of fenced code blocks (of language ``lang`` if given)."""
    out = []
    for m in re.finditer(r"^```([\w-]*)[^\n]*\n(.*?)^```", text, re.S | re.M):
        if lang is None or m.group(1) == lang:
            out.append(m.group(2))
    return out


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# ---- links and anchors ---------------------------------------------------------------------------------------
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """Python-Markdown's toc slug: markup dropped, lower case, characters other than word, space and hyphen
    removed, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    """Heading anchors of a Markdown page (``## Title`` and ``{#id}`` attributes)."""
    text = prose(path.read_text())
    ids = {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)}
    return ids | set(re.findall(r"\{#([\w-]+)\}", text))


def broken_links(text: str, page: Path) -> list[str]:
    """``line: target (why)`` for every relative link of ``text`` (a page at ``page``) whose file or anchor does
    not exist. External links (with a scheme) are not fetched."""
    bad = []
    body = prose(text)
    for m in LINK.finditer(body):
        target = m.group(1) or m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
            continue
        path_part, _, anchor = target.partition("#")
        dest = page if not path_part else (page.parent / path_part).resolve()
        where = f"{_line(body, m.start())}: {target}"
        if not dest.exists():
            bad.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{where} (no heading #{anchor} in {dest.name})")
    return bad


PLAIN_DOCS_REF = re.compile(r"(?<!\]\()(?<![/\w])`?docs/[\w/-]+\.(?:md|ipynb)`?")


def plain_doc_references(text: str) -> list[str]:
    """``docs/x.md`` written as text in a site page's prose, where a link belongs."""
    body = prose(text)
    return [f"{_line(body, m.start())}: {m.group(0)}" for m in PLAIN_DOCS_REF.finditer(body)]


@pytest.mark.parametrize("page", all_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_and_anchors_resolve(page):
    bad = broken_links(page.read_text(), page)
    assert not bad, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", user_pages()[1:], ids=lambda p: str(p.relative_to(ROOT)))
def test_site_pages_link_to_pages_instead_of_naming_them(page):
    bad = plain_doc_references(page.read_text())
    assert not bad, f"{page.relative_to(ROOT)}: write these as links:\n" + "\n".join(bad)


def test_the_link_check_catches_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## The part\n")
    page = tmp_path / "b.md"
    text = "See [a](a.md), [part](a.md#the-part), [gone](c.md), [nope](a.md#other) and [web](https://x.org/y).\n" \
           "```\n[in code](nowhere.md)\n```\n"
    assert broken_links(text, page) == ["1: c.md (no such file)", "1: a.md#other (no heading #other in a.md)"]


def test_the_slug_matches_the_built_sites_anchors():
    assert slug("Why our numbers differ from the paper's") == "why-our-numbers-differ-from-the-papers"
    assert slug("Python 3.12 or numpy 2") == "python-312-or-numpy-2"
    assert slug("`causalplay bench`: agents on every task family") == "causalplay-bench-agents-on-every-task-family"


def test_the_plain_reference_check_catches_a_docs_path_written_as_text():
    assert plain_doc_references("as in `docs/rl.md` and (docs/pixels.md).") == ["1: `docs/rl.md`",
                                                                                "1: docs/pixels.md"]
    assert plain_doc_references("[RL](rl.md), [logs](docs/dev/index.md), `docs/dev/` folder") == []


# ---- team language ------------------------------------------------------------------------------------------
#: Words that speak of the people who made a page, their machines, trackers and history instead of to its reader.
TEAM_LANGUAGE = [
    r"\bissues?\s+#?\d+", r"(?<![.\w`])issue\b", r"\bissue\d+", r"/tmp/", r"\bthis (?:session|work|change)\b",
    r"\b(?:was|were|been|is) lent\b", r"\blent to\b", r"\bour (?:machine|development machine|team)\b",
    r"\bdevelopment machine\b", r"\bcommit [0-9a-f]{7,40}\b", r"\b(?:was|were) `[^`]+`", r"\bis gone\b",
    r"\bnow removed\b", r"\bbefore this (?:work|change|session)\b", r"\bthe first version of this\b", r"\(met\)",
    r"\bgoal met\b", r"\bno GPU was\b", r"\bas of (?:today|this)\b",
]
TEAM = re.compile("|".join(TEAM_LANGUAGE), re.I)


def team_language(text: str) -> list[str]:
    return [f"{i}: {m.group(0)!r} in {line.strip()[:90]}" for i, line in enumerate(text.splitlines(), 1)
            for m in [TEAM.search(line)] if m]


def _notebook_text(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("page", user_pages() + sorted((DOCS / "tutorials").glob("*.ipynb")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_user_pages_use_no_team_language(page):
    text = _notebook_text(page) if page.suffix == ".ipynb" else page.read_text()
    hits = team_language(text)
    assert not hits, f"{page.relative_to(ROOT)} speaks of the team (move the story to docs/dev/):\n" + \
        "\n".join(hits)


@pytest.mark.parametrize("text", [
    "none was lent to this task", "no GPU was lent to this work", "before this work", "(commit d7aedcf; results",
    "The first version of this change held", "`--sections issue11`", "the goal of issue 8", "| 53.3 | >= 25 (met) |",
    "ours (was `random`)", "Our own recurrent TD3 is gone.", "code that is now removed", "on the 2-core development "
    "machine", "see /tmp/x.py", "an issue we found"])
def test_the_team_language_check_catches(text):
    assert team_language(text), text


@pytest.mark.parametrize("text", [
    "`.issues` lists them", "this task has both rules", "the machine lit", "a lent book?"[:0] + "a blicket",
    "it was the first trial", "the env's `random` agent"])
def test_the_team_language_check_lets_through(text):
    assert not team_language(text), text


# ---- API reference entries for what the docs import ---------------------------------------------------------
def imported_names(src: str) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from causalplay... import name`` in ``src`` (code that does not parse as
    Python, e.g. a shell block, gives nothing)."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    return [(node.module, a.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and node.module and node.module.split(".")[0] == "causalplay" for a in node.names]


def _doc_python() -> list[tuple[str, str]]:
    """(where, source) of every Python code block of the user pages and every tutorial code cell."""
    out = [(str(p.relative_to(ROOT)), src) for p in user_pages() for src in code_blocks(p.read_text(), "python")]
    for nb in sorted((DOCS / "tutorials").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        out += [(str(nb.relative_to(ROOT)), "".join(c["source"])) for c in cells if c["cell_type"] == "code"]
    return out


@cache
def reference_objects() -> dict[int, str]:
    """id(object) -> its ``::: path`` for every entry of docs/reference/*.md (entries whose module needs a missing
    extra are left out, and so are the names that need them)."""
    out = {}
    for page in sorted((DOCS / "reference").glob("*.md")):
        for path in re.findall(r"^::: ([\w.]+)", page.read_text(), re.M):
            obj = _resolve(path)
            if obj is not None:
                out[id(obj)] = path
    return out


def _resolve(path: str):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def missing_reference(names: list[tuple[str, str]]) -> list[str]:
    documented = reference_objects()
    modules = [o for o in map(_resolve, documented.values()) if type(o).__name__ == "module"]
    documented = set(documented) | {id(v) for m in modules for k, v in vars(m).items()
                                    if not k.startswith("_") and getattr(v, "__module__", None) == m.__name__}
    missing = []
    for module, name in names:
        obj = _resolve(f"{module}.{name}")
        if obj is None or type(obj).__name__ == "module":
            continue  # a module (its members are what the reference documents), or an extra not installed
        if id(obj) not in documented:
            missing.append(f"{module}.{name}")
    return missing


def test_every_object_the_docs_import_has_an_api_reference_entry():
    names = sorted({n for _, src in _doc_python() for n in imported_names(src)})
    assert len(names) > 20, names  # the examples do import from causalplay
    missing = missing_reference(names)
    assert not missing, f"add API reference entries (docs/reference/*.md) for {missing}"


def test_the_reference_check_catches_an_undocumented_import():
    src = "from causalplay.core.history import History\nfrom causalplay.core.exact import TRIAL_TABLE_LIMIT\n"
    assert imported_names(src) == [("causalplay.core.history", "History"),
                                   ("causalplay.core.exact", "TRIAL_TABLE_LIMIT")]
    assert missing_reference(imported_names(src)) == ["causalplay.core.exact.TRIAL_TABLE_LIMIT"]


# ---- env ids, agent names, CLI flags ------------------------------------------------------------------------
ENV_ID = re.compile(r"causalplay/[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*-v\d+")


@cache
def registered_env_ids() -> frozenset[str]:
    import causalplay.envs  # noqa: F401  (registers the ids)
    import gymnasium

    return frozenset(k for k in gymnasium.registry if k.startswith("causalplay/"))


def unknown_env_ids(text: str) -> list[str]:
    return sorted({i for i in ENV_ID.findall(text) if i not in registered_env_ids()})


@cache
def agent_names() -> frozenset[str]:
    """Every agent name some task family (or an installed plug-in) accepts, former names included, and the names
    the repository's example plug-in (``examples/``, which the pages show how to install) defines."""
    import causalplay.agents as agents

    try:
        from causalplay.envs.families import families
    except ImportError:  # one registry per family, before task families were objects
        return frozenset(n for reg in agents.REGISTRIES.values() for n in reg)
    names = {n for f in families() for n in [*agents.agent_registry(f.name), *f.deprecated_agents]}
    examples = {n for f in (ROOT / "examples").rglob("*.py") for n in re.findall(r"name = \"([\w-]+)\"", f.read_text())}
    return frozenset(names | set(agents.agent_plugins()) | examples)


def _agent_specs(text: str) -> list[str]:
    """Agent names given to ``--agents`` or ``--agent`` (in commands and inline code) and to ``make_agent``."""
    specs = []
    code = "\n".join(code_blocks(text)) + "\n" + "\n".join(re.findall(r"`([^`\n]+)`", prose(text)))
    for m in re.finditer(r"--agents?[ =]([^\s`|]+)", code):
        value = m.group(1).strip("'\"")
        if value.startswith(("$", "NAME", "<", "...", "(")) or value.upper() == value:
            continue  # a placeholder
        specs += re.split(r",(?![^'\"]*['\"][^,]*$)", value)
    specs += re.findall(r"make_agent\(\s*[\"']([^\"']+)[\"']", code)
    return [s.split(":")[0] for s in specs if s]


#: ``causalplay train --agent`` takes an RL algorithm, not a benchmark agent
TRAIN_AGENTS = {"ppo", "td3", "ddpg", "recurrent-ppo", "ppo|td3|ddpg"}


def unknown_agents(text: str) -> list[str]:
    names = agent_names()
    return sorted({a for a in _agent_specs(text) if a not in names and a not in TRAIN_AGENTS
                   and not re.fullmatch(r"[A-Z_]+|\w+\|[\w|]+", a)})


@cache
def cli_options() -> dict[str, frozenset[str]]:
    import typer

    from causalplay.cli import app

    group = typer.main.get_command(app)
    out = {name: frozenset(o for p in cmd.params for o in p.opts + p.secondary_opts)
           for name, cmd in group.commands.items()}
    out[""] = frozenset({"--version", "--help"})
    return out


def _commands(text: str) -> list[str]:
    """``causalplay ...`` command lines of code blocks and inline code, continuation lines joined."""
    lines = []
    for block in code_blocks(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [ln for ln in joined.splitlines()]
    lines += re.findall(r"`(causalplay [^`\n]*)`", prose(text))
    out = []
    for ln in lines:
        ln = ln.split(" #")[0]
        m = re.search(r"(?:^\s*(?:\$\s+)?|&&\s*|;\s*|\|\s*)causalplay ([a-z-]+.*|--\S+.*)$", ln)
        if m:
            out.append(m.group(1))
    return out


def unknown_cli_flags(text: str) -> list[str]:
    options = cli_options()
    bad = []
    for cmd in _commands(text):
        try:
            words = shlex.split(cmd)
        except ValueError:
            words = cmd.split()
        sub = words[0] if words[0] in options else ""
        if not sub and not words[0].startswith("--"):
            bad.append(f"causalplay {words[0]} (no such command)")
            continue
        for w in words[1:] if sub else words:
            flag = w.split("=")[0]
            if re.fullmatch(r"--[a-z][\w-]*", flag) and flag not in options[sub]:
                bad.append(f"causalplay {sub} {flag}".replace("  ", " "))
    return sorted(set(bad))


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_env_ids_agents_and_cli_flags_a_page_names_exist(page):
    text = page.read_text()
    problems = [f"env id {i}" for i in unknown_env_ids(text)] + [f"agent {a}" for a in unknown_agents(text)] + \
               [f"CLI {c}" for c in unknown_cli_flags(text)]
    assert not problems, f"{page.relative_to(ROOT)} names what does not exist: {problems}"


def test_the_name_checks_catch_a_wrong_id_agent_and_flag():
    text = """```bash
causalplay bench --env causalplay/IVRE-v9 --agents eig,planer:depth=2 --episodez 10
causalplay train --agent ppo --steps 100 \\
    --out runs/x --evaluate-every 5
causalplay fitt --data d
```
and `causalplay bench --agents rand,bayes` and `make_agent("serch-naive")`.
"""
    assert unknown_env_ids(text) == ["causalplay/IVRE-v9"]
    assert unknown_agents(text) == ["planer", "serch-naive"]
    assert unknown_cli_flags(text) == ["causalplay bench --episodez", "causalplay fitt (no such command)",
                                       "causalplay train --evaluate-every"]
    good = "`causalplay bench --env causalplay/EST-v1 --agents random,eig --seeds 5` and `causalplay --version`"
    assert (unknown_env_ids(good), unknown_agents(good), unknown_cli_flags(good)) == ([], [], [])


def test_the_bibtex_entry_names_the_package_version():
    from causalplay.core._version import __version__

    m = re.search(r"@software\{causalplay,.*?version\s*=\s*\{([^}]*)\}", (DOCS / "cite.md").read_text(), re.S)
    assert m and m.group(1) == __version__, "docs/cite.md's BibTeX version is stale"


def test_citation_cff_and_the_cite_page_list_the_same_works():
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    page = re.sub(r"\s+", " ", re.sub(r"[{}]", "", (DOCS / "cite.md").read_text())).lower()
    assert len(cff["references"]) >= 10
    for ref in cff["references"]:
        assert ref["type"] and ref["authors"], ref["title"]
        assert re.sub(r"\s+", " ", ref["title"]).lower() in page, f"{ref['title']!r} is not on docs/cite.md"


def _hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_hook_turns_docstring_roles_into_links():
    hooks = _hooks()
    hooks._NAMES.update({"History": {"causalplay.core.history.History"}, "reset": {"a.A.reset", "b.B.reset"}})
    html = (":class:<code>~causalplay.core.beliefs.Beliefs</code>, :func:<code>History</code>, "
            ":meth:<code>reset</code>, :meth:<code>B.reset</code>")
    assert hooks._ROLE.sub(hooks._xref, html) == (
        '<autoref identifier="causalplay.core.beliefs.Beliefs" optional><code>Beliefs</code></autoref>, '
        '<autoref identifier="causalplay.core.history.History" optional><code>History</code></autoref>, '
        '<code>reset</code>, <autoref identifier="b.B.reset" optional><code>B.reset</code></autoref>')


CLONE_SCRIPT = re.compile(r"\b(?:analyses|benchmarks)/\w+\.py\b")


def needs_clone_note(text: str) -> bool:
    """A page that runs a script of ``analyses/`` or ``benchmarks/`` (not installed with the package) without
    sending the reader to the clone instructions."""
    return bool(CLONE_SCRIPT.search(text)) and "installation.md#from-a-clone" not in text


@pytest.mark.parametrize("page", user_pages()[1:], ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_that_run_repository_scripts_say_they_need_a_clone(page):
    assert not needs_clone_note(page.read_text()), \
        f"{page.relative_to(ROOT)} runs analyses/ or benchmarks/ scripts: link installation.md#from-a-clone"


def test_the_clone_check_catches_a_script_without_the_note():
    assert needs_clone_note("Run `python analyses/ivre_table.py --seeds 5`.")
    assert not needs_clone_note("Run `python analyses/ivre_table.py` from a clone "
                                "([Installation](installation.md#from-a-clone)).")
    assert not needs_clone_note("`causalplay bench --env causalplay/IVRE-v0`")


# ---- flags of the repository's scripts ----------------------------------------------------------------------
@cache
def script_options(script: str) -> frozenset[str] | None:
    """The options of ``analyses/*.py`` or ``benchmarks/*.py``: the fields of the dataclass the script gives
    ``parse_config`` (tyro: ``--field-name``, plus ``--smoke``), or its argparse ``add_argument`` flags. None when
    the script does not exist."""
    path = ROOT / script
    if not path.is_file():
        return None
    text = path.read_text()
    opts = set(re.findall(r"add_argument\(\s*[\"'](--[\w-]+)[\"']", text)) | {"--help"}
    m = re.search(r"parse_config\(\s*(\w+)", text)
    if m:
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == m.group(1):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        opts |= {"--" + item.target.id.replace("_", "-"), "--" + item.target.id}
        opts.add("--smoke")
    return frozenset(opts)


def unknown_script_flags(text: str) -> list[str]:
    """``python analyses/x.py --flag`` (or benchmarks/) in code blocks and inline code whose script does not
    exist or has no such option."""
    lines = [ln for block in code_blocks(text) for ln in re.sub(r"\\\n\s*", " ", block).splitlines()]
    lines += re.findall(r"`([^`\n]*python [^`\n]*)`", prose(text))
    bad = []
    for ln in lines:
        for m in re.finditer(r"python (?:-\S+ )*((?:analyses|benchmarks)/\w+\.py)((?: +[^|;&#]+)?)", ln):
            opts = script_options(m.group(1))
            if opts is None:
                bad.append(f"{m.group(1)} (no such script)")
                continue
            for flag in re.findall(r"(?:^|\s)(--[a-z][\w.-]*)", m.group(2)):
                name = flag.split("=")[0]
                if name not in opts and name.split(".")[0] not in opts:
                    bad.append(f"{m.group(1)} {name}")
    return sorted(set(bad))


@pytest.mark.parametrize("page", user_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_script_flags_a_page_names_exist(page):
    bad = unknown_script_flags(page.read_text())
    assert not bad, f"{page.relative_to(ROOT)} runs scripts with options they do not have: {bad}"


def test_the_script_flag_check_catches_an_old_option():
    text = "```bash\npython analyses/overhypothesis_rl.py --eig-agents --run ppo=runs/x:which=last --name y\n" \
           "python analyses/nowhere.py\n```\nand `python benchmarks/bench_infer.py --sections scaling --quik`"
    assert unknown_script_flags(text) == ["analyses/nowhere.py (no such script)",
                                          "analyses/overhypothesis_rl.py --run", "benchmarks/bench_infer.py --quik"]


def test_the_concepts_figure_script_reproduces_the_committed_figure(tmp_path):
    """docs/figures/concepts.py still runs and draws the figure docs/concepts.md shows (same size; its values are
    exact, so only font rendering could move pixels)."""
    import importlib.util

    from PIL import Image

    spec = importlib.util.spec_from_file_location("concepts_figure", DOCS / "figures" / "concepts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(tmp_path / "concepts.png")
    assert Image.open(out).size == Image.open(DOCS / "img" / "concepts.png").size
    assert "img/concepts.png" in (DOCS / "concepts.md").read_text()
