"""Language-model agents' machinery: the dialogue template, answer parsing, the endpoint client, a stub server.

* :mod:`causalplay.llm.template` -- IVRE's appendix-D dialogue (the one place its wording lives), variants.
* :mod:`causalplay.llm.parse` -- free-text answers to object sets, failures counted.
* :mod:`causalplay.llm.client` -- OpenAI-compatible Chat Completions: timeouts, retries, concurrency, disk cache.
* :mod:`causalplay.llm.stub` -- a local OpenAI-compatible server with scripted models (tests, offline trials).

The agent itself is :class:`causalplay.agents.llm.LLMAgent` (``causalplay bench --agents llm:model=NAME``).
"""

from __future__ import annotations

from .client import ChatClient, Completion, LLMError, ResponseCache, default_cache_dir
from .parse import ParsedAnswer, parse_objects
from .template import TEMPLATES, DialogueTemplate, format_transcript, get_template, render_set

__all__ = ["ChatClient", "Completion", "LLMError", "ResponseCache", "default_cache_dir", "ParsedAnswer",
           "parse_objects", "TEMPLATES", "DialogueTemplate", "format_transcript", "get_template", "render_set"]
