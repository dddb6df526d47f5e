"""The image's CycloneDX SBOM: made with cyclonedx-python-lib from what a throwaway container of the
built image reports (image/python/tf29image/probes/inventory.py), validated against CycloneDX's own schema.

Components: the image itself (the root, with its tags and OCI labels: revision, base and its
digest), every Python distribution in the venv (pkg:pypi), every dpkg package (pkg:deb, with the
distro), and the NVIDIA CUDA / cuDNN libraries TensorFlow loads (pkg:generic/nvidia, with their
SHA-256). Bom-refs are the purls, never random, so that two SBOMs of the same image differ only in
their timestamp and serial number (testkit/sbom.py's normalized).
"""

import datetime
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cyclonedx.contrib.license.factories import LicenseFactory
from cyclonedx.contrib.this.builders import this_component
from cyclonedx.model import HashAlgorithm, HashType, Property
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.contact import OrganizationalEntity
from cyclonedx.model.license import DisjunctiveLicense, License, LicenseAcknowledgement
from cyclonedx.output.json import JsonV1Dot6
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from packageurl import PackageURL
from packaging.utils import canonicalize_name

from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.labels import OCI_PREFIX

SCHEMA = SchemaVersion.V1_6
# Where the image keeps its SBOM, and beside it the license files of what it holds (the final layer,
# tf29env/finallayer.py, puts them there).
DOC_DIR = "/usr/share/doc/tf29-env"
SBOM_PATH = f"{DOC_DIR}/sbom.cdx.json"
NVIDIA = OrganizationalEntity(name="NVIDIA Corporation")
# Property names this project adds (CycloneDX asks for a namespace prefix).
PROP_TAG = "tf29-env:tag"
PROP_PATH = "tf29-env:path"
PROP_FROM = "tf29-env:installed-from"
PROP_LICENSE_FILE = "tf29-env:license-file"

# Trove classifiers that name one SPDX license; the others keep their own words as a license name
# ("BSD License" does not say which BSD).
CLASSIFIER_SPDX = {
    "MIT License": "MIT",
    "Apache Software License": "Apache-2.0",
    "ISC License (ISCL)": "ISC",
    "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "Python Software Foundation License": "PSF-2.0",
    "The Unlicense (Unlicense)": "Unlicense",
    "zlib/libpng License": "Zlib",
    "Historical Permission Notice and Disclaimer (HPND)": "HPND",
    "GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
    "GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
}


@dataclass(frozen=True)
class NvidiaSource:
    """Where an NVIDIA library in the image came from when dpkg did not install it (the stand-in's
    wheels): the wheel, its license name and where the image keeps the wheel's license file."""

    wheel: str  # e.g. nvidia-cudnn-cu11
    version: str
    license_name: str  # the wheel's License metadata, e.g. "NVIDIA Proprietary Software"
    license_path: str  # the license file's path in the image ("" when the wheel has none)


def python_licenses(dist: dict[str, Any]) -> list[License]:
    """The declared licenses of one distribution: its SPDX expression, else its License field when
    that is an SPDX id or expression, else its classifiers, else the field as a name; [] if none."""
    factory = LicenseFactory()
    ack = LicenseAcknowledgement.DECLARED
    if dist["license_expression"]:
        return [factory.make_from_string(dist["license_expression"], license_acknowledgement=ack)]
    field = str(dist["license"])
    if field.upper() == "UNKNOWN":
        field = ""
    if field:
        made = factory.make_from_string(field, license_acknowledgement=ack)
        if not isinstance(made, DisjunctiveLicense) or made.id is not None:
            return [made]
    from_classifiers: list[License] = []
    for classifier in dist["classifiers"]:
        words = classifier.split(" :: ")[-1]
        if words in ("OSI Approved", "Other/Proprietary License") and not field:
            words = classifier.split(" :: ", 1)[-1]
        spdx = CLASSIFIER_SPDX.get(words)
        from_classifiers.append(DisjunctiveLicense(id=spdx, acknowledgement=ack) if spdx
                                else DisjunctiveLicense(name=words, acknowledgement=ack))
    if from_classifiers:
        return from_classifiers
    return [DisjunctiveLicense(name=field, acknowledgement=ack)] if field else []


def python_component(dist: dict[str, Any]) -> Component:
    purl = PackageURL(type="pypi", name=canonicalize_name(dist["name"]), version=dist["version"])
    return Component(type=ComponentType.LIBRARY, name=dist["name"], version=dist["version"], purl=purl,
                     bom_ref=purl.to_string(), licenses=python_licenses(dist))


