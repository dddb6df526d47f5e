"""Progress output: plain lines for CI and pipes, a status line on a terminal."""

import io

import pytest

from tf29env.progress import NOTE, Progress, interactive


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_carry_elapsed_time() -> None:
    out = io.StringIO()
    progress = Progress(out)
    progress("Step 1/3 : FROM x")
    progress("Collecting numpy==1.23.5")
    assert out.getvalue().splitlines() == ["[00:00] Step 1/3 : FROM x", "[00:00] Collecting numpy==1.23.5"]


def test_terminal_keeps_steps_and_rewrites_the_status(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    out = FakeTTY()
    progress = Progress(out)
    assert progress.live
    progress(f"{NOTE}building")
    progress("Step 7/30 : RUN pip install")
    progress("Collecting numpy")
    progress("Downloading tensorflow-2.9.3 (511.8 MB)")
    progress.close()
    text = out.getvalue()
    assert "[00:00] ==> building\n[00:00] Step 7/30 : RUN pip install\n" in text
    assert "\r\x1b[K  00:00  Collecting numpy\r\x1b[K  00:00  Downloading tensorflow" in text
    assert text.endswith("\r\x1b[K")


def test_ci_means_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert not interactive(FakeTTY())
    monkeypatch.delenv("CI")
    assert interactive(FakeTTY()) and not interactive(io.StringIO())
