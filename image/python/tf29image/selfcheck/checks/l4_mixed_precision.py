"""Layer 4, mixed precision: the mixed_float16 policy on a tiny model with a float32 output
layer, one model.fit step (Keras wraps the optimizer in a LossScaleOptimizer) and one custom
training step with get_scaled_loss / get_unscaled_gradients. Runs on CPU too: there it proves
the Keras / TF mixed-precision stack of the image works, not that it is fast."""

from __future__ import annotations

import math
from typing import Any

from tf29image.selfcheck.checks import tfsupport
from tf29image.selfcheck.model import FAIL, PASS, Check

MAX_STEPS = 8  # the dynamic loss scale starts at 2**15 and halves on each overflow
FIX = ("the image's Keras / TensorFlow pair is broken: reinstall the pinned set with "
       "pip install -r /opt/tf29-env/requirements.lock")


def run() -> list[Check]:
    tf = tfsupport.tf()
    np = tfsupport.numpy()
    mp = tf.keras.mixed_precision
    tf.keras.utils.set_random_seed(0)  # the same tiny model at every start: reproducible numbers
    mp.set_global_policy("mixed_float16")
    try:
        model = build_model(tf)
        rng = np.random.RandomState(0)
        x = rng.rand(32, 16).astype("float32")
        y = rng.rand(32, 1).astype("float32")
        where = "GPU" if tfsupport.gpus() else "CPU (works; not fast there)"
        return [dtypes(model), fit_step(tf, model, x, y, where), custom_step(tf, model, x, y)]
    finally:
        mp.set_global_policy("float32")


def build_model(tf: Any) -> Any:
    keras = tf.keras
    inputs = keras.Input(shape=(16,))
    hidden = keras.layers.Dense(32, activation="relu", name="hidden")(inputs)
    logits = keras.layers.Dense(1, name="logits")(hidden)
    # The output in float32: a float16 softmax/loss is where mixed precision loses accuracy.
    outputs = keras.layers.Activation("linear", dtype="float32", name="output")(logits)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse")
    return model


def dtypes(model: Any) -> Check:
    variables = sorted({v.dtype.name for v in model.weights})
    hidden = model.get_layer("hidden")
    data = {"policy": model.get_layer("hidden").dtype_policy.name, "variable_dtypes": variables,
            "compute_dtype": hidden.compute_dtype, "hidden_output": hidden.output.dtype.name,
            "model_output": model.output.dtype.name}
    ok = variables == ["float32"] and data["compute_dtype"] == "float16" and data["hidden_output"] == "float16" \
        and data["model_output"] == "float32"
    return Check("mp.dtypes", PASS if ok else FAIL,
                 f"mixed_float16: variables {'/'.join(variables)}, compute {data['compute_dtype']}, hidden output "
                 f"{data['hidden_output']}, model output {data['model_output']}", None if ok else FIX, data)


def fit_step(tf: Any, model: Any, x: Any, y: Any, where: str) -> Check:
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    loss = float(history.history["loss"][0])
    wrapped = isinstance(model.optimizer, tf.keras.mixed_precision.LossScaleOptimizer)
    data = {"loss": loss, "optimizer": type(model.optimizer).__name__, "loss_scale": float(model.optimizer.loss_scale)
            if wrapped else None}
    ok = wrapped and math.isfinite(loss)
    return Check("mp.fit", PASS if ok else FAIL,
                 f"model.fit step on {where}: optimizer {data['optimizer']}, loss {loss:.4g}",
                 None if ok else FIX, data)


def custom_step(tf: Any, model: Any, x: Any, y: Any) -> Check:
    """Custom training steps with a dynamic loss scale. An overflow of the float16 gradients at the
    initial scale (2**15) is normal: the optimizer must then skip the step and halve the scale.
    PASS needs a step with finite unscaled gradients within MAX_STEPS, every step consistent."""
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(learning_rate=0.01))
    steps: list[dict[str, Any]] = []
    problems: list[str] = []
    for _ in range(MAX_STEPS):
        scale = float(opt.loss_scale)
        with tf.GradientTape() as tape:
            prediction = model(x, training=True)
            loss = tf.reduce_mean(tf.square(prediction - y))
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        finite = all(bool(tf.reduce_all(tf.math.is_finite(g))) for g in grads)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        after = float(opt.loss_scale)
        steps.append({"loss": float(loss), "loss_scale": scale, "scaled_loss": float(scaled), "grads_finite": finite,
                      "loss_scale_after": after})
        if not math.isclose(float(scaled), float(loss) * scale, rel_tol=1e-3):
            problems.append(f"scaled loss {float(scaled):g} is not loss x {scale:g}")
        if not finite and not after < scale:
            problems.append("non-finite gradients did not lower the loss scale")
        if prediction.dtype.name != "float32" or sorted({g.dtype.name for g in grads}) != ["float32"]:
            problems.append(f"output {prediction.dtype.name}, gradients {sorted({g.dtype.name for g in grads})}")
        if finite or problems:
            break
    last = steps[-1]
    data = {"steps": steps, "loss": last["loss"], "loss_scale": last["loss_scale"],
            "grads_finite": last["grads_finite"], "scaled_loss": last["scaled_loss"],
            "grad_dtypes": ["float32"] if not problems else None}
    ok = not problems and last["grads_finite"] and math.isfinite(last["loss"])
    overflowed = len(steps) - 1
    what = (f"custom step: loss {last['loss']:.4g} scaled by {last['loss_scale']:g}, unscaled gradients finite float32"
            + (f" (after {overflowed} overflow step(s) that halved the scale, as they should)" if overflowed else ""))
    if not ok:
        what = "custom step: " + ("; ".join(problems) or f"gradients still not finite after {len(steps)} steps")
    return Check("mp.custom_loop", PASS if ok else FAIL, what, None if ok else FIX, data)