def deb_component(package: dict[str, str], os_info: dict[str, str]) -> Component:
    qualifiers = {"arch": package["arch"], "distro": f"{os_info['id']}-{os_info['version_id']}"}
    if package["source"] != package["name"] or package["source_version"] != package["version"]:
        qualifiers["upstream"] = (package["source"] if package["source_version"] == package["version"]
                                  else f"{package['source']}@{package['source_version']}")
    purl = PackageURL(type="deb", namespace=os_info["id"], name=package["name"], version=package["version"],
                      qualifiers=qualifiers)
    return Component(type=ComponentType.LIBRARY if package["name"].startswith("lib") else ComponentType.APPLICATION,
                     name=package["name"], version=package["version"], purl=purl, bom_ref=purl.to_string())


def nvidia_component(lib: dict[str, str], debs: dict[str, str], sources: dict[str, NvidiaSource]) -> Component:
    """One library TensorFlow loads, with the version and license of what installed it."""
    properties = [Property(name=PROP_PATH, value=lib["path"])]
    licenses: list[License] = []
    source = sources.get(lib["soname"])
    if lib["dpkg_owner"] and lib["dpkg_owner"] in debs:
        version = debs[lib["dpkg_owner"]]
        properties.append(Property(name=PROP_FROM, value=f"deb:{lib['dpkg_owner']}={version}"))
    elif source is not None:
        version = source.version
        properties.append(Property(name=PROP_FROM, value=f"pypi:{source.wheel}=={source.version}"))
        if source.license_name:
            licenses.append(DisjunctiveLicense(name=source.license_name,
                                               acknowledgement=LicenseAcknowledgement.DECLARED))
        if source.license_path:
            properties.append(Property(name=PROP_LICENSE_FILE, value=source.license_path))
    else:
        # Neither dpkg's nor a known wheel's: the file name's version, if it has more than the soname's.
        real = lib["real_path"].rsplit("/", 1)[-1]
        version = real.split(".so.", 1)[1] if ".so." in real else ""
    purl = PackageURL(type="generic", namespace="nvidia", name=lib["soname"], version=version or None)
    return Component(type=ComponentType.LIBRARY, group="nvidia", name=lib["soname"], version=version or None,
                     supplier=NVIDIA, purl=purl, bom_ref=purl.to_string(), licenses=licenses,
                     hashes=[HashType(alg=HashAlgorithm.SHA_256, content=lib["sha256"])], properties=properties)


def root_component(name: str, version: str, refs: Iterable[str], image_labels: dict[str, str]) -> Component:
    """The image: its computed tags and its OCI labels (revision, created, source, base, base digest)."""
    properties = [Property(name=PROP_TAG, value=ref) for ref in sorted(set(refs))]
    properties += [Property(name=key, value=value) for key, value in sorted(image_labels.items())
                   if key.startswith(OCI_PREFIX) and value]
    return Component(type=ComponentType.CONTAINER, name=name, version=version, bom_ref="image",
                     properties=properties)


def make_bom(data: dict[str, Any], *, name: str, version: str, refs: Iterable[str], image_labels: dict[str, str],
             nvidia_sources: dict[str, NvidiaSource] | None = None) -> Bom:
    """The SBOM of an image from its probe data (inventory.py's JSON)."""
    root = root_component(name, version, refs, image_labels)
    bom = Bom()
    bom.metadata.component = root
    bom.metadata.tools.components.add(this_component())
    debs = {p["name"]: p["version"] for p in data["dpkg"]}
    components = [python_component(dist) for dist in data["python"]]
    components += [deb_component(package, data["os"]) for package in data["dpkg"]]
    components += [nvidia_component(lib, debs, nvidia_sources or {}) for lib in data["libraries"]]
    bom.components.update(components)
    bom.register_dependency(root, components)
    return bom


def make_reproducible(bom: Bom, timestamp: datetime.datetime, described: str) -> None:
    """The SBOM's time is TIMESTAMP and its serial a UUID made from DESCRIBED (the image and its
    labels), instead of now and a random one: for builds with SOURCE_DATE_EPOCH."""
    bom.metadata.timestamp = timestamp
    bom.serial_number = uuid.uuid5(uuid.NAMESPACE_URL, f"urn:tf29-env:sbom:{described}")


def to_json(bom: Bom) -> str:
    """The SBOM as CycloneDX JSON (SCHEMA), checked against CycloneDX's schema: one line if it fails."""
    text = JsonV1Dot6(bom).output_as_string(indent=2)
    validate(text)
    return text + "\n"


def validate(text: str, where: str = "the SBOM") -> None:
    """One line (exit 4) when text is not a CycloneDX SCHEMA document."""
    error = JsonStrictValidator(SCHEMA).validate_str(text)
    if error is not None:
        raise UserError(f"{where} fails CycloneDX {SCHEMA.to_version()} schema validation: "
                        f"{str(error).splitlines()[0][:300]}", EXIT_BUILD)
