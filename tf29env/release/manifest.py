"""The build manifest, one per image, as JSON (for machines) and Markdown (for people): tags, size,
base and its digest, labels, the facts, pip freeze, the dpkg list and a CPU self-check run."""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from docker import DockerClient

from tf29env.core import engine, labels
from tf29env.core.records import MANIFEST_FILES

SELFCHECK = ["/usr/local/bin/selfcheck"]
SELFCHECK_LINES = 40


@dataclass(frozen=True)
class Manifest:
    image: str
    image_id: str
    variant: str
    refs: list[str]
    size_bytes: int
    base: str
    base_digest: str
    labels: dict[str, str]
    facts: dict[str, Any]
    build_inputs: dict[str, str]
    pip_freeze: list[str]
    dpkg: list[dict[str, Any]]
    selfcheck_exit: int
    selfcheck_output: list[str] = field(default_factory=list)
    # The CAs the image trusts beyond its distro's (--trust-ca-cert), as its label records them;
    # build-only CAs (--ca-cert) are not in the image, so not here either.
    trusted_ca_certs: list[str] = field(default_factory=list)

    @property
    def selfcheck_summary(self) -> str:
        """The self-check's own tally line (`N PASS, N WARN, N FAIL ...`), else its last line."""
        tallies = [line for line in self.selfcheck_output if " PASS, " in line and " FAIL" in line]
        return (tallies or self.selfcheck_output or ["(no output)"])[-1]


def collect(client: DockerClient, *, image: str, refs: list[str], facts: dict[str, Any], inventory: dict[str, Any],
            build_inputs: dict[str, str]) -> Manifest:
    """The manifest of a built image, from its facts and inventory (tf29env.core.facts) and a self-check run."""
    attrs = engine.inspect(client, image)
    config_labels = labels.of_image(attrs)
    status, output = engine.run_command(client, image, SELFCHECK)
    manifest = Manifest(
        image=image, image_id=str(attrs["Id"]), variant=config_labels.get(labels.VARIANT, ""),
        refs=refs, size_bytes=int(attrs["Size"]),
        base=config_labels.get(labels.BASE, ""),
        base_digest=config_labels.get(labels.BASE_DIGEST, ""),
        labels=config_labels, facts=facts, build_inputs=build_inputs,
        pip_freeze=list(inventory["pip_freeze"]),
        dpkg=[{"name": p["name"], "version": p["version"]} for p in inventory["dpkg"]],
        selfcheck_exit=status, selfcheck_output=output.strip().splitlines()[-SELFCHECK_LINES:],
        trusted_ca_certs=[fp for fp in config_labels.get(labels.CA_TRUSTED, "").split(",") if fp],
    )
    return manifest


def to_json(manifest: Manifest) -> str:
    return json.dumps({**asdict(manifest), "selfcheck_summary": manifest.selfcheck_summary}, indent=2,
                      sort_keys=True) + "\n"


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    return f"{size} B"


def to_markdown(manifest: Manifest) -> str:
    facts = manifest.facts
    lines = [
        f"# Build manifest: {manifest.image}", "",
        f"- Image ID: `{manifest.image_id}`",
        f"- Variant: {manifest.variant}",
        f"- Size: {human_size(manifest.size_bytes)} ({manifest.size_bytes} bytes)",
        f"- Base: `{manifest.base}` (`{manifest.base_digest}`)",
        f"- TensorFlow {facts.get('tensorflow')}, Python {facts.get('python')}, {facts.get('os_name')}",
        f"- TensorFlow built for CUDA {facts.get('tf_cuda') or '-'} / cuDNN {facts.get('tf_cudnn') or '-'}; "
        f"runtime CUDA {facts.get('cuda_runtime') or '-'} (from {facts.get('cuda_runtime_source') or '-'}), "
        f"cuDNN {facts.get('cudnn_runtime') or '-'}",
        "", "## Tags", "", *[f"- `{ref}`" for ref in manifest.refs],
        "", "## Labels", "", "| label | value |", "|---|---|",
        *[f"| `{name}` | `{value}` |" for name, value in sorted(manifest.labels.items())],
        "", "## Build inputs", "",
        *([f"- {name}: `{value}`" for name, value in sorted(manifest.build_inputs.items())] or ["- (defaults)"]),
        "", "## Extra CA certificates the image trusts", "",
        *([f"- `{fp}`" for fp in manifest.trusted_ca_certs] or ["- none"]),
        "", f"## Self-check (CPU run, exit {manifest.selfcheck_exit})", "", manifest.selfcheck_summary, "", "```",
        *manifest.selfcheck_output, "```",
        "", f"## pip freeze ({len(manifest.pip_freeze)} packages)", "", "```", *manifest.pip_freeze, "```",
        "", f"## dpkg ({len(manifest.dpkg)} packages)", "", "| package | version |", "|---|---|",
        *[f"| {p['name']} | {p['version']} |" for p in manifest.dpkg],
    ]
    return "\n".join(lines) + "\n"


def write(directory: Path, manifest: Manifest) -> list[Path]:
    paths = [directory / name for name in MANIFEST_FILES]
    paths[0].write_text(to_json(manifest))
    paths[1].write_text(to_markdown(manifest))
    return paths
