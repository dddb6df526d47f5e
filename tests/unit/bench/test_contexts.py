"""bench.contexts and bench.slim: the changed copies of build.py's real build context (the
checkout's files, read through tf29env.imagebuild.context.write); the working tree itself is never written."""

import io
import tarfile

import pytest

from bench import contexts, slim
from tf29env.core.paths import REPO


def members(tar: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        return {info.name: (archive.extractfile(info).read() if info.isfile() else b"")  # type: ignore[union-attr]
                for info in archive.getmembers()}


@pytest.fixture(scope="module")
def original() -> bytes:
    return contexts.standard()


@pytest.mark.parametrize("case", sorted(contexts.TOUCHES))
def test_a_warm_case_changes_exactly_its_file(original: bytes, case: str) -> None:
    before, after = members(original), members(contexts.touched(original, case, "run 1"))
    name = contexts.TOUCHES[case]
    assert set(after) == set(before)
    assert after[name] == before[name] + b"# bench: run 1\n"
    assert {n: d for n, d in after.items() if n != name} == {n: d for n, d in before.items() if n != name}
    assert (REPO / name).read_bytes() == before[name]  # the checkout is untouched


def test_each_run_gets_its_own_content(original: bytes) -> None:
    name = contexts.TOUCHES["entrypoint"]
    first = members(contexts.touched(original, "entrypoint", "1"))[name]
    second = members(contexts.touched(original, "entrypoint", "2"))[name]
    assert first != second


def test_metadata_is_kept(original: bytes) -> None:
    name = contexts.TOUCHES["selfcheck"]
    with tarfile.open(fileobj=io.BytesIO(contexts.touched(original, "selfcheck", "x"))) as archive:
        info = archive.getmember(name)
    with tarfile.open(fileobj=io.BytesIO(original)) as archive:
        before = archive.getmember(name)
    assert (info.mode, info.uid, info.mtime) == (before.mode, before.uid, before.mtime)
    assert info.size == before.size + len(b"# bench: x\n")


def test_a_file_without_a_final_newline_gets_one() -> None:
    assert contexts.append_comment("m")(b"echo hi") == b"echo hi\n# bench: m\n"


def test_an_unknown_member_is_refused(original: bytes) -> None:
    with pytest.raises(KeyError, match="not a file"):
        contexts.replace_member(original, "image/no-such-file", lambda data: data)


def test_slim_dockerfile_removes_before_the_builds_own_checks() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert slim.SLIM_LINE not in text, "the Dockerfile does it already: nothing left to try"
    slimmed = slim.slim_dockerfile(text)
    # The removal sits between the pip install and `pip check` + the import line of the same RUN.
    install = slimmed.index("-r /opt/tf29-env/requirements.lock")
    import_line = slimmed.index('python -c "import tensorflow')
    assert install < slimmed.index(slim.SLIM_LINE) < slimmed.index(" && pip check") < import_line
    # Only an addition: taking it out gives the Dockerfile back.
    assert slimmed.replace(slim.SLIM_LINE, "") == text


def test_slim_dockerfile_needs_exactly_one_anchor() -> None:
    with pytest.raises(ValueError, match="expected exactly one"):
        slim.slim_dockerfile("FROM scratch\n")
    with pytest.raises(ValueError, match="has 2"):
        slim.slim_dockerfile(slim.ANCHOR * 2)

