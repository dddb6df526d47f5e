"""A box with no internet, for the install kit (docs/kit.md): the environment install.sh and make run in
there (DOCKER_HOST on a second engine, every registry and proxy on a port that is bound and never
listens, none of this machine's pip configuration), and install.sh run into a new folder. Used by
tests/kit and bench/kit.py."""

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

from testkit.gpuengine import GpuEngine
from tf29env.release import kit

# The kit's install: docker load of the 4.6 GB archive (about a minute on 2 cores), two venvs, npm ci.
INSTALL_TIMEOUT = 900
# The names under which a box's settings send pip, npm or anything else to a registry or a proxy.
REGISTRY_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "npm_config_registry", "http_proxy", "https_proxy",
                      "HTTP_PROXY", "HTTPS_PROXY")
LEFT_OUT_PREFIXES = ("PIP_", "npm_config_", "NPM_CONFIG_", "COMPOSE_", "TF29ENV_", "HUB_")
LOOPBACK_ONLY = "127.0.0.1,localhost"


@contextlib.contextmanager
def offline(engine: GpuEngine) -> Iterator[dict[str, str]]:
    """The box's environment while the context lasts (its dead port stays bound, never listening); loopback
    is left out of the proxies, as a box's proxy settings leave it alone."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{held.getsockname()[1]}"
        env = {key: value for key, value in engine.environ().items()
               if not key.startswith(LEFT_OUT_PREFIXES)
               and key.lower() not in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")}
        env.update({name: dead for name in REGISTRY_VARIABLES})
        env.update({"PIP_CONFIG_FILE": os.devnull, "no_proxy": LOOPBACK_ONLY, "NO_PROXY": LOOPBACK_ONLY})
        yield env


def install(kit_dir: Path, target: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """KIT_DIR's install.sh into TARGET (a new folder), run from TARGET's parent."""
    return subprocess.run(["bash", str(kit_dir / kit.INSTALL), str(target)], cwd=target.parent, env=env,
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
