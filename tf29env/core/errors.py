"""The one exception the command line turns into a single line on stderr and a non-zero exit."""

# The exit codes; docs/build.md#exit-codes explains each (tests/unit/tf29env/test_cli.py holds the two
# together). 1 is left to Python itself: a traceback is a bug.
EXIT_INPUT = 2  # bad input: a flag, a file, a base image, a tag, a registry address's form
EXIT_ENGINE = 3  # no Docker engine answers
EXIT_BUILD = 4  # a build step failed, or the size gate did
EXIT_TEST = 5  # the image does not hold what its tags claim, or the test suite failed
EXIT_PUSH = 6  # the registry is unreachable, refused a push or kept failing it
EXIT_VULNERABLE = 7  # audit: known vulnerabilities that the allowlist does not cover
EXIT_NO_DATABASE = 8  # audit: no vulnerability database answers (offline, blocked)
EXIT_UNSUPPORTED = 9  # audit --fail-on-eol: the base is past its end of support
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT


class UserError(Exception):
    """A problem the user can fix: bad input, a missing engine or image, a failed build step."""

    def __init__(self, message: str, exit_code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.exit_code = exit_code
