"""The values' facts are tied to the team setups' own (compose/limits.py: the stop grace, the engine's
margin beyond it, the idle kernels' timeout), imported by name as `python3 compose/limits.py` runs."""

import sys
from pathlib import Path

COMPOSE = Path(__file__).resolve().parents[2] / "compose"
if str(COMPOSE) not in sys.path:
    sys.path.insert(0, str(COMPOSE))
