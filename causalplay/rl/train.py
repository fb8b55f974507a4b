"""``causalplay train``: train an RL agent on the native vector env, evaluate on held-out seeds, keep the best.

One output folder per run (``DIR``)::

    config.json        what was trained (agent, env, budget, seed, hyper-parameters, row name)
    progress.csv       one row per evaluation: steps, wall seconds, train and eval episode Acc / R
    learning_curve.png the two curves of progress.csv
    best.zip|best.pt   the checkpoint with the best eval episode R so far (what ``rl:path=DIR`` loads)
    last.zip|last.pt   the latest checkpoint (+ last_buffer.* for off-policy agents, state.json): resuming

A run killed at any point restarts from its last checkpoint when the same command is run again (the step
count, best score and progress rows carry on; a resumed run is not bit-identical to an uninterrupted one,
because its env rows are reseeded at the resume step). An uninterrupted run is deterministic for a seed on CPU.

Seeds: training row ``i`` of seed ``s`` draws from ``TRAIN_SEED_BASE + 10_000 s + i``; the held-out evaluation
episodes from ``[EVAL_SEED, 0]``. Both are far from the benchmark's seeds (``[seed, shard]`` with small
numbers), so no training or model-selection episode is a benchmark episode's stream.
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

__all__ = ["ALGOS", "TrainConfig", "train", "load_policy", "Policy", "evaluate", "plot_curves", "TRAIN_SEED_BASE",
           "EVAL_SEED"]

#: ``--agent`` values -> (library, recurrent).
ALGOS = {"ppo": ("sb3", False), "td3": ("sb3", False), "ddpg": ("sb3", False),
         "recurrent-ppo": ("sb3-contrib", True), "recurrent-td3": ("causalplay", True),
         "recurrent-ddpg": ("causalplay", True)}

TRAIN_SEED_BASE = 1_000_000
EVAL_SEED = 900_000

#: Default hyper-parameters per algorithm (override with ``TrainConfig.hyper``).
DEFAULT_HYPER: dict[str, dict] = {
    "ppo": {"envs": 64, "n_steps": 64, "batch_size": 512, "n_epochs": 4, "learning_rate": 3e-4, "gamma": 0.99,
            "gae_lambda": 0.95, "ent_coef": 0.0, "net_arch": [256, 256], "log_std_init": -1.0},
    "recurrent-ppo": {"envs": 64, "n_steps": 40, "batch_size": 640, "n_epochs": 4, "learning_rate": 3e-4,
                      "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.0, "net_arch": [256, 256], "lstm": 128,
                      "log_std_init": -1.0},
    "td3": {"envs": 64, "buffer_size": 200_000, "learning_starts": 5_000, "batch_size": 256, "learning_rate": 3e-4,
            "gamma": 0.99, "tau": 0.005, "gradient_steps": 1, "action_noise": 0.1, "net_arch": [256, 256, 256]},
    "ddpg": {"envs": 64, "buffer_size": 200_000, "learning_starts": 5_000, "batch_size": 256, "learning_rate": 3e-4,
             "gamma": 0.99, "tau": 0.005, "gradient_steps": 1, "action_noise": 0.1, "net_arch": [256, 256, 256]},
    "recurrent-td3": {"envs": 32, "hidden": 256, "lstm": 128, "lr": 3e-4, "gamma": 0.99, "tau": 0.005,
                      "batch_episodes": 64, "buffer_episodes": 20_000, "learning_starts": 5_000, "gradient_steps": 1,
                      "action_noise": 0.1},
    "recurrent-ddpg": {"envs": 32, "hidden": 256, "lstm": 128, "lr": 3e-4, "gamma": 0.99, "tau": 0.005,
                       "batch_episodes": 64, "buffer_episodes": 20_000, "learning_starts": 5_000,
                       "gradient_steps": 1, "action_noise": 0.1},
}

#: Overrides of :data:`DEFAULT_HYPER` on a pixel id (``causalplay/IVRE-Pixels-v0``): a replay buffer of
#: ``[3T, 60, 80]`` uint8 frame stacks costs ~144 kB per observation (x2 with the next one), and a CNN update is
#: far dearer than an MLP one, so fewer rows, a small buffer and smaller batches on this CPU.
PIXEL_HYPER: dict[str, dict] = {
    "ppo": {"envs": 16, "n_steps": 64, "batch_size": 256},
    "td3": {"envs": 16, "buffer_size": 4_000, "learning_starts": 1_000, "batch_size": 64},
    "ddpg": {"envs": 16, "buffer_size": 4_000, "learning_starts": 1_000, "batch_size": 64},
}

PROGRESS_COLUMNS = ["steps", "wall_s", "steps_per_s", "train_episodes", "train_acc", "train_reward", "eval_acc",
                    "eval_reward", "best"]


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
        A symbolic Blicket id (``causalplay/IVRE-v0``, ...), a pixel id (``causalplay/IVRE-Pixels-v0``,
        ``causalplay/EST-Pixels-v1``; ppo / td3 / ddpg only, :mod:`causalplay.rl.pixels`) or a sequence id
        (``causalplay/Overhypothesis-v0``: one SB3 episode is the whole sequence of machines, so a recurrent
        policy's state carries across machines -- meta-RL; a feed-forward policy sees only the current machine
        and its index).
    steps : int
        Env steps to train (summed over the vector env's rows).
    seed : int
    envs : int or None
        Rows of the vector env (``None``: the algorithm's default in :data:`DEFAULT_HYPER`).
    obs : {"history"}
        The observation the learner sees (the panel alone is not enough for a feed-forward agent, and the
        recurrent agents read the same history so every row differs only in its algorithm). On a pixel id the
        history is the stacked frames of the panels shown so far (:mod:`causalplay.rl.pixels`).
    belief_input : bool
        Append the exact posterior marginals (:class:`causalplay.rl.features.FeatureMap`).
    belief_tracker : bool
        Append the exact posterior that also excludes the guesses the env rejected, and its MAP blicket set
        (``FeatureMap(tracker=True)``; symbolic Blicket ids only).
    eval_every : int
        Env steps between evaluations / checkpoints.
    eval_episodes : int
        Held-out episodes per evaluation.
    name : str or None
        The agent's row name in the benchmark (default ``{algo}-{ff|re}[-belief]``, e.g. ``ppo-ff``).
    hyper : dict
        Overrides of :data:`DEFAULT_HYPER`.
    """

    agent: str
    out: str
    env: str = "causalplay/IVRE-v0"
    steps: int = 1_000_000
    seed: int = 0
    envs: int | None = None
    obs: str = "history"
    belief_input: bool = False
    belief_tracker: bool = False
    eval_every: int = 50_000
    eval_episodes: int = 1000
    name: str | None = None
    hyper: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.agent not in ALGOS:
            raise ValueError(f"unknown agent {self.agent!r}; expected one of {list(ALGOS)}")
        from causalplay.envs import ENV_IDS, SEQUENCE_IDS
        from causalplay.envs.pixels import PIXEL_IDS

        ok = [e for e in ENV_IDS if "Nexiom" not in e] + list(PIXEL_IDS) + list(SEQUENCE_IDS)
        if self.env not in ok:
            raise ValueError(f"unknown or unsupported environment id {self.env!r}; expected a Blicket, pixel or "
                             f"sequence id from {ok}")
        if self.pixels and (self.agent not in PIXEL_HYPER or self.belief_input):
            raise ValueError(f"on a pixel id ({self.env}) the agent must be one of {list(PIXEL_HYPER)} without "
                             f"--belief-input, got {self.agent!r}{' with --belief-input' if self.belief_input else ''}")
        if self.belief_tracker and (self.pixels or self.env in SEQUENCE_IDS):
            raise ValueError(f"--belief-tracker needs a symbolic Blicket id (it reads the history observation's "
                             f"beliefs), got {self.env!r}")
        if self.obs != "history":
            raise ValueError(f"obs must be 'history' (the panel alone hides the past from a feed-forward policy), "
                             f"got {self.obs!r}")
        for key in ("steps", "eval_every", "eval_episodes"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key} must be a positive integer, got {v!r}")
        if self.envs is not None and (isinstance(self.envs, bool) or not isinstance(self.envs, int) or self.envs < 1):
            raise ValueError(f"envs must be a positive integer, got {self.envs!r}")
        unknown = set(self.hyper) - set(DEFAULT_HYPER[self.agent])
        if unknown:
            raise ValueError(f"unknown hyper-parameter(s) {sorted(unknown)} for {self.agent}; known: "
                             f"{sorted(DEFAULT_HYPER[self.agent])}")
        if self.name is None:
            algo = self.agent.removeprefix("recurrent-")
            belief = "-belief-tracked" if self.belief_tracker else "-belief" if self.belief_input else ""
            self.name = f"{algo}-{'re' if ALGOS[self.agent][1] else 'ff'}{belief}"
            if self.pixels:
                self.name = f"{algo}-v"
        if not self.name or any(c in self.name for c in ":,/ "):
            raise ValueError(f"name must be non-empty without ':', ',', '/' or spaces, got {self.name!r}")

    @property
    def hp(self) -> dict:
        """The hyper-parameters in force (defaults, then ``hyper``, then ``envs``)."""
        hp = {**DEFAULT_HYPER[self.agent], **(PIXEL_HYPER[self.agent] if self.pixels else {}), **self.hyper}
        if self.envs is not None:
            hp["envs"] = self.envs
        return hp

    @property
    def pixels(self) -> bool:
        """Whether ``env`` is a pixel id (rendered panels)."""
        from causalplay.envs.pixels import PIXEL_IDS

        return self.env in PIXEL_IDS

    @property
    def recurrent(self) -> bool:
        return ALGOS[self.agent][1]

    @property
    def suffix(self) -> str:
        return ".pt" if ALGOS[self.agent][0] == "causalplay" else ".zip"


