"""Stellar on Tofino: an answer for another path is evidence of silence (path_feedback.p4:
answered, resent; v1model's fb_answered in tests/stellar/test_suspect_moved.py).

The harness is test_stellar_tna_silence_runs.py's: this leaf (leaf 1) tags its flow to leaf 2 on
uplink P, leaf 2's packets come in with the shim, answering P or this leaf's other path Q, and the
silence is 300 us.  A leaf that answered Q after P's unanswered period began is answering, only
not for P, so P is silent
- once leaf 2 has also sent for half the silence after the period began, without the run the run
  rule needs (a leaf that paused at the failure and resumed answering Q proves it at once);
- or once this leaf's flow resends on P after the period began (its receiver behind leaf 2
  acknowledged nothing for a retransmission timeout): `make demo ARCH=tna`'s failure, where the
  leaf behind the cut goes quiet 62 us after it, its own transfers done and the dead path's
  returning nothing, so no run of its packets can ever prove the silence.
A resend keeps the unanswered period however old (it probes nothing), so a timeout longer than
silence + hold still proves it.  Negative controls compile the program without each clause.  Guards: a resend proves nothing
while leaf 2 answered nothing after the period began, and a live path whose answers lag (but come
within the silence) is not silenced, resends or not.
"""
from __future__ import annotations

from pathlib import Path

from test_stellar_tna_reorder import _variant
from test_stellar_tna_silence_runs import _silent_tags

PATH_FEEDBACK_P4 = Path("p4src/tna/include/control/path_feedback.p4")
NO_RESEND_CLAUSE = ("(heard_after[31:31] == 0 || (resent_stamp != 0 && resent_after[31:31] == 0))",
                    "heard_after[31:31] == 0")
NO_HEARD_CLAUSE = ("(heard_after[31:31] == 0 || (resent_stamp != 0 && resent_after[31:31] == 0))",
                   "(resent_stamp != 0 && resent_after[31:31] == 0)")
NO_KEEP_PERIOD = ("            1: keep_period();\n", "")
NO_ANSWER_TEST = ("answer_stamp != 0 && answer_after != 0 && answer_after[31:31] == 0 &&", "")


def _quiet_after_the_cut(prog=None, b_answers_other=lambda t: t < 160,
                         hold_ns: int = 2_000_000) -> list[int]:
    """The demo's remote failure: both talk every 4 us, leaf 2 answering P until t=100 (P's
    remote link is cut) and this leaf's other path Q until it goes quiet at t=160; this leaf's
    flow on P gets no acknowledgement and stops at t=140, then resends at t=600 (its timeout)
    and keeps sending."""
    return _silent_tags(prog, lambda t: t % 4 == 0 and (t < 140 or t >= 600),
                        lambda t: t % 4 == 0 and t < 160, lambda t: t < 100, until=700,
                        b_answers_other=b_answers_other, a_resends=lambda t: t == 600,
                        hold_ns=hold_ns)


def test_a_resend_after_the_leaf_answered_another_path_proves_the_silence():
    silent = _quiet_after_the_cut()
    assert silent and silent[0] == 600                             # the resend's own tag


def test_negative_control_without_the_resend_clause_the_quiet_leaf_proves_nothing(tmp_path_factory):
    assert _quiet_after_the_cut(_variant(tmp_path_factory, NO_RESEND_CLAUSE, PATH_FEEDBACK_P4)) == []


def test_a_resend_proves_nothing_while_the_leaf_answered_nothing_after_the_period_began():
    """Leaf 2 answers nothing after t=100 (no Q answers): it is quiet, not answering."""
    assert _quiet_after_the_cut(b_answers_other=lambda t: t < 100) == []


def test_negative_control_without_the_answer_test_a_resend_alone_silences_the_path(tmp_path_factory):
    prog = _variant(tmp_path_factory, NO_ANSWER_TEST, PATH_FEEDBACK_P4)
    assert _quiet_after_the_cut(prog, b_answers_other=lambda t: t < 100)[:1] == [600]


def test_a_resend_after_silence_and_hold_proves_the_silence_it_does_not_probe():
    """A 150 us hold: the unanswered period (from t=104) is past silence + hold at t=554, before
    the resend at t=600 (a timeout longer than silence + hold); the resend keeps the period."""
    assert _quiet_after_the_cut(hold_ns=150_000)[:1] == [600]


def test_negative_control_when_a_resend_probes_it_starts_a_new_period(tmp_path_factory):
    prog = _variant(tmp_path_factory, NO_KEEP_PERIOD, PATH_FEEDBACK_P4)
    assert _quiet_after_the_cut(prog, hold_ns=150_000) == []


def _answers_other_after_a_pause(prog=None) -> list[int]:
    """v1model's case: this leaf sends on P every 4 us throughout; P's remote link is cut at
    t=90 while leaf 2 is quiet (t=100..500); when it resumes it answers Q, never P."""
    return _silent_tags(prog, lambda t: t % 4 == 0, lambda t: t % 4 == 0 and (t < 100 or t >= 500),
                        lambda t: t < 90 and t % 8 == 0, until=700,
                        b_answers_other=lambda t: t % 8 == 4 or t >= 500)


def test_a_leaf_that_answers_another_path_after_a_pause_silences_the_dead_one():
    silent = _answers_other_after_a_pause()
    assert silent and 500 <= silent[0] <= 510                      # at its first answer


def test_negative_control_without_the_heard_clause_the_proof_waits_for_a_run(tmp_path_factory):
    silent = _answers_other_after_a_pause(_variant(tmp_path_factory, NO_HEARD_CLAUSE, PATH_FEEDBACK_P4))
    assert silent and silent[0] >= 650                             # the new run's half silence


def _lagging_answers(stop_at: int = 10_000) -> list[int]:
    """Both talk every 4 us; leaf 2 answers Q on every frame but P only every 250 us (less than
    the silence: its first frame from each multiple of 250 on), until ``stop_at``; this leaf's
    flow on P resends every 100 us."""
    return _silent_tags(None, lambda t: t % 4 == 0, lambda t: t % 4 == 0,
                        lambda t: t % 250 < 4 and t < stop_at, until=900,
                        b_answers_other=lambda t: True, a_resends=lambda t: t % 100 == 50)


def test_a_live_path_whose_answers_lag_is_not_silenced():
    assert _lagging_answers() == []


def test_control_the_same_path_is_silenced_once_its_answers_stop():
    silent = _lagging_answers(stop_at=300)
    assert silent and 556 <= silent[0] <= 564                      # the silence after t=252
