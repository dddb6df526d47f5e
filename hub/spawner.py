"""TeamSpawner: DockerSpawner with what a shared GPU box needs (docs/hub.md): a profile per
server (CPU only, n specific GPUs or a MIG slice, as Docker device requests naming them, chosen by
hub/gpuplan.py from what the running containers hold), the user's SSH keys and a host port of
their own, and the same shm, ulimits and log limits as the compose setup, with the hub's stop grace
and idle kernels' timeout (HUB_STOP_GRACE_SECONDS, HUB_KERNEL_IDLE_TIMEOUT). Loaded by the hub
process (hub/.venv) through jupyterhub_config.py."""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from docker.errors import NotFound
from dockerspawner import DockerSpawner
from tornado import web

from compose import gpus, limits
from hub import REPO, sshaccess
from hub import settings as hub_settings
from hub.gpuplan import GpuUnavailable, Plan, Profile
from hub.settings import GPUS_LABEL, PROFILE_LABEL, SSH_PORT_LABEL, USER_LABEL, Settings

# Where the keys file appears in the container: beside compose's secrets, read by the
# entrypoint as root (SSH_AUTHORIZED_KEYS_FILE).
KEYS_IN_CONTAINER = "/run/secrets/authorized_keys"
SSH_CONTAINER_PORT = 22
# compose's start hook that gives fresh named volumes (~/work, ~/.nv, ~/.local) to the dev user.
START_HOOKS = REPO / "compose" / "start.d"
# The stack ulimit and log rotation of compose's members (docker-compose.yml's x-member).
LIMITS = limits.load()
# Containers that hold their GPUs: all but the exited, dead and never started ones.
HOLDING_STATES = ["running", "paused", "restarting"]
# How long a stop waits for Docker to finish removing the container (see remove_object).
REMOVAL_SECONDS = 30