# -- models --------------------------------------------------------------------------------------------------
def _sb3_class(agent: str):
    if agent == "recurrent-ppo":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO
    from stable_baselines3 import DDPG, PPO, TD3

    return {"ppo": PPO, "td3": TD3, "ddpg": DDPG}[agent]


def build_model(cfg: TrainConfig, env):
    """A fresh model for ``cfg`` on ``env`` (an :class:`~causalplay.rl.envs.RLVecEnv`)."""
    hp = cfg.hp
    if cfg.agent in ("recurrent-td3", "recurrent-ddpg"):
        from .recurrent import RecurrentConfig, RecurrentTD3

        algo = cfg.agent.removeprefix("recurrent-")
        rc = RecurrentConfig(algo=algo, policy_delay=2 if algo == "td3" else 1,
                             **{k: v for k, v in hp.items() if k != "envs"})
        return RecurrentTD3(env, rc, seed=cfg.seed)
    cls = _sb3_class(cfg.agent)
    common = {"seed": cfg.seed, "device": "cpu", "verbose": 0, "gamma": hp["gamma"],
              "learning_rate": hp["learning_rate"], "batch_size": hp["batch_size"]}
    if cfg.agent in ("ppo", "recurrent-ppo"):
        pk: dict = {"net_arch": {"pi": list(hp["net_arch"]), "vf": list(hp["net_arch"])},
                    "log_std_init": hp["log_std_init"]}
        if cfg.agent == "recurrent-ppo":
            pk["lstm_hidden_size"] = hp["lstm"]
        policy = "MultiInputPolicy" if cfg.pixels else "MlpLstmPolicy" if cfg.recurrent else "MlpPolicy"
        return cls(policy, env, n_steps=hp["n_steps"],
                   n_epochs=hp["n_epochs"], gae_lambda=hp["gae_lambda"], ent_coef=hp["ent_coef"], policy_kwargs=pk,
                   **common)
    from stable_baselines3.common.noise import NormalActionNoise

    n_act = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(n_act), hp["action_noise"] * np.ones(n_act))
    policy = "MultiInputPolicy" if cfg.pixels else "MlpPolicy"
    return cls(policy, env, buffer_size=hp["buffer_size"], learning_starts=hp["learning_starts"],
               tau=hp["tau"], train_freq=1, gradient_steps=hp["gradient_steps"], action_noise=noise,
               policy_kwargs={"net_arch": list(hp["net_arch"])}, **common)


