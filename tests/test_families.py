"""Task families as registered objects (``causalplay.envs.families``): what gymnasium, ``make_batch``, the agents,
the runner and ``serve`` read comes from the one ``TaskFamily`` of each id."""

from __future__ import annotations

import causalplay.envs as envs
import gymnasium
import numpy as np
import pytest
from causalplay.envs import families as F


def test_every_registered_id_is_one_familys_and_gymnasium_has_its_entry_points():
    ids = [i for f in F.BUILTIN_FAMILIES for i in f.ids]
    assert len(ids) == len(set(ids)) and len(F.BLICKET.ids) == 13  # 10 symbolic Blicket ids and 3 pixel ids
    for fam in F.BUILTIN_FAMILIES:
        for e in fam.envs:
            assert F.family_of(e.id) is fam
            spec = gymnasium.spec(e.id)
            assert spec.entry_point == e.entry_point and spec.kwargs == dict(e.kwargs)
            assert (spec.vector_entry_point is not None) == e.vector
    # the id tuples the package exports are read from the families
    assert envs.DAG_ENV_IDS == F.DAG.ids and envs.PHYSICS_IDS == F.PHYSICS.ids and envs.SEQUENCE_IDS == F.SEQUENCE.ids
    assert set(envs.ENV_IDS) == set(F.BLICKET.ids) - set(F.PIXEL_IDS) | {"causalplay/Nexiom-v0"}


def test_unknown_id_and_family_are_named():
    with pytest.raises(ValueError, match=r"unknown environment id 'causalplay/Nope-v0'; expected one of .*IVRE-v0"):
        F.family_of("causalplay/Nope-v0")
    with pytest.raises(ValueError, match=r"unknown task family 'nope'; expected one of \['blicket', 'sequence', "
                                         r"'nexiom', 'dag', 'physics'"):
        F.get_family("nope")
    with pytest.raises(ValueError, match="is not an env of task family 'dag'"):
        F.DAG.env("causalplay/IVRE-v0")


def test_batch_entry_point_is_what_make_batch_plays():
    """make_batch(id) is the id's batch entry point with the id's kwargs: the conjunctive IVRE id's machine is
    conjunctive with 2-4 blickets, drawn as the entry point draws them from the same generator."""
    a = envs.make_batch("causalplay/IVRE-Conjunctive-v0", 50, seed=1)
    b = F.BLICKET.env("causalplay/IVRE-Conjunctive-v0").batch_factory()(50, np.random.default_rng(1))
    a.reset(), b.reset()
    assert [r.name for r in a.rules] == ["conjunctive"] and set(a.blickets.sum(1).tolist()) <= {2, 3, 4}
    assert np.array_equal(a.blickets.numpy(), b.blickets.numpy())
    # a caller's keyword arguments override the id's
    c = envs.make_batch("causalplay/IVRE-Conjunctive-v0", 50, seed=1, rule="disjunctive")
    assert [r.name for r in c.rules] == ["disjunctive"]


def test_register_family_refuses_a_clash():
    clash = F.TaskFamily("other", envs=(F.EnvEntry("causalplay/IVRE-v0", "x:y", "x:z"),), scorer="x:S", agents={},
                         default_agents=())
    with pytest.raises(ValueError, match=r"registers \['causalplay/IVRE-v0'\], which family 'blicket' \(causalplay\)"):
        F.register_family(clash)
    same_name = F.TaskFamily("dag", envs=(F.EnvEntry("x/Y-v0", "x:y", "x:z"),), scorer="x:S", agents={},
                             default_agents=())
    with pytest.raises(ValueError, match="task family 'dag' is registered already"):
        F.register_family(same_name)
    with pytest.raises(TypeError, match="default_agents must be a tuple of specs, got the string 'a,b'"):
        F.TaskFamily("t", envs=(F.EnvEntry("x/Y-v0", "x:y", "x:z"),), scorer="x:S", agents={}, default_agents="a,b")
    assert "other" not in {f.name for f in F.families(load_plugins=False)}


def test_the_runner_and_agents_read_the_family():
    from causalplay.agents import DAG_AGENTS, agent_class, agent_registry
    from causalplay.bench.physics import PhysicsFamily
    from causalplay.bench.runner import family_of

    scorer = family_of("causalplay/PhysicsB-v0")
    assert type(scorer) is PhysicsFamily and scorer.family is F.PHYSICS and scorer.name == "physics"
    assert family_of("causalplay/Physics2B-v0") is scorer  # one scorer per family and process
    assert PhysicsFamily().family is F.PHYSICS  # built without arguments: the family that names it
    assert agent_registry("dag") == DAG_AGENTS and agent_class("eig", "dag") is DAG_AGENTS["eig"]
    assert F.PHYSICS.default_episodes == 8 and F.BLICKET.default_episodes == 1000
    assert F.BLICKET.spread_label(1) == "95% CI over episodes" and F.BLICKET.spread_label(3) == "95% CI over seeds"
    assert F.PHYSICS.spread_label(1) == "SD over folds"


