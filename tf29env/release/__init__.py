"""Releasing a built image: tags, labels, manifest, build records, the size gate, verify, push, export."""