def _load_model(cfg: TrainConfig, path: Path, env=None):
    if cfg.suffix == ".pt":
        from .recurrent import RecurrentTD3

        return RecurrentTD3.load(path, env=env)
    return _sb3_class(cfg.agent).load(path, env=env, device="cpu")


# -- acting ------------------------------------------------------------------------------------------------
class Policy:
    """A trained model acting deterministically on learner features; actions in ``[-1, 1]``.

    Recurrent models keep their LSTM state across :meth:`act` calls from :meth:`reset` on.
    """

    def __init__(self, model, config: TrainConfig):
        self.model, self.config = model, config

    def reset(self, batch_size: int) -> None:
        self.state = None
        self.start = np.ones(batch_size, dtype=bool)

    def act(self, features: np.ndarray) -> np.ndarray:
        if self.config.recurrent:
            a, self.state = self.model.predict(features, state=self.state, episode_start=self.start,
                                               deterministic=True)
            self.start = np.zeros_like(self.start)
        else:
            a, _ = self.model.predict(features, deterministic=True)
        return np.asarray(a, dtype=np.float32)


def read_config(path: str | Path) -> TrainConfig:
    """The :class:`TrainConfig` of a training folder."""
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"RL checkpoint folder {str(path)!r} does not exist")
    f = p / "config.json"
    if not f.is_file():
        raise FileNotFoundError(f"{str(path)!r} holds no config.json: not a `causalplay train` output folder")
    d = json.loads(f.read_text())
    return TrainConfig(**{k: d[k] for k in TrainConfig.__dataclass_fields__ if k in d})


