"""The one exception the command line turns into a single line on stderr and a non-zero exit."""


class UserError(Exception):
    """A problem the user can fix: bad input, a missing engine or image, a failed build step.

    ``exit_code`` follows the table in the README (2 bad input, 3 engine, 4 build, 5 test, 6 push).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
