"""The team hub's JupyterHub configuration, loaded by `jupyterhub -f` as hub/ctl.py starts it.

Everything comes from the HUB_* settings (hub/settings.py), already checked by ctl; ctl has also
made the Docker network and the state folder, and started the proxy, which the hub only talks to.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import docker
import docker.errors
import nativeauthenticator

from hub import gpuplan
from hub import settings as hub_settings
from hub.spawner import TeamSpawner

team = hub_settings.load(os.environ)
state = team.state_dir
c = get_config()  # type: ignore[name-defined]  # noqa: F821 - traitlets' config loader defines it

# --- where the hub listens. Users reach the proxy (started by ctl, which the hub leaves running
# across its own restarts); the hub's own API listens on the Docker network's gateway, the host's
# address on that network, so that the single-user containers reach it and nothing else is exposed.
engine = docker.from_env()
network = engine.networks.get(team.network)
gateway = network.attrs["IPAM"]["Config"][0]["Gateway"]
# Before bind_url, whose scheme JupyterHub fits to whether ssl_cert is set. ctl has made or checked
# the pair and serves it from the proxy (started by ctl, hence should_start = False below).
if team.tls_files:
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = map(str, team.tls_files)
    print(f"tf29-hub: {hub_settings.fingerprint_line(team.tls_files[0])}", flush=True)
c.JupyterHub.bind_url = team.public_url
c.JupyterHub.hub_bind_url = f"http://{gateway}:{team.internal_port}"
c.JupyterHub.hub_connect_url = f"http://{gateway}:{team.internal_port}"
c.ConfigurableHTTPProxy.should_start = False
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{team.proxy_api_port}"
c.ConfigurableHTTPProxy.auth_token = hub_settings.proxy_token_file(state).read_text().strip()

# --- state that outlives the hub process (the folder is mode 700; ctl's umask keeps files 600)
c.JupyterHub.db_url = f"sqlite:///{hub_settings.db_file(state)}"
c.JupyterHub.cookie_secret_file = str(hub_settings.cookie_secret_file(state))
# A hub restart (an upgrade, `make hub-down && make hub`) leaves users' servers and their
# kernels running; the hub finds them again from its database.
c.JupyterHub.cleanup_servers = False
# How often the hub reads the proxy's per-route activity (the culler's input, with the servers' reports).
c.JupyterHub.last_activity_interval = team.activity_interval

# --- who logs in: NativeAuthenticator (docs/hub.md says why). People sign up at /hub/signup and
# an admin approves them at /hub/authorize; the admins named in HUB_ADMIN_USERS are approved when
# they sign up. Only approved accounts authenticate at all, so every authenticated user is let in.
c.JupyterHub.authenticator_class = "nativeauthenticator.NativeAuthenticator"
c.JupyterHub.template_paths = [str(Path(nativeauthenticator.__file__).parent / "templates")]
c.NativeAuthenticator.minimum_password_length = 10
c.NativeAuthenticator.check_common_password = True
# Five wrong passwords in a row block the name for ten minutes (password guessing).
c.NativeAuthenticator.allowed_failed_logins = 5
c.NativeAuthenticator.seconds_before_next_try = 600
c.Authenticator.allow_all = True
c.Authenticator.admin_users = set(team.admin_users)

# --- the users' servers: containers of the project's image on the hub's network
for variable, volume in (("HUB_TEAM_DATA", team.team_data), ("HUB_TEAM_SHARED", team.team_shared)):
    if volume and "/" not in volume:
        try:
            engine.volumes.get(volume)
        except docker.errors.NotFound:
            # Docker would make an empty one at the first spawn: every server would show an empty folder.
            raise hub_settings.HubConfigError(f"{variable}={volume}: no Docker volume of that name "
                                              "(docker volume ls)") from None
TeamSpawner.team = team
# ctl has checked the plan and left in HUB_PROFILES only what this engine and box can serve.
TeamSpawner.plan = gpuplan.load(team, capable=True)
c.JupyterHub.spawner_class = TeamSpawner
c.TeamSpawner.image = team.image
c.TeamSpawner.network_name = team.network
c.TeamSpawner.use_internal_ip = True
c.TeamSpawner.prefix = team.name_prefix
# The image's hub mode: jupyterhub-singleuser under the entrypoint, as jovyan, with sshd.
c.TeamSpawner.cmd = ["jupyterhub-singleuser"]
c.TeamSpawner.remove = True  # a fresh container per start (its profile may change); volumes stay
c.TeamSpawner.options_form = TeamSpawner.options_form_html
c.TeamSpawner.default_url = "/lab"
c.TeamSpawner.start_timeout = team.spawn_timeout
c.TeamSpawner.http_timeout = team.spawn_timeout
c.TeamSpawner.debug = False

# --- the idle culler, a service of the hub: its token may list, read, stop and reach servers,
# and read the proxy's table (where each server is: hub/culler_config.py asks it about kernels)
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={team.cull_timeout}",
                f"--cull-every={team.cull_every}", f"--config={Path(__file__).parent / 'culler_config.py'}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers", "access:servers",
               "proxy"],
    "services": ["idle-culler"],
}]