def load_policy(path: str | Path, which: str = "best") -> Policy:
    """The policy saved in a ``causalplay train`` folder (``which``: ``"best"`` or ``"last"``)."""
    if which not in ("best", "last"):
        raise ValueError(f"which must be 'best' or 'last', got {which!r}")
    cfg = read_config(path)
    ckpt = Path(path) / f"{which}{cfg.suffix}"
    if not ckpt.is_file():
        raise FileNotFoundError(f"{str(path)!r} has no {ckpt.name} checkpoint yet (training writes it at the first "
                                "evaluation)")
    return Policy(_load_model(cfg, ckpt), cfg)


def evaluate(policy: Policy, env_id: str, n_episodes: int, seed=(EVAL_SEED, 0)) -> dict[str, float]:
    """Episode / context Acc and R of ``policy`` on ``n_episodes`` of ``env_id`` drawn from ``seed`` -- the
    benchmark's own episode loop (:func:`causalplay.bench.runner.run_episodes` with the ``rl`` agent).

    On a sequence id, ``n_episodes`` sequences (:func:`causalplay.bench.sequences.run_sequences`, sequence ``i``
    seeded ``[seed[0], i]``) and the means are per *machine* (Acc = machines solved, R = a machine's return),
    so the numbers read like the single-machine ones.
    """
    from causalplay.envs import SEQUENCE_IDS

    if env_id in SEQUENCE_IDS:
        from causalplay.agents.rl import RLAgent
        from causalplay.bench.sequences import run_sequences

        df = run_sequences(RLAgent(policy=policy), n_episodes, int(seed[0]))
        return {"episode_acc": float(df.solved.mean()), "episode_reward": float(df.episode_reward.mean()),
                "context_acc": float("nan"), "context_reward": float(df.context_reward.mean())}
    from causalplay.bench.runner import run_episodes

    df = run_episodes(env_id, "rl", n_episodes, int(seed[0]), int(seed[1]), agent_kwargs={"policy": policy})
    return {"episode_acc": float(df.episode_solved.mean()), "episode_reward": float(df.episode_reward.mean()),
            "context_acc": float(df.context_solved.mean()), "context_reward": float(df.context_reward.mean())}


