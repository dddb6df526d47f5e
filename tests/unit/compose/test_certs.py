"""compose/certs.py: the check compose's TF29ENV_TLS_CERT/KEY and the hub's HUB_SSL_CERT/KEY share,
with certificates openssl makes now (testkit/tlscerts.py). Each bad pair is one line naming the setting."""

from pathlib import Path

import pytest

from compose import certs
from testkit.tlscerts import make_ca, make_expired, make_server


def test_a_matching_unexpired_pair_passes(tmp_path: Path) -> None:
    pair = make_server(tmp_path, make_ca(tmp_path, "team"), "box")
    certs.check_pair(pair.cert, pair.key, "CERT", "KEY")


@pytest.mark.parametrize(("case", "words"), [
    ("key-missing", "KEY={dir}/gone.pem: no such file, or this user cannot read it"),
    ("cert-a-folder", "CERT={dir}: no such file, or this user cannot read it"),
    ("key-of-another", "KEY={dir}/other-key.pem is not the key of CERT={dir}/box.pem"),
    ("not-pem", "CERT={dir}/junk.pem or KEY={dir}/box-key.pem cannot be read as PEM"),
    ("expired", "CERT={dir}/old.pem has expired ("),
])
def test_a_bad_pair_is_one_line_naming_the_setting(tmp_path: Path, case: str, words: str) -> None:
    ca = make_ca(tmp_path, "team")
    box, other = make_server(tmp_path, ca, "box"), make_server(tmp_path, ca, "other")
    old = make_expired(tmp_path, "old")
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    cert, key = {
        "key-missing": (box.cert, tmp_path / "gone.pem"),
        "cert-a-folder": (tmp_path, box.key),
        "key-of-another": (box.cert, other.key),
        "not-pem": (tmp_path / "junk.pem", box.key),
        "expired": (old.cert, old.key),
    }[case]
    with pytest.raises(certs.PairError) as raised:
        certs.check_pair(cert, key, "CERT", "KEY")
    said = str(raised.value)
    assert said.startswith(words.format(dir=tmp_path)), said
    assert "\n" not in said
