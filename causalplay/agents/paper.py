"""The IVRE paper's baselines as the public IVRE code runs them (Table 2 of Xu, Jiang et al., 2023), batched.

These agents reproduce the *behaviour* of the public code (``mjtsu/IVRE``, ``src/baselines/heuristic.py``,
``src/baselines/get_trial.py``, ``src/baselines/opt_models/score_based.py``), quirks included wherever a paper
number depends on them, so that our table can be set beside the paper's. The code is ours (torch, ``B``
episodes at once); only the facts come from theirs. Our cleaner variants live in
:mod:`causalplay.agents.heuristics` and :mod:`causalplay.agents.notears` under ``*-exact`` / ``random-uniform``.

How the public code's actions reach its env, and how ours reproduce it
---------------------------------------------------------------------
The public agents return actions in ``[-1, 1]``; the env maps them back with ``a / 2 + 0.5``, clips to
``[0, 1]`` and stores the belief in a **float32** array, which it then scores (solved iff every
``|truth - belief| < 0.5``). Object ``i`` is in the trial iff the mapped value is ``> 0.5``. Our env takes
``[0, 1]`` float64 actions and applies the same tests, so every agent here returns the belief the public env
would have stored, i.e. already rounded to float32 (:func:`as_public_belief`). For beliefs this matters in
exactly one place: the search agents' ``1/2 - 2.5e-8`` (see :class:`PaperSearchNaiveAgent`).

Their step bookkeeping matches ours (see :mod:`causalplay.envs.core`): the observation before action ``t``
shows panel ``t``; the belief of action ``t`` is scored against the panels ``1..t``; the trials of actions
``C..T-1`` run. Agents here never read reward constants.
"""

from __future__ import annotations

import numpy as np
import torch

from causalplay.core.beliefs import BatchBeliefs
from causalplay.core.rules import Rule
from causalplay.core.ties import argmin_tol, snap

from .base import BlicketInfo, MemoryAgent
from .heuristics import SearchAgent

__all__ = ["PaperRandomAgent", "PaperBayesAgent", "PaperNaiveAgent", "PaperSearchRandomAgent",
           "PaperSearchNaiveAgent", "PaperNotearsAgent", "as_public_belief", "search_frequency",
           "bernoulli_nb_single_object", "first_of_top_values", "EPS"]

#: ``src/const.py``: added to the count of consistent assignments before dividing (search agents).
EPS = 1e-7


def as_public_belief(belief: torch.Tensor) -> torch.Tensor:
    """The belief the public env stores for a ``[0, 1]``-scale belief: the agent sends ``2 b - 1``, the env
    computes ``a / 2 + 0.5`` (float64), clips to [0, 1] and casts to float32. Returned as float64."""
    b = belief.to(torch.float64)
    a = b * 2.0 - 1.0
    return (a / 2.0 + 0.5).clamp(0.0, 1.0).to(torch.float32).to(torch.float64)


def search_frequency(post: BatchBeliefs, rules: tuple[Rule, ...], eps: float = EPS) -> torch.Tensor:
    """``[B, N]`` float64: per object, (consistent assignments containing it) / (consistent assignments + EPS).

    This is the public search agents' belief (``heuristic.py``: enumerate all ``2^N`` assignments, keep those
    that reproduce every panel, count). With a deterministic rule it equals ``k / (c + EPS)`` with ``c`` the
    number of consistent (set, rule) hypotheses and ``k`` those that contain the object; the EPS makes an exact
    ``1/2`` come out as ``1/2 - 5e-8 / c``. With a noisy rule no assignment is ever inconsistent; we then use
    the posterior marginal times ``c / (c + EPS)`` with ``c`` all hypotheses (the same formula, generalised).
    """
    m = post.marginals().to(torch.float64)
    if all(r.deterministic for r in rules):
        c = torch.isfinite(post.log_w).sum(-1, keepdim=True).to(torch.float64)
        k = torch.round(m * c)  # counts are integers; the marginal carries only rounding error
    else:
        c = torch.full((m.shape[0], 1), float(post.log_w.shape[-1]), dtype=torch.float64)
        k = m * c
    return k / (c + eps)


