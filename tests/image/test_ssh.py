"""SSH: key-only logins as the dev user, with the container's environment; never root."""

from pathlib import Path

import paramiko
import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import TrackedContainer
from testkit.ssh import KeyPair


def start(
    tracked: TrackedContainer,
    key: KeyPair,
    environment: dict[str, str] | None = None,
    volumes: dict[str, dict[str, str]] | None = None,
) -> tuple[Container, int]:
    """A healthy container that takes `key`; returns it and its published SSH port."""
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS": key.public_text, **(environment or {})},
                            volumes=volumes or {})
    tracked.wait_healthy(container)
    return container, tracked.port(container, 22)


def test_key_login_as_dev_user_with_container_environment(
    tracked: TrackedContainer, keypair: KeyPair, variant: str
) -> None:
    _, port = start(tracked, keypair, environment={"JUPYTER_TOKEN": "not-for-ssh-sessions"})
    with ssh.connect(port, "jovyan", keypair) as client:
        code, out = ssh.run(client, "id -un; echo \"$PATH\"; env")
        assert code == 0
        user, path, *env = out.splitlines()
        assert user == "jovyan"
        assert path.startswith("/opt/venv/bin:")
        assert "TF_FORCE_GPU_ALLOW_GROWTH=true" in env
        assert "NVIDIA_VISIBLE_DEVICES=all" in env
        # The CUDA base sets LD_LIBRARY_PATH for the driver's libraries; plain Debian/Ubuntu does not.
        assert any(line.startswith("LD_LIBRARY_PATH=") for line in env) is (variant == "gpu")
        assert not any("not-for-ssh-sessions" in line for line in env)
        code, out = ssh.run(client, "python -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null")
        assert (code, out.strip().splitlines()[-1]) == (0, "2.9.3")
        # Login shells run /etc/profile, which resets PATH; the venv must still come first.
        code, out = ssh.run(client, "bash -lc 'command -v python'")
        assert (code, out.strip()) == (0, "/opt/venv/bin/python")


def test_password_root_and_unknown_key_logins_refused(
    tracked: TrackedContainer, keypair: KeyPair, other_keypair: KeyPair
) -> None:
    _, port = start(tracked, keypair)
    with pytest.raises(paramiko.AuthenticationException):
        ssh.connect(port, "jovyan", password="jovyan")
    with pytest.raises(paramiko.AuthenticationException):
        ssh.connect(port, "root", keypair)
    with pytest.raises(paramiko.AuthenticationException):
        ssh.connect(port, "jovyan", other_keypair)
    ssh.connect(port, "jovyan", keypair).close()  # the same server does take the right key


def test_keys_from_file(tracked: TrackedContainer, keypair: KeyPair, tmp_path: Path) -> None:
    keys = tmp_path / "authorized_keys"
    keys.write_text(f"# team keys\n{keypair.public_text}\n")
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/run/secrets/keys"},
                            volumes={str(keys): {"bind": "/run/secrets/keys", "mode": "ro"}})
    tracked.wait_healthy(container)
    with ssh.connect(tracked.port(container, 22), "jovyan", keypair) as client:
        assert ssh.run(client, "whoami") == (0, "jovyan\n")


def test_no_key_means_no_sshd(tracked: TrackedContainer) -> None:
    container = tracked.run()
    tracked.wait_healthy(container)
    assert "SSH is off: no SSH_AUTHORIZED_KEYS" in tracked.logs(container)
    code, out = tracked.exec(container, ["ps", "-eo", "comm"])
    assert code == 0 and "sshd" not in out.split()


def test_each_container_makes_its_own_host_keys(tracked: TrackedContainer, keypair: KeyPair) -> None:
    (_, port_a), (_, port_b) = start(tracked, keypair), start(tracked, keypair)
    assert ssh.host_key(port_a) != ssh.host_key(port_b)


def test_host_keys_survive_recreation_on_a_volume(
    tracked: TrackedContainer, keypair: KeyPair, docker_client: DockerClient
) -> None:
    volume = f"tf29-env-test-hostkeys-{id(tracked)}"
    mounts = {volume: {"bind": "/etc/ssh/host-keys", "mode": "rw"}}
    first, port = start(tracked, keypair, volumes=mounts)
    before = ssh.host_key(port)
    first.remove(force=True)
    _, port = start(tracked, keypair, volumes=mounts)
    try:
        assert ssh.host_key(port) == before
    finally:
        tracked.remove_all()
        docker_client.volumes.get(volume).remove(force=True)
