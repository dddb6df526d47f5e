"""The team hub's database across JupyterHub upgrades: before `up` starts the hub, a database
whose schema is older than the JupyterHub in hub/.venv is upgraded with JupyterHub's own
`jupyterhub upgrade-db`, which first copies the sqlite file beside itself
(`jupyterhub.sqlite.<date-time>`). A current database is left alone and nothing is said. A failed
upgrade puts that copy back, so the hub's database is as it was, and stops `up` in one line; a
database this JupyterHub cannot read, or one a newer JupyterHub made, stops it with nothing changed.
The newest KEEP_BACKUPS upgrade copies are kept, older ones removed; the live file never is."""

from __future__ import annotations

import contextlib
import filecmp
import glob
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

KEEP_BACKUPS = 5
# A migration of a large database takes seconds; this bounds a hung one.
UPGRADE_TIMEOUT = 900.0
# A database with JupyterHub's tables but no alembic_version: made before JupyterHub 0.8.
UNSTAMPED = "none (before JupyterHub 0.8)"
# What JupyterHub's backup_db_file names its copy: FILE.<date-time>, or FILE..<date-time>.N when taken.
_BACKUP_SUFFIX = re.compile(r"\.\.?(?P<stamp>[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{6})(?:\.(?P<index>[0-9]+))?")
# An exception line of a traceback: the reason a migration failed.
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception): .+")


class DbUpgradeError(Exception):
    """One line saying what is wrong with the hub's database, and what was done about it."""


@dataclass(frozen=True)
class Schema:
    """The schema the installed JupyterHub works with."""

    version: str  # JupyterHub's
    head: str  # the alembic revision it needs
    known: frozenset[str]  # every revision it can upgrade from


def installed_schema() -> Schema:
    """The schema of the JupyterHub this process runs with (hub/.venv): its alembic scripts' head."""
    # hub/.venv's packages (where ctl runs), not in the host tools' venv that imports this module too.
    import jupyterhub  # type: ignore[import-not-found]  # noqa: PLC0415
    from alembic.script import ScriptDirectory  # type: ignore[import-not-found]  # noqa: PLC0415
    from jupyterhub import dbutil  # noqa: PLC0415

    scripts = ScriptDirectory(dbutil.ALEMBIC_DIR)
    return Schema(str(jupyterhub.__version__), str(scripts.get_current_head()),
                  frozenset(str(script.revision) for script in scripts.walk_revisions()))


def revision(db: Path) -> str | None:
    """The alembic revision stamped in the sqlite file DB, read without writing to it; None when it
    holds no JupyterHub tables yet (JupyterHub stamps an empty database itself)."""
    try:
        with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            tables = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "alembic_version" not in tables:
                return UNSTAMPED if "users" in tables else None
            rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error as exc:
        raise DbUpgradeError(f"the hub's database {db} cannot be read ({exc}): put a backup of the state "
                             "folder in its place, or move it away to start with an empty one; "
                             "nothing was changed") from None
    if len(rows) != 1:
        raise DbUpgradeError(f"the hub's database {db} has {len(rows)} schema revisions in alembic_version, "
                             "not one: put a backup of the state folder in its place; nothing was changed")
    return str(rows[0][0])


def backups(db: Path) -> list[Path]:
    """The copies JupyterHub's upgrade made of DB beside it, oldest first."""
    found: list[tuple[str, int, Path]] = []
    for path in db.parent.glob(f"{glob.escape(db.name)}.*"):
        match = _BACKUP_SUFFIX.fullmatch(path.name[len(db.name):])
        if match and path.is_file():
            found.append((match["stamp"], int(match["index"] or 0), path))
    return [path for _, _, path in sorted(found)]


def prune(db: Path, keep: int = KEEP_BACKUPS) -> list[Path]:
    """Remove all but the newest KEEP upgrade copies of DB (never DB itself); the ones removed."""
    old = backups(db)[:-keep] if keep > 0 else backups(db)
    for path in old:
        path.unlink()
    return old


