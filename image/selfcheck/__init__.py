"""GPU / FP16 self-check (placeholder until the full layered check lands)."""
