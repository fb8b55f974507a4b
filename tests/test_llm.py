"""The llm agent end to end against a local OpenAI-compatible stub on 127.0.0.1 (no network beyond loopback).

* stub-EIG: a scripted model that reads the dialogue back and answers with the ``eig`` agent's choices; the
  ``llm`` agent must then reproduce the ``eig`` agent's episodes exactly (same trials, same outcomes);
* garbage answers are counted as parse failures and never crash an episode;
* 429/500 failures are retried, the disk cache makes a rerun free and identical, the key never leaks;
* ``causalplay bench --show-dialogue 1`` prints the appendix-D dialogue, compared with a hand-written transcript.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import torch
from causalplay.envs import make_batch
from typer.testing import CliRunner

from causalplay.agents import TaskInfo, make_agent, parse_agent_spec, split_agent_specs
from causalplay.agents.llm import LLMError, format_transcript, parse_objects
from causalplay.agents.llm.stub import (
    GARBAGE_ANSWERS,
    GARBAGE_FAILS,
    EIGScript,
    Flaky,
    StubReply,
    StubServer,
    garbage_model,
)
from causalplay.agents.llm.template import IVRE, render_set
from causalplay.bench import run_episodes
from causalplay.core.rules import disjunctive

SECRET = "sk-test-0123456789abcdef-DO-NOT-LEAK"


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors; the machine is shared
    yield
    torch.set_num_threads(old)


def llm_spec(url: str, **opts) -> str:
    opts = {"template": "ivre-count", "cache": None, "backoff": 0.001, **opts}
    return "llm:model=stub:" + ":".join(f"{k}={v!r}" for k, v in opts.items()) + f":base_url='{url}'"


def play(agent, env_id: str, n: int, seed):
    env = make_batch(env_id, n, seed=seed)
    obs = env.reset()
    agent.reset(env.info(), obs)
    for _ in range(env.horizon):
        obs, *_ = env.step(agent.act(obs, ~env.done))
        if bool(env.done.all()):
            break
    return env


# -- the spec grammar ------------------------------------------------------------------------------------------
def test_agent_spec_grammar_bare_strings_and_quoted_values():
    assert parse_agent_spec("llm:model=gpt-4o-mini") == ("llm", {"model": "gpt-4o-mini"})
    assert parse_agent_spec("llm:model=qwen2.5:base_url='http://127.0.0.1:8000/v1':temperature=0.7") == (
        "llm", {"model": "qwen2.5", "base_url": "http://127.0.0.1:8000/v1", "temperature": 0.7})
    assert parse_agent_spec('llm:model="a,b:c"') == ("llm", {"model": "a,b:c"})
    assert parse_agent_spec("llm:model=m:cache=None:send_seed=False") == (
        "llm", {"model": "m", "cache": None, "send_seed": False})
    assert parse_agent_spec(r"llm:model='it\'s'") == ("llm", {"model": "it's"})
    assert split_agent_specs("eig, llm:model=m:base_url='http://h:1/v1,x',planner:depth=2") == [
        "eig", "llm:model=m:base_url='http://h:1/v1,x'", "planner:depth=2"]
    assert split_agent_specs("eig,,planner") == ["eig", "planner"]


@pytest.mark.parametrize("spec, match", [
    ("llm:model=m:base_url=http://h:8000/v1", r"'//h' in .* must look like key=value \(quote a value"),
    ("llm:model='abc", "unterminated ' quote"),
    ("llm:model=m:x=[1,2", "unbalanced brackets"),
    ("llm:model=", "'model=' in 'llm:model=' has an empty value"),
    ("llm:model=a:model=b", "'model' is given twice"),
    ("llm:model=a b", "bare value 'a b' may not contain quotes or spaces"),
    ("llm:model='a'b", "is not a valid Python literal"),
    ("llm:=x", "must look like key=value"),
    ("lm:model=x", "unknown blicket agent 'lm'"),
])
def test_agent_spec_grammar_bad_input(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_agent_spec(spec)


def test_agent_options_are_checked_and_the_key_is_refused():
    with pytest.raises(ValueError, match="needs a model name"):
        make_agent("llm")
    with pytest.raises(ValueError, match=r"temperature must be a number in \[0, 2\], got 5"):
        make_agent("llm:model=m:temperature=5")
    with pytest.raises(ValueError, match="max_tokens must be a positive integer, got 0"):
        make_agent("llm:model=m:max_tokens=0")
    with pytest.raises(ValueError, match="base_url must be an http"):
        make_agent("llm:model=m:base_url=localhost")
    with pytest.raises(ValueError, match="unknown dialogue template 'paper'"):
        make_agent("llm:model=m:template=paper")
    with pytest.raises(ValueError, match="takes no api_key option") as err:
        make_agent(f"llm:model=m:api_key={SECRET}")
    assert SECRET not in str(err.value)
    agent = make_agent("llm:model=m:cache=None")
    with pytest.raises(ValueError, match="does not say how many blickets"):
        agent.reset(TaskInfo(n_objects=9, horizon=10, n_context=4, rules=(disjunctive(),)), torch.zeros(2, 13))
    agent.reset(TaskInfo(n_objects=9, horizon=10, n_context=4, rules=(disjunctive(),), n_blickets=(1, 2)),
                torch.zeros(2, 13))
    assert agent.max_count == 2
    agent = make_agent("llm:model=m:cache=None:max_blickets=4")  # or told by the spec
    agent.reset(TaskInfo(n_objects=9, horizon=10, n_context=4, rules=(disjunctive(),)), torch.zeros(2, 13))
    assert agent.max_count == 4


# -- parsing ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, objects, ok", [
    ("3, 4, 7, and 9.", (3, 4, 7, 9), True),
    ("None", (), True),
    ("None.", (), True),
    ("no objects", (), True),
    ("objects 2 and 5", (2, 5), True),
    ("From 1-9, objects that can activate the machine are 1, 6.", (1, 6), True),  # an echoed primer
    ("2-4 and 9", (2, 3, 4, 9), True),
    ("three and five", (3, 5), True),
    ("7.\nThen I would test 1 and 2.", (7,), True),  # only the first line is the answer
    ("3, 12", (3,), False),  # out of range: kept what is valid, counted as a failure
    ("0", (), False),
    ("", (), False),
    (None, (), False),
    ("I'm sorry, but I can't help with that.", (), False),
    ("No one can know.", (), False),
])
def test_parse_answers(text, objects, ok):
    got = parse_objects(text, 9, IVRE.answer_primer_phrases(9))
    assert got.objects == tuple(o - 1 for o in objects)
    assert got.ok is ok and (got.reason == "") is ok


def test_parse_chain_of_thought_reads_the_last_answer_line():
    text = "Round 1 lit with 1, 2, 3; round 2 dark with 3.\nSo 3 is out.\nAnswer: 1 and 2."
    assert parse_objects(text, 9, (), "Answer:").objects == (0, 1)
    assert not parse_objects("I think 1 and 2.", 9, (), "Answer:").ok


# -- the template ----------------------------------------------------------------------------------------------
def test_paper_template_texts():
    assert IVRE.opening_text(9, 10, "disjunctive", 4, 2) == (
        "There are nine objects: 1, 2, 3, 4, 5, 6, 7, 8, 9 that can be put on a machine. Up to four of all the "
        "objects have a unique property that can activate the machine. Your goal is to find out all the objects "
        "that can activate the machine in ten rounds.\n"
        "Answer all the following questions in the format of \"1, 2, and 3.\"\n")
    assert IVRE.round_text(3, [1, 6, 8], False, 9) == (  # the paper's transcript counts rounds from 0
        "Round 2:\n1, 6, 8 are on the machine, and the machine is not activated.\n"
        "Question: Which objects can activate the machine?\n"
        "Answer: From 1-9, objects that can activate the machine are ")
    assert IVRE.trial_text(9).endswith("Question: Which objects will you put on the machine?\n"
                                       "Answer: From 1-9, I will put ")
    assert [render_set(s) for s in ([], [3], [2, 5], [1, 2, 3])] == ["None.", "3.", "2 and 5.", "1, 2, and 3."]
    assert IVRE.round_text(1, [], True, 9).startswith("Round 0:\nNone are on the machine, and the machine is activated")
    from causalplay.agents.llm.template import TEMPLATES  # our corrected wording, kept as a named variant

    assert TEMPLATES["ivre-clear"].round_text(1, [], False, 9).startswith("Round 1:\nNo objects are on the machine")
    with pytest.raises(ValueError, match="no wording for rule 'threshold3'"):
        IVRE.opening_text(9, 10, "threshold3", 4, 2)


# -- stub-EIG: the llm path reproduces the eig agent -------------------------------------------------------------
@pytest.mark.parametrize("env_id, n", [("causalplay/IVRE-v0", 60), ("causalplay/IVRE-Conjunctive-v0", 25),
                                       ("causalplay/EST-Conjunctive-v1", 20)])
def test_stub_eig_reproduces_the_eig_agent(env_id, n):
    script = EIGScript()
    with StubServer(script) as srv:
        llm = make_agent(llm_spec(srv.url), seed=7)
        a = play(llm, env_id, n, [3, 1])
    b = play(make_agent("eig", seed=7), env_id, n, [3, 1])
    assert torch.equal(a.panels, b.panels) and torch.equal(a.lit, b.lit)  # the same trials, turn by turn
    assert torch.equal(a.solved_at, b.solved_at)
    cols = llm.episode_columns()
    assert cols["parse_failures"].sum() == 0
    # one belief answer per action taken, one trial answer per trial run
    C, T = a.n_context, a.horizon
    steps = np.where(a.solved_at.numpy() > 0, a.solved_at.numpy(), T)
    np.testing.assert_array_equal(cols["llm_calls"], steps + np.clip(np.minimum(steps, T - 1) - C + 1, 0, None))
    assert (cols["prompt_tokens"] > 0).all() and (cols["completion_tokens"] > 0).all()


def _compare_bench_path(n_episodes: int, seeds):
    with StubServer(EIGScript()) as srv:
        spec = llm_spec(srv.url, concurrency=8)
        got = pd.concat([run_episodes("causalplay/IVRE-v0", spec, n_episodes, s) for s in seeds])
    want = pd.concat([run_episodes("causalplay/IVRE-v0", "eig", n_episodes, s) for s in seeds])
    np.testing.assert_array_equal(got["solved_step"], want["solved_step"])
    np.testing.assert_array_equal(got["episode_solved"], want["episode_solved"])
    np.testing.assert_array_equal(got["context_solved"], want["context_solved"])
    assert got["parse_failures"].sum() == 0
    return got, want


def test_stub_eig_equivalence_through_the_benchmark_runner():
    got, want = _compare_bench_path(40, seeds=[11])
    assert got["episode_solved"].mean() > 0.9  # the eig agent solves IVRE (a check that the test is not vacuous)


@pytest.mark.slow
def test_stub_eig_equivalence_1000_episodes():
    # 10 benchmark seeds x 100 episodes: 1000 distinct episodes (and 10 agent seeds), as `causalplay bench` runs them
    got, want = _compare_bench_path(100, seeds=range(10))
    assert len(got) == 1000 and got["episode_solved"].mean() > 0.95


# -- garbage, failures, cache, key ---------------------------------------------------------------------------------
def test_garbage_answers_are_counted_and_never_crash():
    with StubServer(garbage_model) as srv:
        agent = make_agent(llm_spec(srv.url, template="ivre"), seed=1)
        env = play(agent, "causalplay/IVRE-v0", 30, [0, 0])
        n_requests = len(srv.requests)
    cols = agent.episode_columns()
    bad = {a for a, f in zip(GARBAGE_ANSWERS, GARBAGE_FAILS, strict=True) if f}
    expected_fail = [sum(m["role"] == "assistant" and m["content"] in bad for m in d) for d in agent.dialogues()]
    np.testing.assert_array_equal(cols["parse_failures"], expected_fail)
    assert cols["parse_failures"].sum() > 0.5 * cols["llm_calls"].sum()
    assert cols["llm_calls"].sum() == n_requests
    assert all(("parse_error" in m) == (m["content"] in bad) for d in agent.dialogues() for m in d
               if m["role"] == "assistant")
    assert bool(env.done.all())  # every episode ran to its end


def test_retries_then_the_cache_makes_a_rerun_free_and_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    flaky = Flaky(EIGScript(), fails=2)  # every request: 429, then 500, then the answer
    with StubServer(flaky) as srv:
        spec = llm_spec(srv.url, cache=str(tmp_path / "cache"))
        a1 = make_agent(spec, seed=3)
        e1 = play(a1, "causalplay/IVRE-v0", 12, [5, 0])
        first = len(srv.requests)
        assert first == 3 * a1.episode_columns()["llm_calls"].sum()
        assert a1.client.stats["retries"] == 2 * a1.episode_columns()["llm_calls"].sum()
        assert set(srv.auth) == {f"Bearer {SECRET}"}  # the key is sent, in the header only
        a2 = make_agent(spec, seed=3)
        e2 = play(a2, "causalplay/IVRE-v0", 12, [5, 0])
        assert len(srv.requests) == first  # nothing sent: every answer came from the cache
    assert torch.equal(e1.panels, e2.panels) and torch.equal(e1.solved_at, e2.solved_at)
    c1, c2 = a1.episode_columns(), a2.episode_columns()
    np.testing.assert_array_equal(c2["llm_cached"], c2["llm_calls"])
    np.testing.assert_array_equal(c1["prompt_tokens"], c2["prompt_tokens"])
    assert c1["llm_cached"].sum() == 0
    assert torch.equal(e1.solved_at, play(make_agent("eig", seed=3), "causalplay/IVRE-v0", 12, [5, 0]).solved_at)
    for f in (tmp_path / "cache").rglob("*"):
        if f.is_file():
            assert SECRET not in f.read_text()


def test_out_of_retries_is_a_clear_error():
    with StubServer(lambda m, b: StubReply("overloaded", status=503)) as srv:
        agent = make_agent(llm_spec(srv.url, max_retries=2), seed=0)
        with pytest.raises(LLMError, match=r"gave no answer for model 'stub' after 3 tries; last failure: HTTP 503"):
            play(agent, "causalplay/IVRE-v0", 1, [0, 0])
        assert len(srv.requests) == 3
    with StubServer(lambda m, b: StubReply("bad request", status=400)) as srv:  # not retried
        agent = make_agent(llm_spec(srv.url), seed=0)
        with pytest.raises(LLMError, match="answered HTTP 400 for model 'stub': .*bad request"):
            play(agent, "causalplay/IVRE-v0", 1, [0, 0])
        assert len(srv.requests) == 1


def test_merged_user_messages_alternate_roles():
    with StubServer(lambda m, b: "1.") as srv:
        agent = make_agent(llm_spec(srv.url, template="ivre", merge_user_messages=True), seed=0)
        play(agent, "causalplay/IVRE-v0", 2, [0, 0])
        for body in srv.requests:
            roles = [m["role"] for m in body["messages"]]
            assert all(r1 != r2 for r1, r2 in zip(roles, roles[1:], strict=False)), roles
    # the transcript keeps the messages apart
    assert any(m["content"] == IVRE.wrong for m in agent.dialogues()[0])


# -- the dialogue, printed by the benchmark ------------------------------------------------------------------------
def _panel_script(messages: list[dict], body: dict) -> str:
    """Belief: the objects on the machine if it lit, else none. Trial in round k: object k - 2."""
    rounds = [m["content"] for m in messages if m["content"].startswith("Round ")]
    if messages[-1]["content"].startswith("Now design"):
        return render_set([len(rounds) - 2])
    r = re.match(r"Round \d+:\n(.*) are on the machine, and the machine is (activated|not activated)", rounds[-1])
    objs = [int(x) for x in r.group(1).split(", ")]
    return render_set(objs if r.group(2) == "activated" else [])


# Written by hand from the episode (seed 0, shard 0, 1 episode of IVRE-v0: blickets 1, 2; context panels {8}
# dark, {2, 6, 8} lit, {4, 6, 9} dark, {2, 4, 8} lit) and the rules: context rounds 0-3 (the paper numbers rounds
# from 0), trials asked in rounds 3-8, "Your answer is wrong." before every later round, nothing after round 9.
# (The scripted model: belief = the panel's objects if it lit, else none; trial in round k = object k - 2.)
EXPECTED_TRANSCRIPT = """\
There are nine objects: 1, 2, 3, 4, 5, 6, 7, 8, 9 that can be put on a machine. Up to four of all the objects have \
a unique property that can activate the machine. Your goal is to find out all the objects that can activate the \
machine in ten rounds.
Answer all the following questions in the format of "1, 2, and 3."
Round 0:
8 are on the machine, and the machine is not activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are None.
Your answer is wrong.
Round 1:
2, 6, 8 are on the machine, and the machine is activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are 2, 6, and 8.
Your answer is wrong.
Round 2:
4, 6, 9 are on the machine, and the machine is not activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are None.
Your answer is wrong.
Round 3:
2, 4, 8 are on the machine, and the machine is activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are 2, 4, and 8.
Now design your own trial, you can put some of the objects on the machine to validate your hypothesis. \
Question: Which objects will you put on the machine?
Answer: From 1-9, I will put 2.
Your answer is wrong.
Round 4:
2 are on the machine, and the machine is activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are 2.
Now design your own trial, you can put some of the objects on the machine to validate your hypothesis. \
Question: Which objects will you put on the machine?
Answer: From 1-9, I will put 3.
Your answer is wrong.
Round 5:
3 are on the machine, and the machine is not activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are None.
Now design your own trial, you can put some of the objects on the machine to validate your hypothesis. \
Question: Which objects will you put on the machine?
Answer: From 1-9, I will put 4.
Your answer is wrong.
Round 6:
4 are on the machine, and the machine is not activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are None.
Now design your own trial, you can put some of the objects on the machine to validate your hypothesis. \
Question: Which objects will you put on the machine?
Answer: From 1-9, I will put 5.
Your answer is wrong.
Round 7:
5 are on the machine, and the machine is not activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are None.
Now design your own trial, you can put some of the objects on the machine to validate your hypothesis. \
Question: Which objects will you put on the machine?
Answer: From 1-9, I will put 6.
Your answer is wrong.
Round 8:
6 are on the machine, and the machine is not activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are None.
Now design your own trial, you can put some of the objects on the machine to validate your hypothesis. \
Question: Which objects will you put on the machine?
Answer: From 1-9, I will put 7.
Your answer is wrong.
Round 9:
7 are on the machine, and the machine is not activated.
Question: Which objects can activate the machine?
Answer: From 1-9, objects that can activate the machine are None."""


def test_show_dialogue_prints_the_appendix_d_transcript(tmp_path, monkeypatch):
    from causalplay.cli import app

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    env = make_batch("causalplay/IVRE-v0", 1, seed=[0, 0])
    env.reset()  # the episode the transcript above was written from
    assert env.blickets[0].nonzero().flatten().tolist() == [0, 1]
    assert [env.panels[0, k].nonzero().flatten().tolist() for k in range(4)] == [[7], [1, 5, 7], [3, 5, 8], [1, 3, 7]]
    assert env.lit[0, :4].tolist() == [False, True, False, True]
    out = tmp_path / "run"
    with StubServer(_panel_script) as srv:
        spec = llm_spec(srv.url, template="ivre")
        res = CliRunner().invoke(app, [
            "bench", "--env", "causalplay/IVRE-v0", "--agents", f"eig,{spec}", "--episodes", "1", "--seeds", "1",
            "--executor", "serial", "--out", str(out), "--show-dialogue", "1"])
    assert res.exit_code == 0, res.output
    text = res.output
    head = f"--- causalplay/IVRE-v0 | {spec} | seed 0 | episode 0 | not solved ---\n"
    assert head in text
    printed = text.split(head)[1]
    assert printed.splitlines()[: len(EXPECTED_TRANSCRIPT.splitlines())] == EXPECTED_TRANSCRIPT.splitlines()
    # the records: per-episode columns, the dialogue file, the summary -- and no key anywhere
    df = pd.read_csv(out / "episodes.csv")
    row = df[df["agent"] == spec].iloc[0]
    assert row["llm_calls"] == 16 and row["parse_failures"] == 0 and row["prompt_tokens"] > 0
    assert np.isnan(df[df["agent"] == "eig"].iloc[0]["llm_calls"])
    results = json.loads((out / "results.json").read_text())
    assert [r["parse_failure_rate"] for r in results if r["agent"] == spec] == [0.0]
    assert "parse failures 0.00% of answers" in text
    files = [f for f in out.rglob("*") if f.is_file() and f.suffix in (".csv", ".json", ".jsonl")]
    assert any(f.name.endswith(".dialogues.jsonl") for f in files)
    for f in files:
        assert SECRET not in f.read_text()
    assert SECRET not in text
    dialogue = json.loads(next(f for f in files if f.name.endswith(".dialogues.jsonl")).read_text().splitlines()[0])
    assert format_transcript(dialogue["messages"]) == EXPECTED_TRANSCRIPT


# -- the client: cache keys, timeouts, the concurrency limit -------------------------------------------------------
def test_cache_key_is_model_messages_temperature_endpoint(tmp_path):
    from causalplay.agents.llm import ChatClient

    msgs = [{"role": "user", "content": "Round 1: which objects?"}]
    with StubServer(lambda m, b: "1.") as s1, StubServer(lambda m, b: "2.") as s2:
        c = ChatClient("stub", s1.url, cache=tmp_path)
        assert c.complete(msgs).text == "1." and c.complete(msgs).cached
        assert len(s1.requests) == 1
        c.complete(msgs, temperature=0.5)
        ChatClient("other", s1.url, cache=tmp_path).complete(msgs)
        c.complete(msgs + [{"role": "user", "content": "Your answer is wrong."}])
        assert len(s1.requests) == 4  # temperature, model and messages are all part of the key
        assert ChatClient("stub", s2.url, cache=tmp_path).complete(msgs).text == "2."  # and the endpoint
        assert len(s2.requests) == 1


def test_timeouts_are_retried_then_reported():
    import time

    def slow(m, b):
        time.sleep(1.0)
        return "1."

    from causalplay.agents.llm import ChatClient

    with StubServer(slow) as srv:
        c = ChatClient("stub", srv.url, timeout=0.2, max_retries=1, backoff=0.001)
        with pytest.raises(LLMError, match="after 2 tries; last failure: ReadTimeout"):
            c.complete([{"role": "user", "content": "hi"}])
        assert len(srv.requests) == 2


def test_concurrency_limit_is_respected(monkeypatch):
    import threading
    import time

    import causalplay.agents.llm.client as client

    waited = []  # the client waits through the polling helper, so Ctrl-C stops a long batch promptly

    def recording_wait(f, *a, **kw):
        waited.append(f)
        return client_wait(f, *a, **kw)

    client_wait = client.wait_result
    monkeypatch.setattr(client, "wait_result", recording_wait)

    state = {"now": 0, "max": 0}
    lock = threading.Lock()

    def model(m, b):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        return "1."

    with StubServer(model) as srv:
        agent = make_agent(llm_spec(srv.url, template="ivre", concurrency=3), seed=0)
        play(agent, "causalplay/IVRE-v0", 5, [0, 0])
    assert 2 <= state["max"] <= 3
    assert waited


def test_a_server_that_echoes_the_key_does_not_leak_it_into_errors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    from causalplay.agents.llm import ChatClient

    with StubServer(lambda m, b: StubReply(f"Incorrect API key provided: {SECRET} (sk-proj-****abcd)", 401)) as srv:
        with pytest.raises(LLMError, match="answered HTTP 401") as err:
            ChatClient("stub", srv.url).complete([{"role": "user", "content": "hi"}])
    assert SECRET not in str(err.value) and "abcd" not in str(err.value)
