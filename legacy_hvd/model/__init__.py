"""The model side: the CNN, its maths and its scoring, in both APIs. No
Horovod, no runtime: ranks and sizes come in as plain ints.

  cnn               the CNN and its loss
  keras_cnn         the same CNN, loss and optimizer as Keras objects
  keras_compat      how the Keras behind tf.keras differs across the stacks
  optimizers        the optimizers behind --optimizer, in both APIs
  schedule          the learning rate's scaling with the workers, its warm-up
  scoring           test-set scoring: per-class counts summed across ranks
  finite_gradients  the check that the averaged gradients are finite
"""
