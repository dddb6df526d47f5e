"""Test helpers: containers that clean up after themselves, waiting, free ports, SSH clients."""
