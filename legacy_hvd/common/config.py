"""The run's settings as one frozen value, made once from the parsed flags in
main: nothing below reads FLAGS, so the model, input and hooks can be built
and tested with a `Config(...)` written by hand."""
import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Config:
  batch_size: int = 64
  lr: float = 0.001
  lr_scaling: str = "linear"
  warmup_epochs: float = 0.0
  epochs: int = 10
  max_steps: Optional[int] = None
  optimizer: str = "adam"
  adam_epsilon: Optional[float] = None   # None: the implementation's default
  model_dir: str = "runs/cifar10"
  step_log: Optional[str] = None
  seed: int = 1234
  log_every_n_steps: int = 50
  save_checkpoints_steps: int = 500
  data_dir: Optional[str] = None
  augment: bool = False
  synthetic: bool = False
  fp16_allreduce: bool = False
  backward_passes_per_step: int = 1
  cpu_affinity: bool = True
  require_gpu: bool = False
  intra_op_threads: int = 0
  inter_op_threads: int = 0
  deterministic: bool = False
  horovod: bool = True
  optimizer_impl: str = "v1"       # TF2 path only: v1 or keras
  eval_every_n_steps: int = 0      # 0: the test set only at the end
  collective_timeout: int = 30     # tf.distribute path only: seconds

  @classmethod
  def from_flags(cls, flag_values):
    """Takes every field from the flag of the same name that is defined."""
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{name: flag_values[name].value
                  for name in flag_values if name in known})

  def as_dict(self):
    return dataclasses.asdict(self)
