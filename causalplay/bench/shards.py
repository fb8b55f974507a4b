"""Verified shards and the run lock: what the benchmark driver writes and what it trusts on resume.

A shard is the unit of work and of resuming: episodes ``[start, start + size)`` of one ``(env, variant, agent,
seed)``.
Workers only compute and return records; the driver (one process, holding :class:`RunLock` on ``--out``) checks
them and writes each shard as two files, each atomically (unique temp name in the same folder, ``fsync``,
``rename``, ``fsync`` of the folder):

* ``shards/<name>.csv`` — the episode rows;
* ``shards/<name>.json`` — its manifest: the shard's identity (env id, variant, agent spec, seed, index, start,
  size, env options), the row count, the CSV's byte length and SHA-256, the package version and the worker's host.

On resume a shard is reused only when its manifest matches the planned shard and the CSV's hash verifies
(:func:`check_shard`); anything else (no manifest, a truncated, header-only or empty CSV, a manifest for another
size, another version) is recomputed and the reason reported.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

__all__ = ["Shard", "ShardError", "RunLocked", "RunLock", "MANIFEST_FORMAT", "write_shard", "check_shard",
           "read_shard", "validate_records", "atomic_write"]

#: Bumped whenever the manifest's meaning changes; a manifest of another format is never trusted.
MANIFEST_FORMAT = 2

_SAFE_SPEC = re.compile(r"[\w.=+:-]+")


class ShardError(ValueError):
    """Records returned for a shard are not the shard's (wrong rows, columns, identity or package version)."""


@dataclass(frozen=True)
class Shard:
    """One unit of work: episodes ``[start, start + size)`` of ``(env, variant, agent, seed)``; ``index`` seeds it.
    ``variant`` holds the env options the env's family sweeps (e.g. ``(("linear", False), ("split", "test"))``)."""

    env: str
    agent: str
    seed: int
    index: int
    start: int
    size: int
    variant: tuple = ()

    @property
    def stem(self) -> str:
        """File name without suffix: env, agent, seed, index, ``start+size`` (start and size in the name: a shard
        of a run with other sizes is never mistaken for this one; a digest is added when the agent spec has
        characters unsafe in a file name, e.g. a quoted URL, so two specs never share a file)."""
        agent = self.agent
        if not _SAFE_SPEC.fullmatch(agent):
            agent = re.sub(r"[^\w.=+:-]+", "_", agent) + "-" + hashlib.sha256(agent.encode()).hexdigest()[:8]
        env = self.env.replace("/", "_") + "".join(f"__{k}={v}" for k, v in self.variant)
        return f"{env}__{agent}__s{self.seed}__{self.index:05d}__{self.start}+{self.size}"

    @property
    def filename(self) -> str:
        """The CSV's file name."""
        return self.stem + ".csv"

    @property
    def manifest_name(self) -> str:
        """The manifest's file name."""
        return self.stem + ".json"

    @property
    def dialogues_name(self) -> str:
        """File of a language-model agent's dialogues (one JSON line per episode)."""
        return self.stem + ".dialogues.jsonl"


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a part.

    The temp file has a unique name in the same folder (``mkstemp``), so two writers never share one.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _identity(shard: Shard, env_kwargs: dict | None, version: str) -> dict:
    return {"format": MANIFEST_FORMAT, **_jsonable(asdict(shard)), "env_kwargs": _jsonable(env_kwargs or {}),
            "causalplay": version}


def _jsonable(obj):
    return json.loads(json.dumps(obj, sort_keys=True, default=repr))


def validate_records(shard: Shard, df: pd.DataFrame, columns: list[str]) -> None:
    """Raise :class:`ShardError` unless ``df`` holds exactly the episodes of ``shard`` in order (a family may give
    several rows per episode, e.g. one per machine of a sequence), its first columns being ``columns`` (agents may
    add per-episode columns after them, e.g. token counts)."""
    if list(df.columns[: len(columns)]) != list(columns):
        raise ShardError(f"shard {shard.stem}: columns {list(df.columns)} do not start with {list(columns)}")
    ep = df["episode"]
    if not ep.is_monotonic_increasing or ep.drop_duplicates().tolist() != list(range(shard.start,
                                                                                    shard.start + shard.size)):
        raise ShardError(f"shard {shard.stem}: {len(df)} rows whose episodes are not "
                         f"{shard.start}..{shard.start + shard.size - 1} in order")
    for col, want in (("env", shard.env), ("agent", shard.agent), ("seed", shard.seed)):
        if not (df[col] == want).all():
            raise ShardError(f"shard {shard.stem}: column {col!r} is not {want!r} in every row")


