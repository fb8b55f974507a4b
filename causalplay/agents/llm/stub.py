"""A local OpenAI-compatible stub server with scripted models, for tests and for trying the ``llm`` agent offline.

:class:`StubServer` answers ``POST /v1/chat/completions`` (and ``GET /v1/models``) on 127.0.0.1 with a Python
callable ``model(messages, body) -> str | StubReply``. Scripted models:

* :class:`EIGScript` -- reads the dialogue back (objects, count, rule, every round's panel, its own earlier
  answers, "Your answer is wrong.") and answers with the exact ``eig`` agent's choice, rendered as text in one
  of several phrasings. It checks the bookkeeping as it reads: a round out of order, a missing "wrong" notice
  or an earlier answer that is not the one it gave is answered with HTTP 400, so a dialogue error fails loudly.
* :func:`garbage_model` -- unusable or odd answers (empty, refusals, out-of-range numbers, prose).
* :class:`Flaky` -- wraps a model and fails each distinct request ``fails`` times (429, then 500) first.

Token counts in ``usage`` are approximate (words and punctuation marks, +3 per message), not a real tokenizer.

Run one by hand: ``python -m causalplay.agents.llm.stub --model eig --port 8000`` then
``OPENAI_BASE_URL=http://127.0.0.1:8000/v1 causalplay bench --agents "llm:model=stub:template=ivre-count"``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

from .parse import WORD_NUMBERS
from .template import IVRE_COUNT, render_set

__all__ = ["StubServer", "StubReply", "EIGScript", "garbage_model", "Flaky", "approx_tokens", "GARBAGE_ANSWERS",
           "GARBAGE_FAILS"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def approx_tokens(text: str) -> int:
    """Words and punctuation marks: a rough stand-in for a BPE count (English text: about 1.3 words/token
    less; good to a factor of ~1.5, used by the stub only)."""
    return len(_TOKEN.findall(text or ""))


@dataclass
class StubReply:
    """A scripted HTTP answer: ``status`` (200: ``content`` is the message), extra ``headers``."""

    content: str | None = None
    status: int = 200
    headers: dict = field(default_factory=dict)
    finish_reason: str = "stop"


class StubServer:
    """OpenAI-compatible Chat Completions on ``127.0.0.1:port`` (``port=0``: a free one), in a thread.

    Attributes: ``url`` (``http://127.0.0.1:PORT/v1``), ``requests`` (every request body received, in order),
    ``auth`` (the ``Authorization`` headers received, to check what a client sends).
    """

    def __init__(self, model: Callable[[list[dict], dict], str | StubReply], port: int = 0):
        self.model = model
        self.requests: list[dict] = []
        self.auth: list[str | None] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(n))
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with server._lock:
                    server.requests.append(body)
                    server.auth.append(self.headers.get("Authorization"))
                try:
                    reply = server.model(body.get("messages", []), body)
                except Exception as e:  # noqa: BLE001 - a script error becomes an HTTP 500 the client sees
                    self._send(500, {"error": {"message": f"stub model failed: {type(e).__name__}: {e}"}})
                    return
                if not isinstance(reply, StubReply):
                    reply = StubReply(reply)
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.content or "scripted failure"}},
                               reply.headers)
                    return
                prompt = sum(approx_tokens(m.get("content") or "") + 3 for m in body.get("messages", []))
                completion = approx_tokens(reply.content or "")
                self._send(200, {
                    "id": f"stub-{len(server.requests)}", "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                 "message": {"role": "assistant", "content": reply.content}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion},
                }, reply.headers)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread: threading.Thread | None = None

    def start(self) -> StubServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# -- scripted models -----------------------------------------------------------------------------------------
def _digest(messages: list[dict]) -> int:
    """A stable hash of a dialogue (its messages' roles and contents)."""
    blob = json.dumps([(m["role"], m["content"]) for m in messages], sort_keys=True)
    return int(hashlib.sha256(blob.encode()).hexdigest()[:12], 16)


_STYLES = (
    lambda objs: render_set(objs),  # "1, 2, and 3."
    lambda objs: ("objects " + " and ".join(str(o) for o in objs)) if objs else "none",  # "objects 2 and 5"
    lambda objs: ", ".join(str(o) for o in objs) + (" are the ones." if objs else "None of them."),
    lambda objs: render_set(objs) + "\nThese objects are my best guess; objects 0 and 10 do not exist.",
)


class EIGScript:
    """Answers as the ``eig`` agent would, from the dialogue alone (needs a template that tells the count,
    e.g. ``ivre-count``; the ``eig`` agent is told it by the observation). The phrasing of each answer is
    picked by a hash of the dialogue so far (4 styles, all parseable)."""

    def __init__(self, template=IVRE_COUNT):
        self.template = template
        self.said: dict[int, str] = {}  # digest of a dialogue prefix -> the answer given to it
        self._lock = threading.Lock()

    def _error(self, why: str) -> StubReply:
        return StubReply(f"dialogue error: {why}", status=400)

    def __call__(self, messages: list[dict], body: dict) -> str | StubReply:
        from causalplay.agents.base import BlicketInfo
        from causalplay.agents.bayesian import EIGAgent
        from causalplay.core.rules import make_rule

        tpl = self.template
        if not messages or messages[0].get("role") != "user":
            return self._error("no opening message")
        opening = messages[0]["content"]
        m = re.search(r"There are (\w+) objects: ([\d, ]+) that", opening)
        T = re.search(r"in (\w+) rounds", opening)
        c = re.search(r"Exactly (\w+) of the objects", opening)
        if not (m and T and c):
            return self._error("the opening does not state objects, rounds and the count")
        N, T, count = WORD_NUMBERS[m.group(1)], WORD_NUMBERS[T.group(1)], WORD_NUMBERS[c.group(1)]
        rule = "conjunctive" if "at least two objects with that property" in opening else "disjunctive"
        # Read the rounds back: [wrong] round, answer, [trial question, answer] ...
        rounds, answers, i, k = [], [], 1, 0
        while i < len(messages):
            msg = messages[i]
            if k > 0:
                if msg["content"] != tpl.wrong:
                    return self._error(f"round {k + 1} is not preceded by {tpl.wrong!r}")
                i += 1
                msg = messages[i] if i < len(messages) else {}
            r = re.match(r"Round (\d+):\n(.*) (?:are|is) on the machine, and the machine is (activated|not activated)",
                         msg.get("content", ""))
            if r is None or int(r.group(1)) != k + tpl.first_round or msg.get("role") != "user":
                return self._error(f"expected round {k + tpl.first_round}, got {msg.get('content')!r}")
            objs = [int(x) for x in r.group(2).split(", ")] if r.group(2)[:1].isdigit() else []  # else: empty
            rounds.append((objs, r.group(3) == "activated"))
            k += 1
            asked = messages[: i + 1]
            i += 1
            step_answers = []
            for question in ("belief", "trial"):
                if i >= len(messages):
                    break
                if question == "trial":
                    if messages[i]["content"] != tpl.trial_text(N):
                        break
                    asked = messages[: i + 1]
                    i += 1
                    if i >= len(messages):
                        break
                if messages[i]["role"] != "assistant":
                    return self._error(f"round {k}: expected the {question} answer, got {messages[i]!r}")
                step_answers.append((question, asked, messages[i]["content"]))
                i += 1
            answers.append(step_answers)
        last_is_trial = messages[-1]["content"] == tpl.trial_text(N)
        # Replay the eig agent (trials are chosen only here, so n_context = T: no EIG at belief questions).
        agent = EIGAgent(seed=0)
        task = BlicketInfo(n_objects=N, horizon=T, n_context=T, rules=(make_rule(rule),))
        obs = torch.zeros(1, N + 4)
        for j, (objs, lit) in enumerate(rounds, start=1):
            obs.zero_()
            obs[0, [o - 1 for o in objs]] = 1.0
            obs[0, N], obs[0, N + 1], obs[0, N + 2] = float(lit), count / N, j / T
            if j == 1:
                agent.reset(task, obs)
            belief = agent.act(obs, torch.tensor([True]))[0, N:]
            guess = [o + 1 for o in range(N) if belief[o] > 0.5]
            said = {q: (asked, text) for q, asked, text in answers[j - 1]}
            if j < len(rounds) or last_is_trial:  # an earlier answer of ours: check it was kept as given
                if "belief" not in said or said["belief"][1] != self._say(said["belief"][0], guess):
                    return self._error(f"round {j}: the belief answer in the dialogue is not the one given")
            if "trial" in said:  # recomputed only when this server did not give it (EIG is the costly part)
                given = self.said.get(_digest(said["trial"][0]))
                if given is None:
                    given = self._say(said["trial"][0], self._trial(agent, N))
                if said["trial"][1] != given:
                    return self._error(f"round {j}: the trial answer in the dialogue is not the one given")
        text = self._say(messages, self._trial(agent, N) if last_is_trial else guess)
        with self._lock:
            self.said[_digest(messages)] = text
        return text

    @staticmethod
    def _trial(agent, N: int) -> list[int]:
        trial = agent.choose(torch.tensor([True]), agent.last_code)[0]
        return [o + 1 for o in range(N) if trial[o] > 0.5]

    @staticmethod
    def _say(asked: list[dict], objs: list[int]) -> str:
        return _STYLES[_digest(asked) % len(_STYLES)](objs)


GARBAGE_ANSWERS = ("", "I'm sorry, but I can't help with that.", "banana", "3, 4, and 12.", "0", "Maybe.",
            "The machine is fascinating.", "None.", "2 and 5.", "objects eleven and twelve")
#: Which of :data:`GARBAGE_ANSWERS` fail to parse for 9 objects (ok answers: "None." and "2 and 5.").
GARBAGE_FAILS = tuple(a not in ("None.", "2 and 5.") for a in GARBAGE_ANSWERS)


def garbage_model(messages: list[dict], body: dict) -> str:
    """An answer from a fixed list of mostly unusable replies, picked by a hash of the dialogue."""
    return GARBAGE_ANSWERS[_digest(messages) % len(GARBAGE_ANSWERS)]


class Flaky:
    """Fails each distinct request (by its messages) ``fails`` times -- 429 with ``Retry-After: 0``, then
    500s -- before the wrapped model answers it."""

    def __init__(self, model: Callable, fails: int = 2):
        self.model, self.fails = model, fails
        self.seen: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict], body: dict) -> str | StubReply:
        key = _digest(messages)
        with self._lock:
            n = self.seen.get(key, 0)
            self.seen[key] = n + 1
        if n < self.fails:
            return StubReply("rate limited" if n == 0 else "internal error", status=429 if n == 0 else 500,
                             headers={"Retry-After": "0"} if n == 0 else {})
        return self.model(messages, body)


def main() -> None:  # pragma: no cover - manual use
    import argparse
    import time

    ap = argparse.ArgumentParser(description="Serve a scripted model on 127.0.0.1 (OpenAI-compatible).")
    ap.add_argument("--model", choices=("eig", "garbage"), default="eig")
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    srv = StubServer(EIGScript() if args.model == "eig" else garbage_model, port=args.port).start()
    print(f"serving {args.model} at {srv.url} (Ctrl-C stops)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
