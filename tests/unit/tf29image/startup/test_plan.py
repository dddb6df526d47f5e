"""image/python/tf29image/startup/plan.py, the start-up planner: one row per refusal (its one line, exit 2)
and rows of accepted plans, with a fake environment, fake files, users, groups and /proc passed in. The
container tests (tests/image/test_bad_input.py) keep one smoke test per family of failure."""
# ruff: noqa: S108 - /tmp is a path in a fake mount table and in messages; nothing is written there

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tf29image.healthcheck import SSHD_CONFIG
from tf29image.startup import plan
from tf29image.startup.system import Mounts

# The image's ENV, as the Dockerfile sets it.
BASE = {"NB_USER": "jovyan", "NB_UID": "1000", "NB_GID": "100", "TFENV_IMAGE_USER": "jovyan",
        "TFENV_RUN_DIR": "/run/tf29-env", "PATH": "/opt/venv/bin:/usr/bin"}
# A real public key (ssh-keygen -t ed25519; its private half was thrown away): the planner checks keys with ssh-keygen.
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK2J6zonBYNG+M6tAKnRhmTykg/xHOCedEPyKYPYP60I user@host"
HUB = {"JUPYTERHUB_API_TOKEN": "t" * 32, "JUPYTERHUB_SERVICE_URL": "http://0.0.0.0:8888/user/ann/",
       "JUPYTERHUB_SERVICE_PREFIX": "/user/ann/"}


class FakeSystem(plan.System):
    """The image's users and groups, some files, /proc's port floor and the self-check's answer."""

    def __init__(self, files: Mapping[str, str] | None = None, floor: int | None = 0,
                 self_check: tuple[int, str] = (0, "warn"), commands: tuple[str, ...] = (),
                 read_only: tuple[str, ...] = (), capabilities: int = (1 << 41) - 1,
                 missing: tuple[str, ...] = (), taken: tuple[int, ...] = (), files_not_folders: tuple[str, ...] = (),
                 folders: Mapping[str, list[str]] | None = None, certificate: str = "") -> None:
        self.files = dict(files or {})
        self.certificate = certificate  # what certificate_problem says (tls.py's own tests use real files)
        self.folders = dict(folders or {})  # a folder's entries; every path in them exists
        self.taken = taken
        self.files_not_folders = files_not_folders
        self.read_only = read_only
        self.capabilities = capabilities
        self.missing = missing
        self.floor = floor
        self.self_check = self_check
        self.commands = commands

    def group_name(self, gid: int) -> str | None:
        return {0: "root", 4: "adm", 42: "shadow", 50: "staff", 100: "users"}.get(gid)

    def user_uid(self, name: str) -> int | None:
        return {"root": 0, "daemon": 1, "jovyan": 1000}.get(name)

    def user_name(self, uid: int) -> str | None:
        return {0: "root", 1: "daemon", 1000: "jovyan"}.get(uid)

    def file_size(self, path: str) -> int | None:
        return len(self.files[path].encode()) if path in self.files else None

    def read_file(self, path: str) -> str | None:
        return self.files.get(path)

    def has_command(self, name: str) -> bool:
        return name in self.commands

    def unprivileged_port_start(self) -> int | None:
        return self.floor

    def self_check_mode(self) -> tuple[int, str]:
        return self.self_check

    def new_token(self) -> str:
        return "f" * 48

    def writable(self, path: str) -> bool:
        return path not in self.read_only

    def owner_and_mode(self, path: str) -> str:
        return "owner 0:0, mode 755"

    def exists(self, path: str) -> bool:
        return path not in self.missing

    def is_dir(self, path: str) -> bool:
        return path not in self.files_not_folders

    def port_free(self, port: int) -> bool:
        return port not in self.taken

    def entries(self, path: str) -> list[str]:
        return sorted(self.folders.get(path, []))

    def lexists(self, path: str) -> bool:
        folder, _, name = path.rpartition("/")
        return name in self.folders.get(folder, [])

    def host_name(self) -> str:
        return "node7"

    def user_ids(self, name: str) -> tuple[int, int]:
        return {"root": (0, 0), "daemon": (1, 1), "jovyan": (1000, 100), "ann": (1000, 100)}[name]

    def user_home(self, name: str) -> str:
        return {"root": "/root", "jovyan": "/home/jovyan", "ann": "/home/ann"}[name]

    def group_gid(self, name: str) -> int | None:
        return {"root": 0, "adm": 4, "shadow": 42, "staff": 50, "users": 100}.get(name)

    def group_members(self, name: str) -> tuple[int, list[str]]:
        return (100, []) if name == "users" else (0, [])

    def effective_capabilities(self) -> int:
        return self.capabilities

    def certificate_problem(self, cert: str, key: str) -> str:
        return self.certificate


# /proc/self/mountinfo of `docker run --read-only -v /data:/home/jovyan/my\ work`: the root read-only.
MOUNTINFO = """\
1 0 0:1 / / ro,relatime - overlay overlay rw,lowerdir=x
2 1 0:2 / /proc rw,nosuid - proc proc rw
3 1 0:3 / /tmp rw,nosuid - tmpfs tmpfs rw
4 1 8:1 /data /home/jovyan/my\\040work rw,relatime - ext4 /dev/sda1 rw
5 1 8:1 /data /home/jovyan/my\\040work ro,relatime - ext4 /dev/sda1 rw
"""


def plan_of(env: Mapping[str, str], args: tuple[str, ...] = (), euid: int = 0,
            system: plan.System | None = None) -> plan.Plan:
    return plan.make_plan({**BASE, **env}, args, euid, system or FakeSystem())


def planned(env: Mapping[str, str], args: tuple[str, ...] = (), euid: int = 0,
            system: plan.System | None = None) -> tuple[dict[str, plan.Value], dict[str, str], list[str]]:
    """What the shell evals (its variables and exports), and the notes (cfg_notes)."""
    made = plan_of(env, args, euid, system)
    return plan.shell_variables(made), dict(made.exports), list(made.notes)


def refusal(env: Mapping[str, str], args: tuple[str, ...] = (), euid: int = 0,
            system: plan.System | None = None) -> str:
    with pytest.raises(plan.Refused) as refused:
        planned(env, args, euid, system)
    return str(refused.value)


# JUPYTER_CERT_FILE and JUPYTER_KEY_FILE, as files the fake system holds (tls.py's tests check real pairs).
TLS = {"JUPYTER_CERT_FILE": "/run/secrets/c", "JUPYTER_KEY_FILE": "/run/secrets/k"}
TLS_FILES = {"/run/secrets/c": "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n",
             "/run/secrets/k": "-----BEGIN PRIVATE KEY-----\nMIG\n-----END PRIVATE KEY-----\n"}


