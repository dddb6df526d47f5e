"""The build output directory CI uploads: OUT/VARIANT/{build.json,tags.txt,manifest.*,sbom.cdx.json,
licenses.*,audit.json,push.json,export/}, and OUT/latest.json, the most recent build, which `test`, `push`,
`size` and `audit` use by default."""

import json
from pathlib import Path
from typing import Any

from tf29env.core.errors import UserError

# The output files' names (docs/build.md#build-output-what-ci-uploads), in OUT/VARIANT/ but LATEST_FILE.
BUILD_FILE = "build.json"
LATEST_FILE = "latest.json"
TAGS_FILE = "tags.txt"
MANIFEST_FILES = ("manifest.json", "manifest.md")
SBOM_FILE = "sbom.cdx.json"  # the same document the image holds
LICENSE_FILES = ("licenses.json", "licenses.md")
AUDIT_FILE = "audit.json"
PUSH_FILE = "push.json"
EXPORT_DIR = "export"  # the archive, the SIF and EXPORT_FILE
EXPORT_FILE = "export.json"


def variant_dir(out: Path, variant: str) -> Path:
    path = out / variant
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--output-dir {out}: cannot create {path} ({exc.strerror})") from None
    return path


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def save_build(out: Path, record: dict[str, Any]) -> Path:
    directory = variant_dir(out, str(record["variant"]))
    write_json(directory / BUILD_FILE, record)
    (directory / TAGS_FILE).write_text("".join(f"{ref}\n" for ref in record["refs"]))
    write_json(out / LATEST_FILE, record)
    return directory


def load_build(out: Path, variant: str | None) -> dict[str, Any]:
    """The record of the last build (of variant, if given); one line when there is none."""
    path = out / variant / BUILD_FILE if variant else out / LATEST_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"no build recorded in {path}; run `build.py build` first or name an image") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: unreadable build record ({exc})") from None
    return data
