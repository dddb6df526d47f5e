"""The tag scheme (docs/build.md): tags computed from an image's facts, and the claims a tag makes.

    2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11   full: TF, variant, the CUDA / cuDNN TF was built for,
    2.9.3-cpu-py3.8-ubuntu20.04                Python major.minor, OS ID and VERSION_ID
    2.9-gpu, latest-gpu                        moving: newest build of TF 2.9 / of the variant
    gpu-2026-12-02                             the build's date (UTC; the created label)
    gpu-0123456789ab                           the 12-char git SHA (the revision label); clean trees only

The CUDA part names the CUDA TF was BUILT for (tf.sysconfig build info), which is what decides the
host driver a user needs; the libraries the image carries may be a newer 11.x (CUDA minor-version
compatibility), are checked against the claim and recorded in labels and the manifest.
"""

import datetime
import re
from dataclasses import dataclass

from tf29env.core import labels
from tf29env.core.errors import UserError
from tf29env.core.facts import ImageFacts
from tf29env.core.variants import VARIANTS

# Docker's grammar for references, less digests: [host[:port]/]path[:tag].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)"
REPOSITORY_RE = re.compile(rf"(?:{_HOST}/)?{_COMPONENT}(?:/{_COMPONENT})*")
TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
VARIANT_RE = rf"(?P<variant>{'|'.join(sorted(VARIANTS))})"

FULL_RE = re.compile(
    rf"(?P<tf>\d+\.\d+\.\d+)-{VARIANT_RE}(?:-cuda(?P<cuda>\d+\.\d+)-cudnn(?P<cudnn>\d+))?"
    r"-py(?P<py>\d+\.\d+)-(?P<os>[a-z]+)(?P<osver>\d+(?:\.\d+)*)"
)
MINOR_RE = re.compile(rf"(?P<tfminor>\d+\.\d+)-{VARIANT_RE}")
LATEST_RE = re.compile(rf"latest-{VARIANT_RE}")
DATE_RE = re.compile(rf"{VARIANT_RE}-(?P<date>\d{{4}}-\d{{2}}-\d{{2}})")
SHA_RE = re.compile(rf"{VARIANT_RE}-(?P<sha>[0-9a-f]{{12}})")


def validate_repository(name: str, flag: str = "--repository") -> None:
    if len(name) > 255 or not REPOSITORY_RE.fullmatch(name):
        raise UserError(f"{flag} {name}: not a valid repository (lowercase letters, digits, . _ - and /)")


def split_reference(ref: str, flag: str = "--tag") -> tuple[str, str]:
    """(repository, tag) of ref, both checked; a missing tag is 'latest' as Docker has it."""
    last = ref.rsplit("/", 1)[-1]
    repository, tag = (ref.rsplit(":", 1) if ":" in last else (ref, "latest"))
    if len(repository) > 255 or not REPOSITORY_RE.fullmatch(repository):
        raise UserError(f"{flag} {ref}: not a valid repository (lowercase letters, digits, . _ - and /)")
    if not TAG_RE.fullmatch(tag):
        raise UserError(f"{flag} {ref}: {tag!r} is not a valid tag (letters, digits, _ . -; at most 128)")
    return repository, tag


def full_tag(facts: ImageFacts) -> str:
    cuda = f"-cuda{facts.tf_cuda}-cudnn{facts.tf_cudnn}" if facts.tf_cuda_build else ""
    return f"{facts.tensorflow}-{facts.variant}{cuda}-py{facts.python_minor}-{facts.os_id}{facts.os_version}"


def compute(facts: ImageFacts, *, revision: str, created: datetime.datetime) -> list[str]:
    """Every tag the image earns, the full one first. revision: a 40-hex SHA of a clean tree, or
    anything else (unknown, dirty), which earns no SHA tag."""
    variant = facts.variant
    tf_minor = ".".join(facts.tensorflow.split(".")[:2])
    tags = [full_tag(facts), f"{tf_minor}-{variant}", f"latest-{variant}", f"{variant}-{created:%Y-%m-%d}"]
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        tags.append(f"{variant}-{revision[:12]}")
    return tags


