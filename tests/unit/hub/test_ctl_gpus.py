"""hub/ctl.py's `gpus`: a server's container is the hub user's named by the user label the spawner puts
on it (the container's name holds the name escaped), known as the hub's by its profile label and its
name's prefix; a server started before the user label is named by its container's name; other
containers are left to compose's describer."""

from compose.holders import SERVICE_LABEL, ContainerInfo, compose_member, describe_process
from hub.ctl import hub_user
from hub.settings import PROFILE_LABEL, USER_LABEL

DESCRIBE = hub_user("tf29-hub")


def test_a_server_names_its_user_by_the_label() -> None:
    # DockerSpawner names ann.lee's container tf29-hub-ann-2elee: only the label gives the user.
    labels = {PROFILE_LABEL: "gpu1", USER_LABEL: "ann.lee"}
    assert DESCRIBE(ContainerInfo("a" * 64, "tf29-hub-ann-2elee", labels)) == "hub user ann.lee"


def test_a_server_from_before_the_label_is_named_by_its_container() -> None:
    assert DESCRIBE(ContainerInfo("a" * 64, "tf29-hub-ann", {PROFILE_LABEL: "gpu1"})) == "hub user ann"


def test_other_containers_are_not_the_hubs() -> None:
    assert DESCRIBE(ContainerInfo("a" * 64, "tf29-hub-ann", {SERVICE_LABEL: "ann", USER_LABEL: "ann"})) is None
    assert DESCRIBE(ContainerInfo("a" * 64, "other-ann", {PROFILE_LABEL: "gpu1", USER_LABEL: "ann"})) is None


def test_the_line_names_the_user_and_the_container() -> None:
    server = ContainerInfo("a" * 64, "tf29-hub-ann-2elee", {PROFILE_LABEL: "gpu1", USER_LABEL: "ann.lee"})
    said = describe_process(7, server, server.id, None, (DESCRIBE, compose_member))
    assert said == "hub user ann.lee: container tf29-hub-ann-2elee, pid 7"
