"""bench/kit.py's pure parts: a part's bytes (a file or a folder) and the table, one column per image."""

from __future__ import annotations

from pathlib import Path

from bench import kit as bench_kit
from bench.stats import Summary, summarize


def test_a_part_is_a_file_or_a_folder(tmp_path: Path) -> None:
    (tmp_path / "wheels" / "hub").mkdir(parents=True)
    (tmp_path / "wheels" / "hub" / "a.whl").write_bytes(b"x" * 10)
    (tmp_path / "wheels" / "hub" / "b.whl").write_bytes(b"x" * 5)
    (tmp_path / "project.tar.gz").write_bytes(b"x" * 7)
    assert bench_kit.part_bytes(tmp_path, "wheels/hub") == 15
    assert bench_kit.part_bytes(tmp_path, "project.tar.gz") == 7
    assert bench_kit.part_bytes(tmp_path, "sbom") == 0


def test_the_table_has_a_column_per_image() -> None:
    def found(variant: str, archive: int) -> dict[str, Summary | int | str]:
        row: dict[str, Summary | int | str] = {label: 1024 * 1024 for label, _ in bench_kit.PARTS}
        row.update({"variant": variant, "image archive": archive, "SBOM": 0, "total": archive,
                    "make": summarize([100.0]), "install": summarize([150.0, 170.0])})
        return row

    text = bench_kit.table({"tf29-env:gpu": found("gpu", 4700 * 1024 * 1024), "tf29-env:cpu": found("cpu", 0)})
    assert text.splitlines()[0] == "| Measure | `tf29-env:gpu` | `tf29-env:cpu` |"
    assert "| image archive | 4,700.0 MiB | 0.0 MiB |" in text, text
    assert "| variant | gpu | cpu |" in text and "160.00 s (150.00-170.00, n=2)" in text, text
