"""tf29-env's Jupyter Server settings, for every Jupyter server started in the image: JupyterLab as
the entrypoint starts it, and one a user starts by hand. It is the venv's jupyter_server_config.py
(the Dockerfile links it there), so a user's own ~/.jupyter/jupyter_server_config.* loads after it
and wins. Python 3.8 (Ubuntu 20.04's) or newer; only what the server itself imports.

The token stays out of kernels and terminals. The entrypoint hands it to the server in
JUPYTER_TOKEN, Jupyter's own variable (argv would show it to every process through ps). Jupyter
reads it and leaves it there, and every kernel and terminal starts with a copy of the server's
environment: `env` in a terminal, or a notebook printing os.environ (then shared with its outputs),
would show the token. It is taken out here, before anything is started.

A failed save never leaves a broken file. Jupyter's own "atomic" writing (use_atomic_writing, on
by default in Jupyter Server 2) backs the old file up, writes over it in place and, on an error,
moves the backup back; a new file has no backup, so on a full disk the save answers "No such file
or directory" (the missing backup) and leaves an empty or cut-off notebook that then opens as
"Unreadable Notebook". Here the new content goes to a temporary file in the same folder, synced,
then renamed over the old one: the file is always the old or the new version, the error is the
real one ("No space left on device"), and the partial temporary file goes.

The port a server reports is the one it listens on. Jupyter Server 2 test-binds a free port, closes
it, writes its runtime file (jpserver-PID.json) and only then listens, without retrying: two servers
started at once on a node (two users' Slurm jobs under Apptainer) both reported 8888, and the later
one ran on with no socket. Here the port is listened on when it is chosen, and that socket is served.

A run the server cannot see is activity: a running job (`job run`, from a terminal or over SSH) and a
busy kernel that prints nothing (jobs/activity.py), so that the hubs' idle cullers leave its server
running.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import tempfile
from contextlib import contextmanager, suppress
from typing import IO, Any, Iterator

from jupyter_server.serverapp import ServerApp, random_ports
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado.netutil import bind_sockets

from tf29image.jobs import activity  # the venv finds the image's package through its tf29-env.pth

c: Any = get_config()  # type: ignore[name-defined]  # noqa: F821 - provided by traitlets when it loads this file

token = os.environ.pop("JUPYTER_TOKEN", None)
if token:
    c.IdentityProvider.token = token
del token


class _QuietHealthchecks(logging.Filter):
    """JupyterHub's single-user server (the hub mode) logs every successful API request at INFO,
    where Jupyter Server logs them at DEBUG: the healthcheck's GET of {base_url}api every 5 s would
    fill `docker logs` with one line each. Its successes on loopback are dropped; failures stay."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _HEALTHCHECK_LINE.match(record.getMessage())


_HEALTHCHECK_LINE = re.compile(r"^200 GET \S*/api \(\S*@127\.0\.0\.1\)")
logging.getLogger("tornado.access").addFilter(_QuietHealthchecks())


class _QuietDualStack(logging.Filter):
    """The entrypoint listens on IPv4 and IPv6 where the container has IPv6 by setting ServerApp.ip
    to "" (every address: 0.0.0.0 and ::), and for "" alone Jupyter warns, at every start, that it
    listens on all addresses without encryption; for 0.0.0.0, the same exposure on IPv4, it says
    nothing. So that the IPv6 case starts as quietly as the IPv4 one, that warning goes; auth is on
    regardless, and the warning about no authentication stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_ALL_ADDRESSES_NO_TLS)


_ALL_ADDRESSES_NO_TLS = "WARNING: The Jupyter server is listening on all IP addresses and not using encryption"
logging.getLogger("ServerApp").addFilter(_QuietDualStack())


def _umask() -> int:
    """The process's umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _replaceable(path: str) -> bool:
    """Whether a new version may replace PATH by a rename: a new file, or a plain file of this
    user's with one link. A rename gives the file a new inode of this user's, so another user's
    file (writable through its group) or a hard-linked one is written in place, as Jupyter does."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return True
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and info.st_nlink == 1


@contextmanager
def replace_writing(path: str, text: bool = True, encoding: str = "utf-8", log: Any = None,
                    **kwargs: Any) -> Iterator[IO[Any]]:
    """Write PATH's new content to a temporary file beside it, then rename that over PATH.

    The temporary name starts with ".~" like Jupyter's own backups (hidden, and ignored by
    Dropbox) but is never exactly Jupyter's backup name, which Jupyter would restore from."""
    del log  # Jupyter passes its logger; errors go up to it instead
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    # The name cut short: 60 characters (up to 240 bytes) leave room for the rest within 255 bytes.
    fd, temporary = tempfile.mkstemp(prefix=f".~{name[:60]}.", suffix=".tmp", dir=folder)
    fileobj: IO[Any]
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; keep the old file's mode, or a new file's
        if text:
            kwargs.setdefault("newline", "\n")  # Unix line ends, as Jupyter writes them
            fileobj = open(fd, "w", encoding=encoding, **kwargs)  # noqa: SIM115 - closed below
        else:
            fileobj = open(fd, "wb", **kwargs)  # noqa: SIM115 - closed below
        fd = -1  # the file object owns it now
        with fileobj:
            yield fileobj
            fileobj.flush()
            os.fsync(fileobj.fileno())
        os.replace(temporary, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with suppress(OSError):
            os.unlink(temporary)
        raise


class ReplacingFileManager(AsyncLargeFileManager):  # type: ignore[misc]  # Any to mypy: the image's package
    """Jupyter Server 2's default contents manager, saving through replace_writing. Chunked
    uploads of large files still append in place after their first chunk, as upstream does."""

    @contextmanager
    def atomic_writing(self, os_path: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if not self.use_atomic_writing or not _replaceable(os.path.realpath(os_path)):
            with super().atomic_writing(os_path, *args, **kwargs) as fileobj:
                yield fileobj
            return
        with self.perm_to_403(os_path), replace_writing(os_path, *args, **kwargs) as fileobj:
            yield fileobj


c.ServerApp.contents_manager_class = ReplacingFileManager


def _listen_on_a_free_port(self: Any) -> None:
    """ServerApp._find_http_port, keeping the sockets it binds: the first free port from
    ServerApp.port, trying up to port_retries more as Jupyter does, already listening."""
    for port in random_ports(self.port, self.port_retries + 1):
        try:
            sockets = bind_sockets(port, self.ip)
        except OSError as exc:
            if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                raise
            self.log.info("The port %i is %s.", port, "already in use" if exc.errno == errno.EADDRINUSE
                          else "not allowed to this user")
            continue
        self.port, self._tf29_sockets = port, sockets
        return
    taken = "no available port could be found" if self.port_retries else f"port {self.port} is not available"
    self.log.critical("ERROR: the Jupyter server could not be started because %s.", taken)
    self.exit(1)


def _serve_the_listening_sockets(self: Any) -> bool:
    self.http_server.add_sockets(self._tf29_sockets)
    return True


ServerApp._find_http_port = _listen_on_a_free_port
ServerApp._bind_http_server_tcp = _serve_the_listening_sockets


_init_webapp = ServerApp.init_webapp


def _init_webapp_watching_runs(self: Any) -> None:
    """A running job or a busy kernel keeps the server active (jobs/activity.py)."""
    _init_webapp(self)
    activity.watch(self.web_app.settings)


ServerApp.init_webapp = _init_webapp_watching_runs
