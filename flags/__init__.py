"""absl flag definitions for legacy-hvd, one module per concern.

    from flags import data, performance, training
    training.define_training(); data.define_data(); performance.define_performance()

Each `define_*()` registers its flags and their validators on absl's global
FLAGS; an entry point calls the ones it needs before `app.run`, then converts
the parsed values once into a frozen `legacy_hvd.config.Config`.
"""