# -- the loop ----------------------------------------------------------------------------------------------
def _check_resume(cfg: TrainConfig, out: Path) -> dict | None:
    """The saved state of an earlier run of the same config in ``out``, ``None`` for a fresh run."""
    f = out / "config.json"
    if not f.exists():
        if out.exists() and any(out.iterdir()):
            raise FileExistsError(f"output folder {str(out)!r} is not empty and holds no config.json; pick another "
                                  "--out")
        return None
    old = json.loads(f.read_text())
    mine = {**asdict(cfg), "hp": cfg.hp}  # hp: the defaults in force then, so a changed default cannot slip in
    diff = [k for k in mine if k not in ("steps",) and json.loads(json.dumps(mine[k])) != old.get(k)]
    if diff:
        what = ", ".join(f"{k}: {old.get(k)!r} vs {mine[k]!r}" for k in diff)
        raise ValueError(f"{str(out)!r} holds a run with a different config ({what}); pick another --out or the "
                         "same options")
    state = out / "state.json"
    return json.loads(state.read_text()) if state.exists() else None


def _save_last(model, cfg: TrainConfig, out: Path, state: dict) -> None:
    # write to temporaries, then rename: a kill mid-save leaves the previous checkpoint intact
    tmp = out / f"last.tmp{cfg.suffix}"
    model.save(tmp)
    if cfg.agent in ("td3", "ddpg", "recurrent-td3", "recurrent-ddpg"):
        ext = ".npz" if cfg.suffix == ".pt" else ".pkl"
        model.save_replay_buffer(out / f"last_buffer.tmp{ext}")
        (out / f"last_buffer.tmp{ext}").replace(out / f"last_buffer{ext}")
    tmp.replace(out / f"last{cfg.suffix}")
    (out / "state.tmp.json").write_text(json.dumps(state))
    (out / "state.tmp.json").replace(out / "state.json")


class _Progress:
    """tqdm bar over env steps with the recent training episodes' Acc / R."""

    def __init__(self, env, total: int, initial: int, enabled: bool):
        from tqdm.auto import tqdm

        self.env, self.last, self.t = env, initial, 0.0
        self.bar = tqdm(total=total, initial=initial, unit="step", desc="train", disable=not enabled,
                        dynamic_ncols=True)

    def __call__(self, num_timesteps: int) -> None:
        self.bar.update(num_timesteps - self.last)
        self.last = num_timesteps
        now = time.perf_counter()
        if now - self.t > 1.0:
            acc, r = self.env.recent()
            self.bar.set_postfix_str(f"ep Acc {100 * acc:.1f}% R {r:.2f}")
            self.t = now

    def sb3(self):
        from stable_baselines3.common.callbacks import BaseCallback

        outer = self

        class _CB(BaseCallback):
            def _on_step(self) -> bool:
                outer(self.model.num_timesteps)
                return True

        return _CB()


