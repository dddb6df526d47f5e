"""The stand-in's fallback to Debian's archive of retired releases, offline: the archive mirror's
URL checks and where it comes from, the Release URLs asked, the decision between mirror and archive
with the suites the archive carries, the sources.list text, and the probe's reading of a 200, a 404,
another error and no answer (from a server on 127.0.0.1)."""

import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tf29env.cli import main
from tf29env.core.errors import EXIT_BUILD, EXIT_INPUT, UserError
from tf29env.imagebuild import standin
from tf29env.imagebuild.standin import ARCHIVE_ENV, DEFAULT_ARCHIVE, AptSource, choose_source

MIRROR = "http://deb.debian.org/debian"
ARCHIVE = "http://archive.debian.org/debian"


@pytest.mark.parametrize("url", ["http://archive.debian.org/debian", "https://mirror.corp.example:8443/debian-archive/",
                                 "http://127.0.0.1:8080/debian"])
def test_good_archive_urls(url: str) -> None:
    assert standin.check_mirror_url("--archive-mirror", url) == url


@pytest.mark.parametrize(("url", "words"), [
    ("archive.debian.org/debian", "not an http:// or https:// URL"),
    ("ftp://archive.debian.org/debian", "not an http:// or https:// URL"),
    ("http://", "not an http:// or https:// URL"),
    ("http://archive.debian.org:99999/debian", "not an http:// or https:// URL"),
    ("http://archive.debian.org:port/debian", "not an http:// or https:// URL"),
    ("http://archive debian.org/debian", "not an http:// or https:// URL"),
    ("http://archive.debian.org/debian?x=1", "not an http:// or https:// URL"),
    ("http://ci:s3cret@archive.corp.example/debian", "credentials in this URL"),
])
def test_bad_archive_urls_are_one_line(url: str, words: str) -> None:
    with pytest.raises(UserError) as info:
        standin.check_mirror_url("--archive-mirror", url)
    message = str(info.value)
    assert info.value.exit_code == EXIT_INPUT and words in message and "\n" not in message
    assert message.startswith("--archive-mirror ") and "s3cret" not in message


def test_the_archive_comes_from_the_flag_then_the_environment_then_debian() -> None:
    env = {ARCHIVE_ENV: "http://env.example/debian"}
    assert standin.archive_mirror("http://flag.example/debian", env) == "http://flag.example/debian"
    assert standin.archive_mirror(None, env) == "http://env.example/debian"
    assert standin.archive_mirror(None, {}) == DEFAULT_ARCHIVE == ARCHIVE
    assert standin.archive_mirror(None, {ARCHIVE_ENV: ""}) == DEFAULT_ARCHIVE
    with pytest.raises(UserError, match=f"^{ARCHIVE_ENV} nope: not an http"):
        standin.archive_mirror(None, {ARCHIVE_ENV: "nope"})


def test_release_and_security_urls() -> None:
    assert standin.release_url(ARCHIVE + "/", "bullseye") == f"{ARCHIVE}/dists/bullseye/Release"
    assert standin.security_mirror(ARCHIVE) == "http://archive.debian.org/debian-security"
    assert standin.security_mirror("http://127.0.0.1:8080/debian/") == "http://127.0.0.1:8080/debian-security"


def probe_of(present: set[str]) -> tuple[list[str], Callable[[str, str], bool]]:
    """A probe that finds exactly the Release files in PRESENT, and the URLs it was asked."""
    asked: list[str] = []

    def probe(mirror: str, suite: str) -> bool:
        asked.append(standin.release_url(mirror, suite))
        return standin.release_url(mirror, suite) in present

    return asked, probe


def test_the_mirror_while_it_has_the_suite() -> None:
    asked, probe = probe_of({f"{MIRROR}/dists/bullseye/Release"})
    source = choose_source(MIRROR, ARCHIVE, probe)
    assert source == AptSource(MIRROR, False, ((MIRROR, "bullseye"), (MIRROR, "bullseye-updates"),
                                               ("http://deb.debian.org/debian-security", "bullseye-security")))
    assert asked == [f"{MIRROR}/dists/bullseye/Release"]  # the archive is not asked
    assert source.sources_list() == (
        "deb http://deb.debian.org/debian bullseye main\n"
        "deb http://deb.debian.org/debian bullseye-updates main\n"
        "deb http://deb.debian.org/debian-security bullseye-security main\n")


