"""What a newer image may not read, it keeps aside and says so (docs/packages.md), without an engine:
tf29image.startup.keptaside's rules on real files in a temporary home. The host has no json5, so
json.loads stands in for the parser here; the schema check is the host's jsonschema (the image's
version, requirements-dev.txt). tests/image/test_kept_aside.py runs it in the image, with json5."""

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from tf29image.startup import keptaside
from tf29image.startup.keptaside import (
    NO_VENV,
    VENV_GONE,
    VENV_KEPT,
    Kernel,
    LabPaths,
    Move,
    SettingsFile,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"theme": {"type": "string"}, "size": {"type": "integer"},
                   "nested": {"type": "object", "properties": {"on": {"type": "boolean"}}}},
    "additionalProperties": False,
}
CHECK = keptaside.schema_checker(Draft7Validator)
WHEN = time.strptime("2026-03-04 05:06:07", "%Y-%m-%d %H:%M:%S")
PLUGIN_ID = "@jupyterlab/apputils-extension:themes"


def parsers() -> tuple[keptaside.Loader, keptaside.Checker]:
    return json.loads, CHECK


@pytest.mark.parametrize(("raw", "why"), [
    (b'{"theme": "JupyterLab Dark"}', None),
    (b"", None),  # jupyterlab_server reads an empty file as {}
    (b"{}", None),
    (b'{"theme": "x", "noSuchSetting": 1}',
     "rejected by this JupyterLab's schema (Additional properties are not allowed ('noSuchSetting' was unexpected))"),
    (b'{"size": "big"}', "rejected by this JupyterLab's schema ('big' is not of type 'integer' at size)"),
    (b'{"nested": {"on": 1}}', "rejected by this JupyterLab's schema (1 is not of type 'boolean' at nested/on)"),
    (b"{nope", "not valid JSON5 (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    (b"[1, 2]", "not a JSON object"),
    (b"7", "not a JSON object"),
    (b'{"theme": "\xff"}', "not UTF-8 text"),
])
def test_what_jupyterlab_server_would_refuse(raw: bytes, why: str | None) -> None:
    assert keptaside.rejection(raw, SCHEMA, json.loads, CHECK) == why


def test_a_long_reason_is_one_short_line() -> None:
    def load(_text: str) -> Any:
        raise ValueError("line one\n" + "x" * 500)

    why = keptaside.rejection(b"{}", SCHEMA, load, CHECK)
    assert why is not None and "\n" not in why and len(why) == keptaside.REASON_CHARS and why.endswith("...")
    assert why.startswith("not valid JSON5 (line one xxx")


def test_overrides_let_a_key_the_schema_lacks_through_as_the_server_does() -> None:
    documents = [{PLUGIN_ID: {"extra": 1, "theme": "x"}}, {"other:plugin": {"more": True}}, ["not", "a", "dict"],
                 {PLUGIN_ID: "not a dict"}]
    keys = keptaside.override_keys(documents)
    assert keys == {PLUGIN_ID: {"extra", "theme"}, "other:plugin": {"more"}}
    relaxed = keptaside.relaxed(SCHEMA, keys[PLUGIN_ID])
    assert keptaside.rejection(b'{"extra": [1]}', relaxed, json.loads, CHECK) is None
    assert keptaside.rejection(b'{"extra": [1]}', SCHEMA, json.loads, CHECK) is not None
    assert "extra" not in SCHEMA["properties"]  # the image's schema itself is not changed
    assert keptaside.relaxed(SCHEMA, {"theme"}) is SCHEMA
    assert keptaside.relaxed({"type": "object"}, {"extra"}) == {"type": "object"}


def test_the_federated_extensions_schema_comes_before_the_app_folders() -> None:
    federated = SettingsFile("@jupyter-widgets/jupyterlab-manager", "plugin", "/s/x")
    core = SettingsFile("@jupyterlab/notebook-extension", "tracker", "/s/y")
    missing = SettingsFile("@nosuch/ext", "plugin", "/s/z")
    files = {
        "/user/labext/@jupyter-widgets/jupyterlab-manager/schemas/@jupyter-widgets/jupyterlab-manager/plugin.json",
        "/venv/labext/@jupyter-widgets/jupyterlab-manager/schemas/@jupyter-widgets/jupyterlab-manager/plugin.json",
        "/app/schemas/@jupyter-widgets/jupyterlab-manager/plugin.json",
        "/app/schemas/@jupyterlab/notebook-extension/tracker.json",
    }
    folders = ("/nothing", "/venv/labext", "/user/labext")
    assert keptaside.schema_path(federated, folders, "/app/schemas", files.__contains__) == (
        "/venv/labext/@jupyter-widgets/jupyterlab-manager/schemas/@jupyter-widgets/jupyterlab-manager/plugin.json")
    assert keptaside.schema_path(federated, (), "/app/schemas", files.__contains__) == (
        "/app/schemas/@jupyter-widgets/jupyterlab-manager/plugin.json")
    assert keptaside.schema_path(core, folders, "/app/schemas", files.__contains__) == (
        "/app/schemas/@jupyterlab/notebook-extension/tracker.json")
    assert keptaside.schema_path(missing, folders, "/app/schemas", files.__contains__) is None


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_settings_files_are_found_as_the_server_names_them(tmp_path: Path) -> None:
    root = tmp_path / "user-settings"
    write(root / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings", b"{}")
    write(root / "plain-ext" / "plugin.jupyterlab-settings", b"{}")
    write(root / "plain-ext" / "notes.txt", b"not a settings file")
    write(root / "plain-ext" / ".jupyterlab-settings", b"no plugin name")
    write(root / "top.jupyterlab-settings", b"no package folder")
    write(root / "@a" / "b" / "c" / "deep.jupyterlab-settings", b"deeper than any npm name")
    write(root / ".hidden" / "x.jupyterlab-settings", b"{}")
    found = keptaside.find_settings(str(root) + "/")
    assert found == [
        SettingsFile("@jupyterlab/notebook-extension", "tracker",
                     str(root / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings")),
        SettingsFile("plain-ext", "plugin", str(root / "plain-ext" / "plugin.jupyterlab-settings")),
    ]
    assert [item.name for item in found] == ["@jupyterlab/notebook-extension/tracker", "plain-ext/plugin"]
    assert keptaside.find_settings(str(tmp_path / "none")) == []


def test_the_folder_is_dated_beside_the_settings_and_never_reused() -> None:
    taken = {"/h/.jupyter/lab/user-settings-kept-aside-20260304-050607",
             "/h/.jupyter/lab/user-settings-kept-aside-20260304-050607-2"}
    assert keptaside.aside_folder("/h/.jupyter/lab/user-settings/", WHEN, lambda path: False) == (
        "/h/.jupyter/lab/user-settings-kept-aside-20260304-050607")
    assert keptaside.aside_folder("/h/.jupyter/lab/user-settings", WHEN, taken.__contains__) == (
        "/h/.jupyter/lab/user-settings-kept-aside-20260304-050607-3")


def test_the_line_the_upgrade_tool_greps_for() -> None:
    settings = SettingsFile("@jupyterlab/notebook-extension", "tracker", "/s/@jupyterlab/notebook-extension/x")
    moves = keptaside.plan_moves([(settings, "why")], "/s-kept-aside-1")
    target = "/s-kept-aside-1/@jupyterlab/notebook-extension/tracker.jupyterlab-settings"
    assert moves == [Move(settings, "why", target)]
    assert keptaside.kept_aside_line(moves[0]) == (
        "kept aside Lab settings @jupyterlab/notebook-extension/tracker: why -> "
        "/s-kept-aside-1/@jupyterlab/notebook-extension/tracker.jupyterlab-settings")


@pytest.fixture
def lab(tmp_path: Path) -> LabPaths:
    """A JupyterLab's folders: the app's schemas and overrides, a federated extension, user settings."""
    app = tmp_path / "venv" / "share" / "jupyter" / "lab"
    write(app / "schemas" / "@jupyterlab" / "apputils-extension" / "themes.json", json.dumps(SCHEMA).encode())
    write(app / "schemas" / "@jupyterlab" / "broken" / "plugin.json", b"{not json")
    write(app / "settings" / "overrides.d" / "image.json", json.dumps({PLUGIN_ID: {"adminKey": 1}}).encode())
    labext = tmp_path / "venv" / "share" / "jupyter" / "labextensions"
    write(labext / "fed" / "schemas" / "fed" / "plugin.json",
          json.dumps({"type": "object", "properties": {"on": {"type": "boolean"}}}).encode())
    config = tmp_path / "etc"
    write(config / "labconfig" / "default_setting_overrides.json", json.dumps({"fed:plugin": {"x": 1}}).encode())
    return LabPaths(str(tmp_path / "home" / ".jupyter" / "lab" / "user-settings"), str(app / "schemas"),
                    str(app / "settings"), (str(labext),), (str(config),))


# What each file holds, and whether it is kept aside: the table the image test repeats with json5.
SETTINGS = {
    "@jupyterlab/apputils-extension/themes": (b'{"theme": "x", "noSuchSetting": 1}', True),
    "@jupyterlab/apputils-extension/valid": (b'{"whatever": 1}', False),  # no schema: left in place
    "fed/plugin": (b"{nope", True),
    "fed/other": (b"{nope", False),  # no schema either
    "@jupyterlab/broken/plugin": (b"[]", False),  # the image's schema is broken: not the user's fault
    "nosuch/plugin": (b"\xff\xfe", False),
}


def fill(lab: LabPaths) -> dict[str, Path]:
    paths = {}
    for name, (data, _) in SETTINGS.items():
        paths[name] = write(Path(lab.settings_dir, *name.split("/")).with_suffix(".jupyterlab-settings"), data)
    return paths


def test_rejected_files_are_moved_whole_and_the_others_stay(lab: LabPaths) -> None:
    paths = fill(lab)
    before = {name: path.stat() for name, path in paths.items()}
    lines = keptaside.check_settings(lab, parsers, True, WHEN, time.monotonic() + 60)
    folder = lab.settings_dir + "-kept-aside-20260304-050607"
    assert lines == [
        f"kept aside Lab settings @jupyterlab/apputils-extension/themes: rejected by this JupyterLab's schema "
        f"(Additional properties are not allowed ('noSuchSetting' was unexpected)) -> "
        f"{folder}/@jupyterlab/apputils-extension/themes.jupyterlab-settings",
        "kept aside Lab settings fed/plugin: not valid JSON5 (Expecting property name enclosed in double quotes: "
        f"line 1 column 2 (char 1)) -> {folder}/fed/plugin.jupyterlab-settings",
    ]
    for name, (data, kept) in SETTINGS.items():
        moved = Path(folder, *name.split("/")).with_suffix(".jupyterlab-settings")
        assert paths[name].exists() is not kept, name
        assert moved.exists() is kept, name
        now = (moved if kept else paths[name]).stat()
        assert (now.st_ino, now.st_uid, now.st_gid, now.st_mode, now.st_mtime_ns) == (
            before[name].st_ino, before[name].st_uid, before[name].st_gid, before[name].st_mode,
            before[name].st_mtime_ns), name  # renamed: the same file, not a copy
        assert (moved if kept else paths[name]).read_bytes() == data
    # The next start: nothing left to keep aside, and no new folder.
    assert keptaside.check_settings(lab, parsers, True, WHEN, time.monotonic() + 60) == []
    assert sorted(os.listdir(Path(lab.settings_dir).parent)) == ["user-settings", Path(folder).name]


def test_an_admins_override_relaxes_the_schema_for_the_user_too(lab: LabPaths) -> None:
    write(Path(lab.settings_dir, "@jupyterlab", "apputils-extension", "themes.jupyterlab-settings"),
          b'{"adminKey": "any value"}')
    write(Path(lab.settings_dir, "fed", "plugin.jupyterlab-settings"), b'{"x": [1], "on": true}')
    assert keptaside.check_settings(lab, parsers, True, WHEN, time.monotonic() + 60) == []


def test_a_link_to_the_settings_folder_keeps_them_aside_beside_the_real_one(lab: LabPaths, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere" / "settings"
    write(real / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings", b'{"no": 1}')
    Path(lab.settings_dir).parent.mkdir(parents=True)
    Path(lab.settings_dir).symlink_to(real)
    lines = keptaside.check_settings(lab, parsers, True, WHEN, time.monotonic() + 60)
    target = f"{real}-kept-aside-20260304-050607/@jupyterlab/apputils-extension/themes.jupyterlab-settings"
    assert len(lines) == 1 and lines[0].endswith(f" -> {target}"), lines
    assert Path(target).read_bytes() == b'{"no": 1}'


def test_the_report_mode_moves_nothing(lab: LabPaths) -> None:
    paths = fill(lab)
    lines = keptaside.check_settings(lab, parsers, False, WHEN, time.monotonic() + 60)
    assert lines == [
        "Lab settings @jupyterlab/apputils-extension/themes: rejected by this JupyterLab's schema (Additional "
        "properties are not allowed ('noSuchSetting' was unexpected)); this JupyterLab ignores them, and they are "
        f"left in place ({paths['@jupyterlab/apputils-extension/themes']}): the home folder is the host's",
        "Lab settings fed/plugin: not valid JSON5 (Expecting property name enclosed in double quotes: line 1 column 2 "
        f"(char 1)); this JupyterLab ignores them, and they are left in place ({paths['fed/plugin']}): the home "
        "folder is the host's",
    ]
    assert all(path.exists() for path in paths.values())
    assert os.listdir(Path(lab.settings_dir).parent) == ["user-settings"]


def test_no_settings_imports_nothing(lab: LabPaths) -> None:
    def no_parsers() -> tuple[keptaside.Loader, keptaside.Checker]:
        raise AssertionError("the venv's parsers were imported with no settings file to judge")

    assert keptaside.check_settings(lab, no_parsers, True, WHEN, time.monotonic() + 60) == []


def test_a_check_past_its_time_leaves_the_rest_as_it_is(lab: LabPaths) -> None:
    paths = fill(lab)
    lines = keptaside.check_settings(lab, parsers, True, WHEN, time.monotonic() - 1)
    assert lines == [f"WARNING: Lab settings: {len(SETTINGS)} files in {lab.settings_dir} were not checked within "
                     "10 s; they are left as they are"]
    assert all(path.exists() for path in paths.values())


def test_a_file_is_never_overwritten_nor_lost(tmp_path: Path) -> None:
    source = write(tmp_path / "s" / "p" / "x.jupyterlab-settings", b"{bad")
    taken = write(tmp_path / "aside" / "p" / "x.jupyterlab-settings", b"older")
    move = Move(SettingsFile("p", "x", str(source)), "why", str(taken))
    assert keptaside.keep_aside([move]) == [
        f"WARNING: Lab settings p/x: why; it could not be kept aside in {taken} (File exists), "
        f"so it is left in {source}"]
    assert source.read_bytes() == b"{bad" and taken.read_bytes() == b"older"


# --- kernels -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "kernel"), [
    ('{"argv": ["/e/bin/python", "-m", "ipykernel_launcher"], "display_name": "E"}', Kernel("k", "E", "/e/bin/python")),
    ('{"argv": ["/e/bin/python"]}', Kernel("k", "k", "/e/bin/python")),
    ('{"argv": ["/e/bin/python"], "display_name": ""}', Kernel("k", "k", "/e/bin/python")),
    ('{"argv": []}', None),
    ('{"argv": [1]}', None),
    ('{"display_name": "no argv"}', None),
    ("[1]", None),
    ("{not json", None),
])
def test_a_kernelspec_is_read_as_jupyter_reads_it(text: str, kernel: Kernel | None) -> None:
    assert keptaside.read_kernel("k", text) == kernel


HOME = "/home/jovyan"
REGISTER = "-m ipykernel install --user --name stack2 --display-name 'numpy 2 stack'"


@pytest.mark.parametrize(("argv0", "venvs", "existing", "kind", "command"), [
    # An environment of one's own built on an older interpreter: made again, the old one kept to read.
    (f"{HOME}/envs/stack2/bin/python", {f"{HOME}/envs/stack2"}, set(), VENV_KEPT,
     "mv ~/envs/stack2 ~/envs/stack2.old && python -m venv ~/envs/stack2 && ~/envs/stack2/bin/pip install ipykernel "
     f"&& ~/envs/stack2/bin/python {REGISTER}"),
    # Its folder removed: made again where it was.
    (f"{HOME}/envs/stack2/bin/python3.8", set(), set(), VENV_GONE,
     f"python -m venv ~/envs/stack2 && ~/envs/stack2/bin/pip install ipykernel && ~/envs/stack2/bin/python {REGISTER}"),
    ("/data/my envs/x/bin/python", {"/data/my envs/x"}, set(), VENV_KEPT,
     "mv '/data/my envs/x' '/data/my envs/x.old' && python -m venv '/data/my envs/x' && "
     f"'/data/my envs/x'/bin/pip install ipykernel && '/data/my envs/x'/bin/python {REGISTER}"),
    # The image's own venv on an older base, and the system's Python: the image's Python registers it.
    ("/opt/venv/bin/python3.8", {"/opt/venv"}, {"/opt/venv"}, NO_VENV, f"python {REGISTER}"),
    ("/usr/bin/python3.8", set(), {"/usr"}, NO_VENV, f"python {REGISTER}"),
    # A conda environment or anything else that is there but is no venv.
    (f"{HOME}/conda/envs/x/bin/python", set(), {f"{HOME}/conda/envs/x"}, NO_VENV, f"python {REGISTER}"),
    ("/somewhere/python", set(), set(), NO_VENV, f"python {REGISTER}"),
    # Not a Python: what made it must make it again.
    (f"{HOME}/envs/r/bin/R", set(), set(), VENV_GONE, None),
])
def test_the_command_that_rebuilds_a_kernel(argv0: str, venvs: set[str], existing: set[str], kind: str,
                                            command: str | None) -> None:
    env, found = keptaside.environment_of(argv0, venvs.__contains__, (venvs | existing).__contains__)
    assert found == kind
    assert env == os.path.dirname(os.path.dirname(argv0))
    assert keptaside.rebuild_command(Kernel("stack2", "numpy 2 stack", argv0), env, found, HOME) == command


def test_the_kernel_lines() -> None:
    kernel = Kernel("stack2", "numpy 2 stack", f"{HOME}/envs/stack2/bin/python")
    assert keptaside.kernel_line(kernel, "CMD") == (
        f"kernel stack2 (numpy 2 stack) points at {HOME}/envs/stack2/bin/python, which is gone: rebuild it with: CMD")
    assert keptaside.kernel_line(Kernel("r", "R", "/r/bin/R"), None) == (
        "kernel r (R) points at /r/bin/R, which is gone: reinstall what made it, or remove it with: "
        "jupyter kernelspec remove r")


def test_only_kernels_whose_interpreter_is_gone_are_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    kernels = home / ".local" / "share" / "jupyter" / "kernels"
    env = home / "envs" / "old"
    write(env / "pyvenv.cfg", b"home = /usr/bin\n")
    (env / "bin").mkdir()
    (env / "bin" / "python").symlink_to("/nonexistent/python3.8")  # a venv of an interpreter that is gone
    alive = write(tmp_path / "alive" / "bin" / "python", b"")

    def spec(name: str, argv0: str) -> None:
        write(kernels / name / "kernel.json", json.dumps({"argv": [argv0, "-f", "{connection_file}"],
                                                          "display_name": name.upper()}).encode())

    spec("old", str(env / "bin" / "python"))
    spec("alive", str(alive))
    spec("relative", "python")  # found on PATH: not ours to judge
    write(kernels / "broken" / "kernel.json", b"{")
    (kernels / "empty").mkdir()
    assert keptaside.gone_kernels(str(kernels), str(home)) == [
        f"kernel old (OLD) points at {env}/bin/python, which is gone: rebuild it with: mv ~/envs/old ~/envs/old.old "
        "&& python -m venv ~/envs/old && ~/envs/old/bin/pip install ipykernel && ~/envs/old/bin/python -m ipykernel "
        "install --user --name old --display-name OLD"]
    assert keptaside.gone_kernels(str(tmp_path / "no-kernels"), str(home)) == []


def test_a_folder_the_user_may_not_search_is_not_a_gone_interpreter(tmp_path: Path) -> None:
    assert keptaside.is_gone(str(tmp_path / "missing" / "python"))
    assert keptaside.is_gone(str(write(tmp_path / "file", b"") / "python"))  # ENOTDIR
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert keptaside.is_gone(str(loop))
    assert not keptaside.is_gone(str(tmp_path))
    if os.geteuid() != 0:  # root searches any folder: the denial cannot be made
        closed = tmp_path / "closed"
        write(closed / "python", b"")
        closed.chmod(0)
        try:
            assert not keptaside.is_gone(str(closed / "python"))
        finally:
            closed.chmod(0o700)


# --- the step -----------------------------------------------------------------------------------------

def test_an_error_is_one_line_and_the_start_goes_on(monkeypatch: pytest.MonkeyPatch, lab: LabPaths,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def broken_paths(environ: dict[str, str]) -> tuple[LabPaths, str]:
        raise RuntimeError("jupyter_core is missing\nsecond line")

    monkeypatch.setattr(keptaside, "lab_paths", broken_paths)
    assert keptaside.run(HOME, True, {}) == [
        "WARNING: Lab settings were not checked for what this JupyterLab rejects "
        "(RuntimeError('jupyter_core is missing\\nsecond line'))"]

    fill(lab)
    monkeypatch.setattr(keptaside, "lab_paths", lambda environ: (lab, "/nonexistent"))

    def no_json5() -> tuple[keptaside.Loader, keptaside.Checker]:
        raise ModuleNotFoundError("No module named 'json5'")

    monkeypatch.setattr(keptaside, "venv_parsers", no_json5)
    assert keptaside.main(["start", HOME]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "WARNING: Lab settings were not checked for what this JupyterLab rejects "
        "(ModuleNotFoundError(\"No module named 'json5'\"))"]

    def broken_kernels(kernels_dir: str, home: str) -> list[str]:
        raise OSError("disk gone")

    monkeypatch.setattr(keptaside, "venv_parsers", parsers)
    monkeypatch.setattr(keptaside, "gone_kernels", broken_kernels)
    lines = keptaside.run(HOME, False, {})
    assert lines[-1] == "WARNING: kernels were not checked for a missing interpreter (OSError('disk gone'))"
    assert len(lines) == 3 and all(line.startswith("Lab settings ") for line in lines[:2]), lines


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert keptaside.main(["move", HOME]) == 2
    assert keptaside.main(["start"]) == 2
    assert "usage: python -I -m tf29image.startup.keptaside start|report HOME" in capsys.readouterr().err
