"""The one exception the command line turns into a single line on stderr and a non-zero exit."""

# The exit codes, as documented in docs/build.md. 1 is left to Python itself (a bug: traceback).
EXIT_INPUT = 2  # bad input: a flag, a file, a base image, a tag, a malformed registry address
EXIT_ENGINE = 3  # no Docker engine answers
EXIT_BUILD = 4  # a build step failed, or the size gate did
EXIT_TEST = 5  # the image does not hold what its tags claim, or the test suite failed
EXIT_PUSH = 6  # the registry refused or kept failing a push
EXIT_VULNERABLE = 7  # audit: known vulnerabilities that the allowlist does not cover
EXIT_NO_DATABASE = 8  # audit: no vulnerability database answers (offline, blocked)


class UserError(Exception):
    """A problem the user can fix: bad input, a missing engine or image, a failed build step."""

    def __init__(self, message: str, exit_code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.exit_code = exit_code
