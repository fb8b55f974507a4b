"""causalplay.core.pyro: the NUTS driver's per-draw statistics agree with Pyro's public values (so an upgrade of
Pyro that changes the one private read, ``kernel_state``, fails here), the draws do not depend on the number of
worker processes, the SVI loop stops on a non-finite loss, and elbo_step fits a conjugate posterior in a sandbox
that leaves global state alone; bad input to both is refused by name."""

from functools import partial

import numpy as np
import pytest
import torch
from pyro.infer import MCMC, NUTS
from pyro.util import set_rng_seed

from causalplay.core.pyro import NUTSOptions, SVIOptions, kernel_state, run_nuts, run_svi


def _potential(q):
    """Neal's funnel in 2-d, v ~ N(0, 3), z ~ N(0, exp(v / 2)): minus its log density up to a constant (its neck
    makes NUTS diverge, so the divergences are checked too)."""
    v, z = q["x"][0], q["x"][1]
    return v ** 2 / 18 + 0.5 * z ** 2 * torch.exp(-v) + 0.5 * v


def _setup(chain: int):
    return _potential, {"x": torch.tensor([0.5 * chain - 0.3, 1.0], dtype=torch.float64)}


OPTS = NUTSOptions(chains=2, warmup=40, draws=30, max_tree_depth=6, target_accept=0.8, progress=False, workers=1)


def test_kernel_state_agrees_with_public_values_at_every_draw():
    """The running mean equals Pyro's public ``logging()`` value (to its 3 decimals) and ``lp`` equals minus the
    potential recomputed at the draw, in warm-up and sampling alike."""
    seen = []

    def hook(kernel, params, stage, i):
        mean, lp = kernel_state(kernel)
        assert kernel.logging()["acc. prob"] == f"{mean:.3f}"
        assert lp == pytest.approx(-float(_potential(params)), rel=1e-12, abs=1e-12)
        seen.append(stage)

    set_rng_seed(3)
    q0 = {"x": torch.tensor([0.2, -1.0], dtype=torch.float64)}
    MCMC(NUTS(potential_fn=_potential, max_tree_depth=6), num_samples=20, warmup_steps=20, initial_params=q0,
         disable_progbar=True, hook_fn=hook).run()
    assert seen.count("Warmup") == 20 and seen.count("Sample") == 20


def test_kernel_state_names_a_missing_attribute():
    class NotAKernel:
        _potential_energy_last = None

    with pytest.raises(RuntimeError, match=r"NotAKernel has no _mean_accept_prob.*kernel_state"):
        kernel_state(NotAKernel())


def _reference_chain(chain: int, seed: int):
    """Chain ``chain`` as run_nuts runs it, statistics recorded the other way: leapfrog steps by counting Pyro's
    base-tree builds (one per leapfrog step), the acceptance probability of each draw from the kernel's own."""
    potential, q0 = _setup(chain)
    set_rng_seed(seed + 1000 * chain)
    kernel = NUTS(potential_fn=potential, target_accept_prob=OPTS.target_accept, max_tree_depth=OPTS.max_tree_depth)
    steps, n_steps, means = [0], [], []
    build = kernel._build_basetree

    def counted(*a, **kw):
        steps[0] += 1
        return build(*a, **kw)

    kernel._build_basetree = counted

    def hook(k, params, stage, i):
        if stage == "Sample":
            n_steps.append(steps[0])
            means.append(k._mean_accept_prob)
        steps[0] = 0

    mcmc = MCMC(kernel, num_samples=OPTS.draws, warmup_steps=OPTS.warmup, initial_params=q0, disable_progbar=True,
                hook_fn=hook)
    mcmc.run()
    return (mcmc.get_samples()["x"], np.array(n_steps), np.array(means),
            np.asarray(mcmc.diagnostics()["divergences"]["chain 0"], dtype=int))


def test_run_nuts_statistics_match_a_reference_chain():
    run = run_nuts(_setup, OPTS, seed=5)
    for c in range(OPTS.chains):
        x, n_steps, means, divergences = _reference_chain(c, 5)
        torch.testing.assert_close(run.samples["x"][c], x, rtol=0, atol=0)
        np.testing.assert_array_equal(run.stats["n_steps"][c], n_steps)
        np.testing.assert_array_equal(run.stats["tree_depth"][c], np.ceil(np.log2(n_steps + 1)))
        # the running mean of the per-draw acceptance probabilities is the kernel's running mean, draw by draw
        acc = run.stats["acceptance_rate"][c]
        np.testing.assert_allclose(np.cumsum(acc) / np.arange(1, len(acc) + 1), means, rtol=1e-10, atol=1e-12)
        assert ((acc >= -1e-12) & (acc <= 1 + 1e-12)).all()
        lp = np.array([-float(_potential({"x": v})) for v in x])
        np.testing.assert_allclose(run.stats["lp"][c], lp, rtol=1e-12)
        np.testing.assert_array_equal(np.flatnonzero(run.diverging[c]), divergences)
    assert run.diverging.shape == (OPTS.chains, OPTS.draws) and run.diverging.any()


