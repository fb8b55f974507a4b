"""A physics scene with uncertain physical parameters and noisy dynamics (the ``ssup`` learner's internal model).

``P`` particles (hypotheses about the world's physics) each simulate the scene plus an action's balls with a
simulator the caller passes in (``sim``; the agents pass :func:`causalplay.envs.physics_sim.simulate`, which
this layer may not import); the observed trajectory of the scene's dynamic bodies is a noisy
reading of the simulated one, and the observed outcome a noisy reading of the simulated success. The
simulator is a black box (no gradients): inference is likelihood weighting over particles
(:func:`log_weights`), as in Battaglia, Hamrick & Tenenbaum (2013) and Allen, Smith & Tenenbaum (2020).

Sample sites
------------
==============  ====================================================  ============  =====================
site            distribution                                          support       shape
==============  ====================================================  ============  =====================
``friction``    ``Uniform(prior.friction)``                           interval      ``[P]``
``elasticity``  ``Uniform(prior.elasticity)``                         interval      ``[P]``
``density``     ``LogNormal(0, prior.density_scale)``: scene bodies   ``(0, inf)``  ``[P]``
                relative to the agent's ball
``traj``        ``Normal(simulated x, y, obs_sd)``, observed          real          ``[P, F, n_dyn, 2]``
``solved``      ``Bernoulli(eps + (1 - 2 eps) simulated success)``    ``{0, 1}``    ``[P]``
==============  ====================================================  ============  =====================

Plate: ``particles`` (dim -1). Position uncertainty and noisy dynamics enter each simulation through
``simulate(..., noise=prior.noise)`` (seeded per particle from ``seed``), not as sample sites.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyro
import pyro.distributions as dist
import torch
from pyro import poutine

__all__ = ["PhysicsPrior", "physics_model", "log_weights", "sample_prior", "simulate_particles"]


@dataclass(frozen=True)
class PhysicsPrior:
    """Prior ranges of the physical parameters, the dynamics noise and the observation noise."""

    friction: tuple[float, float] = (0.1, 1.0)
    elasticity: tuple[float, float] = (0.0, 0.6)
    density_scale: float = 0.5
    noise: float = 0.0
    obs_sd: float = 0.3
    eps: float = 0.05
    record: int = 10  # steps between recorded frames


def sample_prior(P: int, rng: np.random.Generator, prior: PhysicsPrior = PhysicsPrior()) -> dict[str, np.ndarray]:
    """``P`` draws of the latent sites from the prior (numpy, with the caller's generator: no global RNG)."""
    return {"friction": rng.uniform(*prior.friction, P), "elasticity": rng.uniform(*prior.elasticity, P),
            "density": np.exp(prior.density_scale * rng.standard_normal(P))}


def simulate_particles(sim, particles: dict, noise: float = 0.0, seed: int = 0, record: int = 0) -> list:
    """One rollout per particle: ``sim(friction=, elasticity=, density=, noise=, seed=, record=)`` (e.g.
    :func:`causalplay.envs.physics_sim.simulate` with the scene and balls bound; ``density`` scales the scene's
    bodies, the caller keeps the agent's balls at 1) returning an object with ``solved`` and ``traj``."""
    return [sim(friction=float(particles["friction"][i]), elasticity=float(particles["elasticity"][i]),
                density=float(particles["density"][i]), noise=noise, seed=seed + i, record=record)
            for i in range(len(particles["friction"]))]


def _positions(traj: np.ndarray, dyn: np.ndarray, frames: int) -> np.ndarray:
    """Dynamic bodies' ``x, y`` over ``frames`` frames (a run that stopped early holds its last frame)."""
    p = traj[:frames, dyn, :2]
    return np.concatenate([p, np.repeat(p[-1:], frames - len(p), 0)]) if len(p) < frames else p


def physics_model(sim, dyn: np.ndarray, traj: torch.Tensor | None = None, solved: torch.Tensor | None = None,
                  *, P: int = 16, prior: PhysicsPrior = PhysicsPrior(), seed: int = 0) -> torch.Tensor:
    """Simulate ``P`` particles with ``sim`` (see :func:`simulate_particles`); condition on ``traj [F, n_dyn, 2]``
    (observed positions of the bodies selected by the bool mask ``dyn``, each ``prior.record`` steps) and
    ``solved`` when given. Returns the simulated success ``[P]``. See the module docstring for the sites."""
    with pyro.plate("particles", P):
        f = pyro.sample("friction", dist.Uniform(*prior.friction))
        e = pyro.sample("elasticity", dist.Uniform(*prior.elasticity))
        d = pyro.sample("density", dist.LogNormal(0.0, prior.density_scale))
        parts = {"friction": f.detach().numpy(), "elasticity": e.detach().numpy(), "density": d.detach().numpy()}
        sims = simulate_particles(sim, parts, prior.noise, seed, prior.record)
        win = torch.tensor([float(s.solved) for s in sims], dtype=torch.float64)
        F = traj.shape[0] if traj is not None else min(len(s.traj) for s in sims)
        pos = torch.as_tensor(np.stack([_positions(s.traj, dyn, F) for s in sims]), dtype=torch.float64)
        pyro.sample("traj", dist.Normal(pos, prior.obs_sd).to_event(3), obs=traj)
        pyro.sample("solved", dist.Bernoulli(prior.eps + (1 - 2 * prior.eps) * win), obs=solved)
    return win


def log_weights(sim, dyn: np.ndarray, particles: dict, traj: np.ndarray, solved: bool,
                prior: PhysicsPrior = PhysicsPrior(), seed: int = 0) -> np.ndarray:
    """Log-likelihood ``[P]`` of an observed attempt (``traj [F, n_dyn, 2]``, ``solved``) under each particle:
    the model conditioned on the particles' latent values (no sampling, so no global RNG is touched)."""
    P = len(particles["friction"])
    data = {k: torch.as_tensor(np.asarray(v, dtype=np.float64)) for k, v in particles.items()}
    obs = torch.as_tensor(traj, dtype=torch.float64)
    tr = poutine.trace(poutine.condition(physics_model, data=data)).get_trace(
        sim, dyn, obs, torch.full((P,), float(solved), dtype=torch.float64), P=P, prior=prior, seed=seed)
    return sum(tr.nodes[s]["fn"].log_prob(tr.nodes[s]["value"]) for s in ("traj", "solved")).numpy()
