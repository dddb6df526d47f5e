"""Releasing a built image: tags, manifest, the size gate, verify, push, export."""