def test_run_nuts_draws_do_not_depend_on_worker_processes(capsys):
    """Each chain seeds its own RNG, so one process and two give the same draws (the progress hook included)."""
    one = run_nuts(_setup, OPTS, seed=1)
    two = run_nuts(_setup, NUTSOptions(**{**OPTS.__dict__, "workers": 2, "progress": True}), seed=1)
    assert not one.in_workers and two.in_workers
    torch.testing.assert_close(one.samples["x"], two.samples["x"], rtol=0, atol=0)
    for k in one.stats:
        np.testing.assert_array_equal(one.stats[k], two.stats[k])
    in_process = run_nuts(_setup, NUTSOptions(**{**OPTS.__dict__, "progress": True}), seed=1)
    torch.testing.assert_close(one.samples["x"], in_process.samples["x"], rtol=0, atol=0)
    assert "divergent" in capsys.readouterr().err


def test_run_svi_stops_on_a_non_finite_loss():
    losses = iter([3.0, 2.0, float("nan")])
    with pytest.raises(FloatingPointError, match="loss became nan at step 2"):
        run_svi(lambda: next(losses), SVIOptions(steps=5, progress=False))
    assert run_svi(partial(float, 1.5), SVIOptions(steps=4, progress=False)) == [1.5] * 4


def _conjugate_model(x):
    import pyro
    import pyro.distributions as dist

    z = pyro.sample("z", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0))
    pyro.sample("x", dist.Normal(z, 1.0), obs=x)


def _normal_guide(x):
    import pyro
    import pyro.distributions as dist
    from torch.distributions import constraints

    loc = pyro.param("loc", torch.tensor(-1.0, dtype=torch.float64))
    scale = pyro.param("scale", torch.tensor(0.3, dtype=torch.float64), constraint=constraints.positive)
    pyro.sample("z", dist.Normal(loc, scale))


def test_elbo_step_fits_a_conjugate_posterior_and_the_sandbox_restores_global_state():
    """z ~ N(0, 1), x ~ N(z, 1), x = 2: the posterior is N(1, 1/2) in closed form, which a normal guide can match
    exactly; elbo_step (64 particles, 1500 steps, seed 0) ends within 0.03 of both moments (Monte Carlo noise of
    the gradient, decaying learning rate). pyro_sandbox leaves the Python, numpy and torch streams and the param
    store as they were."""
    import random

    import pyro
    from pyro.infer import Trace_ELBO

    from causalplay.core.pyro import elbo_step, pyro_sandbox

    pyro.clear_param_store()
    pyro.param("kept", torch.tensor(5.0))
    set_rng_seed(11)
    # numpy's legacy global stream is the one Pyro seeds (pyro.set_rng_seed), so it is the one checked
    before = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state())  # noqa: NPY002
    x = torch.tensor(2.0, dtype=torch.float64)
    opts = SVIOptions(steps=1500, lr=0.05, progress=False)
    elbo = Trace_ELBO(num_particles=64, vectorize_particles=True, max_plate_nesting=0)
    with pyro_sandbox(0):
        assert list(pyro.get_param_store().keys()) == []
        run_svi(elbo_step(_conjugate_model, _normal_guide, elbo, opts, x), opts)
        loc, scale = pyro.param("loc").item(), pyro.param("scale").item()
    assert loc == pytest.approx(1.0, abs=0.03) and scale == pytest.approx(0.5 ** 0.5, abs=0.03)
    assert random.getstate() == before[0] and np.array_equal(np.random.get_state()[1], before[1])  # noqa: NPY002
    assert torch.equal(torch.get_rng_state(), before[2])
    assert list(pyro.get_param_store().keys()) == ["kept"] and pyro.param("kept").item() == 5.0


def test_elbo_step_and_pyro_sandbox_refuse_bad_input():
    from pyro.infer import Trace_ELBO

    from causalplay.core.pyro import elbo_step, pyro_sandbox

    def fixed_guide(x):
        import pyro
        import pyro.distributions as dist

        pyro.sample("z", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0))

    with pyro_sandbox(0), pytest.raises(ValueError, match="the guide has no parameters to optimise"):
        elbo_step(_conjugate_model, fixed_guide, Trace_ELBO(), SVIOptions(steps=2), torch.tensor(2.0))
    with pytest.raises(ValueError, match=r"seed must be .*got -1"):
        with pyro_sandbox(-1):
            pass
