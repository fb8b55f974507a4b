"""A language-model agent: plays the symbolic Blicket tasks through IVRE's appendix-D dialogue.

``causalplay bench --agents llm:model=NAME`` talks to any OpenAI-compatible Chat Completions endpoint (a hosted
API, or a local vLLM / llama.cpp / Ollama server): ``$OPENAI_BASE_URL`` and ``$OPENAI_API_KEY`` as the OpenAI SDK
reads them, or ``llm:model=NAME:base_url='http://host:8000/v1'``. See ``docs/llm.md``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..base import Agent, BlicketInfo

__all__ = ["LLMAgent"]

_DEFAULT_CACHE = "default"


class LLMAgent(Agent):
    """Plays ``B`` episodes at once, one chat per episode (the template: :mod:`causalplay.agents.llm.template`).

    Knows what the dialogue says: the number of objects and rounds, the rule family in words (the template's
    ``rule_text``), the largest blicket count ("up to four"; the ``ivre-count`` template also tells the
    episode's count), each round's panel, and "Your answer is wrong." when its guess did not end the episode.

    Every round ``k`` (= action ``k``): the belief question for panel ``k``; its answer, parsed
    (:func:`causalplay.agents.llm.parse.parse_objects`), is the belief (1 for the named objects, 0 for the others, as in
    the paper). In the rounds whose trial the task runs, the trial question follows; the named objects are the
    trial. An answer that does not parse counts in ``parse_failures`` and acts as the empty set; the episode
    goes on. Requests of all running episodes go out together, ``concurrency`` at a time.

    Parameters
    ----------
    seed : int
        Agent seed (set by the benchmark); with ``send_seed`` the request seed is ``seed * 1000003 + row``.
    model : str
        The endpoint's model name (required).
    base_url : str, optional
        Endpoint root; default ``$OPENAI_BASE_URL``, else the OpenAI API.
    api_key_env : str
        Environment variable with the key (default ``OPENAI_API_KEY``). A key is never accepted as an option.
    template : str
        Dialogue template name (``"ivre"``, ``"ivre-cot"``, ``"ivre-count"``) or a ``DialogueTemplate``.
    temperature : float
        Sampling temperature (default 0, as in the paper).
    max_tokens : int, optional
        Completion budget per answer (default: the template's, 15 for ``"ivre"`` as in the paper).
    max_blickets : int, optional
        The "up to" count in the opening; default the task's largest allowed count.
    send_seed : bool
        Pass a per-episode ``seed`` to the endpoint (reproducible sampling where the server honours it).
    concurrency, timeout, max_retries, backoff : see :class:`causalplay.agents.llm.client.ChatClient`.
    cache : str or None
        Response-cache folder; ``"default"`` (:func:`causalplay.agents.llm.client.default_cache_dir`), ``None``
        for none.
    merge_user_messages : bool
        Send consecutive user messages as one (for servers whose chat template needs strictly alternating
        roles); the transcript keeps them apart.
    """

    name = "llm"

    def __init__(self, seed: int = 0, model: str | None = None, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", template="ivre", temperature: float = 0.0,
                 max_tokens: int | None = None, max_blickets: int | None = None, send_seed: bool = True,
                 concurrency: int = 8, timeout: float = 60.0, max_retries: int = 6, backoff: float = 1.0,
                 cache: str | None = _DEFAULT_CACHE, merge_user_messages: bool = False, api_key=None):
        from .client import ChatClient, default_cache_dir
        from .template import get_template

        super().__init__(seed)
        if api_key is not None:  # the value is not echoed
            raise ValueError("the llm agent takes no api_key option (it would end up on command lines and in "
                             "records); put the key in $OPENAI_API_KEY or name its variable with api_key_env=")
        if model is None:
            raise ValueError("the llm agent needs a model name, e.g. llm:model=gpt-4o-mini")
        self.template = get_template(template)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
            raise ValueError(f"temperature must be a number in [0, 2], got {temperature!r}")
        max_tokens = self.template.max_tokens if max_tokens is None else max_tokens
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if max_blickets is not None and (isinstance(max_blickets, bool) or not isinstance(max_blickets, int)
                                         or max_blickets < 0):
            raise ValueError(f"max_blickets must be a non-negative integer, got {max_blickets!r}")
        if cache is not None and not isinstance(cache, str):
            raise ValueError(f"cache must be a folder path, 'default' or None, got {cache!r}")
        self.temperature, self.max_tokens, self.max_blickets = float(temperature), max_tokens, max_blickets
        self.send_seed, self.merge_user_messages = bool(send_seed), bool(merge_user_messages)
        self.client = ChatClient(model, base_url, api_key_env=api_key_env, timeout=timeout,
                                 max_retries=max_retries, backoff=backoff, concurrency=concurrency,
                                 cache=default_cache_dir() if cache == _DEFAULT_CACHE else cache)

    # -- episode bookkeeping -----------------------------------------------------------------------------------
    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        rules = task.rules
        if len(rules) != 1:
            raise ValueError(f"the llm agent's dialogue states one rule; this task mixes {len(rules)} "
                             f"({[r.name for r in rules]})")
        self.rule = rules[0].name
        counts = task.n_blickets
        self.max_count = self.max_blickets if self.max_blickets is not None else (max(counts) if counts else None)
        if self.max_count is None:
            raise ValueError("the task does not say how many blickets it may have; pass max_blickets= to the "
                             "llm agent (IVRE: 4)")
        self.messages: list[list[dict]] = [[] for _ in range(self.B)]
        self.counters = {k: np.zeros(self.B, dtype=np.int64) for k in
                         ("llm_calls", "llm_cached", "parse_failures", "llm_truncated", "prompt_tokens",
                          "completion_tokens")}

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        self.t += 1
        N, tpl = self.task.n_objects, self.template
        on, lit, count = self.parse(obs)
        rows = [int(b) for b in torch.nonzero(active).flatten()]
        for b in rows:
            msgs = self.messages[b]
            if self.t == 1:
                msgs.append({"role": "user", "content": tpl.opening_text(
                    N, self.task.horizon, self.rule, self.max_count, int(count[b]))})
            else:  # still running, so the last guess did not solve it
                msgs.append({"role": "user", "content": tpl.wrong})
            objects = [i + 1 for i in range(N) if bool(on[b, i])]
            msgs.append({"role": "user", "content": tpl.round_text(self.t, objects, bool(lit[b]), N)})
        trial = torch.zeros(self.B, N, dtype=torch.float64)
        belief = torch.zeros(self.B, N, dtype=torch.float64)
        for b, objs in zip(rows, self._ask(rows), strict=True):
            belief[b, list(objs)] = 1.0
        if self.trial_runs() and rows:
            for b in rows:
                self.messages[b].append({"role": "user", "content": tpl.trial_text(N)})
            for b, objs in zip(rows, self._ask(rows), strict=True):
                trial[b, list(objs)] = 1.0
        return torch.cat([trial, belief], 1)

    def _payload(self, b: int) -> list[dict]:
        msgs = [{"role": m["role"], "content": m["content"]} for m in self.messages[b]]
        if not self.merge_user_messages:
            return msgs
        out: list[dict] = []
        for m in msgs:
            if out and out[-1]["role"] == m["role"] == "user":
                out[-1] = {"role": "user", "content": out[-1]["content"].rstrip("\n") + "\n" + m["content"]}
            else:
                out.append(m)
        return out

    def _ask(self, rows: list[int]) -> list[tuple[int, ...]]:
        """Send the chats of ``rows``, append the answers, return the parsed object sets (0-based)."""
        from .parse import parse_objects

        reqs = [{"messages": self._payload(b), "temperature": self.temperature, "max_tokens": self.max_tokens,
                 "seed": (self.seed * 1000003 + b) % 2**31 if self.send_seed else None} for b in rows]
        answers = self.client.complete_many(reqs)
        N, tpl, c = self.task.n_objects, self.template, self.counters
        out = []
        for b, ans in zip(rows, answers, strict=True):
            parsed = parse_objects(ans.text, N, tpl.answer_primer_phrases(N), tpl.answer_marker)
            msg = {"role": "assistant", "content": ans.text if ans.text is not None else ""}
            if not parsed.ok:
                msg["parse_error"] = parsed.reason  # kept in the transcript, never sent
                c["parse_failures"][b] += 1
            self.messages[b].append(msg)
            c["llm_calls"][b] += 1
            c["llm_cached"][b] += int(ans.cached)
            c["llm_truncated"][b] += int(ans.finish_reason == "length")
            c["prompt_tokens"][b] += ans.prompt_tokens
            c["completion_tokens"][b] += ans.completion_tokens
            out.append(parsed.objects)
        return out

    # -- records -----------------------------------------------------------------------------------------------
    def episode_columns(self) -> dict[str, np.ndarray]:
        """Per-episode counts for the episode CSV: ``llm_calls``, ``llm_cached``, ``parse_failures``,
        ``llm_truncated`` (answers cut by ``max_tokens``), ``prompt_tokens``, ``completion_tokens``."""
        return {k: v.copy() for k, v in self.counters.items()}

    def dialogues(self) -> list[list[dict]]:
        """Every episode's messages (``role``, ``content``; failed answers also carry ``parse_error``)."""
        return [[dict(m) for m in msgs] for msgs in self.messages]
