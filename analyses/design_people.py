"""The shipped Nexiom people's tests scored against the ideal learner, by rule, with 95% confidence intervals.

Per participant (:func:`causalplay.design.score_people`, :func:`causalplay.design.summarise`): the mean EIG (bits) of
their chosen tests and of the best test available at each choice, the mean regret, the share of their tests that were
a best one, the number of tests, and the tests until the ideal learner (seeing what they saw) puts 0.99 on one
hypothesis. Table: by rule, the mean over participants with a Student-t 95% CI (participants are the independent
units); the share identified with a Wilson 95% CI; tests to identify among those identified.

Usage::

    python analyses/design_people.py
"""

from __future__ import annotations

import pandas as pd

from causalplay.core.metrics import mean_ci, wilson_ci
from causalplay.data import load_nexiom
from causalplay.design import score_people, summarise


def main() -> None:
    people = load_nexiom()
    scores = score_people(people)
    per = summarise(scores, by=people.participants.set_index("participant")["rule"])
    rows = []
    for rule, g in [*per.groupby("rule"), ("all", per)]:
        row = {"rule": rule, "people": len(g)}
        for c in ("n_tests", "eig_bits", "best_eig_bits", "regret_bits", "frac_best"):
            m, h = mean_ci(g[c])
            row[c] = f"{m:.3f} ± {h:.3f}" if c != "n_tests" else f"{m:.1f} ± {h:.1f}"
        p, lo, hi = wilson_ci(g["tests_to_identify"].notna())
        row["identified"] = f"{p:.2f} [{lo:.2f}, {hi:.2f}]"
        m, h = mean_ci(g["tests_to_identify"].dropna())
        row["tests_to_identify"] = f"{m:.1f} ± {h:.1f}"
        rows.append(row)
    pd.set_option("display.width", 200)
    print(f"{len(scores)} tests of {len(per)} people; mean ± 95% CI half-width over people")
    print(pd.DataFrame(rows).set_index("rule").to_string())
    first = scores[scores["choice"] == 1]
    print(f"first test: EIG {first['eig_bits'].mean():.3f} bits (best {first['best_eig_bits'].mean():.3f}); "
          f"{int(first['best'].sum())} of {len(first)} people chose a best first test")


if __name__ == "__main__":
    main()
