#!/usr/bin/env python3
"""Build, test and publish the tf29-env image. `python build.py --help` lists the commands."""

import sys

from tf29env.cli import main

if __name__ == "__main__":
    sys.exit(main())
