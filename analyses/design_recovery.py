"""Simulated studies: how many participants does a study need to recover the model that generated them, under the
fixed Nexiom design and under sequential adaptive design (ADO)?

Models ``positive``, ``random``, ``eig_sweep``, ``eig_sweep_single``, each fitted by SVI to the shipped Nexiom people
(seed 0) and saved to ``runs/<name>/fits/``. Each generates ``--studies`` simulated studies per arm
(:func:`causalplay.design.studies.simulate_studies`): the **fixed** arm gives every participant one of the 12 Nexiom
designs (drawn uniformly); the **ado** arm gives participant ``t`` the design of highest utility (the mutual
information between the model and their first ``--choices`` choices, under the posterior over models after the
study's first ``t`` participants) among ``design_space(4, demonstrations=1, told=(False, True))`` (384 designs, the
Nexiom ones among them; ``--demonstrations`` and ``--blickets`` state another space). After ``n`` participants a
study selects a model by the one-SE rule on the participants' marginal likelihoods under each fitted population (and
by the posterior mode); recovery is the share of studies that select the generating model, with a Wilson 95% interval
over studies. Model selection uses the fitted populations (what ADO updates on), not refits of each study.

Writes ``runs/<name>/``: ``rows.csv`` (every simulated participant: design, log marginal likelihood under each
model), ``recovery.csv``, ``recovery.png``, ``confusion_<arm>_n<n>.csv``, ``recovery_among.csv`` (the one-SE rule
among ``positive`` and ``random`` alone, and the pooled recovery were the other models' studies all recovered) and
``summary.json``; a rerun skips the finished (arm, generating model) jobs.

Usage::

    OMP_NUM_THREADS=1 python analyses/design_recovery.py [--studies 20] [--fixed 120] [--ado 40] [--name NAME]
    python analyses/design_recovery.py --smoke      # seconds: a few people, short fits, two studies
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
import torch

import causalplay
from causalplay.data import load_nexiom
from causalplay.design import design_space, nexiom_designs
from causalplay.design.studies import confusion, recovery, simulate_studies
from causalplay.fitting import SVIOptions, load_fit

MODELS = ("positive", "random", "eig_sweep", "eig_sweep_single")


@dataclass
class Config:
    """Settings of one run (``smoke()``: a few seconds, for the test)."""

    name: str = "design_recovery"
    studies: int = 20
    fixed: int = 120
    ado: int = 40
    draws: int = 200
    choices: int = 2
    svi_steps: int | None = None  # None: the package's default
    people: int | None = None  # fit the first ``people`` participants only (None: all 78)
    candidates: int | None = None  # keep the first ``candidates`` designs of the space (None: all 384)
    seed: int = 0
    root: str = "runs"
    generating: tuple[str, ...] = MODELS  # a subset gives the rows a run of all gives for those models
    samples: int = 200  # simulated sequences per model and design where --choices is too many to sum over
    # the space ADO chooses from: design_space(4, n_blickets=blickets, demonstrations=demonstrations, told=both)
    demonstrations: int = 1
    blickets: tuple[int, ...] = (2,)
    # models whose recovery among themselves alone is also reported (``recovery_among.csv``): the pair hardly any
    # participant tells apart at the people's fitted strengths
    among: tuple[str, ...] = ("positive", "random")
    # another run's folder whose fixed arm this run reuses (the fixed arm does not depend on ADO's candidates or K)
    fixed_from: str | None = None

    @classmethod
    def smoke(cls, root: str = "runs") -> Config:
        return cls(name="design_recovery_smoke", studies=2, fixed=6, ado=3, draws=8, choices=1, svi_steps=20,
                   people=12, candidates=6, root=root)


def fitted(cfg: Config, folder: Path) -> dict:
    """The models fitted to the people (saved once, reloaded after)."""
    people = load_nexiom()
    if cfg.people is not None:
        people = people.subset(people.ids[:cfg.people])
    (folder / "fits").mkdir(parents=True, exist_ok=True)
    fits = {}
    for m in MODELS:
        path = folder / "fits" / f"{m}.nc"
        if path.exists():
            fits[m] = load_fit(path, people)
        else:
            fits[m] = causalplay.fit(people, m, method="svi", svi=SVIOptions(steps=cfg.svi_steps, progress=False),
                                     seed=cfg.seed)
            fits[m].idata.to_netcdf(path)
        logging.info("fit of %s ready", m)
    return fits


_FIXED_KEYS = ("models", "fixed_designs", "participants_fixed", "studies", "draws", "seed")


def reuse_fixed(folder: Path, other: Path, cfg: Config) -> None:
    """Start ``folder`` with the fixed arm's rows of the run in ``other`` (its fits copied too), after checking that
    the two runs agree on all the fixed arm depends on: the fits (byte for byte), models, fixed designs, participants,
    studies, draws and seed. The new run then simulates its ADO arm only."""
    import shutil

    theirs = json.loads((other / "settings.json").read_text())
    mine = {"models": list(MODELS), "participants_fixed": cfg.fixed, "studies": cfg.studies, "draws": cfg.draws,
            "seed": cfg.seed, "fixed_designs": [d.to_dict() for d in nexiom_designs()]}
    if bad := [k for k in _FIXED_KEYS if theirs.get(k) != mine[k]]:
        raise ValueError(f"--fixed-from {other}: its {bad} differ from this run's; its fixed arm is not this run's")
    if missing := sorted(set(cfg.generating) - set(theirs["generating"])):
        raise ValueError(f"--fixed-from {other} has no fixed arm for {missing}")
    if (folder / "rows.csv").exists():
        raise ValueError(f"{folder} already holds rows; --fixed-from starts a new run")
    (folder / "fits").mkdir(parents=True, exist_ok=True)
    for m in MODELS:
        mine_fit, their_fit = folder / "fits" / f"{m}.nc", other / "fits" / f"{m}.nc"
        if not mine_fit.exists():
            shutil.copyfile(their_fit, mine_fit)
        elif mine_fit.read_bytes() != their_fit.read_bytes():
            raise ValueError(f"{mine_fit} is not the fit {their_fit} made the fixed arm with")
    rows = pd.read_csv(other / "rows.csv")
    rows[(rows["arm"] == "fixed") & rows["true"].isin(cfg.generating)].to_csv(folder / "rows.csv", index=False)


def run(cfg: Config) -> dict:
    torch.set_num_threads(1)
    folder = Path(cfg.root) / cfg.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(asdict(cfg), indent=1))
    if cfg.fixed_from is not None:
        reuse_fixed(folder, Path(cfg.fixed_from), cfg)
    fits = fitted(cfg, folder)
    cands = design_space(4, n_blickets=cfg.blickets, demonstrations=cfg.demonstrations, told=(False, True))
    if cfg.candidates is not None:
        cands = cands[:cfg.candidates]
    sim = simulate_studies(fits, nexiom_designs(), cands, generating=list(cfg.generating),
                           participants_fixed=cfg.fixed, participants_ado=cfg.ado,
                           studies=cfg.studies, draws=cfg.draws, choices=cfg.choices, seed=cfg.seed, out=folder,
                           samples=cfg.samples)
    needed = {rule: sim.needed(0.8, rule) for rule in ("one_se", "map")}
    curve = sim.curve
    for arm, n in (("fixed", cfg.fixed), ("ado", cfg.ado)):
        confusion(sim.rows, arm, n).to_csv(folder / f"confusion_{arm}_n{n}.csv")
    among = None
    if set(cfg.among) <= set(cfg.generating):  # (a run of some generating models may have none of their studies)
        among = among_models(sim.rows, curve, cfg.among)
        among.to_csv(folder / "recovery_among.csv", index=False)
    summary = {"needed_for_0.8": needed, "studies_per_model_and_arm": cfg.studies,
               "ratio_ado_to_fixed_one_se": needed["one_se"].get("ado", float("nan"))
               / needed["one_se"].get("fixed", float("nan"))}
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    return {"curve": curve, "summary": summary, "rows": sim.rows, "folder": folder, "among": among}


def among_models(rows, curve, among: tuple[str, ...]):
    """One-SE recovery of the studies ``among``'s models generated when each picks among those models alone, and the
    pooled recovery of all studies had every other model's study been recovered (``if_others_recovered``): about
    what the four-model recovery could reach were the other models told apart without error."""
    grid = sorted(set(curve["n"]))
    c = recovery(rows, grid, rules=("one_se",), models=list(among))
    c = c[c["true"] == "all"].drop(columns=["true", "rule"])
    pooled = curve[(curve["true"] == "all") & (curve["rule"] == "one_se")][["arm", "n", "studies"]]
    c = c.merge(pooled.rename(columns={"studies": "all_studies"}), on=["arm", "n"])
    c["if_others_recovered"] = (c["recovered"] + c["all_studies"] - c["studies"]) / c["all_studies"]
    return c.drop(columns="all_studies")


def pair_evidence(rows, a: str, b: str):
    """Per arm and generating model (``a`` or ``b``): one participant's log Bayes factor ``a`` vs ``b`` (nats), its
    mean with standard error and its sd over the simulated participants."""
    g = rows[rows["true"].isin([a, b])].assign(lbf=lambda d: d[f"ev_{a}"] - d[f"ev_{b}"])
    out = g.groupby(["arm", "true"])["lbf"].agg(["mean", "std", "count"])
    return out.assign(se=out["std"] / out["count"] ** 0.5).rename(columns={"std": "sd", "count": "participants"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = Config()
    ap.add_argument("--name", default=d.name)
    ap.add_argument("--studies", type=int, default=d.studies)
    ap.add_argument("--fixed", type=int, default=d.fixed, help="participants per fixed-design study")
    ap.add_argument("--ado", type=int, default=d.ado, help="participants per ADO study")
    ap.add_argument("--draws", type=int, default=d.draws)
    ap.add_argument("--choices", type=int, default=d.choices, help="the choices of a participant the utility is "
                    "about (31: a whole session of up to 30 tests, by Monte Carlo)")
    ap.add_argument("--samples", type=int, default=d.samples, help="simulated sequences per model and design "
                    "where --choices is too many to sum over (K >= 5)")
    ap.add_argument("--demonstrations", type=int, default=d.demonstrations, help="ADO's candidates: demonstration "
                    "histories up to this length")
    ap.add_argument("--blickets", default=",".join(map(str, d.blickets)), help="ADO's candidates: comma-separated "
                    "blicket counts of the world")
    ap.add_argument("--fixed-from", default=None, help="reuse the fixed arm (and fits) of the run in this folder")
    ap.add_argument("--svi-steps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--generating", default=",".join(MODELS), help="models that generate studies")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    cfg = Config.smoke() if a.smoke else Config(a.name, a.studies, a.fixed, a.ado, a.draws, a.choices, a.svi_steps,
                                                 seed=a.seed, generating=tuple(a.generating.split(",")),
                                                 samples=a.samples, demonstrations=a.demonstrations,
                                                 blickets=tuple(int(b) for b in a.blickets.split(",")),
                                                 fixed_from=a.fixed_from)
    res = run(cfg)
    c = res["curve"]
    pooled = c[c["true"] == "all"].copy()
    pooled["rate"] = pooled.apply(lambda r: f"{r['rate']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]", axis=1)
    print(pooled.pivot_table(index=["rule", "n"], columns="arm", values="rate", aggfunc="first").to_string())
    one = c[(c["rule"] == "one_se") & (c["true"] != "all")]
    print("one-SE rule, per generating model (recovered/studies):")
    one = one.assign(cell=one["recovered"].astype(str) + "/" + one["studies"].astype(str))
    print(one.pivot_table(index=["arm", "n"], columns="true", values="cell", aggfunc="first").to_string())
    if res["among"] is not None:
        a = res["among"].assign(rate=lambda d: d.apply(lambda r: f"{r['rate']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]",
                                                                    axis=1))
        print(f"one-SE rule among {', '.join(cfg.among)} alone, and all studies pooled if the others' were recovered:")
        print(a.pivot_table(index="n", columns="arm", values=["rate", "if_others_recovered"], aggfunc="first")
              .round(2).to_string())
        if len(cfg.among) == 2:
            print(f"one participant's log Bayes factor {cfg.among[0]} vs {cfg.among[1]} (nats):")
            print(pair_evidence(res["rows"], *cfg.among).round(4).to_string())
    print(json.dumps(res["summary"], indent=1))
    print(f"wrote {res['folder']}")


if __name__ == "__main__":
    main()
