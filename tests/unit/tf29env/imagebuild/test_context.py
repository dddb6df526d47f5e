"""build.py's build context and .dockerignore (what plain `docker build .` sends) name the same
files and leave out the same tool caches, so both builders build the same image; and the CA
certificates: build-only ones (--ca-cert) never enter the context, kept ones (--trust-ca-cert) do,
one certificate per file."""

import io
import os
import tarfile
from pathlib import Path

import pytest

from tf29env.core.errors import EXIT_INPUT, UserError
from tf29env.core.paths import REPO
from tf29env.core.variants import VARIANTS
from tf29env.imagebuild import cacerts, context
from tf29env.pipeline import BuildRequest

# Two throwaway self-signed CAs (EC P-256, no use beyond these tests; their keys were not kept), with
# the fingerprints `openssl x509 -noout -fingerprint -sha256` printed for them.
TEST_CA = """-----BEGIN CERTIFICATE-----
MIIBsTCCAVegAwIBAgIUb13hN0rQYQK+GmxFTTtfCMuacHQwCgYIKoZIzj0EAwIw
LTErMCkGA1UEAwwidGYyOS1lbnYgdGVzdCBDQSAodW5pdCB0ZXN0cyBvbmx5KTAg
Fw0yNjEyMDMwOTMyMThaGA8yMTI2MTEwOTA5MzIxOFowLTErMCkGA1UEAwwidGYy
OS1lbnYgdGVzdCBDQSAodW5pdCB0ZXN0cyBvbmx5KTBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABJxNmDUaiAWzZB6ZyhrRWNoXymlyxszDQX0cmdiCEf5ZGwBLtS2l
q5sedp9gqnLcEXkcAA0+gDitDhfd2x3OQQ2jUzBRMB0GA1UdDgQWBBSPBQCjYyLm
aTXjLvy0PsnOAqbngDAfBgNVHSMEGDAWgBSPBQCjYyLmaTXjLvy0PsnOAqbngDAP
BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQCL2QDMQrDPI8qOz0wt
Shnn4EOETVloXRTmhWiGWmPknAIgIIcKxh2v/ni3yW6VooI4wSgtnYnIPWHbCxlx
/AAvwXE=
-----END CERTIFICATE-----
"""
TEST_CA_SHA256 = "sha256:3727e46b96d3290aab06c5b65d090b4f8939cca964fc8225def040f64d2baecf"
SECOND_CA = """-----BEGIN CERTIFICATE-----
MIIBvzCCAWWgAwIBAgIUKbjLa0YB8p0F2kwhV3SH8CyxR+EwCgYIKoZIzj0EAwIw
NDEyMDAGA1UEAwwpdGYyOS1lbnYgc2Vjb25kIHRlc3QgQ0EgKHVuaXQgdGVzdHMg
b25seSkwIBcNMjYxMjAzMDkzMjMwWhgPMjEyNjExMDkwOTMyMzBaMDQxMjAwBgNV
BAMMKXRmMjktZW52IHNlY29uZCB0ZXN0IENBICh1bml0IHRlc3RzIG9ubHkpMFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE5ufTp76+xwyBQnZVgisQH2FVmH0FQOpa
Zb8EXGAK3Ul9c+OykKsnhz1a8mrIubc7e7YS5fkAfDOQshmmfj/6XqNTMFEwHQYD
VR0OBBYEFNFJNTt6RmyhZi2h9pmb6LoMimMEMB8GA1UdIwQYMBaAFNFJNTt6Rmyh
Zi2h9pmb6LoMimMEMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIh
ANnP2hDgrmIeW5zOD1Uc9ZQO20xh9bQtzIYIqC+j4SxBAiAOOL1LfEQwUuauUW3Y
4qWS6bKOlgxlkCxTRw3u7j8VJw==
-----END CERTIFICATE-----
"""
SECOND_CA_SHA256 = "sha256:5f94c7cc94093ed8a783b7ddfea2ad8ff8a59e9f56da0941d847f5f51d4be82c"
# The base64 line that only TEST_CA holds: where it shows up, the certificate does.
TEST_CA_LINE = TEST_CA.splitlines()[5]


