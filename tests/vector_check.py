"""The native vector env against B single envs with the same seeds (NEXT_STEP autoreset), step by step."""

import numpy as np
import pytest


def assert_vector_equals_singles(venv, singles, seed: int, steps: int) -> None:
    """Reset ``venv`` with ``seed`` and single env ``i`` with ``seed + i``, play the same random actions, and
    require equal observations, terminations and rewards; every row must go through an autoreset."""
    B = len(singles)
    vobs, _ = venv.reset(seed=seed)
    np.testing.assert_array_equal(vobs, np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(singles)]))
    rng = np.random.default_rng(0)
    ended, n_ends = [False] * B, 0
    for _ in range(steps):
        a = rng.random((B, venv.single_action_space.shape[0])).astype(np.float32)
        vobs, vr, vterm, vtrunc, _ = venv.step(a)
        for i, e in enumerate(singles):
            if ended[i]:  # NEXT_STEP autoreset: this step resets the row, reward 0, not done
                o, _ = e.reset()
                r, te, tr = 0.0, False, False
                ended[i] = False
            else:
                o, r, te, tr, _ = e.step(a[i])
                ended[i] = te or tr
                n_ends += ended[i]
            np.testing.assert_array_equal(vobs[i], o)
            assert (vterm[i], vtrunc[i]) == (te, tr)
            # rewards: the oracle's float64 matmul kernel depends on the batch size -> last-digit differences
            assert vr[i] == pytest.approx(r, abs=1e-12)
    assert n_ends >= B  # every row went through at least one autoreset
