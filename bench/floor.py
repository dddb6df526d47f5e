"""The floor: what an image must ship to be a TensorFlow 2.9 notebook environment (TensorFlow's
shared objects and Python files, JupyterLab, numpy, pandas, matplotlib, everything they require,
and Python itself) against what its layers add; the gap, grouped by what pulled each part in.

Read from the image (tf29env.core.facts.inventory, the build's own probe: on-disk bytes per pip
distribution, dpkg's packages) and its base (dpkg's database), so that our image and the official
recipe are judged the same way.
The requirement graph is pip's and dpkg's own metadata: a part is in the floor when a root
requires it, directly or not, and a gap group is named after the installed package that nothing
else requires (a "leaf": what someone chose to install) whose requirements pulled it in."""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from docker import DockerClient
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bench.errors import BenchError
from tf29env.core import engine
from tf29env.core.facts import dist_bytes, inventory

PIP_ROOTS = ("tensorflow", "jupyterlab", "numpy", "pandas", "matplotlib")
TF_NAMES = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu")
APT_ROOTS = ("python3",)
TOP_GROUPS = 12
# What no package owns: files outside packages, bytes a later layer replaced or deleted (still in
# the lower layer), and the rounding of dpkg's Installed-Size estimates.
REST = ("the rest (files outside packages: apt's lists and .debs; bytes later layers replaced or deleted; "
        "dpkg's size estimates)")
OUR_PYTHON = "/opt/venv/bin/python"  # the venv that holds every pip package (the Dockerfile's VIRTUAL_ENV)
KIB = 1024
DPKG_STATUS = "/var/lib/dpkg/status"


def parse_dpkg_status(text: str) -> dict[str, dict[str, Any]]:
    """A base's installed packages, from its dpkg status file (a base may have no Python to run the
    inventory probe): name -> {"bytes": Installed-Size, "depends": [names]} (alternatives: all of
    them, versions and architectures dropped; `Pre-Depends` included), as the probe reports them."""
    packages: dict[str, dict[str, Any]] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if "Package" not in fields or not fields.get("Status", "").endswith(" installed"):
            continue
        depends: list[str] = []
        for field in ("Pre-Depends", "Depends"):
            for alternative in re.split(r"[,|]", fields.get(field, "")):
                name = alternative.strip().split(" ")[0].split(":")[0]
                if name:
                    depends.append(name)
        packages[fields["Package"]] = {"bytes": int(fields.get("Installed-Size", "0") or 0) * KIB,
                                       "depends": depends}
    return packages


def marker_environment(python_version: str, python_full_version: str) -> dict[str, str]:
    """The image's interpreter as PEP 508 markers see it (Linux x86_64 CPython: what both images are)."""
    return {"python_version": python_version, "python_full_version": python_full_version, "os_name": "posix",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "platform_python_implementation": "CPython", "implementation_name": "cpython", "extra": ""}


def pip_graph(dists: Iterable[Mapping[str, Any]], environment: dict[str, str]) -> dict[str, list[str]]:
    """name -> the names it requires in this environment (extras and other platforms' needs dropped)."""
    graph: dict[str, list[str]] = {}
    for dist in dists:
        needs: list[str] = []
        for text in dist["requires"]:
            try:
                requirement = Requirement(text)
            except InvalidRequirement:
                continue
            if requirement.marker is None or requirement.marker.evaluate(environment):
                needs.append(str(canonicalize_name(requirement.name)))
        graph[str(canonicalize_name(dist["name"]))] = needs
    return graph


def closure(graph: Mapping[str, Iterable[str]], roots: Iterable[str], within: set[str]) -> set[str]:
    """Every node of `within` reachable from the roots (present ones) along the graph's edges."""
    seen: set[str] = set()
    todo = [root for root in roots if root in within]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(need for need in graph.get(node, ()) if need in within and need not in seen)
    return seen


@dataclass(frozen=True)
class Group:
    leaf: str  # what was chosen ("pip: jupyterhub"), or "shared" for parts several leaves need
    bytes: int
    parts: int


