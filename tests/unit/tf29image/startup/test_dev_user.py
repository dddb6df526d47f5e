"""image/python/tf29image/startup/dev_user.py's TEAM_GID: the group the dev user joins besides NB_GID, as
planned for the entrypoint (groupadd, usermod), and its refusals, each one line (the planner's other rows:
test_plan.py, whose fake system and helpers these use)."""

import pytest

from tests.unit.tf29image.startup.test_plan import KEY, FakeSystem, planned, refusal


class TeamSystem(FakeSystem):
    """The fake image, with a group 4242 'shared' that ann (the renamed dev user) is already in."""

    def group_name(self, gid: int) -> str | None:
        return {4242: "shared"}.get(gid) or super().group_name(gid)

    def group_gid(self, name: str) -> int | None:
        return {"shared": 4242}.get(name) or super().group_gid(name)

    def group_members(self, name: str) -> tuple[int, list[str]]:
        return (4242, ["ann"]) if name == "shared" else super().group_members(name)


TEAM_NAMES = ("user_join_team", "user_new_team_group", "user_team_gid", "user_team_group")
# (environment, system, what the shell gets: join, groupadd, gid, the group's name)
PLANS: dict[str, tuple[dict[str, str], FakeSystem | None, tuple[str, str, str, str]]] = {
    "unset": ({}, None, ("0", "0", "0", "")),
    "empty counts as unset": ({"TEAM_GID": ""}, None, ("0", "0", "0", "")),
    "a gid the image has no group for": ({"TEAM_GID": "4321"}, None, ("1", "1", "4321", "team")),
    "leading zeros": ({"TEAM_GID": "04321"}, None, ("1", "1", "4321", "team")),
    "below 1000, no group of the image": ({"TEAM_GID": "500"}, None, ("1", "1", "500", "team")),
    "users": ({"TEAM_GID": "100", "NB_GID": "4321"}, None, ("1", "0", "100", "users")),
    "a group the image has": ({"TEAM_GID": "4242"}, TeamSystem(), ("1", "0", "4242", "shared")),
    "already a member": ({"TEAM_GID": "4242", "NB_USER": "ann"}, TeamSystem(), ("0", "0", "4242", "shared")),
    "NB_GID itself": ({"TEAM_GID": "4321", "NB_GID": "4321"}, None, ("0", "0", "4321", "")),
    # fit_user makes NB_GID's group 'team' first: the team's group takes another name.
    "NB_GROUP named team": ({"TEAM_GID": "4321", "NB_GID": "5000", "NB_GROUP": "team"}, None,
                            ("1", "1", "4321", "team-4321")),
    "the root triplet": ({"TEAM_GID": "4321", "NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, None,
                         ("0", "0", "0", "")),
}


@pytest.mark.parametrize("case", sorted(PLANS))
def test_the_team_group_as_planned(case: str) -> None:
    env, system, expected = PLANS[case]
    variables = planned(env, system=system)[0]
    assert tuple(variables[name] for name in TEAM_NAMES) == expected


def test_the_team_group_is_in_the_commands_groups() -> None:
    """setpriv --init-groups reads /etc/group, where join_team put it: no gid on the command line."""
    variables = planned({"TEAM_GID": "4321", "SSH_AUTHORIZED_KEYS": KEY})[0]
    assert "--init-groups" in variables["as_user"]
    assert variables["ssh_starts"] == "1"


READ_ONLY_GROUP = FakeSystem(read_only=("/etc/group",))
NO_CHOWN = FakeSystem(capabilities=(1 << 41) - 1 & ~1)
REFUSALS: dict[str, tuple[dict[str, str], int, FakeSystem | None, str]] = {
    "a word": ({"TEAM_GID": "abc"}, 0, None, "TEAM_GID='abc' is not a numeric id (0-2147483647)"),
    "negative": ({"TEAM_GID": "-5"}, 0, None, "TEAM_GID='-5' is not a numeric id (0-2147483647)"),
    "above 2^31-1": ({"TEAM_GID": "2147483648"}, 0, None, "TEAM_GID='2147483648' is not a numeric id (0-2147483647)"),
    "root's group": ({"TEAM_GID": "0"}, 0, None,
                     "TEAM_GID=0 is root's group, whose rights everything run in the notebooks and SSH sessions "
                     "would get; use the gid of the team's shared folder (stat -c %g DIR)"),
    "root's group, zeros": ({"TEAM_GID": "000"}, 0, None,
                            "TEAM_GID=000 is root's group, whose rights everything run in the notebooks and SSH "
                            "sessions would get; use the gid of the team's shared folder (stat -c %g DIR)"),
    "shadow": ({"TEAM_GID": "42"}, 0, None,
               "TEAM_GID=42 is the image's system group 'shadow', whose rights everything run in the notebooks and "
               "SSH sessions would get; use the gid of the team's shared folder (1000 or above)"),
    "without root": ({"TEAM_GID": "4321"}, 1000, None,
                     "TEAM_GID=4321 needs a container started as root, which adds jovyan to the group in /etc/group, "
                     "and this one runs as uid 1000: drop --user, or unset TEAM_GID and pass the group with "
                     "--group-add 4321"),
    "a read-only /etc/group": ({"TEAM_GID": "4321"}, 0, READ_ONLY_GROUP,
                               "TEAM_GID=4321 means adding jovyan to group team in /etc/group, but /etc/group is not "
                               "writable for uid 0 (owner 0:0, mode 755): a writable root file system, or use "
                               "--group-add 4321 (without root) instead"),
    "no CHOWN": ({"TEAM_GID": "4321", "ENABLE_JUPYTER": "0", "SSH_AUTHORIZED_KEYS": KEY}, 0, NO_CHOWN,
                 "missing capabilities: CHOWN (for TEAM_GID=4321: groupadd and usermod write /etc/gshadow). Add them "
                 "(--cap-add; docs/security.md lists the minimal set), or start without root (--user 1000:100, no "
                 "SSH)"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_bad_team_gid_is_one_line(case: str) -> None:
    env, euid, system, message = REFUSALS[case]
    assert refusal(env, euid=euid, system=system) == message


def test_nb_gid_is_named_before_team_gid() -> None:
    assert refusal({"NB_GID": "42", "TEAM_GID": "4"}).startswith("NB_GID=42 is the image's system group 'shadow'")
