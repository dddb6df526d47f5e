"""The bench's one-line failure (printed without a traceback, exit 2; tf29env's UserError keeps its code)."""


class BenchError(Exception):
    """Something the bench cannot measure: bad input, a missing image, a container that died."""
