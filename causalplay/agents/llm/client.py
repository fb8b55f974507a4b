"""A small client for any OpenAI-compatible Chat Completions endpoint, built for benchmark runs.

* **Endpoint and key**: ``base_url`` (default ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``) and the
  key from an environment variable (default ``OPENAI_API_KEY``; none is sent when it is unset, as local
  servers need none). The key is only ever put in the ``Authorization`` header: never in a cache file, a
  record, a log line or an error message.
* **Reliability**: a timeout per request; retries with exponential backoff (and jitter, and the server's
  ``Retry-After`` when it sends one) on 408/409/429/5xx and connection errors; other HTTP errors raise at once
  with the server's message. Out of retries, :class:`LLMError` names the endpoint, the status and the tries.
* **Concurrency**: :meth:`ChatClient.complete_many` sends up to ``concurrency`` requests at once (threads).
* **Cache**: a response cache on disk, one JSON file per request keyed by the SHA-256 of (endpoint, model, the
  full message list, temperature, max_tokens, seed), written atomically (safe for parallel workers), so a rerun of
  the same seeds sends nothing and gives the same answers.
* **Tokens**: the ``usage`` the server reports (prompt and completion tokens) comes back with every answer,
  cached ones included (a cached answer costs nothing, but the count says what it did cost).

``httpx`` is needed (``pip install 'causalplay[llm]'``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from causalplay.core._futures import wait_result

__all__ = ["ChatClient", "Completion", "ResponseCache", "LLMError", "default_cache_dir", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class LLMError(RuntimeError):
    """The endpoint could not give an answer (after retries, or a non-retryable HTTP error)."""


@dataclass(frozen=True)
class Completion:
    """One answer: ``text`` (``None`` when the server sent no content), token counts, ``finish_reason``,
    and whether it came from the cache."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    cached: bool = False


