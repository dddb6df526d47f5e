"""The Helm merge the schema tests rely on: what it keeps, replaces and deletes (chart.merge)."""

from tests.deploy.chart import merge


def test_maps_merge_key_by_key() -> None:
    base = {"singleuser": {"uid": 1000, "fsGid": 100, "storage": {"type": "dynamic", "capacity": "10Gi"}}}
    override = {"singleuser": {"uid": 0, "storage": {"capacity": "20Gi"}}}
    assert merge(base, override) == {
        "singleuser": {"uid": 0, "fsGid": 100, "storage": {"type": "dynamic", "capacity": "20Gi"}},
    }


def test_lists_and_scalars_replace() -> None:
    base = {"tolerations": [{"key": "a"}, {"key": "b"}], "cmd": ["jupyterhub-singleuser", "--debug"]}
    override = {"tolerations": [{"key": "c"}], "cmd": "jupyterhub-singleuser"}
    assert merge(base, override) == {"tolerations": [{"key": "c"}], "cmd": "jupyterhub-singleuser"}


def test_null_deletes_the_key() -> None:
    base = {"hub": {"config": {"JupyterHub": {"authenticator_class": "dummy", "admin_access": True}}}}
    override = {"hub": {"config": {"JupyterHub": {"authenticator_class": None}}}, "absent": None}
    assert merge(base, override) == {"hub": {"config": {"JupyterHub": {"admin_access": True}}}}


def test_a_map_over_a_plain_value_replaces_it_and_inputs_stay_as_they_were() -> None:
    base = {"extraEnv": [], "keep": {"a": 1}}
    override = {"extraEnv": {"SSH_PORT": "2222"}}
    merged = merge(base, override)
    assert merged == {"extraEnv": {"SSH_PORT": "2222"}, "keep": {"a": 1}}
    merged["keep"]["a"] = 2
    merged["extraEnv"]["SSH_PORT"] = "22"
    assert base == {"extraEnv": [], "keep": {"a": 1}}
    assert override == {"extraEnv": {"SSH_PORT": "2222"}}
