"""The team hub: JupyterHub + DockerSpawner on one GPU box, run on the host (docs/hub.md).

settings reads and checks every HUB_* variable; ctl starts and stops the proxy and the hub;
jupyterhub_config.py and spawner.py are what the hub process loads; culler_config.py is the idle
culler's. Only settings and ctl's pure parts import without the hub's venv (hub/.venv).
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# compose/memlock.py (the engine's locked-memory limit) is a script, not a package: its folder
# goes on the path so that the hub imports it rather than keeping a second copy of its logic.
COMPOSE_DIR = REPO / "compose"
if str(COMPOSE_DIR) not in sys.path:
    sys.path.append(str(COMPOSE_DIR))
