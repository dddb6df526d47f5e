"""hub/dbupgrade.py without JupyterHub: reading a database's schema revision without writing to
it, the upgrade's copies found and pruned (never the live file), the reason picked from a failed
upgrade's output, and databases refused before anything runs. The upgrade itself, with JupyterHub
4's database and the hub of this repository, is tests/hub/test_db_upgrade.py."""

import contextlib
import sqlite3
from pathlib import Path

import pytest

from hub import dbupgrade
from hub.dbupgrade import DbUpgradeError, Schema

SCHEMA = Schema("5.5.4", "4621fec11365", frozenset({"0eee8c825d24", "3c2384c5aae1", "4621fec11365"}))
# Never run: a test reaching the upgrade's subprocess fails on this path.
NO_JUPYTERHUB = Path("/nonexistent/bin/jupyterhub")


def make_db(path: Path, *statements: str) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    return path


def stamped(path: Path, revision: str) -> Path:
    make_db(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
            "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    return add_revision(path, revision)


def add_revision(path: Path, revision: str) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("INSERT INTO alembic_version VALUES (?)", (revision,))
        conn.commit()
    return path


def test_the_revision_is_read_from_alembic_version(tmp_path: Path) -> None:
    db = stamped(tmp_path / "jupyterhub.sqlite", "0eee8c825d24")
    before = db.read_bytes()
    assert dbupgrade.revision(db) == "0eee8c825d24"
    assert db.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["jupyterhub.sqlite"]


def test_a_database_without_tables_has_no_revision_yet(tmp_path: Path) -> None:
    empty = tmp_path / "jupyterhub.sqlite"
    empty.touch()
    assert dbupgrade.revision(empty) is None
    other = make_db(tmp_path / "other.sqlite", "CREATE TABLE notes (text TEXT)")
    assert dbupgrade.revision(other) is None


def test_jupyterhubs_tables_without_a_stamp_are_from_before_0_8(tmp_path: Path) -> None:
    db = make_db(tmp_path / "jupyterhub.sqlite", "CREATE TABLE users (id INTEGER PRIMARY KEY)")
    assert dbupgrade.revision(db) == dbupgrade.UNSTAMPED


def test_a_file_that_is_no_database_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "jupyterhub.sqlite"
    db.write_bytes(b"this is not sqlite " * 300)
    with pytest.raises(DbUpgradeError) as raised:
        dbupgrade.revision(db)
    message = str(raised.value)
    assert "\n" not in message and str(db) in message and "cannot be read" in message, message
    assert "not a database" in message and "nothing was changed" in message


def test_two_revisions_at_once_are_refused(tmp_path: Path) -> None:
    db = stamped(tmp_path / "jupyterhub.sqlite", "0eee8c825d24")
    add_revision(db, "4621fec11365")
    with pytest.raises(DbUpgradeError, match="has 2 schema revisions"):
        dbupgrade.revision(db)


def test_backups_are_the_upgrades_copies_oldest_first(tmp_path: Path) -> None:
    db = stamped(tmp_path / "jupyterhub.sqlite", "0eee8c825d24")
    names = ["jupyterhub.sqlite.2026-01-02-030405", "jupyterhub.sqlite..2026-01-02-030405.1",
             "jupyterhub.sqlite.2025-12-31-235959", "jupyterhub.sqlite.2026-01-02-030406"]
    unrelated = ["jupyterhub.sqlite-journal", "jupyterhub.sqlite.bak", "jupyterhub.sqlite.2026-01-02",
                 "other.sqlite.2026-01-02-030405", "jupyterhub_cookie_secret"]
    for name in names + unrelated:
        (tmp_path / name).write_text(name)
    assert [path.name for path in dbupgrade.backups(db)] == [
        "jupyterhub.sqlite.2025-12-31-235959", "jupyterhub.sqlite.2026-01-02-030405",
        "jupyterhub.sqlite..2026-01-02-030405.1", "jupyterhub.sqlite.2026-01-02-030406"]


def test_prune_keeps_the_newest_and_never_the_live_file(tmp_path: Path) -> None:
    db = stamped(tmp_path / "jupyterhub.sqlite", "4621fec11365")
    stamps = [f"2026-01-{day:02d}-120000" for day in range(1, 9)]
    for stamp in stamps:
        (tmp_path / f"jupyterhub.sqlite.{stamp}").write_text(stamp)
    (tmp_path / "jupyterhub.sqlite.bak").write_text("kept by hand")
    removed = dbupgrade.prune(db, keep=3)
    assert [path.name for path in removed] == [f"jupyterhub.sqlite.{stamp}" for stamp in stamps[:5]]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        ["jupyterhub.sqlite", "jupyterhub.sqlite.bak", *(f"jupyterhub.sqlite.{stamp}" for stamp in stamps[5:])])
    assert dbupgrade.revision(db) == "4621fec11365"
    assert dbupgrade.prune(db, keep=3) == []