def first_of_top_values(values: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """The public Bayes agent's belief from per-object probabilities ``values [B, N]`` and counts ``k [B]``.

    It takes the ``k`` largest values (``heapq.nlargest``, with repeats) and, for each, marks
    ``values.index(v)``, the *first* object holding that value. Objects that tie with an earlier one are never
    marked, so ties leave fewer than ``k`` objects marked. Returns bool ``[B, N]``: object ``i`` is marked iff
    no earlier object has the same value and fewer than ``k`` values are strictly larger than its own.
    """
    B, N = values.shape
    values = snap(values, 1e-12)  # values equal in exact arithmetic may differ in the last bits of the kernels
    eq = values[:, :, None] == values[:, None, :]  # [B, i, j]
    earlier = torch.ones(N, N, dtype=torch.bool).tril(-1)  # j < i
    first = ~(eq & earlier).any(-1)
    larger = (values[:, None, :] > values[:, :, None]).sum(-1)  # [B, i]: values strictly above value i
    return first & (larger < k[:, None])


def bernoulli_nb_single_object(panels: torch.Tensor, lits: torch.Tensor, use: torch.Tensor,
                               unlit_weight: int = 10, alpha: float = 1.0) -> torch.Tensor:
    """``P(lit | only object i on)`` from a Bernoulli naive-Bayes classifier, as the public Bayes agent fits it.

    Training rows (``get_trial.py``, ``bayes_trial_input``): one all-zero row labelled unlit, one all-one row
    labelled lit, then every used panel with its outcome, an unlit panel repeated ``unlit_weight`` (10) times.
    The classifier is scikit-learn's ``BernoulliNB`` with its defaults: Laplace smoothing ``alpha = 1``
    (``p_cj = (n_cj + alpha) / (n_c + 2 alpha)``) and the class prior from the row counts.

    Parameters
    ----------
    panels : bool ``[B, T, N]``
    lits : bool ``[B, T]``
    use : bool ``[B, T]`` -- which panels enter the fit.

    Returns
    -------
    float64 ``[B, N]``: the classifier's probability of "lit" for the one-hot query of each object.
    """
    x = panels.to(torch.float64)
    lit = (lits & use).to(torch.float64)
    off = (~lits & use).to(torch.float64) * unlit_weight
    n1 = 1.0 + lit.sum(-1, keepdim=True)  # [B, 1]: the all-one pseudo row + lit panels
    n0 = 1.0 + off.sum(-1, keepdim=True)
    f1 = 1.0 + (x * lit[..., None]).sum(1)  # [B, N]: the all-one row has every object on
    f0 = (x * off[..., None]).sum(1)
    p1 = (f1 + alpha) / (n1 + 2 * alpha)
    p0 = (f0 + alpha) / (n0 + 2 * alpha)
    prior1, prior0 = torch.log(n1 / (n0 + n1)), torch.log(n0 / (n0 + n1))
    # joint log-likelihood of the one-hot query e_i: log p_ci + sum_{j != i} log(1 - p_cj)
    jll1 = prior1 + torch.log1p(-p1).sum(-1, keepdim=True) + torch.log(p1) - torch.log1p(-p1)
    jll0 = prior0 + torch.log1p(-p0).sum(-1, keepdim=True) + torch.log(p0) - torch.log1p(-p0)
    return torch.sigmoid(jll1 - jll0)


def _bernoulli_trials(B: int, N: int, gen: torch.Generator) -> torch.Tensor:
    """Each object in the trial with probability 1/2 (their ``N(0, 1) > 0`` / ``N(0.5, 0.1) > 0.5``)."""
    return (torch.rand(B, N, generator=gen, dtype=torch.float64) < 0.5).double()


def _in_order_trials(B: int, N: int, t: int) -> torch.Tensor:
    """The public code's single objects in index order: object ``(t - 2) mod N`` at action ``t``."""
    return torch.nn.functional.one_hot(torch.full((B,), (t - 2) % N), N).double()


class PaperRandomAgent(MemoryAgent):
    """**Random** (paper). Knows nothing.

    Public code (``get_trial.py``, ``random_trial_input``): belief and trial are ``N(0, 1)`` draws on the
    ``[-1, 1]`` action scale, so after the env's mapping the belief is ``clip(1/2 + z / 2, 0, 1)`` (a third of
    the values sit at exactly 0 or 1) and each object is in the trial with probability 1/2. Acc is the same as
    with uniform beliefs (each object right with probability 1/2); the JSD penalty, and so R, is not.

    ``belief="binary"`` states 0 or 1 per object (a fair coin each). No public code does this; it is our
    reading of the EST paper's Random row, whose four numbers it reproduces on ``causalplay/EST-v1`` while the
    clipped normal misses its R by 1.3 (see ``docs/benchmark.md``).
    """

    name = "random"

    def __init__(self, seed: int = 0, belief: str = "normal"):
        super().__init__(seed)
        if belief not in ("normal", "binary"):
            raise ValueError(f"belief must be 'normal' or 'binary', got {belief!r}")
        self.belief_mode = belief

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        self.remember(obs)
        N = self.task.n_objects
        z = torch.randn(self.B, N, generator=self.gen, dtype=torch.float64)
        trial = (torch.randn(self.B, N, generator=self.gen, dtype=torch.float64) > 0).double()
        belief = as_public_belief(0.5 + z / 2.0) if self.belief_mode == "normal" else (z > 0).double()
        return torch.cat([trial, belief], 1)


class PaperBayesAgent(MemoryAgent):
    """**Bayes** (paper): Bernoulli naive-Bayes classifier over panels, random trials. Knows the count.

    Belief (public code, ``get_trial.py``, ``bayes_trial_input``): fit :func:`bernoulli_nb_single_object` on
    the panels, score each object by ``P(lit | only it on)``, and mark the top-``count`` objects as blickets
    with the public code's tie quirk (:func:`first_of_top_values`: an object tying an earlier one is never
    marked) -- belief 1 for marked objects, 0 for the rest. Two facts of that code are kept because the
    paper's numbers come from it: the fit uses the panels *before* the current one (its loop runs over
    ``range(stepcnt)``, so the panel just shown is not used yet; ``lag=True``), and the count is the true one.

    Trials: the paper describes Bayes with random trials; the public code instead tests single objects in
    index order (object ``(t - 2) mod N`` at action ``t``). We follow the paper: each object in the trial with
    probability 1/2 (``trials="random"``); ``trials="in-order"`` gives the public code's policy.

    ``belief="proba"`` states the classifier's probabilities themselves instead of the top-count 0/1 set. No
    public code does this; it is our reading of the EST paper's Bayes row, whose context R (-4.30) no 0/1
    belief can reach on EST and which this variant reproduces (see ``docs/benchmark.md``).
    """

    name = "bayes"

    def __init__(self, seed: int = 0, trials: str = "random", lag: bool = True, belief: str = "top-count"):
        super().__init__(seed)
        if trials not in ("random", "in-order"):
            raise ValueError(f"trials must be 'random' or 'in-order', got {trials!r}")
        if belief not in ("top-count", "proba"):
            raise ValueError(f"belief must be 'top-count' or 'proba', got {belief!r}")
        self.trials, self.lag, self.belief_mode = trials, bool(lag), belief

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        _, _, count = self.remember(obs)
        N, t = self.task.n_objects, self.t
        use = torch.ones_like(self.lits)
        if self.lag:
            use[:, -1] = False
        p = bernoulli_nb_single_object(self.panels, self.lits, use)
        belief = first_of_top_values(p, count).double() if self.belief_mode == "top-count" else as_public_belief(p)
        trial = _bernoulli_trials(self.B, N, self.gen) if self.trials == "random" else _in_order_trials(self.B, N, t)
        return torch.cat([trial, belief], 1)


class PaperNaiveAgent(MemoryAgent):
    """**Naive** (paper): nudged beliefs carried across steps; re-tests suspected blickets. Knows nothing.

    Public code (``get_trial.py``, ``lazy_trial_input``), per episode:

    * beliefs start at random values ``k / 100``, ``k`` uniform in ``40..60`` (the draw of the first action;
      afterwards the belief the env stored at the previous step -- float32 -- is carried);
    * the panel just shown nudges the beliefs of the objects on it: lit -> ``+0.2`` (capped at ``0.98``) for
      objects with belief strictly between 0 and 0.99, or ``1`` if the object was alone; unlit -> ``-0.2``
      (floored at 0), or ``0`` if alone;
    * from the 4th action on (``t >= 4``; earlier trials are not run anyway) the trial is the first object
      (index order) with belief strictly between 0.2 and 0.99, alone; none -> an empty trial.

    The arithmetic is the public code's: nudges in float64 on the float32 value carried, the result rounded to
    float32 by the env (:func:`as_public_belief`). A belief of exactly 1/2 is wrong either way.
    """

    name = "naive"

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        N = task.n_objects
        k = torch.randint(40, 61, (self.B, N), generator=self.gen)
        self.belief = k.double() / 100.0

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        on, lit, _ = self.remember(obs)
        b = self.belief
        alone = (on.sum(-1) == 1)[:, None]
        lit_, off = lit[:, None] & on, ~lit[:, None] & on
        up = torch.where(alone, torch.ones_like(b), torch.clamp(b + 0.2, max=0.98))
        down = torch.where(alone, torch.zeros_like(b), torch.clamp(b - 0.2, min=0.0))
        b = torch.where(lit_ & (b > 0) & (b < 0.99), up, b)
        b = torch.where(off, down, b)
        b = as_public_belief(b)
        self.belief = torch.where(active[:, None], b, self.belief)
        N = self.task.n_objects
        trial = torch.zeros(self.B, N, dtype=torch.float64)
        if self.t >= 4:
            suspect = (b > 0.2) & (b < 0.99)
            first = suspect.double().argmax(-1)  # first True (argmax returns the first maximum)
            trial[torch.arange(self.B), first] = suspect.any(-1).double()
        return torch.cat([trial, b], 1)


class _PaperSearchAgent(SearchAgent):
    def __init__(self, seed: int = 0, eps: float = EPS):
        super().__init__(seed)
        if not 0.0 <= eps < 1e-3:
            raise ValueError(f"eps must be in [0, 1e-3), got {eps!r}")
        self.eps = float(eps)

    def frequency(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        self.observe(obs, active)
        return search_frequency(self.post, self.task.rules, self.eps)


class PaperSearchRandomAgent(_PaperSearchAgent):
    """**Search-Random** (paper): the search belief of :class:`PaperSearchNaiveAgent` with random trials.
    Knows the rule; ignores the count.

    Public code (``heuristic.py``, the commented-out "for random trial" line): trial values ``N(0.5, 0.1)``,
    so each object is in the trial with probability 1/2.
    """

    name = "search-random"

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        f = self.frequency(obs, active)
        trial = _bernoulli_trials(self.B, self.task.n_objects, self.gen)
        return torch.cat([trial, as_public_belief(f)], 1)


class PaperSearchNaiveAgent(_PaperSearchAgent):
    """**Search-Naive** (paper): frequency of each object over the assignments consistent with every panel
    seen, single-object trial on the least certain object. Knows the rule; ignores the count.

    Public code (``heuristic.py``, ``heuristicSolver``): belief = (consistent assignments containing the
    object) / (consistent assignments + EPS), ``EPS = 1e-7`` (:func:`search_frequency`); trial = the object
    with the smallest ``|belief - 1/2|``, ties to the lowest index (``np.argsort`` is stable for 9 values).

    The quirk kept on purpose: an object with frequency exactly 1/2 out of ``c = 2`` consistent assignments
    (a single unconstrained object left) gets ``1/2 - 2.5e-8``, which the env's float32 cast keeps below 1/2,
    so it is scored "not a blicket" -- right whenever it is not one -- instead of "wrong either way". With
    ``c >= 4`` the cast rounds it back to exactly 1/2. This alone moves IVRE Acc from 74% to the paper's 83%.
    ``eps=0`` drops the quirk (every exact 1/2 stays 1/2, wrong either way): the EST paper's rows, which come
    from earlier code than the public one, match that setting (see ``docs/benchmark.md``).
    """

    name = "search-naive"

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        f = self.frequency(obs, active)
        # lowest index among ties; 1e-12 keeps the EPS quirk's 5e-8 / c offsets apart but not rounding noise
        pick = argmin_tol((f - 0.5).abs(), tol=1e-12)
        trial = torch.nn.functional.one_hot(pick, self.task.n_objects).double()
        return torch.cat([trial, as_public_belief(f)], 1)


class PaperNotearsAgent(MemoryAgent):
    """**NOTEARS** (paper): logistic linear NOTEARS on the panels, at most one object believed a blicket.
    Knows nothing (the count it is given is used only as a loop bound, see below).

    Public code (``get_trial.py``, ``opt_trial_input``; ``opt_models/score_based.py``, ``NoTearsLinear``):

    * data: one row per panel shown so far (``N`` objects 0/1 and ``lit``), all variables binary;
    * fit: NOTEARS (Zheng et al. 2018) with the logistic loss for every column, ``lambda1 = 0.1``, the
      polynomial acyclicity ``h(W) = tr((I + W*W/d)^d) - d`` (Yu et al. 2019), augmented Lagrangian
      (``rho`` x10 until ``h`` shrinks by 4, at most 100 dual steps, ``h_tol = 1e-8``, ``rho_max = 1e16``),
      L-BFGS-B on the positive/negative split of ``W`` with a zero diagonal; no weight threshold;
    * query: for each object ``i``, the value ``v in [0, 1]`` of ``lit`` minimising the logistic loss of the
      row ``[e_i, v]`` under ``W`` (L-BFGS-B from 0.5); ``v > 0.5`` predicts a blicket;
    * belief: the public loop marks only the **first** predicted blicket (its inner ``while t < count`` loop
      uses up the count on that object), belief 1 for it and 0 for every other object;
    * trials: single objects in index order, object ``(t - 2) mod N`` at action ``t``.

    One scipy fit per episode per step: the slow agent of the benchmark.
    """

    name = "notears"

    def __init__(self, seed: int = 0, lambda1: float = 0.1, max_iter: int = 100, h_tol: float = 1e-8,
                 rho_max: float = 1e16):
        super().__init__(seed)
        self.lambda1, self.max_iter, self.h_tol, self.rho_max = lambda1, max_iter, h_tol, rho_max

    def reset(self, task: BlicketInfo, obs: torch.Tensor) -> None:
        super().reset(task, obs)
        self.belief = torch.zeros(self.B, task.n_objects, dtype=torch.float64)

    def fit(self, X: np.ndarray) -> np.ndarray:
        """``W [d, d]`` from logistic NOTEARS on the binary data ``X [n, d]`` (see the class docstring)."""
        from scipy.optimize import minimize
        from scipy.special import expit

        n, d = X.shape

        def h_of(W: np.ndarray) -> tuple[float, np.ndarray]:
            M = np.eye(d) + W * W / d
            E = np.linalg.matrix_power(M, d - 1)
            return float((E.T * M).sum() - d), E.T * W * 2

        def objective(w: np.ndarray, rho: float, alpha: float) -> tuple[float, np.ndarray]:
            W = (w[: d * d] - w[d * d:]).reshape(d, d)
            XW = X @ W
            loss = (np.logaddexp(0, XW) - X * XW).sum() / n
            g_loss = X.T @ (expit(XW) - X) / n
            h, g_h = h_of(W)
            g = g_loss + (rho * h + alpha) * g_h
            obj = loss + 0.5 * rho * h * h + alpha * h + self.lambda1 * w.sum()
            return obj, np.concatenate([g + self.lambda1, -g + self.lambda1], axis=None)

        off_diag = [(0.0, 0.0) if i == j else (0.0, None) for _ in range(2) for i in range(d) for j in range(d)]
        w, rho, alpha, h = np.zeros(2 * d * d), 1.0, 0.0, np.inf
        for _ in range(self.max_iter):
            w_new, h_new = w, h
            while rho < self.rho_max:
                w_new = minimize(objective, w, args=(rho, alpha), method="L-BFGS-B", jac=True,
                                 bounds=off_diag).x
                h_new, _ = h_of((w_new[: d * d] - w_new[d * d:]).reshape(d, d))
                if h_new > 0.25 * h:
                    rho *= 10
                else:
                    break
            w, h = w_new, h_new
            alpha += rho * h
            if h <= self.h_tol or rho >= self.rho_max:
                break
        return (w[: d * d] - w[d * d:]).reshape(d, d)

    @staticmethod
    def query(W: np.ndarray) -> np.ndarray:
        """Per object ``i``, the ``lit`` value in [0, 1] that best fits the row ``[e_i, lit]`` under ``W``."""
        from scipy.optimize import minimize
        from scipy.special import expit

        d = W.shape[0]
        N = d - 1
        Q = np.eye(N)

        def objective(v: np.ndarray) -> tuple[float, np.ndarray]:
            X = np.concatenate([Q, v[:, None]], 1)
            M = X @ W
            loss = (np.logaddexp(0, M) - X * M).sum() / N
            grad = ((expit(M) - X) @ W[-1, :] - M[:, -1]) / N
            return loss, grad

        return minimize(objective, np.full(N, 0.5), method="L-BFGS-B", jac=True, bounds=[(0.0, 1.0)] * N).x

    def belief_one(self, panels: np.ndarray, lit: np.ndarray) -> np.ndarray:
        """Belief (0/1 per object) from one episode's panels ``[t, N]`` and outcomes ``[t]``."""
        X = np.concatenate([panels, lit[:, None]], 1).astype(np.float64)
        pred = self.query(self.fit(X)) > 0.5
        out = np.zeros(panels.shape[1])
        if pred.any():
            out[int(np.argmax(pred))] = 1.0  # only the first predicted blicket (the public loop's quirk)
        return out

    def act(self, obs: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        self.remember(obs)
        panels, lits = self.panels.numpy(), self.lits.numpy()
        for b in torch.nonzero(active).flatten().tolist():
            self.belief[b] = torch.as_tensor(self.belief_one(panels[b], lits[b]))
        return torch.cat([_in_order_trials(self.B, self.task.n_objects, self.t), self.belief.clone()], 1)
