"""An independent, deliberately naive reference: pure-Python enumeration with the rules written out by hand.

Shares no code with causalplay (no torch, no causalplay.core.rules), so agreement is evidence, not tautology.
"""

from __future__ import annotations

import itertools
import math


def lit_prob(rule, k: int, noise: float) -> float:
    """P(lit | k blickets on). ``rule``: "disjunctive", "conjunctive", "threshold<m>", or a tuple
    ``("sigmoid", gain, bias, own_noise)`` -- Lucas & Griffiths' 1 / (1 + exp(-gain (k - bias))), flipped with
    its own noise (a sigmoid rule object keeps its noise; ``noise`` applies to the named rules only)."""
    if isinstance(rule, tuple):
        _, gain, bias, own = rule
        f = 1.0 / (1.0 + math.exp(-gain * (k - bias)))
        return (1 - own) * f + own * (1 - f)
    m = {"disjunctive": 1, "conjunctive": 2}.get(rule) or int(rule[len("threshold"):])
    return 1 - noise if k >= m else noise


def prior_of(bits, p=None, counts=None) -> float:
    n, c = len(bits), sum(bits)
    if counts is None:
        return p**c * (1 - p) ** (n - c)
    total = sum(counts.values())
    return counts.get(c, 0) / total / math.comb(n, c)


def posterior(history, n, rules, rule_prior=None, p=None, counts=None, noise=0.0):
    """Dict (bits, rule) -> posterior probability; history = [(indices, lit), ...]."""
    rule_prior = rule_prior or [1 / len(rules)] * len(rules)
    w = {}
    for bits in itertools.product([0, 1], repeat=n):
        for r, rp in zip(rules, rule_prior, strict=True):
            x = rp * prior_of(bits, p, counts)
            for trial, lit in history:
                q = lit_prob(r, sum(bits[i] for i in trial), noise)
                x *= q if lit else 1 - q
            w[(bits, r)] = x
    z = sum(w.values())
    return {h: v / z for h, v in w.items()}


def marginals(post, n, rules):
    bp = [sum(v for (bits, _), v in post.items() if bits[i]) for i in range(n)]
    rp = {r: sum(v for (_, rr), v in post.items() if rr == r) for r in rules}
    return bp, rp


def _h(ps) -> float:
    return -sum(p * math.log2(p) for p in ps if p > 0)


def eig(post, trial, target, noise=0.0) -> float:
    """I(Y; target) in bits for one candidate trial, from the joint table."""
    joint = {}
    for (bits, r), v in post.items():
        q = lit_prob(r, sum(bits[i] for i in trial), noise)
        g = {"joint": (bits, r), "blickets": bits, "rule": r}[target]
        for y, py in ((1, q), (0, 1 - q)):
            joint[(g, y)] = joint.get((g, y), 0.0) + v * py
    pg, py = {}, {}
    for (g, y), v in joint.items():
        pg[g] = pg.get(g, 0.0) + v
        py[y] = py.get(y, 0.0) + v
    return _h(py.values()) + _h(pg.values()) - _h(joint.values())
