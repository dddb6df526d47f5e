"""hub/ctl.py's `gpus`: a server's container is the hub user's whose name follows the prefix, known by
the profile label the spawner puts on it; other containers are left to compose's describer."""

from compose.holders import SERVICE_LABEL, ContainerInfo
from hub.ctl import hub_user
from hub.settings import PROFILE_LABEL

DESCRIBE = hub_user("tf29-hub")


def test_a_server_names_its_user() -> None:
    assert DESCRIBE(ContainerInfo("a" * 64, "tf29-hub-ann.lee", {PROFILE_LABEL: "gpu1"})) == "hub user ann.lee"


def test_other_containers_are_not_the_hubs() -> None:
    assert DESCRIBE(ContainerInfo("a" * 64, "tf29-hub-ann", {SERVICE_LABEL: "ann"})) is None  # no profile label
    assert DESCRIBE(ContainerInfo("a" * 64, "other-ann", {PROFILE_LABEL: "gpu1"})) is None  # another hub's prefix
