"""The figure of docs/concepts.md: an ideal learner's beliefs through backward blocking, and the EIG of every next
trial when the rule is uncertain.

Run from the repository root: ``python docs/figures/concepts.py`` writes ``docs/img/concepts.png``. Everything in
it is exact (``causalplay.infer`` enumerates every hypothesis), so the figure is the same on every machine.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import causalplay  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "img" / "concepts.png"
NAMES = "ABC"


def main(out: Path = OUT) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)

    # (a) backward blocking, disjunctive rule, each object a blicket with prior 1/3
    steps = [("prior", []), ("A and B: lit", [([0, 1], True)]), ("then A alone: lit", [([0, 1], True), ([0], True)])]
    probs = np.array([causalplay.infer(h, n_objects=2, rules="disjunctive").blicket_prob for _, h in steps])
    x = np.arange(len(steps))
    for i in range(2):
        left.bar(x + (i - 0.5) * 0.35, probs[:, i], width=0.35, label=f"object {NAMES[i]}")
    left.set_xticks(x, [s for s, _ in steps])
    left.set_ylim(0, 1.05)
    left.set_ylabel("P(blicket | evidence)")
    left.set_title("(a) backward blocking: B falls back to its prior")
    left.legend(frameon=False)

    # (b) after "A and B together lit" with the rule unknown: which next trial is most informative?
    b = causalplay.infer([([0, 1], True)], n_objects=3)
    trials = [t for k in (1, 2, 3) for t in itertools.combinations(range(3), k)]
    eig = b.eig([list(t) for t in trials])
    labels = ["".join(NAMES[i] for i in t) for t in trials]
    best = [i for i in range(len(trials)) if eig[i] >= eig.max() - 1e-9]  # ties: every trial within 1e-9 bits
    right.bar(range(len(trials)), eig, color=["C3" if i in best else "C7" for i in range(len(trials))])
    right.set_xticks(range(len(trials)), labels)
    right.set_xlabel("next trial (objects on the machine)")
    right.set_ylabel("EIG (bits)")
    right.set_title("(b) after 'A and B: lit', rule unknown: " + " or ".join(labels[i] for i in best) + " alone")

    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main())
