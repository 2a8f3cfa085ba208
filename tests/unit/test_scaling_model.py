"""The scaling model's formulas (tools/scaling_model.py), by hand: what the
network does to a step, from the gradients' bytes to the efficiency on 256
hosts (the emulated links it is checked against:
tests/hosts/test_network.py)."""
import pytest

from tools import scaling_model as sm

pytestmark = pytest.mark.one_stack


def test_gradient_bytes_are_the_models_float32_parameters():
  sizes = sm.gradient_bytes()
  assert sizes["dense/weights"] == 4 * 16 * 16 * 32 * 10
  rounds = sm.fused_rounds()
  assert sum(grads for grads, _ in rounds) == sum(sizes.values())
  assert rounds[0] == (0, 12)   # the stop flags alone, every batch
  assert len(sm.unfused_rounds()) == len(sizes) + 1   # and the stop flag


def test_ring_allreduce_time_by_hand():
  # 1,000,000 bytes over 4 ranks at 8 Mbit/s of payload: 2 * 3/4 of the
  # bytes at 1 MB/s = 1.5 s, plus 6 one-way latencies of 1 ms.
  mbit = 8 / sm.PAYLOAD_SHARE
  assert sm.ring_ms(1e6, 4, mbit, 1.0) == pytest.approx(1500 + 6)
  assert sm.ring_ms(1e6, 1, mbit, 1.0) == 0
  # Bandwidth term bounded by 2 x bytes; latency term grows with ranks.
  assert sm.ring_ms(1e6, 256, mbit, 0.0) < 2000
  assert sm.ring_ms(0.0, 256, mbit, 1.0) == 0   # nothing to send


def test_knobs_change_the_terms_they_should():
  inputs = sm.Inputs(compute_ms=10.0, overhead_ms=1.0,
                     rounds=[(1e6, 0)], unfused_rounds=[(5e5, 0), (5e5, 0)],
                     fp16_ms=0.25)
  base = sm.Setting(link_mbit=100, latency_ms=0.5)
  comm = sm.comm_ms(inputs, 8, 1, base)
  fp16 = sm.comm_ms(inputs, 8, 1, base._replace(fp16=True))
  wire = sm.ring_ms(1e6, 8, 100, 0)
  assert comm - fp16 == pytest.approx(wire / 2 - 0.25)
  # No fusion: one more round's overhead and latencies (its allreduce's
  # ring and its negotiation's), the same bytes.
  assert sm.comm_ms(inputs, 8, 1, base._replace(fusion=False)) == \
      pytest.approx(comm + 1.0 + 2 * 14 * 0.5)
  # A 11 ms cycle: the step's first gradients wait 5 ms more, once.
  assert sm.comm_ms(inputs, 8, 1, base._replace(cycle_ms=11.0,
                                                fusion=False)) == \
      pytest.approx(comm + 1.0 + 2 * 14 * 0.5 + 5.0)
  assert sm.step_ms(inputs, 8, 1, base._replace(accumulate=2)) == \
      pytest.approx(10 + comm / 2)
  # Hierarchical: the gradients' ring over 4 hosts instead of 16 ranks; the
  # negotiation's cache bits still go round all 16.
  assert sm.comm_ms(inputs, 4, 4, base._replace(hierarchical=True)) == \
      pytest.approx(1.0 + sm.ring_ms(1e6, 4, 100, 0.5) + 2 * 15 * 0.5)
  # One host: no wire, only Horovod's own cost.
  assert sm.comm_ms(inputs, 1, 4, base) == 1.0


def test_negotiation_is_measured_with_the_wire_taken_away():
  # 2x1 over the unlimited link: 4.5 ms of it is one rank's compute (1x1),
  # 3 ms its allreduces, the other 3 ms the three rounds' negotiation.
  runs = [{"case": "1x1", "link": "loopback", "step_ms": 4.5, "comm_ms": 0},
          {"case": "2x1", "link": "unlimited", "step_ms": 10.5,
           "comm_ms": 3.0},
          {"case": "2x1-fp16", "link": "unlimited", "step_ms": 11.25,
           "comm_ms": 3.5}]
  inputs = sm.inputs_from(runs)
  assert len(inputs.rounds) == 3
  assert (inputs.compute_ms, inputs.overhead_ms, inputs.negotiation_ms,
          inputs.fp16_ms) == (4.5, 1.0, 1.0, 0.75)
  link = sm.Setting(1000, 0.25)
  wire = sum(sm.ring_ms(g + o, 2, 1000, 0.25) for g, o in inputs.rounds)
  # Per round: overhead, wire and ring latencies, negotiation and its own
  # ring's 2 latencies.
  assert sm.comm_ms(inputs, 2, 1, link) == pytest.approx(
      3 * (1.0 + 1.0 + 2 * 0.25) + wire)
  assert sm.negotiation_ms(inputs, 2, 1, link) == pytest.approx(
      3 * (1.0 + 2 * 0.25))
  # Accumulating 2 batches: the stop flag's round still every batch.
  flag = 1.0 + 1.0 + 4 * 0.25 + sm.ring_ms(12, 2, 1000, 0)
  assert sm.comm_ms(inputs, 2, 1, link._replace(accumulate=2)) == \
      pytest.approx(flag + (sm.comm_ms(inputs, 2, 1, link) - flag) / 2)
  with pytest.raises(ValueError, match="2x1 over unlimited"):
    sm.inputs_from(runs[:1])


def test_efficiency_falls_with_hosts_and_rises_with_bandwidth():
  inputs = sm.Inputs(compute_ms=9.0, overhead_ms=1.8,
                     rounds=sm.fused_rounds(), unfused_rounds=None)
  slow, fast = sm.Setting(100, 0.0125), sm.Setting(1000, 0.0125)
  hosts = sm.hosts_axis(256)
  assert hosts[0] == 1 and hosts[-1] == 256
  slow_curve = [sm.efficiency(inputs, n, 1, slow) for n in hosts]
  assert slow_curve[0] == 1.0
  assert all(a >= b for a, b in zip(slow_curve, slow_curve[1:]))
  assert all(sm.efficiency(inputs, n, 1, fast) > e
             for n, e in zip(hosts[1:], slow_curve[1:]))
  # The emulated hosts: one core each, round robin over the machine's.
  assert sm.emulated_share(2, 1, 2) == 1
  assert sm.emulated_share(4, 1, 2) == 2
  assert sm.emulated_share(3, 2, 2) == 4