def test_serve_builds_the_familys_adapter():
    from causalplay.serve.tasks import BlicketServed, NexiomServed, ServedTask

    assert type(ServedTask("nexiom")) is NexiomServed and type(ServedTask("causalplay/EST-v1")) is BlicketServed
    with pytest.raises(ValueError, match="task must be one of"):
        ServedTask("causalplay/CausalDAG-v1")


def test_one_name_per_agent_across_families_and_former_names_warn():
    """The uniform baseline is `random` and the exact Bayesian experimenter `eig` in every family that has one;
    the physics family's `rand` and the DAG family's `bayes` still run, as their new names, with a warning naming
    them; Blicket's own `bayes` (the IVRE paper's naive-Bayes baseline) is untouched and does not warn."""
    import warnings

    from causalplay.agents import (
        agent_class,
        agent_label,
        agent_registry,
        canonical_agent_spec,
        make_agent,
        parse_agent_spec,
    )
    from causalplay.agents.dag import EIGDAGAgent, NotearsDAGAgent, RandomDAGAgent
    from causalplay.agents.paper import PaperBayesAgent
    from causalplay.agents.physics import RandomPhysicsAgent

    for fam, cls in (("blicket", None), ("dag", RandomDAGAgent), ("physics", RandomPhysicsAgent)):
        assert "random" in agent_registry(fam) and (cls is None or agent_class("random", fam) is cls)
    assert agent_class("eig", "dag") is EIGDAGAgent and agent_class("notears", "dag") is NotearsDAGAgent
    assert "rand" not in agent_registry("physics") and "bayes" not in agent_registry("dag")
    assert F.PHYSICS.default_agents[0] == "random" and "eig" in F.DAG.default_agents

    with pytest.warns(DeprecationWarning, match="physics agent name 'rand' is deprecated; use 'random'"):
        assert type(make_agent("rand", seed=1, family="physics")) is RandomPhysicsAgent
    with pytest.warns(DeprecationWarning, match="dag agent name 'bayes' is deprecated; use 'eig'"):
        assert parse_agent_spec("bayes:target='action'", "dag") == ("eig", {"target": "action"})
    with pytest.warns(DeprecationWarning, match="use 'eig'"):
        assert agent_class("bayes", "dag") is EIGDAGAgent
    with pytest.warns(DeprecationWarning):  # the row and spec say the new name; options kept as written
        assert canonical_agent_spec("bayes:target='action'", "dag") == "eig:target='action'"
    with pytest.warns(DeprecationWarning):
        assert agent_label("rand", "physics") == "random"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # current names, and another family's `bayes`, never warn
        assert agent_class("bayes", "blicket") is PaperBayesAgent and agent_label("bayes", "blicket") == "bayes"
        assert canonical_agent_spec("eig:target='action'", "dag") == "eig:target='action'"
    # a former name belongs to its family only, and errors list the current names
    with pytest.raises(ValueError, match=r"unknown blicket agent 'rand' in 'rand'; expected one of \[") as err:
        make_agent("rand")
    assert "'rand'" not in str(err.value).split("expected one of")[1]
    with pytest.raises(ValueError, match="unknown physics agent 'bayes'"):
        make_agent("bayes", family="physics")


def test_a_family_checks_its_former_agent_names():
    entry = (F.EnvEntry("x/Y-v0", "x:y", "x:z"),)
    fam = F.TaskFamily("t", envs=entry, scorer="x:S", agents={}, default_agents=(), deprecated_agents={"old": "new"})
    assert fam.deprecated_agents == {"old": "new"} and F.BLICKET.deprecated_agents == {}
    for bad in ({"same": "same"}, {"old": 3}):
        with pytest.raises(ValueError, match="deprecated_agents maps a former agent name to the name that replaced"):
            F.TaskFamily("t", envs=entry, scorer="x:S", agents={}, default_agents=(), deprecated_agents=bad)


def test_the_physics_random_agent_keeps_its_old_class_name_with_a_warning():
    import causalplay.agents.physics as physics

    with pytest.warns(DeprecationWarning, match="RandAgent is deprecated; use RandomPhysicsAgent"):
        assert physics.RandAgent is physics.RandomPhysicsAgent
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchAgent'"):
        physics.NoSuchAgent  # noqa: B018
