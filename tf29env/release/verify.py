"""`build.py test`'s first check: every tag of the image claims only what the image holds, its
labels agree with what it holds (both read again from a fresh container, not from the build), and
its Python packages' requirements are met (`pip check`)."""


from docker import DockerClient

from tf29env.core import engine, labels
from tf29env.core.errors import EXIT_TEST, UserError
from tf29env.core.facts import probe
from tf29env.core.log import Log
from tf29env.imagebuild import devcontainer
from tf29env.release import tags


def verify(client: DockerClient, image: str, log: Log) -> list[str]:
    """Check image's tags and labels; the tags checked. Raises (exit 5) listing every problem."""
    attrs = engine.inspect(client, image)
    facts = probe(client, image)
    image_labels = labels.of_image(attrs)
    problems = labels.facts_problems(facts, image_labels)
    problems.extend(devcontainer.metadata_problems(attrs))
    status, output = engine.run_command(client, image, [engine.IMAGE_PYTHON, "-m", "pip", "check"])
    if status != 0:
        problems.append(f"pip check: {' | '.join(output.strip().splitlines()[-3:])}")
    checked = []
    for ref in attrs.get("RepoTags") or []:
        claim = tags.check(ref.rsplit(":", 1)[1], facts, image_labels)
        if claim is None:
            continue
        checked.append(ref)
        problems.extend(f"{ref}: {problem}" for problem in claim.problems)
    if problems:
        raise UserError(f"{image} is not what it claims: " + "; ".join(problems), EXIT_TEST)
    shown = ", ".join(checked) or "(none in the scheme)"
    log(f"==> {len(checked)} tags of {image} verified against the image: {shown}")
    return checked