def dockerignore() -> tuple[set[str], set[str]]:
    """(what .dockerignore lets through after its leading '*', the '**/NAME' patterns it drops)."""
    lines = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    rules = [line for line in lines if line and not line.startswith("#")]
    assert rules[0] == "*", ".dockerignore must start by ignoring everything"
    allowed = {rule[1:] for rule in rules if rule.startswith("!")}
    dropped = {rule.removeprefix("**/") for rule in rules[1:] if rule.startswith("**/")}
    return allowed, dropped


def test_dockerignore_lets_through_exactly_the_context() -> None:
    allowed, _ = dockerignore()
    assert allowed == set(context.CONTEXT_PATHS)


def test_dockerignore_drops_the_tool_caches_the_context_leaves_out() -> None:
    _, dropped = dockerignore()
    assert dropped == {*context.EXCLUDED_DIRS, "*.pyc"}


def test_context_tar_holds_only_the_context_paths() -> None:
    buffer = io.BytesIO()
    context.write(buffer, [])
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as tar:
        tops = {name.split("/", 1)[0] for name in tar.getnames()}
        assert not any(part in context.EXCLUDED_DIRS for name in tar.getnames() for part in name.split("/"))
    assert tops == set(context.CONTEXT_PATHS)


def write_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def context_files(trusted: list[Path]) -> dict[str, bytes]:
    buffer = io.BytesIO()
    context.write(buffer, trusted)
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_certificates_are_read_with_their_fingerprints(tmp_path: Path) -> None:
    # A bundle as people keep them: comments between the blocks, one certificate twice.
    bundle = write_file(tmp_path, "corp.pem", f"# proxy CA\n{TEST_CA}\nissuer: ...\n{SECOND_CA}{TEST_CA}")
    certs = cacerts.load_certs(cacerts.ca_files([tmp_path]), "--ca-cert")
    assert [cert.fingerprint for cert in certs] == [TEST_CA_SHA256, SECOND_CA_SHA256]
    assert [cert.pem for cert in certs] == [TEST_CA, SECOND_CA]
    assert certs[0].source == bundle


@pytest.mark.parametrize(("text", "words"), [
    (f"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n{TEST_CA}",
     "holds a private key; pass only the CA's certificate"),
    ("just some text\n", "not a PEM certificate (no '-----BEGIN CERTIFICATE-----' block)"),
    ("-----BEGIN CERTIFICATE-----\nMII%%%\n-----END CERTIFICATE-----\n",
     "not a PEM certificate (no '-----BEGIN CERTIFICATE-----' block)"),
    ("-----BEGIN CERTIFICATE-----\nMIIBx\n-----END CERTIFICATE-----\n", "a certificate block is not valid base64"),
])
def test_bad_certificate_files(tmp_path: Path, text: str, words: str) -> None:
    path = write_file(tmp_path, "bad.crt", text)
    with pytest.raises(UserError) as info:
        cacerts.ca_files([path], "--trust-ca-cert")
    assert info.value.exit_code == EXIT_INPUT
    assert str(info.value) == f"--trust-ca-cert {path}: {words}"


def test_build_only_certificates_go_to_the_build_arg_only(tmp_path: Path) -> None:
    ca = write_file(tmp_path, "proxy.crt", TEST_CA)
    request = BuildRequest(variant=VARIANTS["cpu"], ca_certs=[ca])
    assert request.ca_args == {cacerts.CA_BUILD_ARG: TEST_CA}
    assert request.trusted_cas == ""
    files = context_files(request.trusted_files)
    assert [name for name in files if name.startswith("ca-certs/")] == ["ca-certs/README.md"]
    assert not [name for name, data in files.items() if TEST_CA_LINE.encode() in data]


