"""The pieces every side stands on: no Horovod; TensorFlow only through
compat.

  cli               flag parsing and one-line errors
  config            the run's settings as one frozen value
  compat            how the TensorFlow and Python versions differ
  paths             the nearest existing part of a path the user gave
  signals           SIGTERM and SIGINT as a request to stop cleanly
  progress          progress bookkeeping and the step log
  checkpoint_state  the newest checkpoint's step, read without TensorFlow
  json_files        a JSON file written whole or not at all (no TensorFlow)
  results           results.json and the other JSON files rank 0 writes
  model_dir_claim   a model directory claimed by the one job that trains in it
"""