def test_the_reason_is_the_migrations_exception_not_the_wrapper() -> None:
    output = """[I 2026-12-07 02:27:48.900 JupyterHub dbutil:129] Upgrading sqlite:////state/jupyterhub.sqlite
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/sqlalchemy/engine/base.py", line 1977, in _exec_single_context
sqlite3.OperationalError: duplicate column name: managed_by_auth

The above exception was the direct cause of the following exception:

sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) duplicate column name: managed_by_auth
[SQL: ALTER TABLE roles ADD COLUMN managed_by_auth BOOLEAN DEFAULT 0 NOT NULL]
[E 2026-12-07 02:27:49.417 JupyterHub app:3944]
    Traceback (most recent call last):
    subprocess.CalledProcessError: Command '['alembic', 'upgrade', 'head']' returned non-zero exit status 1.
"""
    assert dbupgrade.failure_reason(output) == (
        "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) duplicate column name: managed_by_auth")
    assert dbupgrade.failure_reason("killed\n\n") == "killed"
    assert dbupgrade.failure_reason("") == "no output"


def test_a_current_or_missing_database_runs_nothing(tmp_path: Path) -> None:
    log = tmp_path / "upgrade.log"
    assert dbupgrade.upgrade(tmp_path / "jupyterhub.sqlite", NO_JUPYTERHUB, log, {}, SCHEMA) is None
    db = stamped(tmp_path / "jupyterhub.sqlite", SCHEMA.head)
    assert dbupgrade.upgrade(db, NO_JUPYTERHUB, log, {}, SCHEMA) is None
    assert not log.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["jupyterhub.sqlite"]


def test_a_revision_from_a_newer_jupyterhub_is_refused_with_nothing_changed(tmp_path: Path) -> None:
    db = stamped(tmp_path / "jupyterhub.sqlite", "ffffffffffff")
    (tmp_path / "jupyterhub.sqlite.2026-01-02-030405").write_text("an older copy")
    before = db.read_bytes()
    with pytest.raises(DbUpgradeError) as raised:
        dbupgrade.upgrade(db, NO_JUPYTERHUB, tmp_path / "upgrade.log", {}, SCHEMA)
    message = str(raised.value)
    assert "\n" not in message and "schema revision ffffffffffff" in message and "JupyterHub 5.5.4" in message
    assert f"{tmp_path}/jupyterhub.sqlite.2026-01-02-030405" in message and "nothing was changed" in message
    assert db.read_bytes() == before
    assert not (tmp_path / "upgrade.log").exists()


def test_restore_puts_the_copys_bytes_back_and_drops_the_journal(tmp_path: Path) -> None:
    db = stamped(tmp_path / "jupyterhub.sqlite", "3c2384c5aae1")
    backup = stamped(tmp_path / "jupyterhub.sqlite.2026-01-02-030405", "0eee8c825d24")
    (tmp_path / "jupyterhub.sqlite-journal").write_bytes(b"left by a failed run")
    dbupgrade.restore(backup, db)
    assert db.read_bytes() == backup.read_bytes()
    assert db.stat().st_mode & 0o777 == 0o600
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "jupyterhub.sqlite", "jupyterhub.sqlite.2026-01-02-030405"]
