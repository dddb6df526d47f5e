"""The license summary of an image, read from its SBOM (CycloneDX JSON, tf29env/supplychain/sbom.py): the Python
stack counted by license, the packages whose license is unknown or copyleft named one by one, and
the NVIDIA libraries with their terms and where the image keeps them. Written as licenses.json (for
machines) and licenses.md (for people) next to the SBOM."""

import re
from pathlib import Path
from typing import Any

from tf29env.core.records import LICENSE_FILES, write_json
from tf29env.supplychain.sbom import PROP_LICENSE_FILE

UNKNOWN = "unknown"
# Licenses that ask something of whoever redistributes the package or its changes (strong and weak
# copyleft alike: a platform team wants to see both by name).
COPYLEFT_RE = re.compile(r"\b(A?GPL|LGPL|GNU|MPL|Mozilla Public|EPL|Eclipse Public|CDDL|EUPL|OSL|CeCILL|copyleft)",
                         re.IGNORECASE)


def license_label(component: dict[str, Any]) -> str:
    """One component's licenses as one string: SPDX ids and expressions as such, names as written,
    several joined with ' AND ' (all of them apply); UNKNOWN when the component declares none."""
    parts = []
    for entry in component.get("licenses", []):
        if "expression" in entry:
            parts.append(str(entry["expression"]))
        else:
            lic = entry.get("license", {})
            parts.append(str(lic.get("id") or lic.get("name") or ""))
    parts = sorted({part for part in parts if part})
    return " AND ".join(parts) if parts else UNKNOWN


def summary(document: dict[str, Any]) -> dict[str, Any]:
    components = document.get("components", [])
    python = [c for c in components if str(c.get("purl", "")).startswith("pkg:pypi/")]
    nvidia = [c for c in components if c.get("group") == "nvidia"]
    by_license: dict[str, list[str]] = {}
    for component in python:
        by_license.setdefault(license_label(component), []).append(f"{component['name']}=={component['version']}")
    root = document.get("metadata", {}).get("component", {})
    return {
        "image": f"{root.get('name', '')}:{root.get('version', '')}",
        "python_packages": len(python),
        "counts": {label: len(names) for label, names in sorted(by_license.items(), key=lambda i: (-len(i[1]), i[0]))},
        "unknown": sorted(by_license.get(UNKNOWN, [])),
        "copyleft": {label: sorted(names) for label, names in sorted(by_license.items())
                     if label != UNKNOWN and COPYLEFT_RE.search(label)},
        "nvidia": [{"library": c["name"], "version": c.get("version", ""), "license": license_label(c),
                    "license_file": next((p["value"] for p in c.get("properties", [])
                                          if p["name"] == PROP_LICENSE_FILE), "")} for c in nvidia],
    }


def to_markdown(data: dict[str, Any]) -> str:
    lines = [f"# Licenses: {data['image']}", "",
             f"## Python stack ({data['python_packages']} packages in the venv)", "",
             "| license | packages |", "|---|---|",
             *[f"| {label} | {count} |" for label, count in data["counts"].items()],
             "", "### Unknown license", "", *([f"- {name}" for name in data["unknown"]] or ["- none"]),
             "", "### Copyleft (strong or weak)", "",
             *([f"- {name}: {label}" for label, names in data["copyleft"].items() for name in names] or ["- none"]),
             "", "## NVIDIA libraries", ""]
    if data["nvidia"]:
        lines += ["| library | version | license | terms in the image |", "|---|---|---|---|",
                  *[f"| {n['library']} | {n['version']} | {n['license']} | {n['license_file'] or '-'} |"
                    for n in data["nvidia"]]]
    else:
        lines.append("- none (cpu variant)")
    return "\n".join(lines) + "\n"


def write(directory: Path, document: dict[str, Any]) -> list[Path]:
    data = summary(document)
    paths = [directory / name for name in LICENSE_FILES]
    write_json(paths[0], data)
    paths[1].write_text(to_markdown(data))
    return paths
