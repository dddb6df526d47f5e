"""The hub's settings and SSH bookkeeping, without an engine: defaults, a bad value named in one
line, keys checked before they are stored, ports kept per user."""

import json
import socket
from pathlib import Path

import pytest

from compose import limits
from hub import settings as hub_settings
from hub import sshaccess
from hub.settings import HubConfigError
from testkit.net import free_port_range
from testkit.ssh import KeyPair
from tf29image.startup import values


def test_defaults_are_safe() -> None:
    team = hub_settings.load({})
    assert team.address == "127.0.0.1" and team.ssh_address == "127.0.0.1"
    assert team.public_url == "http://127.0.0.1:8000/"
    assert team.profiles == ("cpu", "gpu1", "gpu2", "mig")
    assert (team.gpus, team.gpu_policy, team.gpu_pins) == ("auto", "exclusive", ())
    assert team.cull_timeout == 3600 and team.cull_every == 300
    assert team.memlock == -1 and team.shm_size == "1g"
    assert team.admin_users == ("admin",)
    assert team.state_dir == hub_settings.HUB_DIR / "state"
    # The team's grace and idle kernels' timeout: compose's (docker-compose.yml's x-member-env).
    team_limits = limits.load()
    assert (team.stop_grace, team.kernel_idle) == (team_limits.stop_grace, team_limits.kernel_idle)
    assert 0 < team.kernel_idle <= team.cull_timeout


def test_grace_and_idle_kernels() -> None:
    team = hub_settings.load({"HUB_STOP_GRACE_SECONDS": "120", "HUB_KERNEL_IDLE_TIMEOUT": "0"})
    assert (team.stop_grace, team.kernel_idle) == (120, 0)
    # A shorter cull timeout shortens the idle kernels' default with it; a longer one given is refused.
    assert hub_settings.load({"HUB_CULL_TIMEOUT": "600"}).kernel_idle == 600
    assert hub_settings.load({"HUB_CULL_TIMEOUT": "600", "HUB_KERNEL_IDLE_TIMEOUT": "600"}).kernel_idle == 600
    with pytest.raises(HubConfigError, match="HUB_KERNEL_IDLE_TIMEOUT=601 is more than HUB_CULL_TIMEOUT=600"):
        hub_settings.load({"HUB_CULL_TIMEOUT": "600", "HUB_KERNEL_IDLE_TIMEOUT": "601"})


def test_the_limits_are_the_images() -> None:
    """What the hub accepts, the image's entrypoint accepts too (a server refused at start is a failed spawn)."""
    assert values.KERNEL_IDLE_MAX == limits.KERNEL_IDLE_MAX
    longest = {"HUB_CULL_TIMEOUT": "9999999", "HUB_KERNEL_IDLE_TIMEOUT": str(limits.KERNEL_IDLE_MAX)}
    assert hub_settings.load(longest).kernel_idle == limits.KERNEL_IDLE_MAX
    with pytest.raises(HubConfigError, match=r"from 0 \(no limit\) to 604800"):
        hub_settings.load({**longest, "HUB_KERNEL_IDLE_TIMEOUT": str(limits.KERNEL_IDLE_MAX + 1)})
    assert hub_settings.load({"HUB_STOP_GRACE_SECONDS": str(limits.STOP_GRACE_MAX)}).stop_grace == 3600


def test_public_address_and_wildcard() -> None:
    everywhere = "0.0.0.0"  # noqa: S104 - a setting under test, nothing is bound
    team = hub_settings.load({"HUB_ADDRESS": everywhere, "HUB_PORT": "9000"})
    # Beyond loopback the hub serves HTTPS (its own certificate unless the admin gives one).
    assert team.public_url == "https://0.0.0.0:9000/"
    assert team.local_url == "https://127.0.0.1:9000/"
    assert team.ssh_address == everywhere  # follows HUB_ADDRESS unless set
    assert hub_settings.load({"HUB_ADDRESS": "::1"}).public_url == "http://[::1]:8000/"


