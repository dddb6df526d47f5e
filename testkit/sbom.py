"""Comparing two SBOMs of the same image: what may differ between them is dropped."""

import json
from typing import Any

from tf29env.core import labels
from tf29env.release import tags
from tf29env.supplychain.sbom import PROP_TAG


def normalized(document: dict[str, Any]) -> dict[str, Any]:
    """document without what differs between two SBOMs of the same image: the serial number, the
    timestamp, and the image's creation time with the date tag made from it."""
    copy: dict[str, Any] = json.loads(json.dumps(document))
    copy.pop("serialNumber", None)
    metadata = copy.get("metadata", {})
    metadata.pop("timestamp", None)
    root = metadata.get("component", {})
    root["properties"] = [p for p in root.get("properties", [])
                          if p["name"] != labels.CREATED
                          and not (p["name"] == PROP_TAG and is_date_tag(p["value"]))]
    return copy


def is_date_tag(ref: str) -> bool:
    return tags.DATE_RE.fullmatch(ref.rsplit(":", 1)[-1]) is not None
