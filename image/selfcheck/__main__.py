"""Minimal self-check: import TensorFlow and log the devices it sees."""

import argparse
import sys


def main() -> int:
    parser = argparse.ArgumentParser(prog="selfcheck")
    parser.add_argument("--mode", choices=["warn", "strict"], default="warn")
    args = parser.parse_args()
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    print(f"selfcheck: TensorFlow {tf.__version__}, GPUs: {len(gpus)}", flush=True)
    return 1 if args.mode == "strict" and not gpus else 0


if __name__ == "__main__":
    sys.exit(main())
