"""The model side: the CNN, its maths and its scoring, in both APIs. Never
imports Horovod nor the runtime: ranks and sizes come in as plain ints.

  cnn               the CNN (conv 3x3x32 + ReLU, 2x2 max-pool, flatten,
                    dense 10) and its loss
  keras_cnn         the same CNN, loss and optimizer as Keras objects
  keras_compat      the one place that knows how the Keras behind tf.keras
                    differs across the stacks
  optimizers        the optimizers behind --optimizer, in both APIs
  schedule          the learning rate's scaling with the number of workers,
                    its linear warm-up
  scoring           test-set scoring: per-class counts that add up across
                    ranks
  finite_gradients  the check that the averaged gradients are finite
"""
