"""docs/settings.md's tables and the sentence on the limits, rendered from startup/settings.py's table:

  python3 -m tf29image.startup.settings_docs --markdown                print the generated part
  python3 -m tf29image.startup.settings_docs --update docs/settings.md  rewrite it between its markers

(on the host: PYTHONPATH=image/python; tests/unit/tf29image/startup/test_settings_docs.py fails where the
file differs from what this renders.)
"""

import sys
from typing import List, Sequence  # python 3.8: no list[...]

from tf29image.startup.settings import READ, RUNTIME_SETTINGS, USER_SETTINGS, Setting
from tf29image.startup.values import FILE_LIMITS, KINDS

BEGIN = "<!-- generated: python3 -m tf29image.startup.settings_docs --update docs/settings.md -->"
END = "<!-- end of the generated part -->"


def size(number: int) -> str:
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if number >= factor and number % factor == 0:
            return f"{number // factor} {unit}"
    return str(number)


def limits_sentence() -> str:
    """What the paragraph above the table says of the limits, from the kinds the table uses."""
    used = [kind for kind in KINDS if any(item.kind is kind for item in READ)]
    parts: List[str] = []
    for limit in sorted({kind.limit for kind in used}):
        nouns = [kind.noun for kind in used if kind.limit == limit]
        said = ", ".join(nouns[:-1]) + " and " + nouns[-1] if len(nouns) > 1 else nouns[0]
        parts.append(f"{size(limit) if limit > 4096 else limit} {'characters ' if not parts else ''}for {said}")
    files = FILE_LIMITS
    return (f"{', '.join(parts)}; a token file may hold at most {size(files['JUPYTER_TOKEN_FILE'])}, a keys file "
            f"{size(files['SSH_AUTHORIZED_KEYS_FILE'])}.")


def rows(table: Sequence[Setting]) -> List[str]:
    """The Markdown rows: one per setting with help; those without share the row above."""
    grouped: List[List[Setting]] = []
    for item in table:
        if item.help or not grouped:
            grouped.append([item])
        else:
            grouped[-1].append(item)
    lines = []
    for group in grouped:
        names = " / ".join(item.shown_name or f"`{item.name}`" for item in group)
        defaults = [item.shown_default if item.shown_default is not None else (f"`{item.default}`" if item.default
                                                                                 else "") for item in group]
        default = " / ".join(defaults).strip() if any(defaults) else ""
        lines.append("|" + "|".join(f" {cell} " if cell else " " for cell in (names, default, group[0].help)) + "|")
    return lines


def markdown() -> str:
    """docs/settings.md's generated part: the limits, the settings' table and the runtime's."""
    head = "| Variable | Default | Meaning |\n| --- | --- | --- |\n"
    return (f"{BEGIN}\nA value longer than any real one is refused too: {limits_sentence()}\n\n"
            f"{head}{''.join(line + chr(10) for line in rows(USER_SETTINGS))}\n"
            "Set by the image, the hub's spawner, Slurm or Apptainer, and read as they leave them:\n\n"
            f"{head}{''.join(line + chr(10) for line in rows(RUNTIME_SETTINGS))}{END}\n")


def updated(document: str) -> str:
    """DOCUMENT with its generated part (between BEGIN and END) rendered anew."""
    start, end = document.index(BEGIN), document.index(END) + len(END) + 1
    return document[:start] + markdown() + document[end:]


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if len(argv) == 2 and argv[0] == "--update":
        with open(argv[1], encoding="utf-8") as file:
            document = file.read()
        with open(argv[1], "w", encoding="utf-8") as file:
            file.write(updated(document))
        return 0
    print("usage: python3 -m tf29image.startup.settings_docs --markdown | --update docs/settings.md", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