# (environment, args, euid, system, the whole line after "tf29-env: ERROR: ")
Row = tuple[dict[str, str], tuple[str, ...], int, FakeSystem | None, str]
REFUSALS: dict[str, Row] = {
    "no run directory": ({"TFENV_RUN_DIR": ""}, (), 0, None,
                         "TFENV_RUN_DIR is not set: the image's ENV sets it; do not override it with an empty value"),
    "no image user": ({"TFENV_IMAGE_USER": ""}, (), 0, None,
                      "TFENV_IMAGE_USER is not set: the image's ENV sets it; do not override it with an empty value"),
    "scratch on a read-only root": ({}, (), 0, FakeSystem(files={"/proc/self/mountinfo": "1 0 0:1 / / ro - o o rw\n"},
                                                           read_only=("/tmp",)),
                                    "/tmp is not writable (read-only file system): mount a tmpfs there (--tmpfs /tmp)"),
    "scratch of another user": ({"NB_UID": "x"}, (), 1000, FakeSystem(read_only=("/tmp",)),
                                "/tmp is not writable for uid 1000 (owner 0:0, mode 755): mount a tmpfs there (--tmpfs "
                                "/tmp)"),
    "start.sh without command": ({}, ("start.sh",), 0, None,
                                 "start.sh needs a command to run (start.sh CMD [ARGS]); without one, give no command "
                                 "at all"),
    "NB_UID": ({"NB_UID": "alice"}, (), 0, None, "NB_UID='alice' is not a numeric id (0-2147483647)"),
    "GPU_MEMORY_LIMIT_MB word": ({"GPU_MEMORY_LIMIT_MB": "4G"}, (), 0, None,
                                 "GPU_MEMORY_LIMIT_MB='4G' is not a number of MiB from 1 to 16777216 (e.g. 4096 for 4 "
                                 "GiB); unset it for no budget"),
    "GPU_MEMORY_LIMIT_MB zero": ({"GPU_MEMORY_LIMIT_MB": "0"}, (), 0, None,
                                 "GPU_MEMORY_LIMIT_MB='0' is not a number of MiB from 1 to 16777216 (e.g. 4096 for 4 "
                                 "GiB); unset it for no budget"),
    "GPU_MEMORY_LIMIT_MB negative": ({"GPU_MEMORY_LIMIT_MB": "-512"}, (), 0, None,
                                     "GPU_MEMORY_LIMIT_MB='-512' is not a number of MiB from 1 to 16777216 (e.g. 4096 "
                                     "for 4 GiB); unset it for no budget"),
    "GPU_MEMORY_LIMIT_MB in the hub mode too": ({**HUB, "GPU_MEMORY_LIMIT_MB": "4096.5"}, ("jupyterhub-singleuser",),
                                                0, None, "GPU_MEMORY_LIMIT_MB='4096.5' is not a number of MiB from 1 "
                                                "to 16777216 (e.g. 4096 for 4 GiB); unset it for no budget"),
    "GPU_MEMORY_LIMIT_MB above 16 TiB": ({"GPU_MEMORY_LIMIT_MB": "16777217"}, (), 0, None,
                                         "GPU_MEMORY_LIMIT_MB='16777217' is not a number of MiB from 1 to 16777216 "
                                         "(e.g. 4096 for 4 GiB); unset it for no budget"),
    "certificate without key": ({"JUPYTER_CERT_FILE": "/run/secrets/c"}, (), 0, None,
                                "JUPYTER_CERT_FILE is set but JUPYTER_KEY_FILE is not: give both (the certificate and "
                                "its private key, PEM) or neither"),
    "key without certificate": ({"JUPYTER_KEY_FILE": "/run/secrets/k"}, (), 0, None,
                                "JUPYTER_KEY_FILE is set but JUPYTER_CERT_FILE is not: give both (the certificate and "
                                "its private key, PEM) or neither"),
    "certificate and GEN_CERT": ({**TLS, "GEN_CERT": "yes"}, (), 0, FakeSystem(files=TLS_FILES),
                                 "GEN_CERT=yes and JUPYTER_CERT_FILE are both set: GEN_CERT makes a self-signed "
                                 "certificate, JUPYTER_CERT_FILE gives one; drop one of them"),
    "certificate in the hub mode": ({**HUB, **TLS}, ("jupyterhub-singleuser",), 0, FakeSystem(files=TLS_FILES),
                                    "JUPYTER_CERT_FILE is set, but in the hub mode the hub decides whether its servers "
                                    "speak HTTPS (JupyterHub's internal_ssl); unset JUPYTER_CERT_FILE and "
                                    "JUPYTER_KEY_FILE"),
    "certificate without jupyter": ({**TLS, "ENABLE_JUPYTER": "0", "SSH_AUTHORIZED_KEYS": KEY}, (), 0,
                                    FakeSystem(files=TLS_FILES), "JUPYTER_CERT_FILE with ENABLE_JUPYTER=0: there is no "
                                    "Jupyter server to give a certificate; drop one of them"),
    "certificate relative": ({"JUPYTER_CERT_FILE": "c.pem", "JUPYTER_KEY_FILE": "/run/secrets/k"}, (), 0, None,
                             "JUPYTER_CERT_FILE='c.pem' must be an absolute path in the container"),
    "certificate missing": (TLS, (), 0, FakeSystem(files={"/run/secrets/k": TLS_FILES["/run/secrets/k"]}),
                            "JUPYTER_CERT_FILE=/run/secrets/c: no such readable file (mount it, e.g. as a secret)"),
    "certificate too big": (TLS, (), 0, FakeSystem(files={**TLS_FILES, "/run/secrets/c": "x" * 1048577}),
                            "JUPYTER_CERT_FILE=/run/secrets/c: the file is 1048577 bytes; at most 1048576"),
    "certificate not PEM": (TLS, (), 0, FakeSystem(files={**TLS_FILES, "/run/secrets/c": "0\x82\x01"}),
                            "JUPYTER_CERT_FILE=/run/secrets/c: not a PEM certificate (no '-----BEGIN CERTIFICATE-----' "
                            "line; convert DER with: openssl x509 -in CERT.der -inform der -out CERT.pem)"),
    "key not PEM": (TLS, (), 0, FakeSystem(files={**TLS_FILES, "/run/secrets/k": "ssh-ed25519 AAAA"}),
                    "JUPYTER_KEY_FILE=/run/secrets/k: not a PEM private key (no '-----BEGIN ... PRIVATE KEY-----' "
                    "line)"),
    "certificate the key does not match": (TLS, (), 0, FakeSystem(files=TLS_FILES, certificate="the pair's problem"),
                                           "the pair's problem"),
    "STOP_GRACE_SECONDS word": ({"STOP_GRACE_SECONDS": "ten"}, (), 0, None,
                                "STOP_GRACE_SECONDS='ten' must be a number of seconds from 1 to 3600"),
    "STOP_GRACE_SECONDS zero": ({"STOP_GRACE_SECONDS": "0"}, (), 0, None,
                                "STOP_GRACE_SECONDS='0' must be a number of seconds from 1 to 3600"),
    "STOP_GRACE_SECONDS too long": ({"STOP_GRACE_SECONDS": "3601"}, (), 0, None,
                                    "STOP_GRACE_SECONDS='3601' must be a number of seconds from 1 to 3600"),
    "KERNEL_IDLE_TIMEOUT negative": ({"KERNEL_IDLE_TIMEOUT": "-1"}, (), 0, None,
                                     "KERNEL_IDLE_TIMEOUT='-1' must be a number of seconds from 0 (never) to 604800"),
    "KERNEL_IDLE_TIMEOUT unit": ({"KERNEL_IDLE_TIMEOUT": "1h"}, (), 0, None,
                                 "KERNEL_IDLE_TIMEOUT='1h' must be a number of seconds from 0 (never) to 604800"),
    "KERNEL_IDLE_TIMEOUT over a week": ({"KERNEL_IDLE_TIMEOUT": "604801"}, (), 0, None,
                                        "KERNEL_IDLE_TIMEOUT='604801' must be a number of seconds from 0 (never) to "
                                        "604800"),
    "NB_GID": ({"NB_GID": "-5"}, (), 0, None, "NB_GID='-5' is not a numeric id (0-2147483647)"),
    "NB_UID too big": ({"NB_UID": "2147483648"}, (), 0, None,
                       "NB_UID='2147483648' is not a numeric id (0-2147483647)"),
    "root uid": ({"NB_UID": "0"}, (), 0, None,
                 "NB_UID=0: JupyterLab and SSH logins never run as root; pick another uid (only NB_USER=root NB_UID=0 "
                 "NB_GID=0 together run as root, for rootless engines)"),
    "root group": ({"NB_GID": "0"}, (), 0, None,
                   "NB_GID=0 is root's group, whose rights everything run in the notebooks and SSH sessions would "
                   "get; use your own gid (id -g, 1000 or above) or 100 (users)"),
    "shadow group": ({"NB_GID": "42"}, (), 0, None,
                     "NB_GID=42 is the image's system group 'shadow', whose rights everything run in the notebooks "
                     "and SSH sessions would get; use your own gid (id -g, 1000 or above) or 100 (users)"),
    "adm group": ({"NB_GID": "004"}, (), 0, None,
                  "NB_GID=004 is the image's system group 'adm', whose rights everything run in the notebooks and "
                  "SSH sessions would get; use your own gid (id -g, 1000 or above) or 100 (users)"),
    "user name": ({"NB_USER": "Ann"}, (), 0, None, "NB_USER='Ann' is not a valid user name"),
    "switch": ({"ENABLE_SSH": "maybe"}, (), 0, None,
               "ENABLE_SSH='maybe' is not a switch: use 1/0, true/false, yes/no or on/off"),
    "jupyter switch": ({"ENABLE_JUPYTER": "2"}, (), 0, None,
                       "ENABLE_JUPYTER='2' is not a switch: use 1/0, true/false, yes/no or on/off"),
    "no-auth switch": ({"JUPYTER_INSECURE_NO_AUTH": "sure"}, (), 0, None,
                       "JUPYTER_INSECURE_NO_AUTH='sure' is not a switch: use 1/0, true/false, yes/no or on/off"),
    "self-check": ({}, (), 0, FakeSystem(self_check=(2, "selfcheck: SELF_CHECK='loud' is not a mode")),
                   "SELF_CHECK='loud' is not a mode"),
    "self-check broken": ({}, (), 0, FakeSystem(self_check=(1, "Traceback")),
                          "SELF_CHECK: the self-check could not say which mode it sets (exit 1): Traceback"),
    "ssh port": ({"SSH_PORT": "0"}, (), 0, None, "SSH_PORT='0' is not a TCP port (1-65535)"),
    "host key dir": ({"SSH_HOST_KEY_DIR": "keys"}, (), 0, None,
                     "SSH_HOST_KEY_DIR='keys' must be an absolute path"),
    "jupyter app": ({"DOCKER_STACKS_JUPYTER_CMD": "classic"}, (), 0, None,
                    "DOCKER_STACKS_JUPYTER_CMD='classic' is not one of lab, server, notebook"),
    "notebook missing": ({"DOCKER_STACKS_JUPYTER_CMD": "notebook"}, (), 0, None,
                         "DOCKER_STACKS_JUPYTER_CMD=notebook: the notebook package (Jupyter Notebook 7) is not in "
                         "this image; use lab or server, or add it (pip install notebook) in an image built FROM this "
                         "one"),
    "notebook args": ({"NOTEBOOK_ARGS": "--a='b"}, (), 0, None,
                      "NOTEBOOK_ARGS cannot be split into arguments as a shell would (No closing quotation): check "
                      "its quotes and backslashes"),
    "unset name": ({"JUPYTER_ENV_VARS_TO_UNSET": "A,B-C"}, (), 0, None,
                   "JUPYTER_ENV_VARS_TO_UNSET: 'B-C' is not a variable name (letters, digits, _; comma-separated)"),
    "unset kept": ({"JUPYTER_ENV_VARS_TO_UNSET": "SECRET PATH"}, (), 0, None,
                   "JUPYTER_ENV_VARS_TO_UNSET: PATH is needed by the services themselves and cannot be unset"),
    "gen cert switch": ({"GEN_CERT": "please"}, (), 0, None,
                        "GEN_CERT='please' is not a switch: use 1/0, true/false, yes/no or on/off"),
    "gen cert hub": ({**HUB, "GEN_CERT": "yes"}, ("jupyterhub-singleuser",), 0, None,
                     "GEN_CERT=yes: in the hub mode the hub decides whether its servers speak HTTPS (JupyterHub's "
                     "internal_ssl); unset GEN_CERT"),
    "gen cert no jupyter": ({"GEN_CERT": "1", "ENABLE_JUPYTER": "0"}, (), 0, None,
                            "GEN_CERT=1 with ENABLE_JUPYTER=0: there is no Jupyter server to give a certificate; drop "
                            "one of them"),
    "token arg": ({}, ("start-notebook.sh", "--IdentityProvider.token=abc"), 0, None,
                  "the server's argument '--IdentityProvider.token': Jupyter's token and password are set with "
                  "JUPYTER_TOKEN_FILE, JUPYTER_TOKEN or JUPYTER_PASSWORD_HASH (docs/settings.md), never on the "
                  "command line, where every process can read them"),
    "password in NOTEBOOK_ARGS": ({"NOTEBOOK_ARGS": "--password x"}, (), 0, None,
                                  "the server's argument '--password': Jupyter's token and password are set with "
                                  "JUPYTER_TOKEN_FILE, JUPYTER_TOKEN or JUPYTER_PASSWORD_HASH (docs/settings.md), "
                                  "never on the command line, where every process can read them"),
    "hub without token": ({}, ("jupyterhub-singleuser",), 0, None,
                          "the hub mode (command jupyterhub-singleuser or start-singleuser) needs "
                          "JUPYTERHUB_API_TOKEN, "
                          "which JupyterHub's spawner sets: start it from a hub, or give no command for the "
                          "standalone JupyterLab"),
    "hub with a token": ({**HUB, "JUPYTER_TOKEN": "x" * 20}, ("start-singleuser.sh",), 0, None,
                         "JUPYTER_TOKEN is set, but in the hub mode the hub's login is the only one: unset "
                         "JUPYTER_TOKEN (it applies to the standalone JupyterLab)"),
    "hub with allowed hosts": ({**HUB, "JUPYTER_ALLOWED_HOSTS": "a.example"}, (), 0, None,
                               "JUPYTER_ALLOWED_HOSTS is set, but in the hub mode the hub's login is the only one: "
                               "unset JUPYTER_ALLOWED_HOSTS (it applies to the standalone JupyterLab)"),
    "hub without auth": ({**HUB, "JUPYTER_INSECURE_NO_AUTH": "1"}, (), 0, None,
                         "JUPYTER_INSECURE_NO_AUTH=1 in the hub mode, where the hub's login is the only one: unset it"),
    "hub without jupyter": ({**HUB, "ENABLE_JUPYTER": "0"}, (), 0, None,
                            "ENABLE_JUPYTER=0 in the hub mode, which exists to run the hub's single-user server: "
                            "unset it"),
    "hub without url": ({"JPY_API_TOKEN": "t" * 32}, ("jupyterhub-singleuser",), 0, None,
                        "JUPYTERHUB_SERVICE_URL is not set: the hub mode needs it from the hub's spawner (JupyterHub "
                        "2 or later sets it)"),
    "hub url": ({**HUB, "JUPYTERHUB_SERVICE_URL": "0.0.0.0:8888"}, (), 0, None,
                "JUPYTERHUB_SERVICE_URL='0.0.0.0:8888' is not a URL like http://0.0.0.0:8888/user/NAME/"),
    "hub port": ({**HUB, "JUPYTERHUB_SERVICE_URL": "http://x:70000/"}, (), 0, None,
                 "JUPYTERHUB_SERVICE_URL='http://x:70000/': port 70000 is not a TCP port (1-65535)"),
    "hub port 0 outside Apptainer": ({**HUB, "JUPYTERHUB_SERVICE_URL": "http://x:0/"}, (), 0, None,
                                     "JUPYTERHUB_SERVICE_URL='http://x:0/': port 0 is not a TCP port (1-65535)"),
    "hub prefix": ({**HUB, "JUPYTERHUB_SERVICE_PREFIX": "user/ann"}, (), 0, None,
                   "JUPYTERHUB_SERVICE_PREFIX='user/ann' is not a URL path like /user/NAME/"),
    "port": ({"JUPYTER_PORT": "70000"}, (), 0, None, "JUPYTER_PORT='70000' is not a TCP port (1-65535)"),
    "base url": ({"JUPYTER_BASE_URL": "lab"}, (), 0, None,
                 "JUPYTER_BASE_URL='lab' must be a path like /jupyter/ (letters, digits, . _ ~ - /)"),
    "token file missing": ({"JUPYTER_TOKEN_FILE": "/run/secrets/none"}, (), 0, None,
                           "JUPYTER_TOKEN_FILE=/run/secrets/none: no such readable file"),
    "both tokens": ({"JUPYTER_TOKEN": "a", "JUPYTER_TOKEN_FILE": "/etc/hostname"}, (), 0, None,
                    "JUPYTER_TOKEN and JUPYTER_TOKEN_FILE are both set: set one"),
    "runaway token file": ({"JUPYTER_TOKEN_FILE": "/t"}, (), 0, FakeSystem(files={"/t": "a" * 150_000}),
                           "JUPYTER_TOKEN_FILE=/t: the file is 150000 bytes; at most 4096"),
    "runaway token in a file": ({"JUPYTER_TOKEN_FILE": "/run/secrets/token"}, (), 0,
                                FakeSystem(files={"/run/secrets/token": "a" * 2000 + "\n"}),
                                "JUPYTER_TOKEN_FILE=/run/secrets/token: the token is 2000 characters long; at most "
                                "1024"),
    "empty token file": ({"JUPYTER_TOKEN_FILE": "/t"}, (), 0, FakeSystem(files={"/t": "\n"}),
                         "JUPYTER_TOKEN_FILE=/t: the file is empty"),
    "blank token file": ({"JUPYTER_TOKEN_FILE": "/t"}, (), 0, FakeSystem(files={"/t": " \t\n\n"}),
                         "JUPYTER_TOKEN_FILE=/t: the file is empty"),
    "token space": ({"JUPYTER_TOKEN": "two words"}, (), 0, None,
                    "JUPYTER_TOKEN: the token contains spaces or control characters"),
    "token control character": ({"JUPYTER_TOKEN_FILE": "/t"}, (), 0, FakeSystem(files={"/t": "a" * 20 + "\tb\n"}),
                                "JUPYTER_TOKEN_FILE: the token contains spaces or control characters"),
    "short token": ({"JUPYTER_TOKEN": "a"}, (), 0, None,
                    "JUPYTER_TOKEN: the token is 1 characters long; at least 16 (make one with: openssl rand -hex 24)"),
    "short token 15": ({"JUPYTER_TOKEN": "abcdefghijklmno"}, (), 0, None,
                       "JUPYTER_TOKEN: the token is 15 characters long; at least 16 (make one with: openssl rand -hex "
                       "24)"),
    "short token in a file": ({"JUPYTER_TOKEN_FILE": "/t"}, (), 0, FakeSystem(files={"/t": "secret\n"}),
                              "JUPYTER_TOKEN_FILE: the token is 6 characters long; at least 16 (make one with: "
                              "openssl rand -hex 24)"),
    "password": ({"JUPYTER_PASSWORD_HASH": "hunter2"}, (), 0, None,
                 "JUPYTER_PASSWORD_HASH is not a Jupyter password hash (argon2:... or sha1:...; make one with: python "
                 "-c 'from jupyter_server.auth import passwd; print(passwd())')"),
    "allowed host address": ({"JUPYTER_ALLOWED_HOSTS": "jupyter.example, 10.0.0.5"}, (), 0, None,
                             "JUPYTER_ALLOWED_HOSTS: '10.0.0.5' is an address; Jupyter lets loopback addresses "
                             "(127.0.0.1, ::1) in always and no other address: list host names"),
    "allowed host v6": ({"JUPYTER_ALLOWED_HOSTS": "[fd00::1]"}, (), 0, None,
                        "JUPYTER_ALLOWED_HOSTS: '[fd00::1]' is an address; Jupyter lets loopback addresses (127.0.0.1, "
                        "::1) in always and no other address: list host names"),
    "allowed host url": ({"JUPYTER_ALLOWED_HOSTS": "https://jupyter.example"}, (), 0, None,
                         "JUPYTER_ALLOWED_HOSTS: 'https://jupyter.example' is not a host name (letters, digits, dots "
                         "and dashes, e.g. jupyter.example.com; no scheme, port or wildcard)"),
    "allowed host port": ({"JUPYTER_ALLOWED_HOSTS": "jupyter.example:8888"}, (), 0, None,
                          "JUPYTER_ALLOWED_HOSTS: 'jupyter.example:8888' is not a host name (letters, digits, dots and "
                          "dashes, e.g. jupyter.example.com; no scheme, port or wildcard)"),
    "allowed host wildcard": ({"JUPYTER_ALLOWED_HOSTS": "*.example"}, (), 0, None,
                              "JUPYTER_ALLOWED_HOSTS: '*.example' is not a host name (letters, digits, dots and "
                              "dashes, e.g. jupyter.example.com; no scheme, port or wildcard)"),
    "no auth with a token": ({"JUPYTER_INSECURE_NO_AUTH": "1", "JUPYTER_TOKEN": "x" * 16}, (), 0, None,
                             "JUPYTER_INSECURE_NO_AUTH=1 together with a token or password: drop one of them"),
    "no auth without hosts": ({"JUPYTER_INSECURE_NO_AUTH": "1"}, (), 0, None,
                              "JUPYTER_INSECURE_NO_AUTH=1 needs JUPYTER_ALLOWED_HOSTS, the host names JupyterLab is "
                              "reached by (e.g. the proxy's jupyter.example.com, or localhost): without auth, any "
                              "other name could be a web page's, through DNS rebinding"),
    "both keys": ({"SSH_AUTHORIZED_KEYS": KEY, "SSH_AUTHORIZED_KEYS_FILE": "/k"}, (), 0, None,
                  "SSH_AUTHORIZED_KEYS and SSH_AUTHORIZED_KEYS_FILE are both set: set one"),
    "key file": ({"SSH_AUTHORIZED_KEYS_FILE": "/nope"}, (), 0, None,
                 "SSH_AUTHORIZED_KEYS_FILE=/nope: no such readable file"),
    "runaway key file": ({"SSH_AUTHORIZED_KEYS_FILE": "/run/secrets/big"}, (), 0,
                         FakeSystem(files={"/run/secrets/big": "a" * 3_000_000}),
                         "SSH_AUTHORIZED_KEYS_FILE=/run/secrets/big: the file is 3000000 bytes; at most 2097152"),
    "nothing": ({"ENABLE_JUPYTER": "0"}, (), 0, None,
                "ENABLE_JUPYTER=0 and no SSH to start (that needs ENABLE_SSH=1, root and a key): nothing to run"),
    "nothing without root": ({"ENABLE_JUPYTER": "0", "SSH_AUTHORIZED_KEYS": KEY}, (), 1000, None,
                             "ENABLE_JUPYTER=0 and no SSH to start (that needs ENABLE_SSH=1, root and a key): nothing "
                             "to run"),
    "one port, JUPYTER_PORT": ({"JUPYTER_PORT": "22", "SSH_AUTHORIZED_KEYS": KEY}, (), 0, None,
                               "JUPYTER_PORT=22 and SSH_PORT=22: JupyterLab and sshd cannot listen on the same port; "
                               "change one of them"),
    "one port, SSH_PORT": ({"SSH_PORT": "8888", "SSH_AUTHORIZED_KEYS": KEY}, (), 0, None,
                           "JUPYTER_PORT=8888 and SSH_PORT=8888: JupyterLab and sshd cannot listen on the same port; "
                           "change one of them"),
    "one port, leading zero": ({"JUPYTER_PORT": "2222", "SSH_PORT": "02222", "SSH_AUTHORIZED_KEYS": KEY}, (), 0, None,
                               "JUPYTER_PORT=2222 and SSH_PORT=02222: JupyterLab and sshd cannot listen on the same "
                               "port; change one of them"),
    "one port, hub": ({**HUB, "SSH_PORT": "8888", "SSH_AUTHORIZED_KEYS": KEY}, (), 0, None,
                      "JUPYTERHUB_SERVICE_URL's port=8888 and SSH_PORT=8888: JupyterHub's single-user server and sshd "
                      "cannot listen on the same port; change one of them"),
    "port only root may use": ({"JUPYTER_PORT": "80"}, (), 0, FakeSystem(floor=1024),
                               "JUPYTER_PORT=80: JupyterLab runs as jovyan, never root, and here only root may listen "
                               "below port 1024 (net.ipv4.ip_unprivileged_port_start); use 1024 or above and publish "
                               "it as any port (-p 80:8888)"),
    "group name": ({"NB_GROUP": "Staff"}, (), 0, None,
                   "NB_GROUP='Staff' is not a valid group name (lower-case letters, digits, _ and -)"),
    "umask": ({"NB_UMASK": "0999"}, (), 0, None,
              "NB_UMASK='0999' is not a umask: octal, like 022 (the default) or 002 (the group may write)"),
    "sudo switch": ({"GRANT_SUDO": "please"}, (), 0, None,
                    "GRANT_SUDO='please' is not a switch: use 1/0, true/false, yes/no or on/off"),
    "chown home switch": ({"CHOWN_HOME": "y"}, (), 0, None,
                          "CHOWN_HOME='y' is not a switch: use 1/0, true/false, yes/no or on/off"),
    "chown option": ({"CHOWN_HOME": "yes", "CHOWN_HOME_OPTS": "-R -L"}, (), 0, None,
                     "CHOWN_HOME_OPTS: '-L' is not allowed; only -R (--recursive), -h, -c, -v and -f: other options "
                     "follow links out of the folder (-L, -H) or change what is changed (--from, --reference)"),
    "chown extra": ({"CHOWN_EXTRA": "data"}, (), 0, None, "CHOWN_EXTRA: 'data' is not an absolute path (e.g. /data)"),
    "root user": ({"NB_USER": "root"}, (), 0, None,
                  "NB_USER=root: JupyterLab and SSH logins never run as root; only NB_USER=root NB_UID=0 NB_GID=0 "
                  "together do (for rootless Docker or Podman, where root in the container is your own host account)"),
    "triplet without root": ({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, (), 1000, None,
                             "NB_USER=root NB_UID=0 NB_GID=0 runs JupyterLab as the container's root, but this "
                             "container runs as uid 1000: drop --user (under rootless Docker or Podman, root in the "
                             "container is your own host account)"),
    "triplet without jupyter": ({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0", "ENABLE_JUPYTER": "0",
                                 "SSH_AUTHORIZED_KEYS": KEY}, (), 0, None,
                                "ENABLE_JUPYTER=0 with NB_USER=root NB_UID=0 NB_GID=0, where SSH stays off: nothing to "
                                "run"),
    "a user of the image": ({"NB_USER": "daemon"}, (), 0, None,
                            "NB_USER=daemon is already a user of the image (uid 1); pick another name"),
    "apptainer as root": ({"APPTAINER_CONTAINER": "/x.sif"}, (), 0, None,
                          "Apptainer runs this image as the calling user, but this start runs as uid 0 (--fakeroot?): "
                          "drop --fakeroot, nothing here needs root"),
    "apptainer user site": ({"APPTAINER_CONTAINER": "/x.sif", "HOME": "/h", "ENABLE_USER_SITE": "maybe"}, (), 1000,
                            None, "ENABLE_USER_SITE='maybe' is not a switch: use 1/0, true/false, yes/no or on/off"),
    "apptainer without home": ({"APPTAINER_CONTAINER": "/x.sif", "HOME": "/"}, ("python",), 1000, None,
                               "HOME='/' is not a folder: Apptainer mounts your home there; run without --no-home, or "
                               "give one with --home DIR"),
    "apptainer home a file": ({"APPTAINER_CONTAINER": "/x.sif", "HOME": "/h"}, (), 1000,
                              FakeSystem(files_not_folders=("/h",)),
                              "HOME='/h' is not a folder: Apptainer mounts your home there; run without --no-home, or "
                              "give one with --home DIR"),
    "apptainer home read-only": ({"APPTAINER_CONTAINER": "/x.sif", "HOME": "/h"}, (), 1000,
                                 FakeSystem(read_only=("/h",)),
                                 "HOME=/h is not writable for uid 1000 (owner 0:0, mode 755): JupyterLab keeps your "
                                 "notebooks, its settings and the kernels' files there; give Apptainer a writable home "
                                 "(--home DIR)"),
    "apptainer login host": ({"APPTAINER_CONTAINER": "/x.sif", "HOME": "/h", "LOGIN_HOST": "-login"}, (), 1000, None,
                             "LOGIN_HOST is not a host name (letters, digits, dots and dashes, e.g. "
                             "login.cluster.example.org)"),
    "apptainer port taken": ({"APPTAINER_CONTAINER": "/x.sif", "HOME": "/h", "JUPYTER_PORT": "9000"}, (), 1000,
                             FakeSystem(taken=(9000,)),
                             "JUPYTER_PORT=9000 is in use on this node (another server?): choose another port, or "
                             "unset JUPYTER_PORT to take 8888 or the first free port after it"),
    "the dev user gone": ({"TFENV_IMAGE_USER": "ann", "NB_USER": "ann"}, (), 0, None,
                          "the dev user ann is not in /etc/passwd, nor an earlier NB_USER recorded in "
                          "/etc/tf29-env/dev-user: re-create the container (docker rm, then run)"),
    "group name taken": ({"NB_GID": "4321", "NB_GROUP": "staff"}, (), 0, None,
                         "NB_GROUP: the group name 'staff' is the image's group 50; NB_GID=4321 needs another name "
                         "(NB_GROUP=NAME)"),
    "users keeps its name": ({"NB_GROUP": "team"}, (), 0, None,
                             "NB_GROUP=team: NB_GID=100 is the image's group 'users', which owns the home folder and "
                             "the venv and keeps its name; NB_GROUP names a group of your own NB_GID"),
    "passwd read-only": ({"NB_UID": "4321"}, (), 0, FakeSystem(read_only=("/etc/passwd",)),
                         "NB_UID=4321/NB_GID=100 means rewriting /etc/passwd (jovyan is 1000/100 as built), but "
                         "/etc/passwd is not writable for uid 0 (owner 0:0, mode 755): use NB_UID/NB_GID as built, or "
                         "a "
                         "writable root file system"),
    "group read-only": ({"NB_GID": "4321"}, (), 0, FakeSystem(read_only=("/etc/group",)),
                        "NB_GID=4321 means rewriting /etc/group, but /etc/group is not writable for uid 0 (owner 0:0, "
                        "mode 755): use NB_GID as built (100), or a writable root file system"),
    "rename read-only": ({"NB_USER": "ann"}, (), 0, FakeSystem(read_only=("/etc/shadow",)),
                         "NB_USER=ann means renaming jovyan in /etc/passwd and /etc/shadow and a home folder "
                         "/home/ann, "
                         "but /etc/shadow is not writable for uid 0 (owner 0:0, mode 755): use NB_USER as built "
                         "(jovyan), or a writable root file system"),
    "new home under a read-only /home": ({"NB_USER": "ann"}, (), 0,
                                         FakeSystem(read_only=("/home",), missing=("/home/ann",)),
                                         "NB_USER=ann means renaming jovyan in /etc/passwd and /etc/shadow and a home "
                                         "folder /home/ann, but /home is not writable for uid 0 (owner 0:0, mode 755): "
                                         "use NB_USER as built (jovyan), or a writable root file system"),
    "triplet home": ({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, (), 0,
                     FakeSystem(read_only=("/home",), missing=("/home/root",)),
                     "NB_USER=root NB_UID=0 NB_GID=0 means a home folder /home/root, but /home is not writable for "
                     "uid 0 (owner 0:0, mode 755): a writable root file system, or a volume on /home/root"),
    "chown home read-only": ({"CHOWN_HOME": "yes"}, (), 0,
                             FakeSystem(files={"/proc/self/mountinfo": "1 0 0:1 / / ro - o o rw\n"}),
                             "CHOWN_HOME=yes, but /home/jovyan is on a read-only file system: drop CHOWN_HOME, or "
                             "mount a volume there"),
    "run dir read-only": ({}, (), 0, FakeSystem(files={"/proc/self/mountinfo": "1 0 0:1 / / ro - o o rw\n"},
                                                 read_only=("/run/tf29-env", "/run")),
                          "TFENV_RUN_DIR=/run/tf29-env is not a writable folder (read-only file system): mount a tmpfs "
                          "on it (--tmpfs /run/tf29-env)"),
    "run dir cannot be made": ({}, (), 0, FakeSystem(read_only=("/run",), missing=("/run/tf29-env",)),
                               "TFENV_RUN_DIR=/run/tf29-env does not exist and cannot be made: /run is not writable "
                               "for "
                               "uid 0 (owner 0:0, mode 755); mount a tmpfs on /run/tf29-env itself (--tmpfs "
                               "/run/tf29-env: it keeps the image's mode 1777)"),
    "sudoers read-only": ({"GRANT_SUDO": "1"}, (), 0, FakeSystem(read_only=("/etc/sudoers.d",)),
                          "GRANT_SUDO=1 means a rule in /etc/sudoers.d, but /etc/sudoers.d is not writable for uid 0 "
                          "(owner 0:0, mode 755): a writable root file system"),
    "sshd dir": ({"SSH_AUTHORIZED_KEYS": KEY}, (), 0, FakeSystem(read_only=("/run",), missing=("/run/tf29-env-sshd",)),
                 "SSH needs /run/tf29-env-sshd and /run/sshd, but /run is not writable for uid 0 (owner 0:0, mode "
                 "755): "
                 "mount a tmpfs on /run (--tmpfs /run), or ENABLE_SSH=0"),
    "lastlog": ({"SSH_AUTHORIZED_KEYS": KEY}, (), 0, FakeSystem(read_only=("/var/log",), missing=("/var/log/lastlog",)),
                "sshd keeps its login records in /var/log/lastlog, but /var/log is not writable for uid 0 (owner 0:0, "
                "mode 755): a writable root file system, or ENABLE_SSH=0"),
    "no capabilities": ({}, (), 0, FakeSystem(capabilities=0),
                        "missing capabilities: SETUID, SETGID (to run JupyterLab and the self-check as jovyan); KILL "
                        "(to "
                        "pass docker stop's signal on to jovyan's processes); CHOWN (to hand JupyterLab's runtime "
                        "directory to jovyan); FOWNER (to set the mode of JupyterLab's runtime directory, once it is "
                        "jovyan's); DAC_READ_SEARCH (for the healthcheck, run as root, to read JupyterLab's runtime "
                        "file "
                        "in jovyan's private runtime directory). Add them (--cap-add; docs/security.md lists the "
                        "minimal set), or start without root (--user 1000:100, no SSH)"),
    "no capabilities for a command": ({"NB_UID": "4321"}, ("id",), 0, FakeSystem(capabilities=0),
                                      "missing capabilities: SETUID, SETGID (to run the command as jovyan); KILL (to "
                                      "pass docker stop's signal on to jovyan's processes); CHOWN (for "
                                      "NB_UID=4321/NB_GID=100: jovyan's files follow the new ids). Add them "
                                      "(--cap-add; "
                                      "docs/security.md lists the minimal set), or start without root (--user "
                                      "4321:100, no SSH)"),
    "sshd's capabilities": ({"SSH_AUTHORIZED_KEYS": KEY}, (), 0,
                            FakeSystem(floor=1024, capabilities=((1 << 41) - 1) & ~(1 << 18 | 1 << 29 | 1 << 10)),
                            "missing capabilities: SYS_CHROOT (for sshd's privilege separation); AUDIT_WRITE (for "
                            "sshd's login records of terminal sessions); NET_BIND_SERVICE (for sshd to listen on "
                            "SSH_PORT=22, below 1024 (net.ipv4.ip_unprivileged_port_start; or use SSH_PORT=2222)). Add "
                            "them (--cap-add; docs/security.md lists the minimal set), or start without root (--user "
                            "1000:100, no SSH)"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refusal_is_its_one_line(case: str) -> None:
    env, args, euid, system, message = REFUSALS[case]
    assert refusal(env, args, euid, system) == message


@pytest.mark.parametrize(("name", "limit"), plan.SETTING_LIMITS)
def test_a_runaway_value_is_refused_without_quoting_it(name: str, limit: int) -> None:
    value = "/" + "a" * 69_999  # a path, so that only its length is wrong where a path is expected
    assert refusal({name: value}) == f"{name} is 70000 characters long; at most {limit}: check what was passed"


def test_the_first_bad_setting_is_the_one_named() -> None:
    """The order of the checks decides which of two bad settings is reported; a length comes first."""
    assert refusal({"NB_UID": "x", "JUPYTER_BASE_URL": "/" * 2000}).startswith("JUPYTER_BASE_URL is 2000 characters")
    assert refusal({"NB_UID": "x", "ENABLE_SSH": "maybe"}).startswith("NB_UID='x'")


def test_main_prints_the_refusal_as_one_line_and_exits_2(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan, "System", FakeSystem)
    for name, value in {**BASE, "NB_UID": "alice"}.items():
        monkeypatch.setenv(name, value)
    assert plan.main([]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "tf29-env: ERROR: NB_UID='alice' is not a numeric id (0-2147483647)\n")


@pytest.mark.parametrize("gid", ["100", "500", "4321", "1000"])
def test_the_gids_that_are_allowed(gid: str) -> None:
    """users (100), a gid the image has no group for (500: a host's own scheme) and any from 1000 up."""
    assert planned({"NB_GID": gid})[0]["cfg_triplet"] == "0"


SSH_OFF_NO_KEYS = "SSH is off: no SSH_AUTHORIZED_KEYS or SSH_AUTHORIZED_KEYS_FILE given (login is key-only)"


def warnings_in(messages: list[str]) -> list[str]:
    return [line.removeprefix("WARNING: ") for line in messages if line.startswith("WARNING: ")]


def test_the_default_plan() -> None:
    variables, exports, messages = planned({})
    assert variables == {
        "is_root": "1", "cfg_report_port": "0", "cfg_user_site": "0",
        "cfg_server_notes": [TOKEN_LINE + "http://127.0.0.1:8888/lab?token=" + "f" * 48], "cfg_tunnel": [],
        "cfg_sshd_args": [], "apptainer_mode": "0", "run_dir_per_run": "0",
        "IMAGE_RUN_DIR": "/run/tf29-env",
        "RUN_DIR": "/run/tf29-env", "SERVICES_FILE": "/run/tf29-env/services", "IMAGE_USER": "jovyan",
        "cfg_cert_file": "/run/tf29-env/jupyter/tf29-env-cert.pem",
        "cfg_key_file": "/run/tf29-env/jupyter/tf29-env-key.pem", "cfg_mode": "services",
        "cfg_command": [],
        "cfg_jupyter": "1", "cfg_self_check": "warn", "SSH_PORT": "22",
        "cfg_stop_grace": "8",
        "cfg_host_key_dir": "/etc/ssh/host-keys",
        "cfg_host_keys": ["/etc/ssh/host-keys/ssh_host_ed25519_key", "/etc/ssh/host-keys/ssh_host_rsa_key"],
        "cfg_sshd_dir": "/run/tf29-env-sshd", "cfg_sshd_keys_file": "/run/tf29-env-sshd/authorized_keys",
        "cfg_sshd_env_file": "/run/tf29-env-sshd/environment.conf", "cfg_unset_names": [],
        "cfg_gen_cert": "0", "cfg_cert_source": "", "cfg_key_source": "",
        "cfg_jupyter_port": "8888", "cfg_token": "f" * 48, "cfg_ssh_keys": "", "ssh_starts": "0",
        "cfg_triplet": "0", "cfg_user": "jovyan", "cfg_group": "", "cfg_umask": "", "cfg_grant_sudo": "0",
        "cfg_chown_home": "0",
        "cfg_chown_home_opts": [], "cfg_chown_extra_opts": [], "cfg_chown_extra": [], "user_from": "jovyan",
        "user_old_uid": "1000", "user_old_gid": "100", "user_rename": "0", "user_refit": "0", "user_new_group": "0",
        "user_group_rename": "0", "user_join_users": "0", "user_join_team": "0", "user_new_team_group": "0",
        "user_team_gid": "0", "user_team_group": "", "NB_HOME": "/home/jovyan", "home_folder": "/home/jovyan",
        "user_home": "/home/jovyan", "user_old_home": "/home/jovyan",
        "cfg_server_command": ["jupyter", "lab", "--ServerApp.ip=0.0.0.0", "--ServerApp.port=8888",
                               "--ServerApp.port_retries=0", "--ServerApp.open_browser=False",
                               "--ServerApp.root_dir=/home/jovyan", "--ServerApp.base_url=/",
                               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                               "--LabApp.news_url=None"],
        "home_mount_checks": [], "old_home_mounts": [], "home_prune": [], "home_copy": [],
        "home_is_mount": "0", "cfg_ids": "1000:100",
        "as_user": ["setpriv", "--reuid=1000", "--regid=100", "--init-groups", "env", "HOME=/home/jovyan",
                    "USER=jovyan", "LOGNAME=jovyan"],
        "cfg_server_folder": "/home/jovyan", "cfg_login_name": "jovyan", "cfg_nss_entry": "0",
        "cfg_notes": [SSH_OFF_NO_KEYS]}
    assert exports == {"JUPYTER_RUNTIME_DIR": "/run/tf29-env/jupyter", "TENSORBOARD_PROXY_URL": "/proxy/%PORT%/",
                       "STOP_GRACE_SECONDS": "8"}
    assert messages == [SSH_OFF_NO_KEYS]


# The run directory: (environment, euid, what is missing or not writable, RUN_DIR, JUPYTER_RUNTIME_DIR).
RUN_DIRS = {
    "root keeps the image's": ({}, 0, (), (), "/run/tf29-env", "/run/tf29-env/jupyter"),
    "root, even where it cannot write it (checked later)": ({}, 0, (), ("/run/tf29-env",), "/run/tf29-env",
                                                            "/run/tf29-env/jupyter"),
    "a uid that may write it": ({"NB_UID": "1000"}, 1000, (), (), "/run/tf29-env", "/run/tf29-env/jupyter"),
    "a uid that may make it": ({}, 1000, ("/run/tf29-env",), (), "/run/tf29-env", "/run/tf29-env/jupyter"),
    "--read-only --tmpfs /run --user": ({"TMPDIR": "/scratch/"}, 1000, ("/run/tf29-env",), ("/run",),
                                        "/scratch/tf29-env-1000-77", "/scratch/tf29-env-1000-77/jupyter"),
    "a run directory it may not write": ({"TMPDIR": "relative"}, 1000, (), ("/run/tf29-env",),
                                         "/tmp/tf29-env-1000-77", "/tmp/tf29-env-1000-77/jupyter"),
    "a runtime folder set by -e stays": ({"JUPYTER_RUNTIME_DIR": "/data/rt"}, 1000, (), ("/run/tf29-env",),
                                         "/tmp/tf29-env-1000-77", "/data/rt"),
    "Apptainer": ({"APPTAINER_CONTAINER": "/x.sif", "HOME": "/home/ann",
                   "JUPYTER_RUNTIME_DIR": "/run/tf29-env/jupyter"}, 1000, (), (), "/tmp/tf29-env-1000-77",
                  "/tmp/tf29-env-1000-77/jupyter"),
}


@pytest.mark.parametrize("case", RUN_DIRS)
def test_the_run_directory(case: str) -> None:
    env, euid, missing, read_only, run_dir, runtime_dir = RUN_DIRS[case]
    made = plan.make_plan({**BASE, **env}, ("true",), euid, FakeSystem(missing=missing, read_only=read_only), pid=77)
    variables, exports = plan.shell_variables(made), dict(made.exports)
    per_run = run_dir != BASE["TFENV_RUN_DIR"]
    assert (variables["RUN_DIR"], variables["run_dir_per_run"], variables["SERVICES_FILE"]) == (
        run_dir, "1" if per_run else "0", f"{run_dir}/services")
    assert exports.get("TFENV_RUN_DIR") == (run_dir if per_run else None)
    assert exports["JUPYTER_RUNTIME_DIR"] == runtime_dir
    assert variables["cfg_cert_file"] == f"{runtime_dir}/tf29-env-cert.pem"


@pytest.mark.parametrize(("args", "env", "mode", "server_args", "command"), [
    ((), {}, "services", [], []),
    ((), {"JUPYTERHUB_API_TOKEN": "t" * 32, "JUPYTERHUB_SERVICE_URL": "http://x:8888/"}, "hub", [], []),
    (("jupyterhub-singleuser", "--debug"), HUB, "hub", ["--debug"], []),
    (("/usr/local/bin/start-singleuser.py",), HUB, "hub", [], []),
    (("start-notebook.sh", "--x"), {}, "services", ["--x"], []),
    (("start-notebook.py", "--x"), HUB, "hub", ["--x"], []),
    (("start.sh", "id", "-u"), {}, "command", [], ["id", "-u"]),
    (("bash", "-c", "true"), {}, "command", [], ["bash", "-c", "true"]),
])
def test_the_mode(args: tuple[str, ...], env: dict[str, str], mode: str, server_args: list[str],
                  command: list[str]) -> None:
    made = plan_of(env, args)
    assert (made.mode.name, list(made.server_args), list(made.mode.command)) == (mode, server_args, command)


def test_notebook_args_come_before_the_commands_own() -> None:
    made = plan_of({"NOTEBOOK_ARGS": "--a='b c' --d"}, ("start-notebook.sh", "--e"))
    assert made.server_args == ("--a=b c", "--d", "--e")
    assert planned({"NOTEBOOK_ARGS": "--a"}, ("start.sh", "ls"))[0]["cfg_command"] == ["ls"]


def test_the_hub_plan() -> None:
    variables, exports, _ = planned({**HUB, "JUPYTERHUB_SERVICE_URL": "https://[::]/user/ann/"})
    assert variables["cfg_jupyter_port"] == "443"
    assert plan_of({**HUB, "JUPYTERHUB_SERVICE_URL": "https://[::]/user/ann/"}).login.base_url == "/user/ann/"
    assert variables["cfg_token"] == ""
    assert exports == {"JUPYTER_RUNTIME_DIR": "/run/tf29-env/jupyter",
                       "TENSORBOARD_PROXY_URL": "/user/ann/proxy/%PORT%/", "STOP_GRACE_SECONDS": "8"}
    assert planned({**HUB, "JUPYTERHUB_SERVICE_URL": "http://x/"})[0]["cfg_jupyter_port"] == "80"


APPTAINER = {"APPTAINER_CONTAINER": "/i.sif", "HOME": "/home/ann"}


def test_apptainer_hub_on_port_0_reports_its_port() -> None:
    made = plan_of({**HUB, **APPTAINER, "JUPYTERHUB_SERVICE_URL": "http://x:0/user/ann/"}, euid=1000,
                   system=FakeSystem(taken=(8888,)))
    variables, exports = plan.shell_variables(made), dict(made.exports)
    assert (variables["cfg_jupyter_port"], variables["cfg_report_port"], made.apptainer.port_retries) == \
        ("8889", "1", 0)
    assert exports["JUPYTERHUB_SERVICE_URL"] == "http://x:8889/user/ann/"


def test_apptainer_takes_the_first_free_port_and_keeps_the_host_python_out() -> None:
    variables, _, messages = planned({**APPTAINER, "PYTHONPATH": "/sw/lib"}, euid=1000,
                                     system=FakeSystem(taken=(8888, 8889)))
    assert (variables["cfg_jupyter_port"], variables["cfg_user_site"]) == ("8890", "0")
    assert "--ServerApp.port_retries=50" in variables["cfg_server_command"]
    assert warnings_in(messages) == ["PYTHONPATH from the host is not passed on: its packages would come before the "
                                     "image's pinned ones (ENABLE_USER_SITE=1 keeps it)"]
    variables, _, messages = planned({**APPTAINER, "PYTHONPATH": "/sw/lib", "ENABLE_USER_SITE": "yes",
                                      "JUPYTER_PORT": "9000"}, euid=1000)
    assert (variables["cfg_jupyter_port"], variables["cfg_user_site"]) == ("9000", "1")
    assert "--ServerApp.port_retries=0" in variables["cfg_server_command"]
    assert messages[0].startswith("ENABLE_USER_SITE=1: the host's PYTHONPATH and ~/.local")
    assert not warnings_in(messages)
    # A command needs no port and may run with a read-only home.
    made = plan_of(APPTAINER, ("python",), euid=1000, system=FakeSystem(read_only=("/home/ann",)))
    assert (made.mode.name, made.apptainer.port) == ("command", None)


@pytest.mark.parametrize(("if_inet6", "ip", "family"), [
    (None, "0.0.0.0", "inet"),  # noqa: S104 - the value, not a bind
    ("", "0.0.0.0", "inet"),  # noqa: S104
    ("00000000000000000000000000000001 01 80 10 80       lo\n", "", "any"),
    ("fe80000000000000004216fffe0a0b0c 02 40 20 80     eth0\n", "0.0.0.0", "inet"),  # noqa: S104
])
def test_jupyter_and_sshd_listen_on_ipv6_when_the_container_has_it(if_inet6: str | None, ip: str, family: str) -> None:
    files = {} if if_inet6 is None else {"/proc/net/if_inet6": if_inet6}
    made = plan_of({}, system=FakeSystem(files=files))
    assert (made.listening.ip, made.listening.sshd_family) == (ip, family)
    assert f"--ServerApp.ip={ip}" in plan.shell_variables(made)["cfg_server_command"]


def test_auth_settings() -> None:
    login = plan_of({"JUPYTER_TOKEN_FILE": "/t", "JUPYTER_ALLOWED_HOSTS": "A.example,\nb.example  c"},
                    system=FakeSystem(files={"/t": "x" * 20 + "\n\n"})).login
    assert (login.token, login.token_generated) == ("x" * 20, False)
    assert login.allowed_hosts == ("a.example", "b.example", "c")
    made = plan_of({"JUPYTER_INSECURE_NO_AUTH": "yes", "JUPYTER_ALLOWED_HOSTS": "localhost"})
    assert (made.login.token, made.settings.no_auth) == ("", True)
    password = "argon2:$argon2id$v=19$m=10240,t=10,p=8$abc$def"
    assert planned({"JUPYTER_PASSWORD_HASH": password})[0]["cfg_token"] == ""
    assert "TENSORBOARD_PROXY_URL" not in planned({"TENSORBOARD_PROXY_URL": "/tb/"})[1]


def test_ssh_starts_only_as_root_with_a_key() -> None:
    assert planned({"SSH_AUTHORIZED_KEYS": KEY})[0]["ssh_starts"] == "1"
    assert planned({"SSH_AUTHORIZED_KEYS": KEY}, euid=1000)[0]["ssh_starts"] == "0"
    assert planned({"SSH_AUTHORIZED_KEYS": KEY, "ENABLE_SSH": "off"})[0]["ssh_starts"] == "0"
    keys = planned({"SSH_AUTHORIZED_KEYS_FILE": "/k"}, system=FakeSystem(files={"/k": KEY + "\n"}))[0]
    assert keys["cfg_ssh_keys"] == KEY


def test_sshd_is_planned_for_the_fitted_user_on_its_port_with_the_images_config() -> None:
    ipv6 = FakeSystem(files={"/proc/net/if_inet6": "00000000000000000000000000000001 01 80 10 80 lo\n"})
    variables = planned({"SSH_AUTHORIZED_KEYS": KEY, "NB_USER": "ann", "SSH_PORT": "2222"}, system=ipv6)[0]
    keys = ["/etc/ssh/host-keys/ssh_host_ed25519_key", "/etc/ssh/host-keys/ssh_host_rsa_key"]
    assert variables["cfg_host_keys"] == keys
    assert variables["cfg_sshd_args"] == ["-D", "-e", "-f", str(SSHD_CONFIG), "-p", "2222", "-o", "AllowUsers=ann",
                                          "-o", "AddressFamily=any", "-h", keys[0], "-h", keys[1]]
    elsewhere = planned({"SSH_AUTHORIZED_KEYS": KEY, "SSH_HOST_KEY_DIR": "/keys"})[0]
    assert elsewhere["cfg_host_keys"] == ["/keys/ssh_host_ed25519_key", "/keys/ssh_host_rsa_key"]
    assert SSHD_CONFIG.parts[-2:] == ("ssh", "sshd_config")
    assert planned({"SSH_AUTHORIZED_KEYS": KEY}, ("python",))[0]["cfg_sshd_args"] == []


def test_the_root_triplet() -> None:
    variables = planned({"NB_USER": "root", "NB_UID": "0", "NB_GID": "00", "SSH_AUTHORIZED_KEYS": KEY},
                        ("start-notebook.sh", "--x"))[0]
    assert (variables["cfg_triplet"], variables["ssh_starts"]) == ("1", "0")
    assert variables["cfg_server_command"][-2:] == ["--ServerApp.allow_root=True", "--x"]
    own = planned({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, ("start-notebook.sh", "--allow-root"))[0]
    assert own["cfg_server_command"][-1] == "--allow-root"
    assert "--ServerApp.allow_root=True" not in own["cfg_server_command"]


def test_docker_stacks_user_settings() -> None:
    variables, _, messages = planned(
        {"NB_GROUP": "team", "NB_GID": "4321", "NB_UMASK": "002", "GRANT_SUDO": "yes", "CHOWN_HOME": "1",
         "CHOWN_HOME_OPTS": "-R -h"})
    assert (variables["cfg_group"], variables["cfg_umask"], variables["cfg_grant_sudo"]) == ("team", "002", "1")
    assert (variables["cfg_chown_home"], variables["cfg_chown_home_opts"]) == ("1", ["-R", "-h"])
    assert [line[:40] for line in warnings_in(messages)] == ["GRANT_SUDO=yes: jovyan may run anything "]


def test_settings_that_need_root_are_named_as_ignored() -> None:
    warnings = warnings_in(planned({"GRANT_SUDO": "yes", "CHOWN_HOME": "on", "CHOWN_EXTRA_OPTS": "-R"}, euid=1234)[2])
    assert warnings == [
        "GRANT_SUDO=yes is ignored: it needs a container started as root, and this one runs as uid 1234",
        "CHOWN_HOME=on is ignored: it needs a container started as root, and this one runs as uid 1234",
        "CHOWN_EXTRA_OPTS is set but CHOWN_EXTRA is not: nothing is chowned"]
    assert warnings_in(planned({"CHOWN_HOME_OPTS": "-R"})[2]) == [
        "CHOWN_HOME_OPTS is set but CHOWN_HOME is not: nothing is chowned (set CHOWN_HOME=yes)"]


def test_a_renamed_dev_user_keeps_its_new_name() -> None:
    """A restarted container whose jovyan an earlier start renamed: the name is its own, not another user's."""
    class Renamed(FakeSystem):
        def user_uid(self, name: str) -> int | None:
            return {"daemon": 1, "ann": 1000}.get(name)

    system = Renamed(files={plan.RENAMED_USER_FILE: "ann\n"})
    assert planned({"NB_USER": "ann"}, system=system)[0]["cfg_triplet"] == "0"


def test_the_plan_reads_back_in_bash_as_the_same_values() -> None:
    """What eval makes of render's text: every value exactly, quotes, newlines and $ included."""
    variables: dict[str, plan.Value] = {"one": "a 'b' \"c\" $d `e`\nf", "empty": "", "list": ["x y", "", "$(z)", "'"]}
    script = plan.render(variables, {"EXPORTED": "/p/%PORT%/"}) + \
        'printf "%s\\0" "$one" "$empty" "${#list[@]}" "${list[@]}"; printenv EXPORTED'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split("\0") == ["a 'b' \"c\" $d `e`\nf", "", "4", "x y", "", "$(z)", "'", "/p/%PORT%/\n"]


ENTRYPOINT = Path(__file__).resolve().parents[4] / "image"


def entrypoint_reads(name: str) -> bool:
    """NAME is used in entrypoint.sh or entrypoint.d/, beyond its declaration (comments left out)."""
    for path in [ENTRYPOINT / "entrypoint.sh", *sorted((ENTRYPOINT / "entrypoint.d").glob("*.sh"))]:
        for line in path.read_text().splitlines():
            code = line.split(" #", 1)[0]
            if code.lstrip().startswith(("#", "declare ", "readonly ")):
                continue
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", code):
                return True
    return False


def test_the_plan_emits_only_names_the_entrypoint_reads() -> None:
    """Every name the eval brings into bash has a reader: plans that, together, emit every name."""
    names: set[str] = set()
    for env, args, euid in [({}, (), 0), ({"SSH_AUTHORIZED_KEYS": KEY}, (), 0), (HUB, (), 0), ({}, ("id",), 1000),
                            (APPTAINER, (), 1000)]:
        names |= set(planned(env, args, euid)[0])
    unread = sorted(name for name in names if not entrypoint_reads(name))
    assert not unread, f"the plan emits {', '.join(unread)}, which no entrypoint file reads: drop them from the plan"


def test_the_shell_gets_the_plan_and_its_notes() -> None:
    variables, _, messages = planned({"NB_UMASK": "002"})
    assert variables["cfg_notes"] == messages == [
        "umask 002 (NB_UMASK) for JupyterLab and the command (not SSH sessions)", SSH_OFF_NO_KEYS]


def test_the_mount_table_is_read_once_for_the_entrypoint() -> None:
    """Points unescaped (\\040 is a space), with their options, in mountinfo's order: the later is on top."""
    made = plan_of({}, system=FakeSystem(files={"/proc/self/mountinfo": MOUNTINFO}))
    assert made.mounts.table == (("/", "ro,relatime"), ("/proc", "rw,nosuid"), ("/tmp", "rw,nosuid"),
                                 ("/home/jovyan/my work", "rw,relatime"), ("/home/jovyan/my work", "ro,relatime"))


@pytest.mark.parametrize(("path", "read_only"), [("/etc/passwd", True), ("/tmp/x", False), ("/tmp", False),
                                                 ("/tmpx", True), ("/home/jovyan/my work/a", True), ("/", True)])
def test_on_a_read_only_file_system(path: str, read_only: bool) -> None:
    """The mount on top whose point is the longest prefix decides."""
    mounts = Mounts.read(FakeSystem(files={"/proc/self/mountinfo": MOUNTINFO}))
    assert mounts.read_only(path) is read_only


# /proc/self/mountinfo of `docker run -v h:/home/jovyan -v w:/home/jovyan/work -v d:/home/jovyan/data:ro`,
# with the work folder mounted twice (the later, read-only, is on top).
HOME_MOUNTINFO = """\
1 0 0:1 / / rw - overlay overlay rw
2 1 8:1 /h /home/jovyan rw,relatime - ext4 /dev/sda1 rw
3 2 8:1 /w /home/jovyan/work rw,relatime - ext4 /dev/sda1 rw
4 2 8:1 /d /home/jovyan/data ro,relatime - ext4 /dev/sda1 rw
5 3 8:1 /w /home/jovyan/work ro,relatime - ext4 /dev/sda1 rw
6 1 8:1 /x /home/jovyanx rw,relatime - ext4 /dev/sda1 rw
"""


def test_the_home_folders_mounts() -> None:
    """What fit_user and check_mounts ask of the mount table, answered once by the planner."""
    system = FakeSystem(files={"/proc/self/mountinfo": HOME_MOUNTINFO},
                        folders={"/home/jovyan": ["work", "data", "notes.txt"]})
    variables = planned({}, system=system)[0]
    assert plan_of({}, system=system).home.mounts == ("/home/jovyan", "/home/jovyan/work", "/home/jovyan/data")
    assert variables["home_mount_checks"] == ["/home/jovyan", "0"]  # the others are read-only on top
    assert variables["home_is_mount"] == "1"
    assert variables["home_prune"] == ["-path", "/home/jovyan/work", "-prune", "-o",
                                       "-path", "/home/jovyan/data", "-prune", "-o"]
    renamed = planned({"NB_USER": "ann"}, system=system)[0]
    assert renamed["old_home_mounts"] == ["/home/jovyan/work", "/home/jovyan/data"]
    assert (renamed["home_is_mount"], renamed["home_prune"]) == ("0", [])
    assert plan_of({"NB_USER": "ann"}, system=system).home.mounts == ()
    triplet = planned({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, system=system)[0]
    assert triplet["old_home_mounts"] == ["/home/jovyan/work", "/home/jovyan/data"]


def test_an_empty_folder_docker_made_is_one_to_hand_over() -> None:
    """-v h:/home/jovyan -v w:/home/jovyan/work: Docker makes work in h, which then holds nothing else."""
    mountinfo = ("1 0 0:1 / / rw - o o rw\n2 1 8:1 /h /home/jovyan rw - e s rw\n"
                 "3 2 8:1 /w /home/jovyan/work rw - e s rw\n")
    system = FakeSystem(files={"/proc/self/mountinfo": mountinfo}, folders={"/home/jovyan": ["work"]},
                        files_not_folders=("/home/jovyan/work",))
    assert planned({}, system=system)[0]["home_mount_checks"] == ["/home/jovyan", "1"]  # a mounted file is not checked
    assert planned({}, euid=1000, system=system)[0]["home_mount_checks"] == []  # fit_user_without_root says so


def test_what_make_home_copies() -> None:
    """The old home's entries, but those the new home has and those that hold a mount (which stay)."""
    mountinfo = "1 0 0:1 / / rw - o o rw\n2 1 8:1 /w /home/jovyan/work rw - e s rw\n"
    folders = {"/home/jovyan": ["quickstart", "work", ".bashrc", ".cache"], "/home/ann": [".bashrc"],
               "/home/root": [".cache"]}
    system = FakeSystem(files={"/proc/self/mountinfo": mountinfo}, folders=folders)
    assert planned({"NB_USER": "ann"}, system=system)[0]["home_copy"] == [".cache", "quickstart"]
    triplet = planned({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, system=system)[0]
    assert triplet["home_copy"] == [".bashrc", "quickstart"]
    assert planned({}, system=system)[0]["home_copy"] == []  # no rename: nothing to copy
    mounted = FakeSystem(files={"/proc/self/mountinfo": mountinfo + "3 1 8:1 /a /home/ann rw - e s rw\n"},
                         folders=folders)
    assert planned({"NB_USER": "ann"}, system=mounted)[0]["home_copy"] == []  # nothing is copied into a mount


# Who the commands run as: (environment, euid, read-only paths, as_user).
AS_USER = {
    "as built": ({}, 0, (), ["setpriv", "--reuid=1000", "--regid=100", "--init-groups", "env", "HOME=/home/jovyan",
                             "USER=jovyan", "LOGNAME=jovyan"]),
    "new ids, leading zeros": ({"NB_USER": "ann", "NB_UID": "04321", "NB_GID": "0100"}, 0, (),
                               ["setpriv", "--reuid=4321", "--regid=100", "--init-groups", "env", "HOME=/home/ann",
                                "USER=ann", "LOGNAME=ann"]),
    "root triplet": ({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, 0, (),
                     ["env", "HOME=/home/root", "USER=root", "LOGNAME=root"]),
    "without root: as it is": ({}, 1000, (), []),
}


@pytest.mark.parametrize("case", AS_USER)
def test_who_the_commands_run_as(case: str) -> None:
    env, euid, read_only, as_user = AS_USER[case]
    assert planned(env, euid=euid, system=FakeSystem(read_only=read_only))[0]["as_user"] == as_user


def test_read_access_needs_no_dac_read_search_with_dac_override() -> None:
    """DAC_OVERRIDE allows all that DAC_READ_SEARCH does."""
    assert planned({}, system=FakeSystem(capabilities=((1 << 41) - 1) & ~(1 << 2)))[0]["cfg_mode"] == "services"


def test_the_user_plan_as_root() -> None:
    """What fit_user will change: nothing as built; a rename, new ids, a new group."""
    variables = planned({})[0]
    assert [variables[name] for name in ("user_from", "user_rename", "user_refit", "user_new_group",
                                         "user_group_rename", "user_join_users")] == ["jovyan", "0", "0", "0", "0", "0"]
    variables = planned({"NB_USER": "ann", "NB_UID": "4321", "NB_GID": "4321"})[0]
    assert [variables[name] for name in ("user_from", "user_old_uid", "user_old_gid", "user_rename", "user_refit",
                                         "user_new_group", "user_join_users")] == \
        ["jovyan", "1000", "100", "1", "1", "1", "1"]
    assert planned({"NB_UID": "4321"}, euid=4321)[0]["user_refit"] == "0"  # without root nothing is planned


# The dev user's home: (environment, euid, what is read-only or not writable, folders that are missing,
# NB_HOME, home_folder, user_home, user_old_home). Without root the scratch home is the euid's; as root NB_UID's.
HOMES = {
    "as built": ({}, 0, (), (), "/home/jovyan", "/home/jovyan", "/home/jovyan", "/home/jovyan"),
    "renamed by NB_USER": ({"NB_USER": "ann"}, 0, (), (), "/home/ann", "/home/ann", "/home/ann", "/home/jovyan"),
    "root triplet": ({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, 0, (), (), "/home/root", "/home/root",
                     "/home/root", ""),
    "without root": ({}, 1000, (), (), "/home/jovyan", "/home/jovyan", "/home/jovyan", ""),
    "without root, NB_USER's folder": ({"NB_USER": "ann"}, 1000, (), (), "/home/ann", "/home/ann", "/home/ann", ""),
    "without root, no NB_USER folder": ({"NB_USER": "ann"}, 1000, (), ("/home/ann",), "/home/jovyan", "/home/jovyan",
                                        "/home/jovyan", ""),
    "without root, another uid's folder": ({}, 4321, ("/home/jovyan",), (), "/tmp/tf29-env-home-4321", "/home/jovyan",
                                           "/tmp/tf29-env-home-4321", ""),
    "Apptainer": (APPTAINER, 1000, (), (), "/home/ann", "/home/ann", "/home/ann", ""),
}


@pytest.mark.parametrize("case", HOMES)
def test_the_home_folder(case: str) -> None:
    env, euid, not_writable, not_folders, home, folder, user_home, old = HOMES[case]
    variables = planned(env, euid=euid, system=FakeSystem(read_only=not_writable, files_not_folders=not_folders))[0]
    assert [variables[name] for name in ("NB_HOME", "home_folder", "user_home", "user_old_home")] == \
        [home, folder, user_home, old]


def test_a_home_on_a_read_only_root_stays_and_home_moves_to_scratch() -> None:
    """--read-only: NB_HOME stays JupyterLab's root; make_scratch_home moves HOME there instead."""
    system = FakeSystem(files={"/proc/self/mountinfo": "1 0 0:1 / / ro - o o rw\n2 1 0:2 / /tmp rw - o o rw\n"},
                        read_only=("/home/jovyan",))
    variables = planned({}, euid=1000, system=system)[0]
    assert (variables["NB_HOME"], variables["user_home"]) == ("/home/jovyan", "/tmp/tf29-env-home-1000")
    as_root = planned({"NB_UID": "4321"}, system=system)[0]
    assert (as_root["NB_HOME"], as_root["user_home"]) == ("/home/jovyan", "/tmp/tf29-env-home-4321")
    assert as_root["as_user"][5] == "HOME=/tmp/tf29-env-home-4321"


LAB = ["jupyter", "lab", "--ServerApp.ip=0.0.0.0", "--ServerApp.port=8888", "--ServerApp.port_retries=0",
       "--ServerApp.open_browser=False", "--ServerApp.root_dir=/home/jovyan", "--ServerApp.base_url=/"]
NO_NEWS = ["--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None"]
# The server's command line: (environment, args, the command, the folder it starts in).
SERVERS = {
    "chosen token: in the environment, not argv": ({"JUPYTER_TOKEN": "x" * 16}, (), [*LAB, *NO_NEWS],
                                                   "/home/jovyan"),
    "password only": ({"JUPYTER_PASSWORD_HASH": "sha1:ab"}, (), [
        *LAB, "--IdentityProvider.token=", "--PasswordIdentityProvider.hashed_password=sha1:ab", *NO_NEWS],
        "/home/jovyan"),
    "no auth, allowed hosts": ({"JUPYTER_INSECURE_NO_AUTH": "1", "JUPYTER_ALLOWED_HOSTS": "a.example, b"}, (), [
        *LAB, "--IdentityProvider.token=", "--PasswordIdentityProvider.hashed_password=",
        "--ServerApp.allow_remote_access=False", "--ServerApp.local_hostnames=localhost",
        "--ServerApp.local_hostnames=a.example", "--ServerApp.local_hostnames=b", *NO_NEWS], "/home/jovyan"),
    "GEN_CERT": ({"GEN_CERT": "1", "JUPYTER_TOKEN": "x" * 16}, (), [
        *LAB, "--ServerApp.certfile=/run/tf29-env/jupyter/tf29-env-cert.pem",
        "--ServerApp.keyfile=/run/tf29-env/jupyter/tf29-env-key.pem", *NO_NEWS], "/home/jovyan"),
    "an extra arg replaces the image's option": (
        {"JUPYTER_TOKEN": "x" * 16}, ("start-notebook.sh", "--ServerApp.root_dir=/data", "--LabApp.news_url=x"),
        [*LAB[:6], LAB[7], NO_NEWS[0], "--ServerApp.root_dir=/data", "--LabApp.news_url=x"], "/data"),
    "--notebook-dir keeps the image's option and names the folder": (
        {"JUPYTER_TOKEN": "x" * 16}, ("start-notebook.sh", "--notebook-dir=/data"),
        [*LAB, *NO_NEWS, "--notebook-dir=/data"], "/data"),
    "hub": (HUB, (), ["jupyterhub-singleuser", "--ServerApp.root_dir=/home/jovyan", *NO_NEWS], "/home/jovyan"),
    "hub with its root folder": ({**HUB, "JUPYTERHUB_ROOT_DIR": "/srv/ann"}, ("jupyterhub-singleuser", "--debug"),
                                 ["jupyterhub-singleuser", *NO_NEWS, "--debug"], "/srv/ann"),
    # Checked every half timeout, at most every 5 minutes; idle kernels go even with a tab open, busy ones never.
    "idle kernels, a minute": ({"JUPYTER_TOKEN": "x" * 16, "KERNEL_IDLE_TIMEOUT": "60"}, (), [
        *LAB, *NO_NEWS, "--MappingKernelManager.cull_idle_timeout=60", "--MappingKernelManager.cull_interval=30",
        "--MappingKernelManager.cull_connected=True", "--MappingKernelManager.cull_busy=False"], "/home/jovyan"),
    "idle kernels, a day, in the hub mode": ({**HUB, "KERNEL_IDLE_TIMEOUT": "86400"}, (), [
        "jupyterhub-singleuser", "--ServerApp.root_dir=/home/jovyan", *NO_NEWS,
        "--MappingKernelManager.cull_idle_timeout=86400", "--MappingKernelManager.cull_interval=300",
        "--MappingKernelManager.cull_connected=True", "--MappingKernelManager.cull_busy=False"], "/home/jovyan"),
    "idle kernels, one second": ({"JUPYTER_TOKEN": "x" * 16, "KERNEL_IDLE_TIMEOUT": "1"}, (), [
        *LAB, *NO_NEWS, "--MappingKernelManager.cull_idle_timeout=1", "--MappingKernelManager.cull_interval=1",
        "--MappingKernelManager.cull_connected=True", "--MappingKernelManager.cull_busy=False"], "/home/jovyan"),
    "idle kernels off": ({"JUPYTER_TOKEN": "x" * 16, "KERNEL_IDLE_TIMEOUT": "0"}, (), [*LAB, *NO_NEWS],
                         "/home/jovyan"),
}


@pytest.mark.parametrize(("env", "grace", "foreground"), [
    ({}, "8", None), ({"STOP_GRACE_SECONDS": "0120"}, "120", None), ({"STOP_GRACE_SECONDS": "3600"}, "3600", None)])
def test_the_stop_grace_is_planned_and_exported(env: dict[str, str], grace: str, foreground: str | None) -> None:
    variables, exports, _ = planned(env)
    assert variables["cfg_stop_grace"] == exports["STOP_GRACE_SECONDS"] == grace
    assert exports.get("JOB_FOREGROUND") == foreground


def test_a_command_runs_its_jobs_in_the_foreground() -> None:
    """`docker run IMAGE job run ...`: nothing would outlive the command, so `job run` waits for its run."""
    assert planned({}, ("job", "run", "x.ipynb"))[1]["JOB_FOREGROUND"] == "1"


@pytest.mark.parametrize("case", SERVERS)
def test_the_server_command(case: str) -> None:
    env, args, command, folder = SERVERS[case]
    variables = planned(env, args)[0]
    assert (variables["cfg_server_command"], variables["cfg_server_folder"]) == (command, folder)


def test_the_teams_certificate_is_copied_for_jupyter_which_speaks_https() -> None:
    variables = planned(TLS, system=FakeSystem(files=TLS_FILES))[0]
    assert (variables["cfg_cert_source"], variables["cfg_key_source"]) == ("/run/secrets/c", "/run/secrets/k")
    assert variables["cfg_server_command"] == [
        *LAB, "--ServerApp.certfile=/run/tf29-env/jupyter/tf29-env-cert.pem",
        "--ServerApp.keyfile=/run/tf29-env/jupyter/tf29-env-key.pem", *NO_NEWS]
    assert variables["cfg_server_notes"] == [TOKEN_LINE + "https://127.0.0.1:8888/lab?token=" + "f" * 48]


@pytest.mark.parametrize(("env", "args", "exported"), [
    ({}, (), None), ({"GPU_MEMORY_LIMIT_MB": ""}, (), None), ({"GPU_MEMORY_LIMIT_MB": "04096"}, (), "4096"),
    ({"GPU_MEMORY_LIMIT_MB": "512"}, ("job", "run", "x.py"), "512"),
    ({**HUB, "GPU_MEMORY_LIMIT_MB": "8192"}, ("jupyterhub-singleuser",), "8192")])
def test_the_gpu_budget_is_exported_as_checked(env: dict[str, str], args: tuple[str, ...],
                                               exported: str | None) -> None:
    """The import hook (tf29image/gpubudget.py) reads it in every process the start leads to, SSH's too."""
    assert planned(env, args)[1].get("GPU_MEMORY_LIMIT_MB") == exported


def test_no_server_is_planned_for_a_command_or_without_jupyter() -> None:
    assert "cfg_server_command" not in planned({}, ("start.sh", "id"))[0]
    assert "cfg_server_command" not in planned({"ENABLE_JUPYTER": "0", "SSH_AUTHORIZED_KEYS": KEY})[0]


# Keys as ssh-keygen (run for real) reads them: (SSH_AUTHORIZED_KEYS, the refusal after "tf29-env: ERROR: ").
BAD_KEYS = {
    "a line that is no key": (f"{KEY}\nnot a key",
                              "SSH_AUTHORIZED_KEYS: line 2 is not an SSH public key (expected e.g. 'ssh-ed25519 "
                              "AAAA... you@host')"),
    "a broken key": ("ssh-ed25519 not-base64",
                     "SSH_AUTHORIZED_KEYS: line 1 is not an SSH public key (expected e.g. 'ssh-ed25519 "
                     "AAAA... you@host')"),
    "only comments": ("# team keys\n\n  # ann", "SSH_AUTHORIZED_KEYS: no SSH public key in it, only comments and blank "
                      "lines"),
}


@pytest.mark.parametrize("case", BAD_KEYS)
def test_bad_authorized_keys(case: str) -> None:
    keys, message = BAD_KEYS[case]
    assert refusal({"SSH_AUTHORIZED_KEYS": keys}) == message


def test_keys_are_counted_and_lose_their_crs() -> None:
    variables = planned({"SSH_AUTHORIZED_KEYS": f"# team\r\n{KEY}\r\n\r\n{KEY}\r\n"})[0]
    assert (variables["cfg_ssh_keys"], variables["cfg_ssh_key_count"]) == (f"# team\n{KEY}\n\n{KEY}\n", "2")
    # Not checked where no sshd starts: without root, or for a command.
    assert planned({"SSH_AUTHORIZED_KEYS": "x"}, euid=1000)[0]["cfg_ssh_keys"] == "x"
    assert planned({"SSH_AUTHORIZED_KEYS": "x"}, ("start.sh", "id"))[0]["cfg_ssh_keys"] == "x"


def test_chown_extra_on_a_read_only_mount(tmp_path: Path) -> None:
    mountinfo = f"1 0 0:1 / / rw - o o rw\n2 1 0:2 / {tmp_path} ro - o o rw\n"
    assert refusal({"CHOWN_EXTRA": str(tmp_path)}, system=FakeSystem(files={"/proc/self/mountinfo": mountinfo})) == \
        f"CHOWN_EXTRA: {tmp_path} is on a read-only file system (a :ro mount?): drop it from CHOWN_EXTRA"


TRIPLET = {"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}
SSH_NEEDS_ROOT = ("WARNING: SSH is off: sshd needs root and this container runs as uid 1000 (drop --user, or set "
                  "ENABLE_SSH=0)")
# What a start says once the plan holds: (environment, command, euid, what the system has, the lines).
def mount_table(point: str) -> str:
    """/proc/self/mountinfo with a bind mount at POINT."""
    return f"1 0 0:1 / / rw,relatime - overlay overlay rw\n4 1 8:1 /data {point} rw,relatime - ext4 /dev/sda1 rw\n"


MESSAGES: dict[str, tuple[dict[str, str], tuple[str, ...], int, FakeSystem, list[str]]] = {
    "root, no key": ({}, (), 0, FakeSystem(), [SSH_OFF_NO_KEYS]),
    "root with a key": ({"SSH_AUTHORIZED_KEYS": KEY}, (), 0, FakeSystem(), []),
    "a uid with a key": ({"SSH_AUTHORIZED_KEYS": KEY}, (), 1000, FakeSystem(), [SSH_NEEDS_ROOT]),
    "SSH switched off": ({"ENABLE_SSH": "0"}, (), 0, FakeSystem(), []),
    "a command": ({}, ("python",), 0, FakeSystem(), []),
    "the root triplet": (TRIPLET, (), 0, FakeSystem(), [
        "WARNING: NB_USER=root NB_UID=0 NB_GID=0: JupyterLab runs as the container's root, with HOME /home/root (meant "
        "for rootless Docker or Podman, where that root is your host account); SSH stays off, as it never logs in as "
        "root"]),
    "the root triplet's command": (TRIPLET, ("python",), 0, FakeSystem(), [
        "WARNING: NB_USER=root NB_UID=0 NB_GID=0: the command runs as the container's root, with HOME /home/root "
        "(meant for rootless Docker or Podman, where that root is your host account); SSH stays off, as it never logs "
        "in as root"]),
    "a uid that cannot write the home": ({}, (), 4321, FakeSystem(read_only=("/home/jovyan",)), [
        "WARNING: uid 4321 cannot write /home/jovyan (use --user 4321:100, the 'users' group); HOME is "
        "/tmp/tf29-env-home-4321", SSH_OFF_NO_KEYS]),
    "Apptainer": (APPTAINER, (), 1000, FakeSystem(), [
        "Apptainer: running as jovyan (uid 1000) with the host's home and network; no sshd (it needs root): reach "
        "JupyterLab through the login node with ssh -L (the line below)"]),
    "Apptainer, a command": (APPTAINER, ("python",), 1000, FakeSystem(), []),
    "GRANT_SUDO": ({"GRANT_SUDO": "yes", "NB_USER": "ann", "SSH_AUTHORIZED_KEYS": KEY}, (), 0, FakeSystem(), [
        "WARNING: GRANT_SUDO=yes: ann may run anything as root with sudo, without a password, and so may everything "
        "run in JupyterLab and SSH sessions: only for users you would give the container's root"]),
    "GRANT_SUDO for the root triplet grants nothing": ({**TRIPLET, "GRANT_SUDO": "1"}, ("python",), 0, FakeSystem(), [
        "WARNING: NB_USER=root NB_UID=0 NB_GID=0: the command runs as the container's root, with HOME /home/root "
        "(meant for rootless Docker or Podman, where that root is your host account); SSH stays off, as it never logs "
        "in as root"]),
    "NB_UMASK": ({"NB_UMASK": "002"}, ("python",), 0, FakeSystem(), [
        "umask 002 (NB_UMASK) for JupyterLab and the command (not SSH sessions)"]),
    "SELF_CHECK=off": ({"SELF_CHECK": "off", "ENABLE_SSH": "0"}, (), 0, FakeSystem(self_check=(0, "off")), [
        "self-check is off (SELF_CHECK=off); run 'selfcheck' in the container at any time"]),
    "NB_USER with a mount in the old home": ({"NB_USER": "ann", "ENABLE_SSH": "0"}, ("python",), 0, FakeSystem(files={
        "/proc/self/mountinfo": mount_table("/home/jovyan/work")}), [
        "WARNING: /home/jovyan/work is mounted in /home/jovyan, but the home folder is now /home/ann (NB_USER), where "
        "JupyterLab opens: mount it there instead (-v ...:/home/ann/work)"]),
    "NB_USER with a mount on the new home": ({"NB_USER": "ann"}, ("python",), 0, FakeSystem(files={
        "/proc/self/mountinfo": mount_table("/home/ann")}), [
        "/home/ann is a mount: the image's files in /home/jovyan are not copied into it"]),
    "the root triplet with a mount on its home": (TRIPLET, ("python",), 0, FakeSystem(files={
        "/proc/self/mountinfo": mount_table("/home/root")}), [
        "WARNING: NB_USER=root NB_UID=0 NB_GID=0: the command runs as the container's root, with HOME /home/root "
        "(meant for rootless Docker or Podman, where that root is your host account); SSH stays off, as it never logs "
        "in as root", "/home/root is a mount: the image's files in /home/jovyan are not copied into it"]),
    "a mount on the home with no rename copies nothing, says nothing": ({}, ("python",), 0, FakeSystem(files={
        "/proc/self/mountinfo": mount_table("/home/jovyan")}), []),
}


@pytest.mark.parametrize("case", list(MESSAGES))
def test_what_a_start_says(case: str) -> None:
    env, args, euid, system, lines = MESSAGES[case]
    assert planned(env, args, euid=euid, system=system)[2] == lines


TOKEN_LINE = "JupyterLab token (generated; set JUPYTER_TOKEN or JUPYTER_TOKEN_FILE to choose one): "
# What start_jupyter says as the server starts: (environment, euid, cfg_server_notes).
SERVER_NOTES: dict[str, tuple[dict[str, str], int, list[str]]] = {
    "a generated token": ({}, 0, [TOKEN_LINE + "http://127.0.0.1:8888/lab?token=" + "f" * 48]),
    "GEN_CERT, a base URL, the server app": (
        {"GEN_CERT": "1", "JUPYTER_BASE_URL": "/j", "DOCKER_STACKS_JUPYTER_CMD": "server", "JUPYTER_PORT": "9000"}, 0,
        [TOKEN_LINE + "https://127.0.0.1:9000/j/?token=" + "f" * 48]),
    "a chosen token is not shown": ({"JUPYTER_TOKEN": "c" * 16}, 0, []),
    "a password hash alone": ({"JUPYTER_PASSWORD_HASH": "argon2:$argon2id$v=19$m=10240,t=10,p=8$abc$def"}, 0, []),
    "no auth": ({"JUPYTER_INSECURE_NO_AUTH": "1", "JUPYTER_ALLOWED_HOSTS": "a.example b.example"}, 0, [
        "WARNING: JUPYTER_INSECURE_NO_AUTH=1: JupyterLab accepts anyone who reaches port 8888 as a.example b.example, "
        "localhost or a loopback address, with no token or password"]),
    "the hub mode": ({**HUB, "JUPYTERHUB_USER": "ann"}, 0, [
        "hub mode: JupyterHub's single-user server for ann on port 8888 under /user/ann/; the hub's login is the only "
        "one (JUPYTER_PORT and JUPYTER_BASE_URL do not apply)"]),
    "Apptainer: the ssh -L line instead": (APPTAINER, 1000, []),
    "SSH alone": ({"ENABLE_JUPYTER": "0", "SSH_AUTHORIZED_KEYS": KEY}, 0, []),
}


@pytest.mark.parametrize("case", list(SERVER_NOTES))
def test_what_the_server_start_says(case: str) -> None:
    env, euid, lines = SERVER_NOTES[case]
    assert planned(env, euid=euid)[0]["cfg_server_notes"] == lines


@pytest.mark.parametrize(("env", "tunnel"), [
    ({}, ["node7", "", "jovyan", "1"]),
    ({"SLURMD_NODENAME": "gpu3", "SLURM_SUBMIT_HOST": "login2", "JUPYTER_TOKEN": "c" * 16},
     ["gpu3", "login2", "jovyan", "0"]),
    ({"SLURM_SUBMIT_HOST": "login2", "LOGIN_HOST": "login.example.org"}, ["node7", "login.example.org", "jovyan", "1"]),
])
def test_the_tunnel_line_under_apptainer_names_the_node_and_login_host(env: dict[str, str], tunnel: list[str]) -> None:
    assert planned({**APPTAINER, **env}, euid=1000)[0]["cfg_tunnel"] == tunnel
    assert planned({**APPTAINER, **env}, ("python",), euid=1000)[0]["cfg_tunnel"] == []
    assert planned(env)[0]["cfg_tunnel"] == []


# USER and LOGNAME without root: (environment, euid, cfg_login_name, cfg_nss_entry).
LOGINS: dict[str, tuple[dict[str, str], int, str, str]] = {
    "root: NB_USER, fitted in /etc/passwd": ({"NB_USER": "ann"}, 0, "ann", "0"),
    "the image's uid, as jovyan": ({}, 1000, "jovyan", "0"),
    "the image's uid, as NB_USER": ({"NB_USER": "ann"}, 1000, "ann", "1"),
    "a uid passwd lacks": ({}, 4321, "jovyan", "1"),
    "a system user's uid keeps its name": ({"NB_USER": "ann"}, 1, "daemon", "0"),
    "Apptainer keeps the host's name for the uid": ({**APPTAINER, "NB_USER": "ann"}, 1000, "jovyan", "0"),
    "Apptainer, a uid passwd lacks": ({**APPTAINER, "NB_USER": "ann"}, 2001, "ann", "1"),
}


@pytest.mark.parametrize("case", list(LOGINS))
def test_the_login_name_without_root(case: str) -> None:
    env, euid, name, nss = LOGINS[case]
    variables = planned(env, euid=euid)[0]
    assert (variables["cfg_login_name"], variables["cfg_nss_entry"]) == (name, nss)


def test_the_hub_secrets_are_named_for_take_hub_secrets() -> None:
    variables = planned({**HUB, "JUPYTERHUB_CLIENT_ID": "c", "JUPYTERHUB_OAUTH_SCOPES": "s", "JUPYTERHUB_USER": "ann",
                         "JPY_API_TOKEN": "t"})[0]
    assert variables["cfg_hub_secret_names"] == ["JPY_API_TOKEN", "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_CLIENT_ID",
                                                 "JUPYTERHUB_OAUTH_SCOPES"]


def test_keys_on_a_base_without_ssh_keygen_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert plan.System().check_public_keys(KEY) == (127, "ssh-keygen is not installed (openssh-client)")
    assert refusal({"SSH_AUTHORIZED_KEYS": KEY}, system=NoKeygen()) == \
        "SSH_AUTHORIZED_KEYS: ssh-keygen could not check the keys: ssh-keygen is not installed (openssh-client)"


class NoKeygen(FakeSystem):
    def check_public_keys(self, keys: str) -> tuple[int, str]:
        return 127, "ssh-keygen is not installed (openssh-client)"


# The entrypoint's shell: what it reads of the plan, and what it must never read raw.
SHELL_FILES = [Path(plan.__file__).parents[3] / "entrypoint.sh",
               *sorted((Path(plan.__file__).parents[3] / "entrypoint.d").glob("*.sh"))]


def shell_code() -> str:
    """The entrypoint's code without its comments and `declare` lines (which name, not read)."""
    lines = [line.split(" #", 1)[0] for path in SHELL_FILES for line in path.read_text().splitlines()]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("#", "declare ")))


def test_the_shell_reads_every_name_the_plan_renders_and_no_raw_user_setting() -> None:
    """The seam is as narrow as the shell's use: each rendered name is read by a step, and the dev user's
    name and ids come from the plan (cfg_user, cfg_ids), never from NB_USER, NB_UID or NB_GID again."""
    rendered: set[str] = set()
    for env in ({}, {**HUB, "SSH_AUTHORIZED_KEYS": KEY}, {"SSH_AUTHORIZED_KEYS": KEY}):
        rendered |= set(planned(env)[0])
    assert {"cfg_hub_secret_names", "cfg_ssh_key_count", "cfg_server_command", "cfg_user"} <= rendered
    code = shell_code()
    unread = sorted(name for name in rendered if not re.search(rf"(\$\{{!?#?|\$|\(\(!?|\b){name}\b(?!=)", code))
    assert unread == [], f"rendered but never read by the entrypoint: {unread}"
    raw = sorted(set(re.findall(r"\$\{?(NB_USER|NB_UID|NB_GID|NB_GROUP)\b", code)))
    assert raw == [], f"the entrypoint reads raw settings the plan has checked: {raw}"
