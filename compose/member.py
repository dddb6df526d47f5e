#!/usr/bin/env python3
"""Team members of docker-compose.yml: add one, remove one, or (re)write one's secrets.

  python3 compose/member.py add NAME --ssh-key FILE [--uid N --gid N] [--jupyter-port P]
                                     [--ssh-port P] [--gpus N|all | --gpu-ids 0,1] [--gpu-memory MB]
  python3 compose/member.py set NAME --gpu-memory MB|off
  python3 compose/member.py secrets NAME [--ssh-key FILE] [--new-token]
  python3 compose/member.py remove NAME

`add` writes the member's service (from the shared template), four volumes and two secrets into
docker-compose.yml, the GPU reservation into compose/gpu.yml (by default the next free GPU:
compose/gpus.py), and the secret files into
compose/secrets/NAME/ (mode 600): a fresh Jupyter token and the given public keys. `set` changes a
member's GPU memory budget (GPU_MEMORY_LIMIT_MB: the MiB TensorFlow may take of each of its GPUs). The files are
edited as text, section by section, so that their comments stay; nothing is written unless every
check passed. Standard library only: it runs on the host's python3 (3.8 or newer).
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__:  # compose.member, as the team hub and the tests import it
    from compose import gpus
else:  # python3 compose/member.py, as the docs and compose.mk run it: this file's folder is on sys.path
    import gpus  # type: ignore[import-not-found, no-redef]

PROJECT_DIR = Path(__file__).resolve().parent.parent
NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# Public key types that OpenSSH's sshd accepts in authorized_keys (the entrypoint checks each
# line with ssh-keygen again at start).
KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-", "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-")
FIRST_JUPYTER_PORT = 8801
FIRST_SSH_PORT = 2201
VOLUMES = ("work", "cuda-cache", "ssh-host-keys", "local")
# The line of a member's volumes that mounts the team's shared folder (compose/teamenv.py checks for it).
TEAM_SHARED_LINE = "      - *team-shared"
# The image's setting that caps what TensorFlow takes of each visible GPU, in MiB.
BUDGET = "GPU_MEMORY_LIMIT_MB"
# Each GPU's total memory in MiB, by index and UUID (a member's device_ids name either).
MEMORY_QUERY = ("--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits")


class MemberError(Exception):
    """Bad input: one line for the user, exit 2, nothing written."""


@dataclass(frozen=True)
class Member:
    name: str
    uid: int
    gid: int
    jupyter_port: int
    ssh_port: int
    gpus: str  # the devices entry's selector, e.g. 'count: 1' or 'device_ids: ["0", "1"]'
    gpu_memory: int | None = None  # GPU_MEMORY_LIMIT_MB, or None for no budget


def environment_line(m: Member) -> str:
    budget = f', {BUDGET}: "{m.gpu_memory}"' if m.gpu_memory is not None else ""
    return f'    environment: {{<<: *member-env, NB_UID: "{m.uid}", NB_GID: "{m.gid}"{budget}}}'


def service_block(m: Member) -> list[str]:
    return [
        f"  {m.name}:",
        "    <<: *member",
        f"    hostname: {m.name}",
        environment_line(m),
        "    ports:",
        f'      - "${{TF29ENV_JUPYTER_ADDRESS:-127.0.0.1}}:{m.jupyter_port}:8888"',
        f'      - "${{TF29ENV_BIND_ADDRESS:-0.0.0.0}}:{m.ssh_port}:22"',
        "    volumes:",
        f"      - {m.name}-work:/home/jovyan/work",
        f"      - {m.name}-cuda-cache:/home/jovyan/.nv",
        f"      - {m.name}-ssh-host-keys:/etc/ssh/host-keys",
        f"      - {m.name}-local:/home/jovyan/.local",
        "      - *start-hooks",
        "      - *team-data",
        TEAM_SHARED_LINE,
        "      - *tls-cert",
        "      - *tls-key",
        "    secrets:",
        f"      - {{source: {m.name}-jupyter-token, target: jupyter_token}}",
        f"      - {{source: {m.name}-ssh-keys, target: authorized_keys}}",
    ]


def volume_lines(name: str) -> list[str]:
    return [f"  {name}-{volume}:" for volume in VOLUMES]


def secret_lines(name: str) -> list[str]:
    return [
        f"  {name}-jupyter-token: {{file: ./compose/secrets/{name}/jupyter_token}}",
        f"  {name}-ssh-keys: {{file: ./compose/secrets/{name}/authorized_keys}}",
    ]


def gpu_block(m: Member) -> list[str]:
    device = f"{{driver: nvidia, {m.gpus}, capabilities: [gpu]}}"
    return [f"  {m.name}:", f"    deploy: {{resources: {{reservations: {{devices: [{device}]}}}}}}"]


# --- Editing a compose file as text: a top-level section runs from its `key:` line to the next
# line that starts in column 0 with neither a space nor a comment; its entries are its lines
# indented by exactly two spaces, each followed by its more deeply indented lines.

def section_span(lines: list[str], section: str) -> range | None:
    """The indexes of the section's body (header excluded), or None when there is no section."""
    start = next((i for i, line in enumerate(lines) if re.match(rf"^{section}:\s*(#.*)?$", line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and not re.match(r"^[^\s#]", lines[end]):
        end += 1
    return range(start + 1, end)


def entry_names(lines: list[str], section: str) -> list[str]:
    span = section_span(lines, section) or range(0)
    return [m.group(1) for i in span if (m := re.match(r"^  ([^\s#:][^\s:]*):", lines[i]))]


def entry_lines(lines: list[str], section: str, name: str) -> list[str]:
    """The named entry's lines in the section: its head and its more deeply indented lines."""
    span = section_span(lines, section) or range(0)
    found: list[str] = []
    for i in span:
        head = re.match(r"^  ([^\s#:][^\s:]*):", lines[i])
        if head:
            if found:
                break
            if head.group(1) == name:
                found.append(lines[i])
        elif found and lines[i].startswith("   "):
            found.append(lines[i])
    return found


def insert_entry(lines: list[str], section: str, entry: list[str], blank_before: bool) -> list[str]:
    """The lines with `entry` appended to the section (made at the end of the file if missing)."""
    span = section_span(lines, section)
    if span is None:
        return [*lines, "", f"{section}:", *entry]
    end = span.stop
    while end > span.start and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1  # after the last entry: before blank lines and the next section's comments
    return [*lines[:end], *([""] if blank_before and end > span.start else []), *entry, *lines[end:]]


def remove_entries(lines: list[str], section: str, names: Sequence[str]) -> list[str]:
    """The lines without the named entries of the section (and a blank line they leave behind)."""
    span = section_span(lines, section)
    if span is None:
        return lines
    keep: list[str] = []
    dropping = False
    for i, line in enumerate(lines):
        if i in span and (head := re.match(r"^  ([^\s#:][^\s:]*):", line)):
            dropping = head.group(1) in names
        elif i not in span or (line.strip() and not line.startswith(("   ", "  #"))):
            dropping = False  # a comment in column 0 or the next section: not part of an entry
        if not dropping or not line.strip():
            keep.append(line)
    kept = [line for i, line in enumerate(keep) if line.strip() or i == 0 or keep[i - 1].strip()]
    while kept and not kept[-1].strip():
        kept.pop()
    return kept


# --- Inputs

def published_ports(lines: Sequence[str], container_port: int) -> list[int]:
    """Host ports the lines publish for container_port ("ADDRESS:HOST_PORT:CONTAINER_PORT")."""
    pattern = re.compile(rf':(\d+):{container_port}(/tcp)?"?\s*$')
    return [int(m.group(1)) for line in lines if (m := pattern.search(line))]


def host_ports(lines: list[str], container_port: int) -> list[int]:
    """Host ports published for container_port by the services of the file."""
    span = section_span(lines, "services") or range(0)
    return published_ports([lines[i] for i in span], container_port)


def pick_port(given: int | None, used: list[int], first: int, what: str) -> int:
    if given is None:
        return max([first - 1, *used]) + 1
    if not 1 <= given <= 65535:
        raise MemberError(f"--{what}-port {given} is not a TCP port (1-65535)")
    if given in used:
        raise MemberError(f"--{what}-port {given} is already published by another member")
    return given


def held_gpus(gpu_lines: list[str]) -> list[tuple[str, ...]]:
    """What each member's entry in compose/gpu.yml reserves, as compose/gpus.py counts holders."""
    held = []
    span = section_span(gpu_lines, "services") or range(0)
    for i in span:
        if re.search(r"device_ids:|count:", gpu_lines[i]):
            held.append(selector_ids(gpu_lines[i]))
    return held


def next_free_gpu(held: list[tuple[str, ...]], listing: str | None) -> tuple[str, str | None]:
    """The device of the member added without --gpus/--gpu-ids: the least held of the host's
    (nvidia-smi -L), shared only when every one is taken; the lowest index nobody holds where the
    host's list is unknown. With a line to print when the choice is a guess or a share."""
    devices = gpus.parse_listing(listing) if listing is not None else ()
    if not devices:
        taken = {item for ids in held for item in ids}
        index = next(str(n) for n in range(len(taken) + 1) if str(n) not in taken)
        why = "nvidia-smi is not on this host" if listing is None else "nvidia-smi -L lists no GPU"
        return index, f"{why}: gave GPU {index}, the lowest index no member holds (--gpu-ids to choose)"
    used = gpus.usage(held, devices)
    (device,) = gpus.choose(1, devices, used, share=True)
    if used[device.id]:
        return device.id, (f"every GPU is reserved: {device.label} is shared with {used[device.id]} other "
                           "member(s) (--gpu-ids to choose)")
    return device.id, None


def gpu_selector(gpus_option: str | None, gpu_ids: str | None, held: list[tuple[str, ...]],
                 listing: str | None) -> tuple[str, str | None]:
    """The devices entry's selector, and a line to print about it (or None)."""
    if gpus_option is not None and gpu_ids is not None:
        raise MemberError("--gpus and --gpu-ids both given: choose one")
    try:
        if gpu_ids is not None:
            ids = gpus.parse_ids(gpu_ids, "--gpu-ids")
            host = gpus.parse_listing(listing) if listing is not None else None
            chosen = [device.id for device in gpus.resolve(ids, host, "--gpu-ids")]
            return "device_ids: [" + ", ".join(f'"{part}"' for part in chosen) + "]", None
        if gpus_option is None:
            index, note = next_free_gpu(held, listing)
            return f'device_ids: ["{index}"]', note
    except gpus.GpuError as exc:
        raise MemberError(str(exc)) from None
    if gpus_option != "all" and not re.match(r"^[1-9][0-9]{0,2}$", gpus_option):
        raise MemberError(f"--gpus '{gpus_option}' is not a number of GPUs or 'all'")
    return f"count: {gpus_option}", None


def parse_budget(value: str) -> int | None:
    """--gpu-memory: a whole number of MiB above 0, or `off` (None: no budget)."""
    if value == "off":
        return None
    if not re.fullmatch(r"[0-9]{1,9}", value) or int(value) == 0:
        raise MemberError(f"--gpu-memory {value!r} is not a positive whole number of MiB (or off)")
    return int(value)


def parse_memory(csv: str) -> dict[str, int]:
    """Total MiB of each GPU from `nvidia-smi` with MEMORY_QUERY, keyed by its index and its UUID."""
    totals: dict[str, int] = {}
    for line in csv.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 3 and fields[2].isdigit():
            totals[fields[0]] = totals[fields[1]] = int(fields[2])
    return totals


def selector_ids(selector: str) -> tuple[str, ...]:
    """The GPUs a devices selector ('count: 1', 'device_ids: ["0"]') holds, as compose/gpus.py counts them."""
    ids = re.search(r"device_ids:\s*\[([^]]*)\]", selector)
    if ids:
        return tuple(part.strip().strip("'\"") for part in ids.group(1).split(",") if part.strip())
    count = re.search(r"count:\s*([0-9]+|all)\b", selector)
    if count:
        n = count.group(1)
        return gpus.request_ids({"Driver": "nvidia", "Count": -1 if n == "all" else int(n)})
    return ()


def check_budget(budget: int, held: Sequence[str], totals: dict[str, int]) -> None:
    """Refuse a budget above the memory of one of the member's GPUs; GPUs not in TOTALS are not checked."""
    known = list(totals) if gpus.ALL in held else [item for item in held if item in totals]
    for item in known:
        if budget > totals[item]:
            raise MemberError(f"--gpu-memory {budget}: more than GPU {item} has ({totals[item]} MiB)")


def host_memory() -> dict[str, int]:
    """The host's GPUs' total memory (parse_memory); empty where nvidia-smi is missing or says nothing."""
    path = shutil.which("nvidia-smi")
    if path is None:
        return {}
    try:
        done = subprocess.run([path, *MEMORY_QUERY], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_memory(done.stdout) if done.returncode == 0 else {}


def host_account(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def account_ids(name: str, uid: int | None, gid: int | None) -> tuple[int, int]:
    """NB_UID/NB_GID: the member's host account unless given; gid defaults to 100 ('users')."""
    if uid is None:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise MemberError(f"'{name}' is no account on this host: give the member's --uid (and --gid)") from None
        uid = entry.pw_uid
        gid = entry.pw_gid if gid is None else gid
    gid = 100 if gid is None else gid
    if uid == 0:
        raise MemberError("--uid 0: the environments never run as root; give the member's own uid")
    for flag, value in (("--uid", uid), ("--gid", gid)):
        if not 0 <= value <= 2147483647:
            raise MemberError(f"{flag} {value} is not a numeric id (0-2147483647)")
    return uid, gid


def read_public_keys(path: Path) -> str:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise MemberError(f"--ssh-key {path}: cannot read it ({exc.__class__.__name__})") from None
    keys = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if not keys:
        raise MemberError(f"--ssh-key {path}: no public key in it")
    for number, key in enumerate(keys, 1):
        if not key.startswith(KEY_TYPES) or len(key.split()) < 2:
            raise MemberError(f"--ssh-key {path}: key {number} is not an SSH public key (give the .pub file)")
    return "\n".join(keys) + "\n"


# --- Files

@dataclass(frozen=True)
class Project:
    compose_file: Path
    gpu_file: Path
    secrets_dir: Path

    @classmethod
    def at(cls, directory: Path) -> Project:
        return cls(directory / "docker-compose.yml", directory / "compose" / "gpu.yml",
                   directory / "compose" / "secrets")

    def read(self, path: Path) -> list[str]:
        try:
            return path.read_text().splitlines()
        except OSError as exc:
            raise MemberError(f"{path}: cannot read it ({exc.strerror})") from None


def write_lines(path: Path, lines: list[str]) -> None:
    scratch = path.with_name(f".{path.name}.new")
    scratch.write_text("\n".join(lines) + "\n")
    scratch.replace(path)  # all or nothing, even if interrupted


def write_secret(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    path.chmod(0o600)


def has_secrets(project: Project, name: str) -> bool:
    """Whether the member's two secret files exist: without them compose cannot start it."""
    directory = project.secrets_dir / name
    return (directory / "jupyter_token").is_file() and (directory / "authorized_keys").is_file()


def write_secrets(project: Project, name: str, key_file: Path | None, new_token: bool) -> list[str]:
    """Write the member's secret files; return what was done, one line each."""
    directory = project.secrets_dir / name
    done: list[str] = []
    keys = read_public_keys(key_file) if key_file else None
    token_file, keys_file = directory / "jupyter_token", directory / "authorized_keys"
    if keys is None and not keys_file.is_file():
        raise MemberError(f"{keys_file} does not exist yet: give --ssh-key with the member's public key")
    if new_token or not token_file.is_file():
        write_secret(token_file, secrets.token_hex(24) + "\n")
        done.append(f"wrote a new Jupyter token to {token_file}")
    if keys is not None:
        write_secret(keys_file, keys)
        done.append(f"wrote {keys.count(chr(10))} SSH public key(s) to {keys_file}")
    return done


def add(project: Project, args: argparse.Namespace) -> list[str]:
    name = args.name
    compose, gpu = project.read(project.compose_file), project.read(project.gpu_file)
    taken_over: list[str] = []
    if name in entry_names(compose, "services"):
        if has_secrets(project, name):
            raise MemberError(f"'{name}' is already a member in {project.compose_file}")
        # A member never given secrets (the shipped examples): its entries make way for the new ones; its
        # ports, and its ids where the host has no account of its name, stay its own unless others are asked for.
        old = entry_lines(compose, "services", name)
        args.jupyter_port = args.jupyter_port or next(iter(published_ports(old, 8888)), None)
        args.ssh_port = args.ssh_port or next(iter(published_ports(old, 22)), None)
        ids = re.search(r'NB_UID: "(\d+)", NB_GID: "(\d+)"', "\n".join(old))
        if args.uid is None and ids and not host_account(name):
            args.uid, args.gid = int(ids.group(1)), args.gid if args.gid is not None else int(ids.group(2))
        compose = without_member(compose, name)
        taken_over.append(f"took over '{name}', a member without secrets (as the shipped examples are)")
    uid, gid = account_ids(name, args.uid, args.gid)
    jupyter_port = pick_port(args.jupyter_port, host_ports(compose, 8888), FIRST_JUPYTER_PORT, "jupyter")
    ssh_port = pick_port(args.ssh_port, host_ports(compose, 22), FIRST_SSH_PORT, "ssh")
    try:
        listing = gpus.host_listing() if args.gpus is None else None
    except gpus.GpuError as exc:
        raise MemberError(str(exc)) from None
    selector, gpu_note = gpu_selector(args.gpus, args.gpu_ids, held_gpus(remove_entries(gpu, "services", [name])),
                                       listing)
    budget = parse_budget(args.gpu_memory) if args.gpu_memory is not None else None
    if budget is not None:
        check_budget(budget, selector_ids(selector), host_memory())
    member = Member(name, uid, gid, jupyter_port, ssh_port, selector, budget)
    done = write_secrets(project, name, args.ssh_key, new_token=False)
    compose = insert_entry(compose, "services", service_block(member), blank_before=True)
    compose = insert_entry(compose, "volumes", volume_lines(name), blank_before=False)
    compose = insert_entry(compose, "secrets", secret_lines(name), blank_before=False)
    gpu = insert_entry(remove_entries(gpu, "services", [name]), "services", gpu_block(member), blank_before=True)
    write_lines(project.compose_file, compose)
    write_lines(project.gpu_file, gpu)
    return [*taken_over, *done, *([gpu_note] if gpu_note else []),
            f"added {name} (uid {uid}, gid {gid}): Jupyter on host port {jupyter_port}, "
            f"SSH on {ssh_port}, GPUs {member.gpus}{budget_words(budget)}; start it with: make up"]


def budget_words(budget: int | None) -> str:
    return f", {budget} MiB of each GPU for TensorFlow" if budget is not None else ""


def with_budget(line: str, budget: int | None) -> str:
    """A service's `environment: {...}` line (as service_block writes it) with BUDGET set to BUDGET, or without it."""
    stripped = re.sub(rf',\s*{BUDGET}:\s*"?[^,}}"]*"?', "", line)
    if budget is None:
        return stripped
    return re.sub(r"\}\s*$", f', {BUDGET}: "{budget}"}}', stripped)


def set_budget(project: Project, name: str, value: str) -> list[str]:
    compose, gpu = project.read(project.compose_file), project.read(project.gpu_file)
    if name not in entry_names(compose, "services"):
        raise MemberError(f"'{name}' is not a member in {project.compose_file}")
    budget = parse_budget(value)
    if budget is not None:
        held = [item for line in entry_lines(gpu, "services", name) for item in selector_ids(line)]
        check_budget(budget, held, host_memory())
    span = section_span(compose, "services") or range(0)
    service = entry_lines(compose, "services", name)
    start = next(i for i in span if compose[i] == service[0])
    places = [i for i in range(start, start + len(service)) if re.match(r"^    environment: \{.*\}\s*$", compose[i])]
    if len(places) != 1:
        raise MemberError(f"{name}: its service has no one-line `environment: {{...}}` (as member.py writes it): "
                          f"set {BUDGET} there by hand")
    compose[places[0]] = with_budget(compose[places[0]], budget)
    write_lines(project.compose_file, compose)
    now = f"{budget} MiB of each of its GPUs for TensorFlow" if budget is not None else "no GPU memory budget"
    return [f"{name}: {now}; `make up` recreates its container with it (running kernels stop)"]


def without_member(compose: list[str], name: str) -> list[str]:
    """docker-compose.yml's lines without the member's service, volumes and secrets."""
    compose = remove_entries(compose, "services", [name])
    compose = remove_entries(compose, "volumes", [f"{name}-{volume}" for volume in VOLUMES])
    return remove_entries(compose, "secrets", [f"{name}-jupyter-token", f"{name}-ssh-keys"])


def remove(project: Project, name: str) -> list[str]:
    compose, gpu = project.read(project.compose_file), project.read(project.gpu_file)
    if name not in entry_names(compose, "services"):
        raise MemberError(f"'{name}' is not a member in {project.compose_file}")
    write_lines(project.compose_file, without_member(compose, name))
    write_lines(project.gpu_file, remove_entries(gpu, "services", [name]))
    return [f"removed {name} from the compose files; stop the container with `make up` (it removes orphans) "
            f"and delete the data with `docker volume rm` of the volumes *_{name}-*"]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="member.py", description="Manage the team members of docker-compose.yml.")
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR,
                        help="the folder of docker-compose.yml (default: the one above this script)")
    commands = parser.add_subparsers(dest="command", required=True)
    adding = commands.add_parser("add", help="add a member: service, volumes, secrets, GPUs")
    adding.add_argument("--ssh-key", type=Path, required=True, help="the member's public key file (.pub)")
    adding.add_argument("--uid", type=int, help="NB_UID (default: the uid of the host account NAME)")
    adding.add_argument("--gid", type=int, help="NB_GID (default: the account's group, else 100)")
    adding.add_argument("--jupyter-port", type=int,
                        help=f"host port for Jupyter (default: next from {FIRST_JUPYTER_PORT})")
    adding.add_argument("--ssh-port", type=int, help=f"host port for SSH (default: next from {FIRST_SSH_PORT})")
    adding.add_argument("--gpus", help="how many GPUs: the first N, or all (default: the next free GPU)")
    adding.add_argument("--gpu-ids", help="which GPUs, e.g. 0,1 or GPU/MIG UUIDs from nvidia-smi -L "
                                          "(default: the next free GPU)")
    adding.add_argument("--gpu-memory", metavar="MB",
                        help=f"{BUDGET}: the MiB TensorFlow may take of each of its GPUs (default: no budget)")
    setting = commands.add_parser("set", help="change a member's GPU memory budget")
    setting.add_argument("--gpu-memory", metavar="MB", required=True, help=f"{BUDGET} in MiB, or off")
    rotating = commands.add_parser("secrets", help="write a member's token (if missing) and keys")
    rotating.add_argument("--ssh-key", type=Path, help="the member's public key file (.pub)")
    rotating.add_argument("--new-token", action="store_true", help="replace the Jupyter token")
    removing = commands.add_parser("remove", help="remove a member (their volumes stay on the engine)")
    for command in (adding, setting, rotating, removing):
        command.add_argument("name", help="the member: a lowercase name, also their service's name")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    project = Project.at(args.project_dir)
    try:
        if not NAME_RE.match(args.name):
            raise MemberError(f"'{args.name}' is not a member name (lowercase letters, digits, - and _)")
        if args.command == "add":
            done = add(project, args)
        elif args.command == "remove":
            done = remove(project, args.name)
        elif args.command == "set":
            done = set_budget(project, args.name, args.gpu_memory)
        else:
            if args.name not in entry_names(project.read(project.compose_file), "services"):
                raise MemberError(f"'{args.name}' is not a member in {project.compose_file}: add them first")
            done = write_secrets(project, args.name, args.ssh_key, args.new_token)
    except MemberError as exc:
        print(f"member.py: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(done))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