@pytest.mark.parametrize(("name", "value"), [
    ("HUB_PORT", "80a"), ("HUB_PORT", "70000"), ("HUB_ADDRESS", "localhost"), ("HUB_SSH_ADDRESS", "10.0.0"),
    ("HUB_SSH_PORTS", "2300"), ("HUB_SSH_PORTS", "2399-2300"), ("HUB_SSH_PORTS", "22-30"),
    ("HUB_PROFILES", "cpu,gpu4"), ("HUB_PROFILES", "cpu,cpu"), ("HUB_CULL_TIMEOUT", "10"),
    ("HUB_CULL_TIMEOUT", "1h"), ("HUB_SHM_SIZE", "lots"), ("HUB_MEMLOCK", "-5"), ("HUB_NETWORK", "bad name"),
    ("HUB_NAME_PREFIX", "-x"), ("HUB_SELF_CHECK", "maybe"), ("HUB_ADMIN_USERS", "Boss"), ("HUB_IMAGE", "a b"),
    ("HUB_SPAWN_TIMEOUT", "5"), ("HUB_PROFILES", "mig-big"), ("HUB_GPUS", "GPU-12"), ("HUB_GPUS", "0,0"),
    ("HUB_GPUS", "0,x"), ("HUB_GPU_POLICY", "first"), ("HUB_GPU_PINS", "ann"), ("HUB_GPU_PINS", "Ann=0"),
    ("HUB_GPU_PINS", "ann=GPU-1"), ("HUB_GPU_PINS", "ann=0 ann=1"), ("HUB_GPU_PINS", "=0"),
    ("HUB_STOP_GRACE_SECONDS", "0"), ("HUB_STOP_GRACE_SECONDS", "3601"), ("HUB_STOP_GRACE_SECONDS", "30s"),
    ("HUB_KERNEL_IDLE_TIMEOUT", "-1"), ("HUB_KERNEL_IDLE_TIMEOUT", "1h"), ("HUB_KERNEL_IDLE_TIMEOUT", "3601"),
])
def test_bad_value_is_one_line_naming_it(name: str, value: str) -> None:
    with pytest.raises(HubConfigError) as raised:
        hub_settings.load({name: value})
    message = str(raised.value)
    assert name in message and "\n" not in message


def test_gpu_settings() -> None:
    team = hub_settings.load({"HUB_GPUS": " 1, 0 ", "HUB_GPU_POLICY": "share", "HUB_GPU_PINS": "ann=0; ben=1,2:0",
                              "HUB_PROFILES": "cpu,mig-1g.5gb,mig-3g.20gb+me"})
    assert (team.gpus, team.gpu_ids, team.gpu_policy) == ("1,0", ("1", "0"), "share")
    assert team.gpu_pins == (("ann", ("0",)), ("ben", ("1", "2:0")))
    assert team.profiles == ("cpu", "mig-1g.5gb", "mig-3g.20gb+me")
    assert hub_settings.load({"HUB_GPUS": "none"}).gpu_ids == ()


def test_conflicting_values() -> None:
    with pytest.raises(HubConfigError, match="HUB_PROXY_API_PORT"):
        hub_settings.load({"HUB_PORT": "8001"})
    with pytest.raises(HubConfigError, match="HUB_SSH_PORTS"):
        hub_settings.load({"HUB_PORT": "2250"})
    with pytest.raises(HubConfigError, match="HUB_ACTIVITY_INTERVAL"):
        hub_settings.load({"HUB_CULL_TIMEOUT": "60", "HUB_ACTIVITY_INTERVAL": "45"})


def test_overlong_value_refused() -> None:
    with pytest.raises(HubConfigError, match="HUB_IMAGE is longer"):
        hub_settings.load({"HUB_IMAGE": "x" * 5000})


def test_keys_checked_and_stored(tmp_path: Path, keypair: KeyPair) -> None:
    path = sshaccess.store_keys(tmp_path / "users", "ann", f"# laptop\r\n{keypair.public_text}\r\n\r\n")
    assert path.read_text() == keypair.public_text + "\n"
    assert (tmp_path / "users" / "ann").stat().st_mode & 0o777 == 0o700
    for bad in ("", "# only a comment", keypair.private.read_text(), "ssh-dss AAAAB3Nza", "x" * 70000):
        with pytest.raises(sshaccess.SshSetupError):
            sshaccess.check_keys(bad)
    assert path.read_text() == keypair.public_text + "\n"  # a refused key leaves the stored one


def test_ports_stay_with_their_user(tmp_path: Path) -> None:
    table = tmp_path / "ssh-ports.json"
    ports = free_port_range(3)  # below the ephemeral range: no outgoing connection takes a neighbour
    first = ports.start
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", first))
        busy.listen()
        ann = sshaccess.assigned_port(table, "ann", ports, "127.0.0.1")
        assert ann == first + 1  # the first port of the range is in use on the host
    ben = sshaccess.assigned_port(table, "ben", ports, "127.0.0.1")
    assert ben == first  # free again, and nobody's
    assert sshaccess.assigned_port(table, "ann", ports, "127.0.0.1") == ann
    assert json.loads(table.read_text()) == {"ann": ann, "ben": ben}
    assert table.stat().st_mode & 0o777 == 0o600
    sshaccess.assigned_port(table, "cid", ports, "127.0.0.1")
    with pytest.raises(sshaccess.SshSetupError, match="no free SSH port"):
        sshaccess.assigned_port(table, "dan", ports, "127.0.0.1")
