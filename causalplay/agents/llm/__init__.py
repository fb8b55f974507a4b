"""The language-model agent and its machinery: the dialogue template, answer parsing, the endpoint client, a stub
server.

* :mod:`causalplay.agents.llm.template` -- IVRE's appendix-D dialogue (the one place its wording lives), variants.
* :mod:`causalplay.agents.llm.parse` -- free-text answers to object sets, failures counted.
* :mod:`causalplay.agents.llm.client` -- OpenAI-compatible Chat Completions: timeouts, retries, concurrency, disk cache.
* :mod:`causalplay.agents.llm.stub` -- a local OpenAI-compatible server with scripted models (tests, offline trials).

The agent itself is :class:`causalplay.agents.llm.agent.LLMAgent` (``causalplay bench --agents llm:model=NAME``).
"""

from __future__ import annotations

from .agent import LLMAgent
from .client import ChatClient, Completion, LLMError, ResponseCache, default_cache_dir
from .parse import ParsedAnswer, parse_objects
from .template import TEMPLATES, DialogueTemplate, format_transcript, get_template, render_set

__all__ = ["LLMAgent", "ChatClient", "Completion", "LLMError", "ResponseCache", "default_cache_dir", "ParsedAnswer",
           "parse_objects", "TEMPLATES", "DialogueTemplate", "format_transcript", "get_template", "render_set"]
