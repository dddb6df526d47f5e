"""`python -m selfcheck`: see selfcheck.cli."""

import sys

from selfcheck.cli import main

if __name__ == "__main__":
    sys.exit(main())