@dataclass(frozen=True)
class Claim:
    tag: str
    kind: str  # full, minor, latest, date, sha
    problems: list[str]


def check(tag: str, facts: ImageFacts, image_labels: dict[str, str]) -> Claim | None:
    """What tag claims about the image, checked against its facts and labels; None when the tag
    is not in the scheme (a name a user chose, like dev-gpu), which claims nothing."""
    if match := FULL_RE.fullmatch(tag):
        return Claim(tag, "full", _check_full(match, facts))
    for kind, pattern in (("minor", MINOR_RE), ("latest", LATEST_RE), ("date", DATE_RE), ("sha", SHA_RE)):
        if match := pattern.fullmatch(tag):
            problems = _variant(match, facts)
            if kind == "minor" and not facts.tensorflow.startswith(match["tfminor"] + "."):
                problems.append(f"TensorFlow {facts.tensorflow} is not {match['tfminor']}.x")
            if kind == "date" and not image_labels.get(labels.CREATED, "").startswith(match["date"]):
                problems.append(f"{labels.CREATED} is {image_labels.get(labels.CREATED)!r}, not of {match['date']}")
            if kind == "sha" and not image_labels.get(labels.REVISION, "").startswith(match["sha"]):
                problems.append(f"{labels.REVISION} is {image_labels.get(labels.REVISION)!r}, not {match['sha']}")
            return Claim(tag, kind, problems)
    return None


def _variant(match: re.Match[str], facts: ImageFacts) -> list[str]:
    if match["variant"] != facts.variant:
        built = "a CUDA build" if facts.tf_cuda_build else "a CPU-only build"
        return [f"claims {match['variant']}, but the image's TensorFlow is {built}"]
    return []


def _check_full(match: re.Match[str], facts: ImageFacts) -> list[str]:
    problems = _variant(match, facts)
    if match["tf"] != facts.tensorflow:
        problems.append(f"claims TensorFlow {match['tf']}, the image has {facts.tensorflow}")
    if match["py"] != facts.python_minor:
        problems.append(f"claims Python {match['py']}, the image has {facts.python}")
    if (match["os"], match["osver"]) != (facts.os_id, facts.os_version):
        problems.append(f"claims {match['os']} {match['osver']}, the image is {facts.os_id} {facts.os_version}")
    if match["cuda"] is None:
        if facts.cuda_runtime:
            problems.append(f"claims no CUDA, the image carries the CUDA {facts.cuda_runtime} runtime")
        return problems
    if match["cuda"] != facts.tf_cuda or match["cudnn"] != facts.tf_cudnn:
        problems.append(f"claims TF built for CUDA {match['cuda']} / cuDNN {match['cudnn']}, "
                        f"its build info says {facts.tf_cuda} / {facts.tf_cudnn}")
    problems.extend(_runtime_problems(match["cuda"], match["cudnn"], facts))
    return problems


def _runtime_problems(cuda: str, cudnn: str, facts: ImageFacts) -> list[str]:
    """The libraries in the image must be able to serve the claim: the same CUDA major at the
    claimed minor or newer (minor-version compatibility), the same cuDNN major."""
    problems = []
    want = tuple(int(part) for part in cuda.split("."))
    have = tuple(int(part) for part in facts.cuda_runtime.split(".")) if facts.cuda_runtime else ()
    if not have or have[0] != want[0] or have < want:
        problems.append(f"claims CUDA {cuda}, the image's CUDA runtime is {facts.cuda_runtime or 'missing'}")
    if facts.cudnn_runtime.split(".")[0] != cudnn:
        problems.append(f"claims cuDNN {cudnn}, the image's libcudnn is {facts.cudnn_runtime or 'missing'}")
    return problems
