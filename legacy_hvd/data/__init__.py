"""CIFAR-10 for legacy-hvd: finding it, reading it, and feeding it to TF.

    from legacy_hvd.data import cifar10, pipeline
    data = cifar10.load(config.data_dir)          # numpy, validated
    dataset = pipeline.train_batches(data.train_images, data.train_labels, ...)

Modules: cifar10 (the reader), embedded (the generated stand-in), download
(the official archive), pipeline (tf.data over the arrays); `python -m
legacy_hvd.data download --dest DIR` fetches the official archive.
Nothing here imports Horovod: ranks and sizes come in as plain ints.
"""
