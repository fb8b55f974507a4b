"""Agents for the Blicket tasks, batched, one protocol (see :mod:`causalplay.agents.base`).

name                trials / belief                                                      knows
==================  ===================================================================  ==================
``random``          random / random                                                      nothing
``bayes``           random / Bernoulli naive Bayes per object                            count
``naive``           one untested object / co-occurrence                                  count
``search-random``   random / fraction of consistent assignments (core engine)            rule
``search-naive``    most uncertain single object / as search-random                      rule
``notears``         as naive / DAGMA (NOTEARS-family) edges object -> lit                nothing
``eig``             max exact EIG / MAP of the exact posterior (+ "did not end" update)  rule, count
``planner``         max expected reward over the next ``depth`` steps (default 1) /       rule, count
                    oracle marginals on the MAP side
``llm``             a language model's answers in IVRE's appendix-D dialogue (any         what the
                    OpenAI-compatible endpoint; ``llm:model=NAME``, docs/llm.md)          dialogue says
==================  ===================================================================  ==================
=======
The paper's names (``random`` .. ``notears``) are the IVRE paper's baselines as its public code runs them,
quirks included where the paper's numbers depend on them (:mod:`causalplay.agents.paper`). The ``-exact`` /
``-uniform`` rows are our cleaner variants of the same ideas (:mod:`causalplay.agents.heuristics`,
:mod:`causalplay.agents.notears`), without those quirks.

=======================  ================================================================  ==================
name                     trials / belief                                                   knows
=======================  ================================================================  ==================
``random``               random / ``clip(1/2 + N(0, 1)/2)`` (paper)                         nothing
``bayes``                random / top-count of a Bernoulli naive-Bayes classifier (paper)   count
``naive``                first suspect alone / +-0.2 nudges from panels, carried (paper)    nothing
``search-random``        random / consistent-assignment frequency, ``/(c + 1e-7)`` (paper)  rule
``search-naive``         least certain object alone / as search-random (paper)              rule
``notears``              objects in index order / logistic NOTEARS, first positive (paper)  nothing
``random-uniform``       random / uniform in [0, 1]                                         nothing
``bayes-exact``          random / per-object Bernoulli posterior with a count prior         count
``naive-exact``          one untested object / co-occurrence                                count
``search-random-exact``  random / exact posterior marginal (exact 1/2 kept)                 rule
``search-naive-exact``   most uncertain single object / as search-random-exact              rule
``notears-exact``        as naive-exact / DAGMA (NOTEARS-family) edges object -> lit        nothing
``eig``                  max exact EIG / MAP of the exact posterior (+ "did not end")       rule, count
``planner``              max expected reward over the next ``depth`` steps (default 1) /    rule, count
                         oracle marginals on the MAP side
``llm``                  a language model's answers in IVRE's appendix-D dialogue (any      what the
                         OpenAI-compatible endpoint; ``llm:model=NAME``, docs/llm.md)       dialogue says
``rl``                   a ``causalplay train`` policy (``rl:path=DIR``; ``rl`` extra)       what it was trained
                                                                                            on (history)
``eig-pixels``           a perception CNN reads each rendered panel; as ``eig`` on its        rule, count;
                         readouts (pixel ids only; ``eig-pixels:perception=PATH``)          sees pixels
=======================  ================================================================  ==================
"""

from __future__ import annotations

import ast

from .base import Agent, MemoryAgent, TaskInfo, map_side_belief
from .bayesian import EIGAgent, PlannerAgent
from .heuristics import BayesAgent, NaiveAgent, RandomAgent, SearchNaiveAgent, SearchRandomAgent
from .llm import LLMAgent
from .notears import NotearsAgent
from .paper import (
    PaperBayesAgent,
    PaperNaiveAgent,
    PaperNotearsAgent,
    PaperRandomAgent,
    PaperSearchNaiveAgent,
    PaperSearchRandomAgent,
)
from .pixels import EIGPixelsAgent
from .rl import RLAgent
from .transfer import TransferEIGAgent

__all__ = ["AGENTS", "make_agent", "parse_agent_spec", "split_agent_specs", "Agent", "MemoryAgent", "TaskInfo",
           "map_side_belief", "EIGAgent", "PlannerAgent", "BayesAgent", "NaiveAgent", "RandomAgent",
           "SearchNaiveAgent", "SearchRandomAgent", "NotearsAgent", "PaperRandomAgent", "PaperBayesAgent",
           "PaperNaiveAgent", "PaperSearchRandomAgent", "PaperSearchNaiveAgent", "PaperNotearsAgent", "PAPER_AGENTS",
           "LLMAgent", "TransferEIGAgent", "RLAgent", "EIGPixelsAgent", "agent_label"]

#: name -> class, in the benchmark's table order.
AGENTS: dict[str, type[Agent]] = {
    cls.name: cls
    for cls in (PaperRandomAgent, PaperBayesAgent, PaperNaiveAgent, PaperSearchRandomAgent, PaperSearchNaiveAgent,
                PaperNotearsAgent, RandomAgent, BayesAgent, NaiveAgent, SearchRandomAgent, SearchNaiveAgent,
                NotearsAgent, EIGAgent, PlannerAgent, TransferEIGAgent, LLMAgent, RLAgent, EIGPixelsAgent)
}