def write_shard(folder: Path, shard: Shard, df: pd.DataFrame, *, columns: list[str], env_kwargs: dict | None,
                version: str, extra: dict | None = None, dialogues: list | None = None) -> dict:
    """Validate ``df`` for ``shard`` and write its dialogues (if any), CSV and manifest, each atomically; return
    the manifest.

    Parameters
    ----------
    folder : Path
        The ``shards/`` folder.
    shard : Shard
        The shard the records claim to be.
    df : pandas.DataFrame
        Its episode rows, as a worker returned them.
    columns : list of str
        The columns every shard has, in order.
    env_kwargs : dict or None
        Env options of the run (part of the shard's identity).
    version : str
        Package version of the driver; the worker's must be the same (checked by the caller).
    extra : dict, optional
        Informational fields for the manifest (worker host, seconds).
    dialogues : list, optional
        One message list per episode (language-model agents): written to ``<stem>.dialogues.jsonl``, its hash
        in the manifest.

    Raises
    ------
    ShardError
        When the records are not the shard's.
    """
    validate_records(shard, df, columns)
    data = df.to_csv(index=False).encode()
    manifest = {**_identity(shard, env_kwargs, version), "rows": len(df), "episodes": shard.size, "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "columns": list(df.columns), **(extra or {})}
    if dialogues is not None:
        if len(dialogues) != len(df):
            raise ShardError(f"shard {shard.stem}: {len(dialogues)} dialogues for {len(df)} episodes")
        text = "".join(json.dumps({"episode": int(e), "messages": m}) + "\n"
                       for e, m in zip(df["episode"], dialogues, strict=True)).encode()
        manifest["dialogues_sha256"] = hashlib.sha256(text).hexdigest()
        atomic_write(folder / shard.dialogues_name, text)
    # CSV first: a manifest on disk always describes a complete CSV (a crash between the two leaves a CSV
    # without manifest, which is recomputed).
    atomic_write(folder / shard.filename, data)
    atomic_write(folder / shard.manifest_name, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    return manifest


def check_shard(folder: Path, shard: Shard, env_kwargs: dict | None, version: str) -> str | None:
    """``None`` if the shard on disk can be reused, else why not (a short phrase for the user).

    Reused only if the manifest exists, parses, matches ``shard`` / ``env_kwargs`` / ``version`` and the
    format, records ``episodes == size``, and the CSV's length and SHA-256 are the manifest's.
    """
    csv, man = folder / shard.filename, folder / shard.manifest_name
    if not csv.exists() and not man.exists():
        return "missing"
    if not man.exists():
        return "no manifest (written by an older version, or interrupted between the two files)"
    if not csv.exists():
        return "manifest without its CSV"
    try:
        manifest = json.loads(man.read_text())
        if not isinstance(manifest, dict):
            raise ValueError
    except (ValueError, OSError):
        return "unreadable manifest"
    want = _identity(shard, env_kwargs, version)
    diff = [k for k in want if manifest.get(k) != want[k]]
    if diff:
        k = diff[0]
        return f"manifest is for another shard or run: {k}={manifest.get(k)!r}, expected {want[k]!r}"
    if manifest.get("episodes") != shard.size:
        return f"manifest says {manifest.get('episodes')!r} episodes for a shard of {shard.size}"
    data = csv.read_bytes()
    if len(data) != manifest.get("bytes"):
        return f"CSV has {len(data)} bytes, manifest says {manifest.get('bytes')} (truncated or changed)"
    if hashlib.sha256(data).hexdigest() != manifest.get("sha256"):
        return "CSV content does not match the manifest's SHA-256"
    if "dialogues_sha256" in manifest:
        dia = folder / shard.dialogues_name
        if not dia.exists() or hashlib.sha256(dia.read_bytes()).hexdigest() != manifest["dialogues_sha256"]:
            return "dialogues file missing or not matching the manifest's SHA-256"
    return None


def read_shard(folder: Path, shard: Shard, env_kwargs: dict | None, version: str) -> pd.DataFrame:
    """Read a shard after verifying it (:func:`check_shard`); raise :class:`ShardError` if it does not verify."""
    why = check_shard(folder, shard, env_kwargs, version)
    if why is not None:
        raise ShardError(f"shard {shard.filename} does not verify: {why}")
    return pd.read_csv(io.BytesIO((folder / shard.filename).read_bytes()))


class RunLocked(RuntimeError):
    """Another live process holds the lock on an output folder."""

    def __init__(self, path: Path, holder: dict):
        self.path, self.holder = path, holder
        who = f"pid {holder.get('pid', '?')}"
        if holder.get("host"):
            who += f" on {holder['host']}"
        if holder.get("started"):
            who += f", started {holder['started']}"
        super().__init__(f"{path.parent} is in use by another benchmark run ({who}); wait for it to finish or "
                         f"choose another output folder")


class RunLock:
    """An exclusive lock on an output folder: the file ``<folder>/.lock`` held with ``fcntl.flock``.

    The kernel drops the lock when the holder exits, however it exits (a SIGKILLed run leaves no stale lock, and
    its successor resumes). The file names the holder (pid, host, start time) for the message of
    :class:`RunLocked`. Works on local file systems and on NFS mounts that support locking.

    Parameters
    ----------
    folder : str or Path
        The output folder (created if missing).
    """

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / ".lock"
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock or raise :class:`RunLocked` naming the holder."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            try:
                holder = json.loads(self.path.read_text() or "{}")
            except (ValueError, OSError):
                holder = {}
            raise RunLocked(self.path, holder if isinstance(holder, dict) else {}) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (the file stays; an unlocked file means nobody holds it)."""
        if self._fd is not None:
            import fcntl

            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
