"""tf29image.startup.tls, JUPYTER_CERT_FILE and JUPYTER_KEY_FILE checked on real files made by openssl (and, for
an expired certificate, cryptography): a good pair passes; a key of another certificate, an encrypted key and an
expired certificate are each one line naming the file."""

from pathlib import Path

import pytest

from testkit.tlscerts import Pair, make_ca, make_expired, make_server, openssl
from tf29image.startup import tls


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Pair]:
    folder = tmp_path_factory.mktemp("certs")
    ca = make_ca(folder, "team")
    return {"good": make_server(folder, ca, "good"), "other": make_server(folder, ca, "other"),
            "expired": make_expired(folder, "expired")}


def test_a_good_pair_passes(certs: dict[str, Pair]) -> None:
    good = certs["good"]
    assert tls.problem(str(good.cert), str(good.key)) == ""
    assert tls.pem_problem(good.cert.read_text(), good.key.read_text(), str(good.cert), str(good.key)) == ""


def test_a_key_of_another_certificate(certs: dict[str, Pair]) -> None:
    cert, key = certs["good"].cert, certs["other"].key
    assert tls.problem(str(cert), str(key)) == (f"JUPYTER_KEY_FILE={key} is not the private key of "
                                                f"JUPYTER_CERT_FILE={cert}: give the key the certificate was made for")


def test_an_encrypted_key(certs: dict[str, Pair], tmp_path: Path) -> None:
    locked = tmp_path / "locked.pem"
    openssl("pkey", "-in", str(certs["good"].key), "-aes256", "-passout", "pass:secret", "-out", str(locked))
    assert tls.problem(str(certs["good"].cert), str(locked)).startswith(
        f"JUPYTER_KEY_FILE={locked}: the key is encrypted (it has a passphrase), and Jupyter cannot ask for one")


def test_an_expired_certificate(certs: dict[str, Pair]) -> None:
    expired = certs["expired"]
    said = tls.problem(str(expired.cert), str(expired.key))
    assert said.startswith(f"JUPYTER_CERT_FILE={expired.cert}: the certificate expired on ") and said.endswith(
        " GMT; renew it"), said


def test_files_that_are_not_pem(certs: dict[str, Pair], tmp_path: Path) -> None:
    der = tmp_path / "cert.der"
    openssl("x509", "-in", str(certs["good"].cert), "-outform", "der", "-out", str(der))
    good = certs["good"]
    assert tls.pem_problem(der.read_bytes().decode("latin-1"), good.key.read_text(), str(der), "/k").startswith(
        f"JUPYTER_CERT_FILE={der}: not a PEM certificate")
    assert tls.pem_problem(good.cert.read_text(), good.cert.read_text(), "/c", "/k") == (
        "JUPYTER_KEY_FILE=/k: not a PEM private key (no '-----BEGIN ... PRIVATE KEY-----' line)")
