"""Network build inputs: checked, mapped to build args, proxies to Docker's predefined args."""

import pytest

from tf29env.core.errors import EXIT_INPUT, UserError
from tf29env.imagebuild.network import NetworkInputs


def test_buildargs() -> None:
    args = NetworkInputs(pip_index_url="https://pypi.example/simple", apt_mirror="http://mirror.example/debian",
                         https_proxy="http://proxy.example:3128", no_proxy="localhost,127.0.0.1,.corp").buildargs()
    assert args["PIP_INDEX_URL"] == "https://pypi.example/simple"
    assert args["APT_MIRROR"] == "http://mirror.example/debian"
    assert args["PIP_EXTRA_INDEX_URL"] == ""
    assert args["HTTPS_PROXY"] == args["https_proxy"] == "http://proxy.example:3128"
    assert args["NO_PROXY"] == args["no_proxy"] == "localhost,127.0.0.1,.corp"
    assert "HTTP_PROXY" not in args  # unset proxies are not passed at all


@pytest.mark.parametrize(("field", "value", "flag"), [
    ("pip_index_url", "pypi.example/simple", "--pip-index-url"),
    ("apt_mirror", "ftp://mirror.example/debian", "--apt-mirror"),
    ("http_proxy", "http://proxy example:3128", "--http-proxy"),
    ("no_proxy", "a b", "--no-proxy"),
])
def test_bad_inputs(field: str, value: str, flag: str) -> None:
    with pytest.raises(UserError) as info:
        NetworkInputs(**{field: value}).validate()
    assert info.value.exit_code == EXIT_INPUT and str(info.value).startswith(f"{flag} {value}: not ")


def test_shown_masks_credentials() -> None:
    shown = NetworkInputs(https_proxy="http://user:secret@proxy.example:3128").shown()
    assert shown == {"https_proxy": "http://***@proxy.example:3128"}


@pytest.mark.parametrize(("field", "value", "shown"), [
    ("pip_index_url", "https://ci:s3cret@pypi.corp.example/simple", "https://***@pypi.corp.example/simple"),
    ("pip_extra_index_url", "https://__token__:glpat-xyz@gitlab.example/api/v4/projects/1/packages/pypi/simple",
     "https://***@gitlab.example/api/v4/projects/1/packages/pypi/simple"),
    ("pip_index_url", "https://ghp_token@pypi.corp.example/simple", "https://***@pypi.corp.example/simple"),
    ("apt_mirror", "http://user:pw@mirror.corp.example:8080/debian", "http://***@mirror.corp.example:8080/debian"),
])
def test_credentials_in_recorded_urls_are_refused(field: str, value: str, shown: str) -> None:
    """These three are the Dockerfile's own ARGs: their values go into `docker history`, and with it
    into every pushed image. One line, the secret not repeated, the safe way named."""
    flag = "--" + field.replace("_", "-")
    with pytest.raises(UserError) as info:
        NetworkInputs(**{field: value}).validate()
    message = str(info.value)
    assert info.value.exit_code == EXIT_INPUT and "\n" not in message
    assert message.startswith(f"{flag} {shown}: credentials in this URL would be written into the image's history")
    assert value.split("//", 1)[1].split("@", 1)[0] not in message
    assert "--https-proxy" in message and "netrc" in message


def test_credentials_stay_allowed_where_nothing_records_them() -> None:
    # Proxies are Docker's predefined args: kept out of the history (tests/build checks it).
    NetworkInputs(https_proxy="http://user:secret@proxy.example:3128", http_proxy="http://u@proxy.example:3128",
                  pip_index_url="https://pypi.corp.example/simple/@latest").validate()