def test_the_archive_once_the_mirror_answers_404() -> None:
    asked, probe = probe_of({f"{ARCHIVE}/dists/bullseye/Release", f"{ARCHIVE}/dists/bullseye-updates/Release",
                             "http://archive.debian.org/debian-security/dists/bullseye-security/Release"})
    source = choose_source(MIRROR, ARCHIVE, probe)
    assert source.archived and source.mirror == ARCHIVE
    assert source.sources_list() == (
        "deb http://archive.debian.org/debian bullseye main\n"
        "deb http://archive.debian.org/debian bullseye-updates main\n"
        "deb http://archive.debian.org/debian-security bullseye-security main\n")
    assert asked[:2] == [f"{MIRROR}/dists/bullseye/Release", f"{ARCHIVE}/dists/bullseye/Release"]


def test_the_archive_keeps_only_the_suites_it_carries() -> None:
    _, probe = probe_of({f"{ARCHIVE}/dists/bullseye/Release",
                         "http://archive.debian.org/debian-security/dists/bullseye-security/Release"})
    assert choose_source(MIRROR, ARCHIVE, probe).sources_list() == (
        "deb http://archive.debian.org/debian bullseye main\n"
        "deb http://archive.debian.org/debian-security bullseye-security main\n")


def test_an_archive_without_the_release_is_one_line() -> None:
    _, probe = probe_of(set())
    with pytest.raises(UserError) as info:
        choose_source(MIRROR, ARCHIVE, probe)
    message = str(info.value)
    assert info.value.exit_code == EXIT_INPUT and "\n" not in message
    assert message.startswith(f"bullseye is gone from {MIRROR} and {ARCHIVE} does not have it either")
    assert "--archive-mirror" in message and ARCHIVE_ENV in message


class Answers(http.server.BaseHTTPRequestHandler):
    """Answers each path with the status its first segment names (/404/dists/... -> 404)."""

    def do_GET(self) -> None:
        code = int(self.path.split("/")[1])
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_the_probe_reads_200_as_there_and_404_as_gone(server: str) -> None:
    assert standin.has_suite(f"{server}/200", "bullseye") is True
    assert standin.has_suite(f"{server}/404", "bullseye") is False


def test_any_other_answer_is_one_line_not_a_verdict(server: str, unused_port: int) -> None:
    with pytest.raises(UserError) as info:
        standin.has_suite(f"{server}/503", "bullseye")
    assert info.value.exit_code == EXIT_BUILD and "answered HTTP 503" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(UserError) as info:
        standin.has_suite(f"http://127.0.0.1:{unused_port}/debian", "bullseye")
    assert info.value.exit_code == EXIT_BUILD and "no answer" in str(info.value) and "\n" not in str(info.value)


@pytest.fixture
def unused_port() -> Iterator[int]:
    """A 127.0.0.1 port that is bound (so nothing else takes it) but never listens."""
    import socket  # noqa: PLC0415 - only this fixture needs it

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(("argv", "env", "words"), [
    (["base", "--archive-mirror", "archive.debian.org/debian"], {},
     "--archive-mirror archive.debian.org/debian: not an http:// or https:// URL"),
    (["build", "--base", "standin", "--archive-mirror", "http://u:p@archive.example/debian"], {},
     "--archive-mirror http://***@archive.example: credentials in this URL"),
    (["base"], {ARCHIVE_ENV: "ftp://archive.example/debian"},
     f"{ARCHIVE_ENV} ftp://archive.example/debian: not an http:// or https:// URL"),
])
def test_bad_archive_mirrors_stop_base_and_build_before_the_engine(
        argv: list[str], env: dict[str, str], words: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")  # asking it would be exit 3
    monkeypatch.delenv(ARCHIVE_ENV, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(argv) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err, err