def groups(graph: Mapping[str, Iterable[str]], sizes: Mapping[str, int], nodes: set[str], floor: set[str],
           label: str) -> list[Group]:
    """The non-floor nodes, grouped by the leaf (a node nothing else in `nodes` requires) that
    reaches them; a node that several leaves reach is counted once, as shared."""
    rest = nodes - floor
    required = {need for node in nodes for need in graph.get(node, ()) if need != node}
    leaves = sorted(node for node in rest if node not in required)
    owners: dict[str, list[str]] = {}
    for leaf in leaves:
        for node in closure(graph, [leaf], rest):
            owners.setdefault(node, []).append(leaf)
    # Parts of a dependency cycle that no leaf reaches still count, under their own name.
    for node in rest - set(owners):
        owners[node] = [node]
    totals: dict[str, list[int]] = {}
    for node, who in owners.items():
        key = f"{label}: {who[0]}" if len(who) == 1 else f"{label}: shared by {len(who)} of the above"
        entry = totals.setdefault(key, [0, 0])
        entry[0] += sizes.get(node, 0)
        entry[1] += 1
    return sorted((Group(key, size, count) for key, (size, count) in totals.items()),
                  key=lambda group: group.bytes, reverse=True)


def tf_root(names: Iterable[str]) -> str:
    present = set(names)
    return next((name for name in TF_NAMES if name in present), "tensorflow")


def analyse(probe: Mapping[str, Any], base_dpkg: Mapping[str, Mapping[str, Any]], added_bytes: int,
            own_files_bytes: int = 0) -> dict[str, Any]:
    """The floor, the gap and its groups, from the probe's document and the base's dpkg database."""
    dists = list(probe["python"])
    environment = marker_environment(probe["python_version"], probe["python_full_version"])
    graph = pip_graph(dists, environment)
    by_name = {str(canonicalize_name(dist["name"])): dist for dist in dists}
    roots = [tf_root(by_name), *PIP_ROOTS[1:]]
    floor_pip = closure(graph, roots, set(by_name))
    dpkg = {str(package["name"]): package for package in probe["dpkg"]}
    added_apt = {name for name in dpkg if name not in base_dpkg}
    apt_graph = {name: list(dpkg[name]["depends"]) for name in added_apt}
    floor_apt = closure(apt_graph, APT_ROOTS, added_apt)
    floor_parts = {
        "Python itself (apt: python3 and what it needs, not in the base)":
            sum(int(dpkg[name]["bytes"]) for name in floor_apt),
        "pip packages the roots require (code and data; no bytecode, no C++ headers)":
            sum(int(by_name[name]["bytes"]) for name in floor_pip),
    }
    pip_sizes = {name: dist_bytes(d) for name, d in by_name.items()}
    apt_sizes = {name: int(dpkg[name]["bytes"]) for name in added_apt}
    found = [
        Group("bytecode (.pyc) of the floor's packages", sum(int(by_name[n]["pyc_bytes"]) for n in floor_pip),
              len(floor_pip)),
        Group("C++ headers of the floor's packages (TensorFlow's, for custom ops)",
              sum(int(by_name[n]["header_bytes"]) for n in floor_pip), 1),
        *groups(graph, pip_sizes, set(by_name), floor_pip, "pip"),
        *groups(apt_graph, apt_sizes, added_apt, floor_apt, "apt"),
    ]
    if own_files_bytes:
        found.append(Group("the project's own files", own_files_bytes, 1))
    floor_bytes = sum(floor_parts.values())
    gap = added_bytes - floor_bytes
    found = sorted((group for group in found if group.bytes), key=lambda group: group.bytes, reverse=True)
    shown, hidden = found[:TOP_GROUPS], found[TOP_GROUPS:]
    rows = [{"what": group.leaf, "bytes": group.bytes, "parts": group.parts} for group in shown]
    if hidden:
        rows.append({"what": f"{len(hidden)} smaller groups", "bytes": sum(g.bytes for g in hidden),
                     "parts": sum(g.parts for g in hidden)})
    rows.append({"what": REST,
                 "bytes": gap - sum(group.bytes for group in found), "parts": 0})
    return {"roots": roots, "roots_missing": [root for root in roots if root not in by_name],
            "floor_bytes": floor_bytes, "floor_parts": floor_parts, "floor_pip_packages": len(floor_pip),
            "added_bytes": added_bytes, "gap_bytes": gap, "gap": rows}


def base_packages(client: DockerClient, base: str) -> dict[str, dict[str, Any]]:
    """The base's dpkg database (a base may have no Python; `cat` it is)."""
    status, output = engine.run_command(client, base, ["cat", DPKG_STATUS])
    if status != 0:
        raise BenchError(f"{base}: cannot read {DPKG_STATUS} (exit {status})")
    return parse_dpkg_status(output)


def measure(client: DockerClient, image: str, python: str, base: str, added_bytes: int,
            own_files_bytes: int = 0) -> dict[str, Any]:
    result = analyse(inventory(client, image, python=python), base_packages(client, base), added_bytes,
                     own_files_bytes)
    return {"image": image, **result}
