"""Building the image: the context, the Dockerfile build, the stand-in bases, the generated final layer."""