def test_kept_certificates_go_to_the_context_and_the_build(tmp_path: Path) -> None:
    proxy = write_file(tmp_path, "proxy.crt", TEST_CA)
    kept = write_file(tmp_path, "corp.pem", SECOND_CA + TEST_CA)
    request = BuildRequest(variant=VARIANTS["cpu"], ca_certs=[proxy], trust_ca_certs=[kept])
    # The build gets each certificate once; the Dockerfile keeps what ca-certs/ holds.
    assert request.ca_args == {cacerts.CA_BUILD_ARG: TEST_CA + SECOND_CA, cacerts.TRUST_BUILD_ARG: "1"}
    assert request.trusted_cas == f"{SECOND_CA_SHA256},{TEST_CA_SHA256}"
    files = context_files(request.trusted_files)
    certs = {name: data for name, data in files.items() if name.startswith("ca-certs/") and name.endswith(".crt")}
    # One certificate per *.crt file: update-ca-certificates links the first of a file only.
    assert certs == {"ca-certs/00-corp.crt": SECOND_CA.encode(), "ca-certs/01-corp.crt": TEST_CA.encode()}


def test_too_many_certificates_for_one_environment_variable() -> None:
    # 1 KiB of DER is about 1.4 KiB of PEM: 100 of them are over Linux's 128 KiB per variable.
    certs = [cacerts.CaCert(Path("bundle.pem"), os.urandom(1024)) for _ in range(100)]
    with pytest.raises(UserError) as info:
        cacerts.ca_buildargs(certs, [])
    assert "100 certificates" in str(info.value) and "not a whole trust store" in str(info.value)
    assert cacerts.CA_BUILD_ARG in cacerts.ca_buildargs(certs[:50], [])


def test_a_file_dropped_into_ca_certs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("x")
    cacerts.check_ca_dir(tmp_path)
    write_file(tmp_path, "corp.crt", TEST_CA)
    with pytest.raises(UserError) as info:
        cacerts.check_ca_dir(tmp_path)
    assert str(info.value).startswith("ca-certs/corp.crt: build.py does not read ca-certs/")
    cacerts.check_ca_dir()  # the checkout's own: only its README


def test_the_dockerfile_reads_the_ca_build_args_without_declaring_them() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    # Declared (ARG FTP_PROXY), the CAs would be written into the history with every RUN line.
    assert f"ARG {cacerts.CA_BUILD_ARG}" not in dockerfile
    # Every step that downloads (apt-get update, pip install) sources build-ca.sh before it downloads
    # and removes the bundle before it ends; there are such steps for apt and for pip at least.
    steps = [step for step in dockerfile.replace("\\\n", " ").splitlines() if step.startswith("RUN ")]
    downloading = [step for step in steps if "apt-get update" in step or "pip install" in step]
    assert len(downloading) >= 2
    source = ". /usr/local/lib/tf29-env-build/build-ca.sh"
    for step in downloading:
        first_download = min(step.find(word) for word in ("apt-get update", "pip install") if word in step)
        assert -1 < step.find(source) < first_download, step[:120]
        assert step.rfind("build_ca_done") > step.rfind("pip install") and step.rfind("build_ca_done") > step.rfind(
            "apt-get install"), step[:120]
    assert dockerfile.count(source) == len(downloading)
    # build-ca.sh takes the CAs only from a PEM value and drops the arg before anything else runs.
    script = (REPO / "build-ca.sh").read_text()
    assert f'[[ "${{{cacerts.CA_BUILD_ARG}:-}}" == *"-----BEGIN CERTIFICATE-----"* ]]' in script
    assert f"unset {cacerts.CA_BUILD_ARG} ftp_proxy" in script
    assert "rm -f /tmp/build-ca.pem /etc/apt/apt.conf.d/00tf29-env-build-ca" in script
    assert f"ARG {cacerts.TRUST_BUILD_ARG}=\n" in dockerfile
