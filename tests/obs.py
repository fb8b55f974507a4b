"""Hand-made panel observations for agent tests (the ``"panel"`` layout of :mod:`causalplay.envs.core`)."""

import torch


def panel_obs(on, lit, count=1, t=1, horizon=10, n=None):
    """One row ``[1, N + 4]``: objects ``on``, machine ``lit``, announced ``count``, panel ``t`` of ``horizon``."""
    n = len(on) if n is None else n
    o = torch.zeros(1, n + 4)
    o[0, :n] = torch.as_tensor(on, dtype=torch.float32)
    o[0, n] = float(lit)
    o[0, n + 1] = count / n
    o[0, n + 2] = t / horizon
    return o
