"""``causalplay train``: train an RL agent on the native vector env with Stable-Baselines3, evaluate on held-out
episodes, keep the best -- one ``model.learn`` call; evaluation, checkpoints and the CSV log are an SB3 callback.

One output folder per run (``DIR``)::

    config.json        what was trained (agent, env, preset, budget, seed, hyper-parameters in force, row name)
    progress.csv       one row per evaluation, written by SB3's logger: steps, wall seconds, steps/s, training
                       episodes and their Acc / R since the last evaluation, held-out eval Acc / R, best flag,
                       SB3's train/* values
    learning_curve.png the eval curves of progress.csv
    best.zip           the checkpoint with the best eval episode R so far (what ``rl:path=DIR`` loads)
    last.zip           the latest checkpoint (+ last_buffer.pkl off-policy, last_vecnormalize.pkl with reward
                       normalisation, state.json): running the same command again resumes from it

A resumed run carries on the step count, best score and progress rows; it is not bit-identical to an
uninterrupted one (its env rows are reseeded at the resume step). An uninterrupted run is deterministic for a
seed on CPU.

Seeds: training row ``i`` of seed ``s`` draws from ``TRAIN_SEED_BASE + 10_000 s + i``; the held-out evaluation
episodes from ``[EVAL_SEED, 0]``. Both are far from the benchmark's seeds (``[seed, shard]`` with small
numbers), so no training or model-selection episode is a benchmark episode's stream.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import CSVOutputFormat, Logger
from stable_baselines3.common.noise import VectorizedActionNoise
from stable_baselines3.common.vec_env import VecNormalize

from causalplay.agents.rl import Policy, RLAgent, RunInfo, load_model, read_run, sb3_class
from causalplay.agents.rl_features import HistoryLSTM
from causalplay.bench.play import play
from causalplay.bench.plots import figure_axes
from causalplay.envs import SEQUENCE_IDS, make_batch
from causalplay.envs.families import BLICKET
from causalplay.envs.pixels import PIXEL_IDS

from .envs import PixelRLVecEnv, make_train_env

log = logging.getLogger(__name__)  # one line per evaluation row; `causalplay train` shows them

__all__ = ["ALGOS", "PRESETS", "TrainConfig", "train", "evaluate", "build_model", "read_config", "plot_curves",
           "TRAIN_SEED_BASE", "EVAL_SEED"]

#: ``--agent`` values. ``recurrent-ppo`` is sb3-contrib's RecurrentPPO (LSTM state kept across steps): not a paper
#: row, kept for the Overhypothesis meta-RL baseline (memory across the machines of a sequence).
ALGOS = ("ppo", "td3", "ddpg", "recurrent-ppo")

#: progress.csv's own columns (SB3's train/* values follow)
PROGRESS_COLUMNS = ["steps", "wall_s", "steps_per_s", "train_episodes", "train_acc", "train_reward", "eval_acc",
                    "eval_reward", "best"]
TRAIN_SEED_BASE = 1_000_000
EVAL_SEED = 900_000

_OFF_PAPER = {"envs": 32, "net_arch": [512, 512, 512], "learning_rate": 3e-4, "gamma": 0.99, "tau": 0.005,
              "action_noise": 0.1, "buffer_size": 1_000_000, "batch_size": 128, "n_step": 10, "train_freq": 10,
              "gradient_steps": 3, "learning_starts": 0}
_OFF_FAST = {"envs": 64, "net_arch": [256, 256, 256], "learning_rate": 3e-4, "gamma": 0.99, "tau": 0.005,
             "action_noise": 0.1, "buffer_size": 200_000, "batch_size": 256, "n_step": 1, "train_freq": 1,
             "gradient_steps": 1, "learning_starts": 5_000}
_TD3 = {"policy_noise": 0.2, "noise_clip": 0.5, "policy_delay": 2}
_PPO_FAST = {"envs": 64, "net_arch": [256, 256], "activation": "tanh", "ortho_init": True, "learning_rate": 3e-4,
             "adam_eps": 1e-5, "gamma": 0.99, "n_steps": 64, "batch_size": 512, "n_epochs": 4, "ent_coef": 0.0,
             "vf_coef": 0.5, "gae_lambda": 0.95, "clip_range": 0.2, "max_grad_norm": 0.5, "normalize_advantage": True,
             "normalize_reward": False, "log_std_init": -1.0}
_RPPO = {**_PPO_FAST, "n_steps": 40, "batch_size": 640, "lstm": 128}

#: ``--preset`` -> agent -> hyper-parameters. ``paper``: IVRE's training scripts (docs/rl.md lists them line by
#: line beside the paper's, and tests/test_rl.py holds that table equal to this one); with ``--recurrent`` the first
#: ``net_arch`` width is the history LSTM's and the rest the MLP after it (as the paper's ``ProcessLSTM``).
#: ``fast``: our earlier, smaller settings (smoke runs; the pixel and sequence ids).
PRESETS: dict[str, dict[str, dict]] = {
    "paper": {"ddpg": _OFF_PAPER, "td3": {**_OFF_PAPER, **_TD3},
              "ppo": {**_PPO_FAST, "envs": 32, "net_arch": [512, 512, 512], "n_steps": 256, "batch_size": 8192,
                      "n_epochs": 3, "ent_coef": 0.01, "normalize_advantage": False, "normalize_reward": True,
                      "log_std_init": -0.5, "adam_eps": 1e-8},
              "recurrent-ppo": _RPPO},
    "fast": {"ddpg": _OFF_FAST, "td3": {**_OFF_FAST, **_TD3}, "ppo": _PPO_FAST, "recurrent-ppo": _RPPO},
}
#: evaluation cadence per preset: (env steps between evaluations, held-out episodes each); the paper evaluates
#: 1000 episodes after every 10^5-step epoch and keeps the best
EVAL = {"paper": (100_000, 1000), "fast": (50_000, 1000)}

#: Overrides on a pixel id (``causalplay/IVRE-Pixels-v0``): a replay buffer of ``[3T, 60, 80]`` uint8 frame stacks
#: costs ~144 kB per observation (x2 with the next one) and a CNN update is far dearer than an MLP one, so fewer
#: rows, a small buffer and smaller batches on this CPU.
PIXEL_HYPER: dict[str, dict] = {
    "ppo": {"envs": 16, "n_steps": 64, "batch_size": 256},
    "td3": {"envs": 16, "buffer_size": 4_000, "learning_starts": 1_000, "batch_size": 64},
    "ddpg": {"envs": 16, "buffer_size": 4_000, "learning_starts": 1_000, "batch_size": 64},
}


@dataclass
class TrainConfig:
    """One training run (the fields of ``config.json``).

    Parameters
    ----------
    agent : str
        One of :data:`ALGOS`.
    out : str
        Output folder.
    env : str
        A symbolic Blicket id (``causalplay/IVRE-v0``, ...), a pixel id (``causalplay/IVRE-Pixels-v0``; ppo / td3 /
        ddpg feed-forward only) or a sequence id (``causalplay/Overhypothesis-v0``: one SB3 episode is the whole
        sequence of machines, so ``recurrent-ppo``'s state carries across machines -- meta-RL).
    steps : int
        Env steps to train (summed over the vector env's rows).
    seed : int
    envs : int or None
        Rows of the vector env (``None``: the preset's).
    recurrent : bool
        The paper's recurrent ("Re") variant: the history-LSTM encoder
        (:class:`~causalplay.agents.rl_features.HistoryLSTM`) in front of the actor and of the critic, each its own.
    preset : {"paper", "fast"} or None
        The hyper-parameters (:data:`PRESETS`); ``None``: ``paper`` on the symbolic Blicket ids, ``fast`` elsewhere.
    obs : {"history"}
        The observation the learner sees (the panel alone is not enough for a feed-forward agent).
    belief_input, belief_tracker : bool
        Append the exact posterior (and exclude the rejected guesses; symbolic Blicket ids only).
    eval_every, eval_episodes : int or None
        Env steps between evaluations / checkpoints, held-out episodes each (``None``: the preset's, :data:`EVAL`).
    name : str or None
        The row name in the benchmark (default ``{algo}-{ff|re}[-belief]``, e.g. ``ppo-ff``).
    hyper : dict
        Overrides of the preset.
    device : str
        Torch device for training (``cpu``, ``cuda``, ``cuda:1``); not part of the run's identity (a run may be
        resumed on another device), and checkpoints load on any device.
    """

    agent: str
    out: str
    env: str = "causalplay/IVRE-v0"
    steps: int = 10_000_000
    seed: int = 0
    envs: int | None = None
    recurrent: bool = False
    preset: str | None = None
    obs: str = "history"
    belief_input: bool = False
    belief_tracker: bool = False
    eval_every: int | None = None
    eval_episodes: int | None = None
    name: str | None = None
    hyper: dict = field(default_factory=dict)
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.agent not in ALGOS:
            raise ValueError(f"unknown agent {self.agent!r}; expected one of {list(ALGOS)}")
        symbolic = [e for e in BLICKET.ids if e not in PIXEL_IDS]  # the Blicket family's symbolic ids
        ok = symbolic + list(PIXEL_IDS) + list(SEQUENCE_IDS)
        if self.env not in ok:
            raise ValueError(f"unknown or unsupported environment id {self.env!r}; expected a Blicket, pixel or "
                             f"sequence id from {ok}")
        if self.preset is None:
            self.preset = "paper" if self.env in symbolic else "fast"
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; expected one of {list(PRESETS)}")
        if self.pixels and (self.agent not in PIXEL_HYPER or self.belief_input or self.recurrent):
            raise ValueError(f"on a pixel id ({self.env}) the agent must be one of {list(PIXEL_HYPER)} without "
                             f"--belief-input or --recurrent, got {self.agent!r}"
                             f"{' with --belief-input' if self.belief_input else ''}"
                             f"{' with --recurrent' if self.recurrent else ''}")
        if self.recurrent and self.agent == "recurrent-ppo":
            raise ValueError("--recurrent is for ppo, td3 and ddpg (recurrent-ppo keeps its own LSTM state)")
        if self.belief_tracker and self.env not in symbolic:
            raise ValueError(f"--belief-tracker needs a symbolic Blicket id (it reads the history observation's "
                             f"beliefs), got {self.env!r}")
        if self.obs != "history":
            raise ValueError(f"obs must be 'history' (the panel alone hides the past from a feed-forward policy), "
                             f"got {self.obs!r}")
        every, episodes = EVAL[self.preset]
        self.eval_every = every if self.eval_every is None else self.eval_every
        self.eval_episodes = episodes if self.eval_episodes is None else self.eval_episodes
        for key in ("steps", "eval_every", "eval_episodes", "envs"):
            v = getattr(self, key)
            if (v is not None or key != "envs") and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{key} must be a positive integer, got {v!r}")
        unknown = set(self.hyper) - set(PRESETS[self.preset][self.agent])
        if unknown:
            raise ValueError(f"unknown hyper-parameter(s) {sorted(unknown)} for {self.agent}; known: "
                             f"{sorted(PRESETS[self.preset][self.agent])}")
        if str(self.device).startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device {self.device!r}: torch sees no CUDA device here; use --device cpu")
        if self.name is None:
            algo = self.agent.removeprefix("recurrent-")
            belief = "-belief-tracked" if self.belief_tracker else "-belief" if self.belief_input else ""
            kind = "lstm" if self.agent == "recurrent-ppo" else "re" if self.recurrent else "ff"
            self.name = f"{algo}-v" if self.pixels else f"{algo}-{kind}{belief}"
        if not self.name or any(c in self.name for c in ":,/ "):
            raise ValueError(f"name must be non-empty without ':', ',', '/' or spaces, got {self.name!r}")

    @property
    def hp(self) -> dict:
        """The hyper-parameters in force (the preset, pixel overrides, then ``hyper``, then ``envs``)."""
        hp = {**PRESETS[self.preset][self.agent], **(PIXEL_HYPER[self.agent] if self.pixels else {}), **self.hyper}
        if self.envs is not None:
            hp["envs"] = self.envs
        return hp

    @property
    def pixels(self) -> bool:
        """Whether ``env`` is a pixel id (rendered panels)."""
        return self.env in PIXEL_IDS

    @property
    def info(self) -> RunInfo:
        return RunInfo(**{k: getattr(self, k) for k in RunInfo.__dataclass_fields__})


def read_config(path: str | Path) -> TrainConfig:
    """The :class:`TrainConfig` of a training folder."""
    read_run(path)  # a clear error when it is not one
    d = json.loads((Path(path) / "config.json").read_text())
    return TrainConfig(**{k: d[k] for k in TrainConfig.__dataclass_fields__ if k in d})


# -- models --------------------------------------------------------------------------------------------------
def build_model(cfg: TrainConfig, env):
    """A fresh SB3 model for ``cfg`` on ``env`` (an :class:`~causalplay.rl.envs.RLVecEnv`, maybe wrapped)."""
    hp = cfg.hp
    common = {"seed": cfg.seed, "device": cfg.device, "verbose": 0, "gamma": hp["gamma"],
              "learning_rate": hp["learning_rate"], "batch_size": hp["batch_size"]}
    # fused Adam: the same update in one kernel (7x faster than the per-tensor loop on this CPU)
    arch, pk = list(hp["net_arch"]), {"optimizer_kwargs": {"fused": True, "eps": hp.get("adam_eps", 1e-8)}}
    if cfg.recurrent:  # the paper's ProcessLSTM: LSTM of the first width, then the MLP; actor and critic each one
        pk |= {"features_extractor_class": HistoryLSTM, "share_features_extractor": False,
              "features_extractor_kwargs": {"n_objects": env.n_objects, "horizon": env.horizon, "hidden": arch[0]}}
        arch = arch[1:]
    if cfg.agent in ("ppo", "recurrent-ppo"):
        pk |= {"net_arch": {"pi": arch, "vf": arch}, "log_std_init": hp["log_std_init"], "ortho_init": hp["ortho_init"],
               "activation_fn": {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[hp["activation"]]}
        if cfg.agent == "recurrent-ppo":
            pk["lstm_hidden_size"] = hp["lstm"]
        policy = "MultiInputPolicy" if cfg.pixels else "MlpLstmPolicy" if cfg.agent == "recurrent-ppo" else "MlpPolicy"
        return sb3_class(cfg.agent)(
            policy, env, n_steps=hp["n_steps"], n_epochs=hp["n_epochs"], gae_lambda=hp["gae_lambda"],
            ent_coef=hp["ent_coef"], vf_coef=hp["vf_coef"], clip_range=hp["clip_range"],
            max_grad_norm=hp["max_grad_norm"], normalize_advantage=hp["normalize_advantage"], policy_kwargs=pk,
            **common)
    td3 = {"policy_delay": hp["policy_delay"], "target_policy_noise": hp["policy_noise"],
           "target_noise_clip": hp["noise_clip"]} if cfg.agent == "td3" else {}
    return sb3_class(cfg.agent)(
        "MultiInputPolicy" if cfg.pixels else "MlpPolicy", env, buffer_size=hp["buffer_size"],
        learning_starts=hp["learning_starts"], tau=hp["tau"], train_freq=hp["train_freq"],
        gradient_steps=hp["gradient_steps"], n_steps=hp["n_step"], policy_kwargs={"net_arch": arch, **pk},
        action_noise=BatchNoise(hp["action_noise"], env.num_envs, env.action_space.shape[0]), **td3, **common)


class BatchNoise(VectorizedActionNoise):
    """Gaussian exploration noise for every row in one draw: SB3's vectorised noise draws row by row (a Python loop
    per env step); one ``(n_envs, n_act)`` draw from the same generator gives the same numbers."""

    def __init__(self, sigma: float, n_envs: int, n_act: int):
        self.sigma, self.shape = float(sigma), (int(n_envs), int(n_act))

    def __call__(self) -> np.ndarray:
        return np.random.normal(0.0, self.sigma, self.shape)  # noqa: NPY002 -- SB3 seeds this generator

    def reset(self, indices=None) -> None:
        pass


# -- evaluation ----------------------------------------------------------------------------------------------
def evaluate(policy: Policy, env_id: str, n_episodes: int, seed=(EVAL_SEED, 0)) -> dict[str, float]:
    """Episode / context Acc and R of ``policy`` on ``n_episodes`` of ``env_id`` drawn from ``seed``, played by the
    benchmark agent through the one play loop (:func:`causalplay.bench.play.play`): the same episodes and numbers
    as ``causalplay bench`` on shard ``seed``.

    On a sequence id, ``n_episodes`` sequences (sequence ``i`` seeded ``[seed[0], i]``, as
    :func:`causalplay.bench.sequences.run_sequences`) and the means are per *machine* (Acc = machines solved,
    R = a machine's return), so the numbers read like the single-machine ones.
    """
    agent = RLAgent(policy=policy)
    if env_id in SEQUENCE_IDS:
        from causalplay.envs.overhypothesis import OVERHYPOTHESIS, OverhypothesisBatch

        rngs = [np.random.default_rng([int(seed[0]), i]) for i in range(n_episodes)]
        task = OverhypothesisBatch(OVERHYPOTHESIS, n_episodes, rngs, obs_mode="history")
    else:
        task = make_batch(env_id, n_episodes, seed=[int(s) for s in seed],
                          **({"obs_mode": agent.obs_mode} if agent.obs_mode else {}))
    rec = play(task, agent)
    out = {"episode_acc": "episode_solved", "episode_reward": "episode_reward", "context_acc": "context_solved",
           "context_reward": "context_reward"}
    return {k: float(np.mean(rec[v])) if v in rec else float("nan") for k, v in out.items()}


# -- training: SB3's learn with one callback -----------------------------------------------------------------
def _check_resume(cfg: TrainConfig, out: Path) -> dict | None:
    """The saved state of an earlier run of the same config in ``out``, ``None`` for a fresh run."""
    f = out / "config.json"
    if not f.exists():
        if out.exists() and any(out.iterdir()):
            raise FileExistsError(f"output folder {str(out)!r} is not empty and holds no config.json; pick another "
                                  "--out")
        return None
    old = json.loads(f.read_text())
    mine = {**asdict(cfg), "hp": cfg.hp}  # hp: the preset in force then, so a changed preset cannot slip in
    diff = [k for k in mine if k not in ("steps", "device") and json.loads(json.dumps(mine[k])) != old.get(k)]
    if diff:
        what = ", ".join(f"{k}: {old.get(k)!r} vs {mine[k]!r}" for k in diff)
        raise ValueError(f"{str(out)!r} holds a run with a different config ({what}); pick another --out or the "
                         "same options")
    state = out / "state.json"
    return json.loads(state.read_text()) if state.exists() else None


def _csv_logger(out: Path, resume: bool):
    """SB3's logger writing ``progress.csv``; a resumed run keeps the rows already there."""
    path = out / "progress.csv"
    old = path.read_text() if resume and path.exists() else ",".join(PROGRESS_COLUMNS) + "\n"
    fmt = CSVOutputFormat(str(path))  # opens the file for writing: put the header (and old rows) back; SB3's
    fmt.file.write(old)  # train/* keys are appended as they appear
    fmt.file.flush()
    fmt.keys = old.splitlines()[0].split(",")
    return Logger(str(out), [fmt])


def _make_callback(cfg: TrainConfig, out: Path, state: dict):
    class Checkpoints(BaseCallback):
        """Every ``eval_every`` env steps (at the first rollout that starts past it) and at the end: evaluate on
        held-out episodes, log a row of ``progress.csv`` through SB3's logger, keep ``best.zip`` (best eval
        episode R), write ``last.zip``, the replay buffer / reward-normalisation statistics and ``state.json``
        (written to temporaries, then renamed: a kill mid-save leaves the previous checkpoint intact)."""

        def _on_training_start(self) -> None:
            self.state, self.t0 = dict(state), time.perf_counter()
            self.mark, self.episodes = (self.num_timesteps, self.t0), []  # (solved, R) since the last evaluation
            self.next = (self.num_timesteps // cfg.eval_every + 1) * cfg.eval_every

        def _on_step(self) -> bool:
            for i in np.flatnonzero(self.locals["dones"]):
                ep = self.locals["infos"][i]["episode"]
                self.episodes.append((ep["solved"], ep["r"]))
            return True

        def _on_rollout_start(self) -> None:  # the previous rollout's updates are done
            if self.num_timesteps >= self.next:
                self._checkpoint()
                self.next = (self.num_timesteps // cfg.eval_every + 1) * cfg.eval_every

        def _on_training_end(self) -> None:
            if self.num_timesteps > self.state["num_timesteps"]:
                self._checkpoint()

        def _checkpoint(self) -> None:
            m, lg = self.model, self.logger
            rate = (m.num_timesteps - self.mark[0]) / max(time.perf_counter() - self.mark[1], 1e-9)
            ev = evaluate(Policy(m, cfg.info), cfg.env, cfg.eval_episodes)
            eps = np.array(self.episodes, dtype=float).reshape(-1, 2)
            self.state["train_episodes"] += len(eps)
            best = ev["episode_reward"] > self.state["best_eval_reward"]
            if best:
                self.state["best_eval_reward"] = ev["episode_reward"]
                self._save(m.save, "best.zip")
            self.state["wall_s"] += time.perf_counter() - self.t0
            self.t0 = time.perf_counter()
            self.state["num_timesteps"] = int(m.num_timesteps)
            row = {"steps": int(m.num_timesteps), "wall_s": round(self.state["wall_s"], 2), "steps_per_s": round(rate),
                   "train_episodes": self.state["train_episodes"],
                   "train_acc": eps[:, 0].mean() if len(eps) else float("nan"),
                   "train_reward": eps[:, 1].mean() if len(eps) else float("nan"),
                   "eval_acc": ev["episode_acc"], "eval_reward": ev["episode_reward"], "best": int(best)}
            for k, v in row.items():
                lg.record(k, v)
            lg.dump(m.num_timesteps)
            self._save(m.save, "last.zip")
            if hasattr(m, "replay_buffer"):
                self._save(m.save_replay_buffer, "last_buffer.pkl")
            if m.get_vec_normalize_env() is not None:
                self._save(m.get_vec_normalize_env().save, "last_vecnormalize.pkl")
            self._save(lambda p: Path(p).write_text(json.dumps(self.state)), "state.json")
            plot_curves({cfg.name: out}, out / "learning_curve.png")
            log.info("%s %10s steps  %7.0f steps/s  eval Acc %5.1f%% R %6.2f%s", cfg.name, f"{m.num_timesteps:,}",
                     rate, 100 * ev["episode_acc"], ev["episode_reward"], "  best" if best else "")
            self.mark, self.episodes = (m.num_timesteps, time.perf_counter()), []

        def _save(self, write, name: str) -> None:
            tmp = out / f"tmp.{name}"
            write(tmp)
            tmp.replace(out / name)

    return Checkpoints()


def train(cfg: TrainConfig, progress: bool = True) -> Path:
    """Train (or resume) the run described by ``cfg``; returns its output folder. See the module docstring."""
    out = Path(cfg.out)
    saved = _check_resume(cfg, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({**asdict(cfg), "hp": cfg.hp}, indent=1))
    hp = cfg.hp
    state = saved or {"num_timesteps": 0, "best_eval_reward": -math.inf, "wall_s": 0.0, "train_episodes": 0}
    # resumed rows are reseeded at the resume step, so they do not replay the episodes already trained on
    row_seed = TRAIN_SEED_BASE + 10_000 * cfg.seed + state["num_timesteps"]
    if cfg.pixels:
        # one generator for all rows (a pixel batch has no per-row seeding), still far from every bench seed
        env = PixelRLVecEnv(make_batch(cfg.env, hp["envs"], seed=[row_seed, 1]))
    else:
        env = make_train_env(cfg.env, hp["envs"], row_seed, belief=cfg.belief_input, tracker=cfg.belief_tracker)
    if hp.get("normalize_reward"):  # PPO's reward normalisation (the paper's Tianshou rew_norm; see docs/rl.md)
        norm = out / "last_vecnormalize.pkl"
        env = VecNormalize.load(str(norm), env) if saved and norm.exists() else \
            VecNormalize(env, norm_obs=False, norm_reward=True, gamma=hp["gamma"])
    if saved:
        model = load_model(cfg.agent, out / "last.zip", env=env, device=cfg.device)
        if (out / "last_buffer.pkl").exists() and hasattr(model, "replay_buffer"):
            model.load_replay_buffer(out / "last_buffer.pkl")
    else:
        model = build_model(cfg, env)
    model.set_logger(_csv_logger(out, resume=saved is not None))
    try:
        if model.num_timesteps < cfg.steps:
            model.learn(cfg.steps - model.num_timesteps, callback=_make_callback(cfg, out, state),
                        log_interval=None, reset_num_timesteps=False, progress_bar=progress)
    finally:
        env.close()
    return out


def plot_curves(runs: dict[str, str | Path], path: str | Path) -> Path:
    """Held-out eval episode Acc and R against env steps (log scale) of training folders, in one figure."""
    fig, axes = figure_axes(1, 2, figsize=(11, 4))
    for label, d in runs.items():
        f = Path(d) / "progress.csv"
        df = pd.read_csv(f) if f.exists() else None
        if df is not None and len(df):
            axes[0].plot(df.steps, 100 * df.eval_acc, marker=".", label=label)
            axes[1].plot(df.steps, df.eval_reward, marker=".", label=label)
    for ax, what in zip(axes, ("eval episode Acc %", "eval episode R"), strict=True):
        ax.set(xlabel="env steps", ylabel=what, xscale="log")
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return Path(path)
