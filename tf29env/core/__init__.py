"""The ground floor every other part stands on: exit codes and the one error, the log callback, the
host's paths, the engine connection, the variants, the image's facts, its label keys and the output files."""
