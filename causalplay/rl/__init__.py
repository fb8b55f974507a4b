"""Reinforcement-learning agents for the Blicket tasks (the ``rl`` extra: Stable-Baselines3, sb3-contrib).

* :mod:`~causalplay.rl.envs` -- the training vector env (action rescaling, the learner's features from
  :mod:`causalplay.agents.rl_features`, episode statistics).
* :mod:`~causalplay.rl.train` -- ``causalplay train``: the loop, evaluation, checkpoints, resume, curves.
* :mod:`~causalplay.rl.bc` -- behaviour cloning of the causal-DAG expert.

Nothing here is imported by ``import causalplay``; the benchmark agent is ``rl:path=DIR``
(:class:`causalplay.agents.rl.RLAgent`). See ``docs/rl.md``.
"""