def train(cfg: TrainConfig, progress: bool = True) -> Path:
    """Train (or resume) the run described by ``cfg``; returns its output folder. See the module docstring."""
    from .envs import make_train_env

    out = Path(cfg.out)
    saved = _check_resume(cfg, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps({**asdict(cfg), "hp": cfg.hp}, indent=1))
    hp = cfg.hp
    start = int(saved["num_timesteps"]) if saved else 0
    # resumed rows are reseeded at the resume step, so they do not replay the episodes already trained on
    row_seed = TRAIN_SEED_BASE + 10_000 * cfg.seed + start
    if cfg.pixels:
        from causalplay.envs import make_batch

        from .pixels import PixelRLVecEnv

        # one generator for all rows (a pixel batch has no per-row seeding), still far from every bench seed
        env = PixelRLVecEnv(make_batch(cfg.env, hp["envs"], seed=[row_seed, 1]))
    else:
        env = make_train_env(cfg.env, hp["envs"], row_seed, belief=cfg.belief_input, tracker=cfg.belief_tracker)
    if saved:
        model = _load_model(cfg, out / f"last{cfg.suffix}", env=env)
        buf = next(iter(sorted(out.glob("last_buffer.*"))), None)
        if buf is not None and buf.name in ("last_buffer.pkl", "last_buffer.npz"):
            model.load_replay_buffer(buf)
        best, wall0 = float(saved["best_eval_reward"]), float(saved["wall_s"])
        episodes0 = int(saved.get("train_episodes", 0))
    else:
        model = build_model(cfg, env)
        best, wall0, episodes0 = -math.inf, 0.0, 0
        with open(out / "progress.csv", "w", newline="") as f:
            csv.writer(f).writerow(PROGRESS_COLUMNS)
    policy = Policy(model, cfg)
    bar = _Progress(env, cfg.steps, model.num_timesteps, progress)
    t0 = time.perf_counter()
    try:
        while model.num_timesteps < cfg.steps:
            s0, w0 = model.num_timesteps, time.perf_counter()
            chunk = min(cfg.eval_every - model.num_timesteps % cfg.eval_every, cfg.steps - model.num_timesteps)
            if cfg.suffix == ".pt":
                model.learn(chunk, callback=bar)
            else:
                model.learn(chunk, callback=bar.sb3(), reset_num_timesteps=False)
            rate = (model.num_timesteps - s0) / max(time.perf_counter() - w0, 1e-9)
            ev = evaluate(policy, cfg.env, cfg.eval_episodes)
            acc, r = env.recent()
            is_best = ev["episode_reward"] > best
            if is_best:
                best = ev["episode_reward"]
                tmp = out / f"best.tmp{cfg.suffix}"
                model.save(tmp)
                tmp.replace(out / f"best{cfg.suffix}")
            wall = wall0 + time.perf_counter() - t0
            with open(out / "progress.csv", "a", newline="") as f:
                csv.writer(f).writerow([model.num_timesteps, round(wall, 2), round(rate, 1), episodes0 + env.episodes,
                                        acc, r, ev["episode_acc"], ev["episode_reward"], int(is_best)])
            _save_last(model, cfg, out, {"num_timesteps": int(model.num_timesteps), "best_eval_reward": best,
                                         "wall_s": wall, "train_episodes": episodes0 + env.episodes})
            plot_curves({cfg.name: out}, out / "learning_curve.png")
    finally:
        bar.bar.close()
        env.close()
    return out


def plot_curves(runs: dict[str, str | Path], path: str | Path) -> Path:
    """Learning curves (eval episode Acc and R against env steps) of training folders in one figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, d in runs.items():
        f = Path(d) / "progress.csv"
        if not f.exists():
            continue
        df = pd.read_csv(f)
        if df.empty:
            continue
        axes[0].plot(df.steps, 100 * df.eval_acc, marker=".", label=label)
        axes[1].plot(df.steps, df.eval_reward, marker=".", label=label)
    for ax, what in zip(axes, ("eval episode Acc %", "eval episode R"), strict=True):
        ax.set_xlabel("env steps")
        ax.set_ylabel(what)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def set_threads(n: int = 1) -> None:
    """Torch intra-op threads for training (1 on a shared machine)."""
    torch.set_num_threads(n)