class TeamSpawner(DockerSpawner):  # type: ignore[misc]
    # Set once by jupyterhub_config.py: the checked settings (profiles already fitted to whether
    # the engine can give containers GPUs).
    team: ClassVar[Settings]
    # Set once by jupyterhub_config.py: the profiles offered and the GPUs handed out (hub/gpuplan.py).
    plan: ClassVar[Plan]
    # One spawn at a time from choosing GPUs to its container existing: two never get the same free GPU.
    gpu_lock: ClassVar[asyncio.Lock] = asyncio.Lock()
    # What start() adds to the environment DockerSpawner builds (profile, SSH, activity reports).
    team_env: dict[str, str]

    def _keys_path(self) -> Any:
        return sshaccess.keys_file(hub_settings.users_dir(self.team.state_dir), self.escaped_name)

    async def options_form_html(self) -> str:
        """The spawn page's form (c.TeamSpawner.options_form names this function): profile and SSH keys,
        with how many of each GPU profile's GPUs are free now."""
        held = await self._held() if any(profile.count for profile in self.plan.profiles) else []
        radios = []
        for index, profile in enumerate(self.plan.profiles):
            checked = " checked" if index == 0 else ""
            free = f": {self.plan.availability(self.user.name, profile, held)}" if profile.count else ""
            if profile.memory_mb:
                free += f" (TensorFlow takes at most {profile.memory_mb} MiB of each GPU)"
            radios.append(f'<label><input type="radio" name="profile" value="{html.escape(profile.name)}"{checked}> '
                          f"{html.escape(profile.label + free)}</label><br>")
        stored = self._keys_path().is_file()
        hint = ("Your SSH key is on file: leave this empty to keep it, or paste new keys to replace it."
                if stored else "Paste your SSH public key (the one line of ~/.ssh/id_ed25519.pub) for SSH access.")
        port = sshaccess.recorded_port(hub_settings.ssh_ports_file(self.team.state_dir), self.user.name)
        if stored and port is not None:
            hint += f" Your server's SSH port is {port}: ssh -p {port} jovyan@<this host>."
        return (
            "<h4>Server</h4>" + "".join(radios)
            + f"<h4>SSH</h4><p>{html.escape(hint)}</p>"
            + '<textarea name="ssh_key" rows="3" style="width:100%" placeholder="ssh-ed25519 AAAA... you@laptop">'
            + "</textarea>"
        )

    def options_from_form(self, formdata: dict[str, list[str]]) -> dict[str, str]:
        return {"profile": formdata.get("profile", [""])[0], "ssh_key": formdata.get("ssh_key", [""])[0]}

    def _profile(self) -> Profile:
        name = str(self.user_options.get("profile") or self.plan.profiles[0].name)
        profile = self.plan.profile(name)
        if profile is None:
            raise web.HTTPError(400, f"profile {name!r} is not offered here: choose one of "
                                     f"{', '.join(p.name for p in self.plan.profiles)}")
        return profile

    async def _held(self) -> list[tuple[str, ...]]:
        """The GPUs each other container on the engine holds now, from its device requests: the
        hub's servers, compose members, anything else; never this user's own old container."""
        call: Callable[..., Awaitable[Any]] = self.docker
        held = []
        for summary in await call("containers", filters={"status": HOLDING_STATES}):
            if f"/{self.container_name}" in (summary.get("Names") or []):
                continue
            try:
                attrs = await call("inspect_container", summary["Id"])
            except NotFound:  # gone since it was listed
                continue
            ids = tuple(i for request in attrs["HostConfig"].get("DeviceRequests") or []
                        for i in gpus.request_ids(request))
            if ids:
                held.append(ids)
        return held

    def _ssh_port(self) -> int | None:
        """Store keys sent with this spawn; with keys on file, the user's SSH host port."""
        text = str(self.user_options.get("ssh_key") or "")
        try:
            if text.strip():
                sshaccess.store_keys(hub_settings.users_dir(self.team.state_dir), self.escaped_name, text)
            if not self._keys_path().is_file():
                return None
            return sshaccess.assigned_port(hub_settings.ssh_ports_file(self.team.state_dir), self.user.name,
                                           self.team.ssh_ports, self.team.ssh_address)
        except sshaccess.SshSetupError as exc:
            raise web.HTTPError(400, str(exc)) from None

    def get_env(self) -> dict[str, str]:
        env: dict[str, str] = super().get_env()
        env.update(getattr(self, "team_env", {}))
        return env

    def engine_stop_seconds(self) -> int:
        """What the engine waits before it kills: the entrypoint's grace for the runs, then the services' stop."""
        return self.team.stop_grace + limits.STOP_MARGIN

    async def stop_object(self) -> None:
        """docker stop with the team's grace: the server's jobs and busy kernels are interrupted first and
        checkpoint (docs/jobs.md); DockerSpawner's own stop would kill after Docker's default 10 s."""
        try:
            await self.docker("stop", self.container_id, timeout=self.engine_stop_seconds())
        except NotFound:
            self.log.debug("already removed: %s", self.object_id)

    async def remove_object(self) -> None:
        """DockerSpawner makes the container with auto_remove (its remove=True), so Docker may still be
        removing it when this returns; a start then fails on the name ("already in use") with a bare
        500, as a Stop then Start at once did. So this waits until the container is gone."""
        await super().remove_object()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REMOVAL_SECONDS
        while await self.get_object() is not None:
            if loop.time() > deadline:
                self.log.warning("%s is still being removed after %d s", self.object_name, REMOVAL_SECONDS)
                return
            await asyncio.sleep(0.1)

    async def start(self) -> Any:
        profile = self._profile()
        ssh_port = self._ssh_port()
        env: dict[str, str] = {
            "SELF_CHECK": self.team.self_check,
            # How often the server reports its last activity to the hub (the culler reads it).
            "JUPYTERHUB_ACTIVITY_INTERVAL": str(self.team.activity_interval),
            "STOP_GRACE_SECONDS": str(self.team.stop_grace),
            "KERNEL_IDLE_TIMEOUT": str(self.team.kernel_idle),
        }
        host_config: dict[str, Any] = {
            "shm_size": self.team.shm_size,
            "ulimits": [{"Name": "memlock", "Soft": self.team.memlock, "Hard": self.team.memlock},
                        {"Name": "stack", "Soft": LIMITS.stack_bytes, "Hard": LIMITS.stack_bytes}],
            "log_config": {"type": LIMITS.log_driver, "config": LIMITS.log_options},
        }
        if profile.memory_mb:
            # The image caps TensorFlow's share of each visible GPU to it (a cap TensorFlow keeps, not the hardware).
            env["GPU_MEMORY_LIMIT_MB"] = str(profile.memory_mb)
        if not profile.count:
            # The image's ENV says all; void hides every GPU even where the engine's default runtime is nvidia.
            env["NVIDIA_VISIBLE_DEVICES"] = "void"
        volumes: dict[str, Any] = {
            f"{self.team.name_prefix}-{{username}}-work": "/home/jovyan/work",
            f"{self.team.name_prefix}-{{username}}-nv": "/home/jovyan/.nv",
            f"{self.team.name_prefix}-{{username}}-hostkeys": "/etc/ssh/host-keys",
            f"{self.team.name_prefix}-{{username}}-local": "/home/jovyan/.local",
            str(START_HOOKS): {"bind": "/etc/tf29-env/start.d", "mode": "ro"},
        }
        if self.team.team_data:
            # A read-only mount is read-only for root in the container too (no remount: no CAP_SYS_ADMIN).
            volumes[self.team.team_data] = {"bind": hub_settings.TEAM_DATA_MOUNT, "mode": "ro"}
        if self.team.team_shared:
            volumes[self.team.team_shared] = {"bind": hub_settings.TEAM_SHARED_MOUNT, "mode": "rw"}
        # The container's own stop timeout: a `docker stop` by hand and the engine's shutdown give the grace too.
        # The user's own name: the container's name holds it escaped (`hub.ctl gpus` reads this label).
        create: dict[str, Any] = {"labels": {PROFILE_LABEL: profile.name, USER_LABEL: self.user.name},
                                  "stop_timeout": self.engine_stop_seconds()}
        if ssh_port is None:
            self.log.info("%s: no SSH key on file, SSH stays off", self.user.name)
        else:
            env["SSH_AUTHORIZED_KEYS_FILE"] = KEYS_IN_CONTAINER
            volumes[str(self._keys_path())] = {"bind": KEYS_IN_CONTAINER, "mode": "ro"}
            host_config["port_bindings"] = {SSH_CONTAINER_PORT: (self.team.ssh_address, ssh_port)}
            create["ports"] = {f"{SSH_CONTAINER_PORT}/tcp": None}
            create["labels"][SSH_PORT_LABEL] = str(ssh_port)
            self.log.info("%s: SSH on %s:%d", self.user.name, self.team.ssh_address, ssh_port)
        self.team_env = env
        self.volumes = volumes
        self.extra_host_config = host_config
        self.extra_create_kwargs = create
        if not profile.count:
            return await super().start()
        async with self.gpu_lock:
            try:
                devices = self.plan.assign(self.user.name, profile, await self._held())
            except GpuUnavailable as exc:
                raise web.HTTPError(409, str(exc)) from None
            ids = [device.id for device in devices]
            host_config["device_requests"] = [{"Driver": "nvidia", "DeviceIDs": ids, "Capabilities": [["gpu"]]}]
            create["labels"][GPUS_LABEL] = ",".join(ids)
            self.log.info("%s: %s", self.user.name, ", ".join(device.label for device in devices))
            return await super().start()