def default_cache_dir() -> Path:
    """``$CAUSALPLAY_LLM_CACHE``, else ``$XDG_CACHE_HOME/causalplay/llm`` (``~/.cache/causalplay/llm``)."""
    if os.environ.get("CAUSALPLAY_LLM_CACHE"):
        return Path(os.environ["CAUSALPLAY_LLM_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "causalplay" / "llm"


class ResponseCache:
    """Responses on disk under ``root/<2 hex>/<64 hex>.json``; the key is the SHA-256 of the request."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    @staticmethod
    def key(request: dict) -> str:
        """SHA-256 of the canonical JSON of ``request`` (endpoint, model, messages, temperature, max_tokens, seed)."""
        blob = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text())
        except (FileNotFoundError, json.JSONDecodeError):  # a missing or torn file is a miss
            return None

    def put(self, key: str, value: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(value, ensure_ascii=False))
        os.replace(tmp, path)


class ChatClient:
    """Chat Completions over HTTP with timeouts, retries, a concurrency limit and a disk cache.

    Parameters
    ----------
    model : str
        Model name the endpoint serves.
    base_url : str, optional
        Endpoint root (``.../v1``); default ``$OPENAI_BASE_URL`` or :data:`DEFAULT_BASE_URL`.
    api_key_env : str
        Environment variable holding the key (read here, never stored elsewhere).
    timeout : float
        Seconds per request (connect and read).
    max_retries : int
        Retries after the first try on retryable failures.
    backoff : float
        First retry delay in seconds; doubles every retry (x U(0.5, 1.5) jitter), capped at ``max_backoff``.
    concurrency : int
        Requests in flight at once in :meth:`complete_many`.
    cache : str, Path or None
        Cache folder (``None``: no cache).
    """

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 timeout: float = 60.0, max_retries: int = 6, backoff: float = 1.0, max_backoff: float = 60.0,
                 concurrency: int = 8, cache: str | os.PathLike | None = None):
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string (the endpoint's model name), got {model!r}")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL like 'http://localhost:8000/v1', got {base_url!r}")
        for name, v, lo in (("timeout", timeout, 0.0), ("backoff", backoff, 0.0), ("max_backoff", max_backoff, 0.0)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= lo:
                raise ValueError(f"{name} must be a number >= {lo}, got {v!r}")
        for name, v, lo in (("max_retries", max_retries, 0), ("concurrency", concurrency, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
        if not isinstance(api_key_env, str) or not api_key_env:
            raise ValueError(f"api_key_env must name an environment variable, got {api_key_env!r}")
        self.model, self.base_url, self.api_key_env = model, base_url.rstrip("/"), api_key_env
        self.timeout, self.max_retries, self.backoff, self.max_backoff = timeout, max_retries, backoff, max_backoff
        self.concurrency, self.cache = concurrency, ResponseCache(cache) if cache is not None else None
        self._http, self._lock = None, threading.Lock()
        self.stats = {"requests": 0, "retries": 0, "cache_hits": 0}

    def __repr__(self) -> str:  # no key here, ever
        return f"ChatClient(model={self.model!r}, base_url={self.base_url!r})"

    def __getstate__(self) -> dict:  # picklable for process pools: the connection pool is rebuilt there
        state = self.__dict__.copy()
        state["_http"], state["_lock"] = None, None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- HTTP ------------------------------------------------------------------------------------------------
    def _client(self):
        with self._lock:
            if self._http is None:
                try:
                    import httpx
                except ImportError:  # pragma: no cover - depends on the install
                    raise ImportError("the llm agent needs httpx: pip install 'causalplay[llm]'") from None
                limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
                self._http = httpx.Client(timeout=httpx.Timeout(self.timeout), limits=limits)
            return self._http

    def close(self) -> None:
        """Close the connection pool (it is reopened on the next request)."""
        with self._lock:
            if self._http is not None:
                self._http.close()
                self._http = None

    def __del__(self) -> None:  # an agent dropped after its run leaves no open sockets behind
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown; nothing left to do
            pass

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _redact(self, text: str) -> str:
        """Server text for an error message, with the key (and anything shaped like one) masked: some APIs
        echo a partly masked key in their 401 message."""
        key = os.environ.get(self.api_key_env)
        if key:
            text = text.replace(key, "***")
        return re.sub(r"\b(sk|key|api)[-_][A-Za-z0-9_*.-]{6,}", r"\1-***", text)

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * 2**attempt * random.uniform(0.5, 1.5))

    def _post(self, body: dict) -> dict:
        import httpx

        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after = None
            try:
                with self._lock:
                    self.stats["requests"] += 1
                r = self._client().post(url, json=body, headers=self._headers())
            except (httpx.TimeoutException, httpx.TransportError) as e:
                last = self._redact(f"{type(e).__name__}: {e}")
            else:
                if r.status_code == 200:
                    try:
                        return r.json()
                    except ValueError:
                        last = f"HTTP 200 with a body that is not JSON: {self._redact(r.text[:200])!r}"
                elif r.status_code in RETRY_STATUS:
                    last = f"HTTP {r.status_code}: {self._redact(r.text[:200])}"
                    retry_after = r.headers.get("retry-after")
                else:
                    raise LLMError(f"{url} answered HTTP {r.status_code} for model {self.model!r}: "
                                   f"{self._redact(r.text[:500])}")
            if attempt < self.max_retries:
                with self._lock:
                    self.stats["retries"] += 1
                time.sleep(self._delay(attempt, retry_after))
        raise LLMError(f"{url} gave no answer for model {self.model!r} after {self.max_retries + 1} tries; "
                       f"last failure: {last}")

    # -- completions -------------------------------------------------------------------------------------------
    def request_body(self, messages: Sequence[dict], temperature: float = 0.0, max_tokens: int | None = None,
                     seed: int | None = None) -> dict:
        """The JSON body sent (and, as is, the cache key): model, messages, temperature, max_tokens, seed."""
        body = {"model": self.model, "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
                "temperature": float(temperature)}
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if seed is not None:
            body["seed"] = int(seed)
        return body

    def complete(self, messages: Sequence[dict], temperature: float = 0.0, max_tokens: int | None = None,
                 seed: int | None = None) -> Completion:
        """One chat completion (from the cache when this exact request was answered before)."""
        body = self.request_body(messages, temperature, max_tokens, seed)
        # The endpoint is part of the key: local servers often ignore the model name ("local", "default").
        key = ResponseCache.key({"endpoint": self.base_url, **body}) if self.cache is not None else None
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                with self._lock:
                    self.stats["cache_hits"] += 1
                return Completion(hit["text"], hit.get("prompt_tokens", 0), hit.get("completion_tokens", 0),
                                  hit.get("finish_reason"), cached=True)
        data = self._post(body)
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMError(f"{self.base_url}/chat/completions answered without choices[0].message: "
                           f"{json.dumps(data)[:300]}") from None
        usage = data.get("usage") or {}
        out = Completion(text if isinstance(text, str) else None, int(usage.get("prompt_tokens") or 0),
                         int(usage.get("completion_tokens") or 0), choice.get("finish_reason"))
        if self.cache is not None:
            self.cache.put(key, {"request": body, "text": out.text, "prompt_tokens": out.prompt_tokens,
                                 "completion_tokens": out.completion_tokens, "finish_reason": out.finish_reason})
        return out

    def complete_many(self, requests: Sequence[dict]) -> list[Completion]:
        """Answer ``requests`` (each the keyword arguments of :meth:`complete`) with up to ``concurrency`` in
        flight; results in the order of ``requests``. The first failure is raised after all have finished."""
        if len(requests) <= 1 or self.concurrency == 1:
            return [self.complete(**r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            futures = [pool.submit(self.complete, **r) for r in requests]
            return [wait_result(f) for f in futures]  # polls: Ctrl-C stops the wait promptly
