"""Reinforcement-learning agents for the Blicket tasks (the ``rl`` extra: Stable-Baselines3, sb3-contrib).

* :mod:`~causalplay.rl.features` -- what the learner sees (history observation [+ exact posterior]).
* :mod:`~causalplay.rl.envs` -- the training vector env (action rescaling, features, episode statistics).
* :mod:`~causalplay.rl.recurrent` -- recurrent TD3 / DDPG on whole-episode replay (SB3 has none).
* :mod:`~causalplay.rl.train` -- ``causalplay train``: the loop, evaluation, checkpoints, resume, curves.

Nothing here is imported by ``import causalplay``; the benchmark agent is ``rl:path=DIR``
(:class:`causalplay.agents.rl.RLAgent`). See ``docs/rl.md``.
"""