def failure_reason(output: str) -> str:
    """The line of `jupyterhub upgrade-db`'s output that says why it failed: the migration's own
    exception, not the CalledProcessError JupyterHub wraps it in."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    reasons = [line for line in lines if _EXCEPTION_LINE.fullmatch(line) and "CalledProcessError" not in line]
    return (reasons or lines or ["no output"])[-1][:300]


def digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def restore(backup: Path, db: Path) -> None:
    """Put BACKUP's bytes back in DB's place in one rename, and drop the journal the failed run left."""
    with tempfile.NamedTemporaryFile(dir=db.parent, prefix=f".{db.name}.", delete=False) as handle:
        part = Path(handle.name)
    try:
        shutil.copyfile(backup, part)
        part.chmod(0o600)
        os.replace(part, db)
    finally:
        part.unlink(missing_ok=True)
    for suffix in ("-journal", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def upgrade(db: Path, jupyterhub: Path, log: Path, environ: Mapping[str, str],
            schema: Schema | None = None) -> str | None:
    """Upgrade DB (the hub's sqlite file) to the schema of JUPYTERHUB (hub/.venv/bin/jupyterhub),
    its output appended to LOG. The line to print when it upgraded; None when there was nothing to do."""
    if not db.exists():
        return None
    schema = schema or installed_schema()
    current = revision(db)
    if current is None or current == schema.head:
        return None
    if current != UNSTAMPED and current not in schema.known:
        newest = backups(db)[-1:]
        keep_aside = f" (the newest upgrade backup: {newest[0]})" if newest else ""
        raise DbUpgradeError(f"the hub's database {db} has schema revision {current}, which JupyterHub "
                             f"{schema.version} does not know: a newer JupyterHub upgraded it; use that one, or put "
                             f"the backup from before its upgrade in its place{keep_aside}; nothing was changed")
    before = set(backups(db))
    original = digest(db)
    # alembic, which JupyterHub runs by name, is in the same venv as jupyterhub.
    env = {**environ, "PATH": os.pathsep.join(filter(None, [str(jupyterhub.parent), environ.get("PATH")]))}
    with tempfile.TemporaryDirectory() as empty:  # no jupyterhub_config.py to pick up from the cwd
        try:
            run = subprocess.run([str(jupyterhub), "upgrade-db", f"--JupyterHub.db_url=sqlite:///{db}"], cwd=empty,
                                 env=env, capture_output=True, text=True, timeout=UPGRADE_TIMEOUT, check=False)
            output, failed = run.stdout + run.stderr, run.returncode != 0
        except subprocess.TimeoutExpired as exc:
            partial = [text.decode(errors="replace") if isinstance(text, bytes) else text or ""
                       for text in (exc.stdout, exc.stderr)]
            output = "".join(partial) + f"\nupgrade-db: no result within {UPGRADE_TIMEOUT:.0f}s"
            failed = True
    with log.open("a") as out:
        out.write(f"--- jupyterhub upgrade-db of {db}: revision {current} to {schema.head}\n{output}\n")
    made = [path for path in backups(db) if path not in before]
    reason = failure_reason(output) if failed else ""
    if not failed:
        try:
            upgraded = revision(db)
        except DbUpgradeError:
            reason = "the database cannot be read afterwards"
        else:
            if upgraded == schema.head:
                prune(db)
                return (f"upgraded the hub's database from revision {current} to {upgraded}; "
                        f"backup: {made[-1] if made else 'none made'}")
            reason = f"the database is at revision {upgraded} afterwards"
    failure = (f"upgrading the hub's database {db} from revision {current} to {schema.head} failed: "
               f"{reason} (log: {log})")
    if not made:
        state = "it is as it was" if digest(db) == original else "it was changed, and JupyterHub made no backup"
        raise DbUpgradeError(f"{failure}; {state}")
    restore(made[-1], db)
    if not filecmp.cmp(made[-1], db, shallow=False):
        raise DbUpgradeError(f"{failure}, and putting its backup back failed too: copy {made[-1]} over {db} by hand")
    raise DbUpgradeError(f"{failure}; it is back as it was; its backup: {made[-1]}")