#: The IVRE paper's baselines under its names (the rows of its Table 2), in its order.
PAPER_AGENTS = ("random", "bayes", "naive", "search-random", "search-naive", "notears")


def _split_outside_quotes(text: str, sep: str, what: str) -> list[str]:
    """Split ``text`` at ``sep`` where it is outside quotes ('...' or "...", backslash escapes inside) and
    outside brackets (``()[]{}``), so Python literals such as ``[1, 2]`` or ``'http://h:80/v1'`` stay whole."""
    parts, cur, quote, depth, i = [], [], None, 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch in "([{":
            depth += 1
            cur.append(ch)
        elif ch in ")]}":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if quote:
        raise ValueError(f"{what} {text!r} has an unterminated {quote} quote")
    if depth != 0:
        raise ValueError(f"{what} {text!r} has unbalanced brackets")
    parts.append("".join(cur))
    return parts


def split_agent_specs(text: str) -> list[str]:
    """``"eig,llm:model=m:base_url='http://h:8000/v1'"`` -> the two specs: commas inside quotes or brackets do
    not separate specs. Blank entries are dropped."""
    return [s.strip() for s in _split_outside_quotes(text, ",", "agent list") if s.strip()]


def _parse_value(value: str, opt: str, spec: str):
    if not value:
        raise ValueError(f"agent option {opt!r} in {spec!r} has an empty value; write key=value "
                         "(quote a value that contains ':' or ',')")
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        if value[0] in "'\"([{":  # meant as a literal (quoted string, list, ...) but not a valid one
            raise ValueError(f"agent option {opt!r} in {spec!r}: {value!r} is not a valid Python literal") from None
        if any(c in value for c in "'\"") or any(c.isspace() for c in value):
            raise ValueError(f"agent option {opt!r} in {spec!r}: bare value {value!r} may not contain quotes or "
                             "spaces; quote the whole value") from None
        return value  # a bare string, e.g. model=gpt-4o-mini


def parse_agent_spec(spec: str) -> tuple[str, dict]:
    """Parse an agent spec ``name:key=value:key=value`` into ``(name, options)``.

    Values are Python literals (``depth=2``, ``oracle_beliefs=False``, ``cache=None``) or bare strings
    (``model=gpt-4o-mini``); a value that contains ``:`` or ``,`` must be quoted, e.g.
    ``llm:model=m:base_url='http://localhost:8000/v1'``. The benchmark accepts such specs wherever it takes an
    agent name, so variants get their own table rows.

    Examples
    --------
    >>> parse_agent_spec("planner:depth=2:beam=4")
    ('planner', {'depth': 2, 'beam': 4})
    >>> parse_agent_spec("llm:model=qwen2.5:base_url='http://127.0.0.1:8000/v1'")
    ('llm', {'model': 'qwen2.5', 'base_url': 'http://127.0.0.1:8000/v1'})

    Raises
    ------
    ValueError
        Unknown agent name, an option that is not ``key=value``, a repeated key, an empty value, an
        unterminated quote, or a value that looks like a literal but is not one. Each message names the spec.
    """
    if not isinstance(spec, str):
        raise TypeError(f"agent spec must be a string like 'planner:depth=2', got {spec!r}")
    name, *opts = _split_outside_quotes(spec.strip(), ":", "agent spec")
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r} in {spec!r}; expected one of {list(AGENTS)}")
    kwargs = {}
    for opt in opts:
        key, sep, value = opt.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            hint = " (quote a value that contains ':' or ',')" if "=" not in opt else ""
            raise ValueError(f"agent option {opt!r} in {spec!r} must look like key=value{hint}")
        if key in kwargs:
            raise ValueError(f"agent option {key!r} is given twice in {spec!r}")
        kwargs[key] = _parse_value(value.strip(), opt, spec)
    return name, kwargs


def agent_label(spec: str) -> str:
    """The benchmark table row of an agent spec: the spec itself, except for ``rl:path=DIR``, whose row is named
    by ``name=`` or else by the trained run's config (e.g. ``ppo-ff``); ``FileNotFoundError`` if DIR holds no run."""
    base, opts = parse_agent_spec(spec)
    if base != "rl":
        return spec
    if "path" not in opts:
        raise ValueError(f"{spec!r}: the rl agent needs path=DIR (a `causalplay train` output folder)")
    if opts.get("name"):
        return str(opts["name"])
    from causalplay.rl.train import read_config  # the rl extra; only for rl specs

    return read_config(opts["path"]).name


def make_agent(name: str, seed: int = 0, **kwargs) -> Agent:
    """Build an agent by name or spec (``"planner:depth=2"``, see :func:`parse_agent_spec` and :data:`AGENTS`)."""
    base, opts = parse_agent_spec(name)
    return AGENTS[base](seed=seed, **{**opts, **kwargs})
