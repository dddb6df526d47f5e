"""The engine-side pieces of an image build: the context, its CAs and network inputs, one build on the
engine, the stand-in bases and the Dev Containers label."""
