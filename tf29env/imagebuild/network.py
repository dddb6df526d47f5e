"""Build inputs for locked-down networks, checked, and the build args they become.

Mirrors and indexes map to the Dockerfile's own ARGs (used in one RUN each, never ENV), whose values
the engine writes into the image's history (`docker history --no-trunc`: each RUN line after the ARG
starts with `|N APT_MIRROR=... PIP_INDEX_URL=...`), which is pushed with the image: hence no
credentials in them. Proxies map to Docker's predefined proxy args, which the engine hands to RUN
steps but keeps out of the image's config and history; both spellings, because apt reads only the
lowercase ones.
"""

import re
from dataclasses import dataclass, fields

from tf29env.core.errors import UserError

URL_RE = re.compile(r"https?://[^\s/:@]+(?::[0-9]{1,5})?(?:/\S*)?|https?://[^\s@]+@[^\s/:@]+(?::[0-9]{1,5})?(?:/\S*)?")
NO_PROXY_RE = re.compile(r"[A-Za-z0-9.*:/\[\]_-]+(?:,[A-Za-z0-9.*:/\[\]_-]+)*")
# user:password@ or user@ (a token) after the scheme.
USERINFO_RE = re.compile(r"https?://[^/@\s]*@")
# The inputs that become the Dockerfile's own ARGs, and so part of the image's history.
RECORDED = ("pip_index_url", "pip_extra_index_url", "apt_mirror")


def masked(value: str) -> str:
    """value with any user:password@ (or token@) replaced by ***@."""
    return re.sub(r"//[^/@\s]+@", "//***@", value)


@dataclass(frozen=True)
class NetworkInputs:
    pip_index_url: str = ""
    pip_extra_index_url: str = ""
    apt_mirror: str = ""
    http_proxy: str = ""
    https_proxy: str = ""
    no_proxy: str = ""

    def validate(self) -> None:
        for field in fields(self):
            value = str(getattr(self, field.name))
            flag = "--" + field.name.replace("_", "-")
            if not value:
                continue
            if field.name in RECORDED and USERINFO_RE.match(value):
                raise UserError(
                    f"{flag} {masked(value)}: credentials in this URL would be written into the image's "
                    "history (`docker history`) and pushed with it; give a URL without them: a mirror "
                    "or caching proxy that logs in upstream for you (with its own netrc), reached directly "
                    "or through --https-proxy, whose credentials stay out of the image")
            pattern = NO_PROXY_RE if field.name == "no_proxy" else URL_RE
            if not pattern.fullmatch(value):
                what = "a comma-separated host list" if field.name == "no_proxy" else "an http:// or https:// URL"
                raise UserError(f"{flag} {value}: not {what}")

    def buildargs(self) -> dict[str, str]:
        args = {
            "PIP_INDEX_URL": self.pip_index_url,
            "PIP_EXTRA_INDEX_URL": self.pip_extra_index_url,
            "APT_MIRROR": self.apt_mirror,
        }
        for name, value in (("HTTP_PROXY", self.http_proxy), ("HTTPS_PROXY", self.https_proxy),
                            ("NO_PROXY", self.no_proxy)):
            if value:
                args[name] = args[name.lower()] = value
        return args

    def shown(self) -> dict[str, str]:
        """The inputs as recorded in the manifest: proxy credentials masked."""
        shown = {}
        for field in fields(self):
            value = str(getattr(self, field.name))
            if value:
                shown[field.name] = masked(value)
        return shown
