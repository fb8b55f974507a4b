"""Mutation testing of the core modules with mutmut: ``make mutants`` or ``python tools/mutants.py [MODULE ...]``.

Each module in :data:`MODULES` is mutated on its own, with its own fast test selection (the tests that pin it
against independently derived values), so a run of one module takes minutes, not the whole suite per mutant.

Why a staging copy: mutmut names a mutant after its file path (``envs/machine.py`` -> ``envs.machine``) and
only activates it when the running function's ``__module__`` matches, while causalplay installs ``envs/`` and
``models/`` as ``causalplay.envs`` and ``causalplay.models`` (a package-dir mapping). So every run works in
``runs/mutants/<module>/``: a copy with the standard layout (``causalplay/`` with ``envs/`` and ``models/`` moved
inside it), the tests, and a ``pyproject.toml`` holding that module's ``[tool.mutmut]`` section. mutmut puts its
mutated copy first on ``sys.path``; the editable install's finder is consulted after ``sys.path``, so the
mutated copy is what the tests import (checked: mutmut's forced-fail run and its test/mutant association check
both pass before any mutant runs).

Results, per module, in ``runs/mutants/<module>/results.json`` (written as soon as the module finishes):
counts by status, the mutation score ``killed / (total - equivalent)`` (timeouts count as killed: the tests
noticed), the survivors with their diffs, and the wall time. ``--summary`` prints the table of every module
run so far. Mutants proven equivalent are listed in :data:`EQUIVALENT` with the reason (see docs/testing.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runs" / "mutants"


@dataclass(frozen=True)
class Module:
    files: tuple[str, ...]  # repository paths of the files to mutate
    tests: tuple[str, ...]  # pytest selection (files, node ids, -k) whose tests must kill them


# The tests that pin the machine, the oracle and the reward against hand-derived or brute-force values (the
# gymnasium conformance tests also reach them but add minutes per surviving mutant and pin nothing numeric).
_ENV_CORE = tuple(f"tests/test_envs.py::{t}" for t in (
    "test_timing_context_then_trials", "test_oracle_and_reward_against_brute_force",
    "test_solving_gives_20_and_ends", "test_jsd_matches_scipy_and_handles_zero_vectors",
    "test_ivre_episode_distribution", "test_noisy_variant_flips_some_outcomes",
    "test_noisy_machine_on_trial_panels", "test_machine_p_lit_machine_lit_and_oracle_space_by_hand",
    "test_oracle_without_table_partial_updates_and_resets_match_brute_force"))
_ENV_CORE += tuple(f"tests/test_task.py::{t}" for t in (
    "test_ivre_jsd_matches_the_official_formula_on_every_belief",
    "test_all_zero_belief_is_scored_as_the_official_reward_not_as_uniform",
    "test_env_reward_is_minus_one_minus_official_jsd",
    "test_two_rule_oracle_is_uniform_over_rules_and_does_not_leak_the_rule",
    "test_ivre_jsd_numpy_batches_mixed_inputs_and_errors"))

MODULES: dict[str, Module] = {
    "exact": Module(("causalplay/core/exact.py",), ("tests/test_exact.py",)),
    "eig": Module(("causalplay/core/eig.py",), ("tests/test_eig.py",)),
    "machine": Module(("envs/machine.py",), _ENV_CORE),
    "reward": Module(("envs/reward.py",), _ENV_CORE),
    "metrics": Module(("causalplay/core/metrics.py",), ("tests/test_bench.py", "tests/test_causal_dag.py", "-k",
                                                        "by_hand or template_folds or ratio_ci or wilson")),
    # the tests of test_fit.py that reach scoring.py, less the slow fit/simulate/save round trip (its scoring
    # checks are covered by the by-hand score tests)
    "scoring": Module(("causalplay/fitting/scoring.py",),
                      ("tests/test_fit.py", "-k", "(score or compare or paired) and not simulate")),
    # the schema tests live in three files; of test_choice_told.py only the test that reads known_counts and
    # choice_indices against causalplay.infer (the others there run SVI fits and simulations: slow per mutant)
    "validator": Module(("causalplay/data/loader.py", "causalplay/data/trials.py"),
                        ("tests/test_data.py", "tests/test_data_schema.py", "tests/test_overhypothesis_data.py",
                         "tests/test_choice_told.py::test_every_decision_conditions_on_demonstrations_and_the_told_count")),
    "rules": Module(("causalplay/core/rules.py",), ("tests/test_rules.py", "tests/test_exact.py")),
}

_SAME_LIKELIHOOD = ("performance only: the tabulated and the untabulated Oracle updates compute the same float64 "
                    "likelihoods (integer counts from 0/1 matmuls, the same p_lit); both paths are pinned against "
                    "brute force")
_JSD_BOUND = "the Jensen-Shannon divergence (natural log) is at most ln 2 < 1, so the upper clip never acts"

#: mutant name -> why it cannot change behaviour (reviewed by hand; see docs/testing.md)
EQUIVALENT: dict[str, str] = {
    "causalplay.envs.reward.x__ivre_jsd__mutmut_67": _JSD_BOUND,  # clip(..., 0.0, None)
    "causalplay.envs.reward.x__ivre_jsd__mutmut_74": _JSD_BOUND,  # clip(..., 0.0, 2.0)
    **{f"causalplay.envs.reward.x_ivre_jsd__mutmut_{i}": "one of p, q left uncast on the numpy path: _ivre_jsd "
       "stacks them with the other (float64), so it computes in float64 from exactly the same values"
       for i in (33, 35, 37, 39)},
    "causalplay.envs.machine.xǁOracleǁ__init____mutmut_16": _SAME_LIKELIHOOD,  # table for N < 10
    "causalplay.envs.machine.xǁOracleǁ__init____mutmut_17": _SAME_LIKELIHOOD,  # table for N <= 11
    "causalplay.envs.machine.xǁOracleǁ__init____mutmut_27": _SAME_LIKELIHOOD,  # never a table
    "causalplay.envs.machine.xǁOracleǁupdate__mutmut_6": "ndarray.astype(None) is astype(float64)",
    "causalplay.core.metrics.x_auccess_weights__mutmut_4": "np.log of int64 1..K returns the same float64 values",
    "causalplay.core.metrics.x_auccess_weights__mutmut_7": "np.log of int64 1..K returns the same float64 values",
    "causalplay.core.metrics.x_assign_split__mutmut_22": "searchsorted never returns < 0: the lower clip never acts",
    "causalplay.core.metrics.x_assign_split__mutmut_34": "numpy reads side='RIGHT' as 'right'",
    "causalplay.core.metrics.x_stable_unit__mutmut_7": "int.from_bytes defaults to byteorder='big' (Python >= 3.11)",
    "causalplay.core.metrics.x_template_folds__mutmut_17": "unreachable: ts[j::n] with j < len(ts) is never empty",
    **{f"causalplay.core.metrics.x_{fn}__mutmut_{i}": "np.asarray without dtype=float64: the documented input (numbers "
       "or bools) gives int, bool or float arrays whose comparisons, means and covariances numpy computes in "
       "float64 from the same values" for fn, ids in (("ratio_ci", (4, 6, 8, 10)), ("wilcoxon", (3, 5, 7, 9)),
                                                      ("wilson_ci", (4, 6)), ("assign_split", (3, 5))) for i in ids},
    "causalplay.core.metrics.x_ratio_ci__mutmut_32": "float('NAN') is NaN, as float('nan')",
    "causalplay.core.metrics.x_wilson_ci__mutmut_74": "the Wilson upper bound is below 1 whenever p < 1 (p = 1 is "
                                                      "answered by its own branch): the clip never acts",
}

_E = "causalplay.core.eig."
_CACHE = ("cache key or lookup only: a miss recomputes the same value from the space (nothing else reads the "
          "key)")
_CACHED_KEY = ("HypothesisSpace.cached under another key: the same build() runs once and its value is kept "
               "there (nothing else reads the key; a string key never matches cached's ('lit_prob', ...) eviction)")
_EINSUM = "torch.einsum reads upper-case subscripts as the same letters: the same contraction"
_OVERLAP = ("the chunk loop still covers every row/column; overlapping or longer slices recompute the same "
            "entries from the same inputs")
_CLIP = ("p = P^T w with P, w >= 0 is never < 0, so the lower clip never acts; p exceeds 1 only by rounding "
         "(p = 1 + d, d ~ 1e-16), where the original's EIG is max(0 - c, 0) = 0 and the unclipped one's is "
         "max(-(709 d)/ln 2 - c, 0) = 0 (c = sum_r P(r) H_b(noise_r) >= 0)")
EQUIVALENT.update({
    # names as of the size pass of 2026-11-26 (re-audited against the rerun of that day)
    **{f"{_E}x__const_entropy__mutmut_{i}": _CACHED_KEY for i in (15, 16)},
    **{f"{_E}x__threshold_layers__mutmut_{i}": _CACHED_KEY for i in (5, 6)},
    **{f"{_E}x__eig_matmul__mutmut_{i}": _CACHED_KEY for i in (20, 21)},
    f"{_E}x__eig_matmul__mutmut_22": "all_deterministic built as None instead of the bool: None and False are both "
                                     "falsy, and for a deterministic space (every rule a noiseless Threshold) the "
                                     "const path subtracts W @ H_b(0) = 0 from h_y >= 0 and clamps at 0: the same "
                                     "h_y (checked: torch.equal on 1- and 2-rule spaces)",
    **{f"{_E}x_eig_one_joint__mutmut_{i}": _CACHE for i in (7, 8, 9, 10, 21, 22)},
    **{f"{_E}x__eig_matmul__mutmut_{i}": _EINSUM for i in (70, 148)},
    **{f"{_E}x__eig_transform__mutmut_{i}": _EINSUM for i in (108, 117)},
    **{f"{_E}x__eig_matmul__mutmut_{i}": _OVERLAP for i in (131, 135, 136, 137)},
    f"{_E}x__eig_transform__mutmut_49": _OVERLAP,
    **{f"{_E}x_eig_bits__mutmut_{i}": _OVERLAP for i in (154, 157, 158, 159)},
    f"{_E}x_count_distribution__mutmut_56": "at L = 1 the guarded slices new1[..., 1:] and c[..., :0] are empty: "
                                            "the += is a no-op",
    **{f"{_E}x_eig_bits__mutmut_{i}": "ms only feeds transform_ops, which is read only after `n <= 40` held (the "
       "condition short-circuits), so computing it also for n = 41 (or any n > 40) changes nothing" for i in (45,)},
    f"{_E}x_eig_bits__mutmut_42": "ms only feeds transform_ops, which is read only after `n <= 40` held (the "
                                  "condition short-circuits), so computing it for n > 40 changes nothing",
    **{f"{_E}x_eig_one_joint__mutmut_{i}": _CLIP for i in (42, 43, 44, 48, 50)},
    **{f"{_E}x_eig_one_joint__mutmut_{i}": "np.maximum into a new array instead of in place: the same values "
       "are returned (h is not used afterwards)" for i in (92, 95)},
    f"{_E}x_eig_one_joint__mutmut_87": "numpy reads any negative reshape size as the inferred one: (R, -2) is "
                                       "(R, -1)",
    f"{_E}x_eig_one_joint__mutmut_88": "sum(+1) of a 2-D array is sum(-1)",
})

EQUIVALENT.update({
    "causalplay.fitting.scoring.x_compare__mutmut_41": "the best model's dse computed instead of set: sqrt(n) * "
                                                       "std(d - d) = sqrt(n) * 0 = 0.0 exactly",
    **{f"causalplay.fitting.scoring.x_ic_table__mutmut_{i}": "warnings.warn(msg, None) and warnings.warn(msg) "
       "both issue a UserWarning, the category passed" for i in (69, 72)},
    **{f"causalplay.fitting.scoring.x__loo_waic__mutmut_{i}": "waic without pointwise=True: ic_table reads only "
       "its totals (elpd_waic, se, p_waic), which ArviZ computes either way" for i in (17, 20)},
    **{f"causalplay.fitting.scoring.x_compare__mutmut_{i}": "unreachable default: compare's scores come from "
       "heldout_score, which always returns a judgements table, so judgement_nats() has every key"
       for i in (110, 112)},
    **{f"causalplay.fitting.scoring.x_heldout_score__mutmut_{i}": "repeat_interleave(n, None) flattens its "
       "input first; v[idx] is already 1-D (only dim-1 sites are taken), so the result is the same" for i in (52, 54)},
    "causalplay.fitting.scoring.x_heldout_score__mutmut_135": "grid is 4-D [S, P, R, sets]: dim +2 is dim -2",
    "causalplay.fitting.scoring.x_heldout_score__mutmut_192": "pandas stores None as NaN in the float columns of "
                                                              "the judgement table",
    "causalplay.fitting.scoring.x_paired_difference__mutmut_23": "float('NAN') is float('nan')",
    "causalplay.fitting.scoring.x_ic_table__mutmut_44": "numpy reads any negative reshape size as the inferred "
                                                        "one: (-2, C) is (-1, C)",
})

_DL, _DT = "causalplay.data.loader.", "causalplay.data.trials."
_SAME_LEN = ("zip of two columns of the same DataFrame (or of its ids and one column): always the same length, "
             "strict or not")
_DICT_BY_PID = ("the groups only feed a dict looked up by participant code: their order (sort=None is unsorted, "
                "the default sort=True sorted) does not matter")
_JOINED_CELL = ("the re-joined cell sits in a free-text column, which has no shape and is never scored (the "
                "fallback, when every column is typed, has a single candidate): only its text changes, and the "
                "cells list keeps len(header) entries")
EQUIVALENT.update({
    # names as of the validator rerun of 2026-11-26 (loader.py / trials.py; re-audited against that run)
    **{f"{_DL}x__read_csv__mutmut_{i}": "Python's codec names are case-insensitive: 'UTF-8-SIG' is 'utf-8-sig', "
       "'UTF-8' is 'utf-8'" for i in (36, 74, 78)},
    **{f"{_DL}x__read_csv__mutmut_{i}": "unreachable: a row with as many fields as the header was kept and "
       "skipped to the next row (continue) before, so here len(row) != len(header) and >= is >" for i in (131, 141)},
    f"{_DL}x__read_csv__mutmut_197": "';' in sep.join(header) holds iff some header cell holds ';' for a separator "
                                     "without ';' ('XXXX')",
    **{f"{_DL}x__read_csv__mutmut_{i}": "every cell is a str from the csv module, so pandas infers object dtype "
       "anyway (also for no rows; pandas 2 without future.infer_string)" for i in (221, 225)},
    **{f"{_DL}x__comma_split__mutmut_{i}": _JOINED_CELL for i in (7, 8, 9, 10)},
    **{f"{_DL}x__comma_split__mutmut_{i}": "cells always has len(header) entries (j + 1 + len(row) - j - extra - "
       "1), so zip's strict never fires" for i in (22, 25, 26)},
    f"{_DL}x__nonneg_float__mutmut_8": "float('NAN') is float('nan')",
    **{f"{_DL}x__load__mutmut_{i}": "only on the error path (a bad test number): _load raises before the parsed "
       "row is used, and the tests table keeps only the file's columns" for i in (690, 691, 692)},
    f"{_DL}x__load__mutmut_714": "only on the error path (bad objects_on): the issue list raises before the row or "
                                 "a flag it may add is used",
    **{f"{_DL}x__load__mutmut_{i}": "k is a small integer count, exact in float32; a rule named in a CSV "
       "(disjunctive, conjunctive, threshold<m>) has P(lit) exactly 0 or 1 either way (the comparison that flags)"
       for i in (816, 818)},
    f"{_DL}x__load__mutmut_981": "the test column keyed through the participant map is all NaN: the stable sort "
                                 "keeps the file's order within a participant, which validation requires to be "
                                 "1, 2, ...",
    f"{_DT}xǁTrialDataǁfolds__mutmut_16": "groupby's default is sort=True",
    f"{_DT}xǁTrialDataǁsplit__mutmut_15": "groupby's default is sort=True",
    f"{_DT}xǁTrialDataǁsplit__mutmut_29": "Generator.choice reads replace=None as false: without replacement",
    **{f"{_DT}xǁTrialDataǁchoice_indices__mutmut_{i}": _DICT_BY_PID for i in (4, 6, 9)},
    **{f"{_DT}xǁTrialDataǁhistories__mutmut_{i}": _DICT_BY_PID for i in (15, 17, 20)},
    **{f"{_DT}xǁTrialDataǁknown_counts__mutmut_{i}": _SAME_LEN for i in (11, 14, 17)},
    **{f"{_DT}xǁTrialDataǁhistories__mutmut_{i}": _SAME_LEN for i in (5, 8, 13)},
    **{f"{_DT}xǁTrialDataǁsequences__mutmut_{i}": "pandas ignores kind= when sorting on several columns (it "
       "uses a stable lexsort; checked: kind='XXstableXX' does not raise)" for i in (12, 14, 19, 20)},
    f"{_DT}xǁTrialDataǁsubset__mutmut_28": "the test column keyed through the participant map is all NaN, so the "
                                           "stable sort keeps the tests' order within a participant, which "
                                           "TrialData keeps sorted by test (load_trials and subset sort it)",
})

EQUIVALENT.update({
    "causalplay.core.rules.x_disjunctive__mutmut_5": "Threshold's default m is 1",
    "causalplay.core.rules.xǁRuleǁp_lit__mutmut_7": "noise 0 through apply_noise: 1.0 * f + 0.0 * (1 - f) is f exactly",
})

_X = "causalplay.core.exact."
_TWO_D = ("log_w is 2-D [B, H] for both callers (log_posterior's out; observe's documented log_w [B, H] plus its "
          "[B, H] likelihood), where ")
EQUIVALENT.update({
    **{f"{_X}x__explain__mutmut_{i}": "zip(strict=...) over trials[b, :n] and lit[b, :n], which have the same "
       "length for a batch of the documented shapes (trials [B, T, N], lit [B, T]; history_log_posterior builds "
       "both from one [T, N] / [T] history). Contract-based: a malformed lit with one column, broadcast by the "
       "likelihood, would make the original raise zip's ValueError instead" for i in (18, 21, 22)},
    f"{_X}x__explain__mutmut_27": "the first conflict is the same: let i be the smallest index with any "
                                  "conflicting partner j; j < i would give j a partner, so every partner of i is "
                                  "> i, and scanning j from 0 or from i + 1 finds the same first (i, j)",
    **{f"{_X}x__log_likelihood_by_step__mutmut_{i}": "zero's dtype: a 0-dim float tensor never decides the "
       "result dtype of torch.where against the [B, N + 1] float row (checked for float32/float64 defaults and "
       "spaces), and 0 is exact in every float dtype" for i in (58, 61)},
    f"{_X}x__normalise__mutmut_1": "unreachable default: both callers (log_posterior, observe) pass check",
    f"{_X}x__normalise__mutmut_13": "H * itemsize >= 2 always (H >= 1 hypotheses, a float dtype of >= 2 bytes), "
                                    "so max(1, .) and max(2, .) agree",
    f"{_X}x__normalise__mutmut_15": _TWO_D + "shape[+1] is shape[-1]",
    f"{_X}x__normalise__mutmut_26": _TWO_D + "dim=+1 is dim=-1",
    f"{_X}x__normalise__mutmut_46": _TWO_D + "shape[:+1] is shape[:-1]",
    f"{_X}x__normalise__mutmut_53": _TWO_D + "squeeze(+1) is squeeze(-1)",
    **{f"{_X}x__normalise__mutmut_{i}": "keepdim only sets the blocks' shape: the blocks are concatenated along "
       "dim 0 either way and z.reshape(*log_w.shape[:-1], 1) on the next line gives the same z" for i in (24, 28)},
    f"{_X}x__normalise__mutmut_40": "range(0, max(2, B), step) differs only for B <= 1, and then only adds "
                                    "slices past the end (empty): their logsumexp blocks have 0 rows and add "
                                    "nothing to the concatenation",
    **{f"{_X}x_history_log_posterior__mutmut_{i}": "dtype of the documented bool (or integer) trials/lit "
       "arrays: bool @ int64 and bool * int are int64, so idx has the same integer values. Contract-based: float "
       "arrays (not documented) would make a float idx that cannot index" for i in (8, 10, 16, 18)},
    **{f"{_X}x_history_log_posterior__mutmut_{i}": _CACHED_KEY for i in (29, 30)},
    f"{_X}x_history_log_posterior__mutmut_49": "z is only tested by math.isfinite before raising: -inf and +inf "
                                               "are both non-finite, and the line after is never reached",
    **{f"{_X}x_history_log_posterior__mutmut_{i}": "the one-episode batch built only for the error message: "
       "_explain reads it as trials.bool(), lit.bool() and int(mask[0].sum()), which its dtype (and a mask with "
       "a second, unread row) do not change" for i in (72, 75, 80, 83, 84)},
})

#: statuses mutmut reports; "killed" and "timeout" mean a test noticed
DETECTED = ("killed", "timeout")


def _staged(path: str) -> str:
    """Repository path -> path in the staging copy (envs/ and models/ live inside causalplay/ there)."""
    for top in ("envs/", "models/"):
        if path.startswith(top):
            return "causalplay/" + path
    return path


def stage(name: str, mod: Module) -> Path:
    """A fresh staging copy for ``name`` with its ``[tool.mutmut]`` configuration."""
    dst = OUT / name
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for top in ("causalplay", "envs", "models", "tests"):
        shutil.copytree(ROOT / top, dst / _staged(f"{top}/"), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for f in mod.files:
        if not (ROOT / f).is_file():
            raise FileNotFoundError(f"{name}: {f} does not exist")
    cfg = {
        "source_paths": ["causalplay"],
        "only_mutate": [_staged(f) for f in mod.files],
        "pytest_add_cli_args_test_selection": list(mod.tests),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        # torch is not fork-safe once its thread pools run: fork mutants from a clean server process
        "process_isolation": "forkserver",
        "use_git_change_detection": False,
    }
    lines = ["[tool.pytest.ini_options]", 'testpaths = ["tests"]',
             'markers = ["slow: longer statistical checks", "gpu: needs CUDA"]', "", "[tool.mutmut]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in cfg.items()]
    (dst / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return dst


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # one thread per worker: the machine's cores are shared (and mutmut runs --max-children workers)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[k] = "1"
    env.pop("MUTANT_UNDER_TEST", None)
    return env


def run_module(name: str, max_children: int) -> dict:
    mod = MODULES[name]
    dst = stage(name, mod)
    print(f"[{name}] staged in {dst}; mutating {', '.join(mod.files)}; tests {' '.join(mod.tests)}", flush=True)
    t0 = time.perf_counter()
    with open(dst / "mutmut.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children)],
                                cwd=dst, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        last = 0.0
        for line in proc.stdout:  # mutmut redraws a progress line; keep the log, echo it every 30 s
            log.write(line)
            if time.perf_counter() - last > 30 or "Stopping early" in line or "failed" in line.lower():
                print(f"[{name}] {line.strip()[-150:]}", flush=True)
                last = time.perf_counter()
        rc = proc.wait()
    seconds = time.perf_counter() - t0
    if rc != 0:
        raise RuntimeError(f"[{name}] mutmut run exited with {rc}; see {dst / 'mutmut.log'}")
    res = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=dst, env=_env(),
                         capture_output=True, text=True, check=True)
    status: dict[str, str] = {}
    for line in res.stdout.splitlines():
        m = re.match(r"\s*(\S+__mutmut_\d+): (.+)$", line)
        if m:
            status[m.group(1)] = m.group(2).strip()
    counts = dict(Counter(status.values()))
    survivors = sorted(k for k, s in status.items() if s not in DETECTED)
    equivalent = [k for k in survivors if k in EQUIVALENT]
    killed = sum(counts.get(s, 0) for s in DETECTED)
    denom = len(status) - len(equivalent)
    diffs = {k: subprocess.run([sys.executable, "-m", "mutmut", "show", k], cwd=dst, env=_env(), capture_output=True,
                               text=True).stdout for k in survivors}
    out = {"module": name, "files": list(mod.files), "tests": list(mod.tests), "total": len(status),
           "counts": counts, "killed_or_timeout": killed, "equivalent": len(equivalent),
           "score": killed / denom if denom else float("nan"), "seconds": round(seconds, 1),
           "max_children": max_children, "survivors": {k: {"status": status[k], "equivalent": EQUIVALENT.get(k),
                                                            "diff": diffs[k]} for k in survivors}}
    (dst / "results.json").write_text(json.dumps(out, indent=2))
    print(f"[{name}] {len(status)} mutants, {killed} killed/timeout, {len(equivalent)} equivalent, "
          f"{len(survivors) - len(equivalent)} surviving: score {100 * out['score']:.1f}% in {seconds:.0f} s",
          flush=True)
    return out


def summary() -> str:
    rows = ["| module | files | mutants | killed | equivalent | surviving | score | wall s |",
            "|---|---|---|---|---|---|---|---|"]
    for name in MODULES:
        p = OUT / name / "results.json"
        if not p.is_file():
            continue
        r = json.loads(p.read_text())
        eq = sum(k in EQUIVALENT for k in r["survivors"])  # the current list (reviews may postdate the run)
        surv = len(r["survivors"]) - eq
        score = r["killed_or_timeout"] / (r["total"] - eq) if r["total"] > eq else float("nan")
        rows.append(f"| {name} | {', '.join(r['files'])} | {r['total']} | {r['killed_or_timeout']} | "
                    f"{eq} | {surv} | {100 * score:.1f}% | {r['seconds']:.0f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help=f"modules to run (default all): {', '.join(MODULES)}")
    ap.add_argument("--max-children", type=int, default=2, help="parallel mutant workers (default 2)")
    ap.add_argument("--summary", action="store_true", help="print the table of the modules run so far and exit")
    a = ap.parse_args(argv)
    if a.summary:
        print(summary())
        return
    unknown = [m for m in a.modules if m not in MODULES]
    if unknown:
        ap.error(f"unknown module(s) {unknown}; choose from {list(MODULES)}")
    for name in a.modules or list(MODULES):
        run_module(name, a.max_children)
    print(summary())


if __name__ == "__main__":
    main()
