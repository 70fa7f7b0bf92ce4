"""The control plane's RPC messages and networks (``model.rpc``) call by call: each message's
fields and defaults, its connection (sender, receiver) and the leader session it is found by,
the network's list right after each send, take and loss, Pekko's per-connection order, and how a
fingerprint counts the messages in flight."""

from __future__ import annotations

import threading

import attrs
import pytest

from model import rpc
from model.fingerprint import fingerprint_of
from model.rpc import (MESSAGE_TYPES, AllocationID, CancelTask, ConnectionOrderedNetwork, DeclareResourceRequirements,
                       ExecutionAttemptID, FreeSlot, HeartbeatRequest, HeartbeatResponse, OfferSlots, OfferSlotsAnswer,
                       RegisterTaskExecutor, RegistrationResponse, RequestSlot, RequirementsAcknowledged, RpcNetwork,
                       SequenceNumber, SlotRequestAnswer, SubmitTask, checks_fencing_tokens, connection,
                       receiver_session)

# every message type once, each field a different number (te 1, inc 2, tokens 30 / 40, ...)
REG = RegisterTaskExecutor(te=1, inc=2, token=30, slot_report=((0, None, None),))
RESP = RegistrationResponse(te=1, token=30)
DECL = DeclareResourceRequirements(token=30, job_token=40, slots=2, seq=5)
ACK = RequirementsAcknowledged(token=30, job_token=40, seq=5)
REQ = RequestSlot(te=1, token=30, slot=0, allocation=7, job_token=40)
ANS = SlotRequestAnswer(te=1, token=30, slot=0, allocation=7, ok=True)
OFFER = OfferSlots(te=1, inc=2, job_token=40, slots=((0, 7),))
OFFER_ANS = OfferSlotsAnswer(te=1, job_token=40, accepted=(7,), rejected=())
SUBMIT = SubmitTask(te=1, job_token=40, allocation=7, subtasks=(3,))
FREE = FreeSlot(te=1, job_token=40, allocation=7)
CANCEL = CancelTask(te=1, job_token=40, subtasks=(3,))
HB_RM = HeartbeatRequest(sender="rm", token=30, te=1, inc=2)
HB_JM = HeartbeatRequest(sender="jm", token=40, te=1, inc=2, payload=(7,))
HBR_RM = HeartbeatResponse(receiver="rm", token=30, te=1, inc=2, payload=((0, 7, 40),))
HBR_JM = HeartbeatResponse(receiver="jm", token=40, te=1, inc=2)


def test_the_message_types():
    assert MESSAGE_TYPES == (RegisterTaskExecutor, RegistrationResponse, DeclareResourceRequirements,
                             RequirementsAcknowledged, RequestSlot, SlotRequestAnswer, OfferSlots, OfferSlotsAnswer,
                             SubmitTask, FreeSlot, CancelTask, HeartbeatRequest, HeartbeatResponse)


def test_the_defaults():
    assert DeclareResourceRequirements(30, 40, 2) == DeclareResourceRequirements(30, 40, 2, 0)
    assert DeclareResourceRequirements(30, 40, 2).seq == 0 and type(DeclareResourceRequirements(30, 40, 2).seq) is int
    assert SlotRequestAnswer(1, 30, 0, 7, False).holder is None
    assert HeartbeatRequest("rm", 30, 1, 2).payload == () and type(HeartbeatRequest("rm", 30, 1, 2).payload) is tuple
    assert HeartbeatResponse("rm", 30, 1, 2).payload == ()
    assert type(HeartbeatResponse("rm", 30, 1, 2).payload) is tuple


def test_the_fresh_identifiers_are_ints_without_a_dict():
    for cls in (AllocationID, ExecutionAttemptID, SequenceNumber):
        x = cls(5)
        assert x == 5 and isinstance(x, int) and not hasattr(x, "__dict__")
        assert cls.__slots__ == ()


@pytest.mark.parametrize("m, sender, receiver, session", [
    (REG, ("te", 1), ("rm", 30), ("rm", 30)),
    (RESP, ("rm", 30), ("te", 1), None),
    (DECL, ("jm", 40), ("rm", 30), ("rm", 30)),
    (ACK, ("rm", 30), ("jm", 40), ("jm", 40)),
    (REQ, ("rm", 30), ("te", 1), None),
    (ANS, ("te", 1), ("rm", 30), ("rm", 30)),
    (OFFER, ("te", 1), ("jm", 40), ("jm", 40)),
    (OFFER_ANS, ("jm", 40), ("te", 1), None),
    (SUBMIT, ("jm", 40), ("te", 1), None),
    (FREE, ("jm", 40), ("te", 1), None),
    (CANCEL, ("jm", 40), ("te", 1), None),
    (HB_RM, ("rm", 30), ("te", 1), None),
    (HB_JM, ("jm", 40), ("te", 1), None),
    (HBR_RM, ("te", 1), ("rm", 30), ("rm", 30)),
    (HBR_JM, ("te", 1), ("jm", 40), ("jm", 40)),
])
def test_each_messages_connection_and_receiver_session(m, sender, receiver, session):
    assert connection(m) == (sender, receiver)
    assert receiver_session(m) == session


def test_only_fenced_receivers_have_a_session():
    # a subclass of a message type is not that type (the connection is by exact type)
    @attrs.frozen
    class Other:
        te: int
        job_token: int

    assert connection(Other(1, 40)) == (("jm", 40), ("te", 1))
    assert receiver_session(Other(1, 40)) is None


def test_a_new_network_is_empty():
    n = RpcNetwork()
    assert n.in_flight == [] and type(n.in_flight) is list
    assert RpcNetwork().in_flight is not n.in_flight
    assert RpcNetwork.__slots__ == ("in_flight",) and ConnectionOrderedNetwork.__slots__ == ()


def test_the_network_keeps_the_sending_order_and_delivers_any_message():
    n = RpcNetwork()
    for m in (HB_RM, DECL, REG, HB_RM):
        n.send(m)
    assert n.in_flight == [HB_RM, DECL, REG, HB_RM]
    assert [n.deliverable(i) for i in range(4)] == [True] * 4
    assert n.take(2) == REG
    assert n.in_flight == [HB_RM, DECL, HB_RM]
    assert n.take(0) == HB_RM
    assert n.in_flight == [DECL, HB_RM]


def test_a_dead_task_executors_messages_are_lost():
    n = RpcNetwork()
    other = RegisterTaskExecutor(te=2, inc=0, token=30, slot_report=())
    for m in (REG, DECL, other, ACK, HB_JM, FREE, HeartbeatRequest("rm", 30, 0, 0)):
        n.send(m)
    n.drop_for_te(1)
    assert n.in_flight == [DECL, other, ACK, HeartbeatRequest("rm", 30, 0, 0)]
    n.drop_for_te(0)
    assert n.in_flight == [DECL, other, ACK]
    n.drop_for_te(7)
    assert n.in_flight == [DECL, other, ACK]


def test_a_fingerprint_counts_the_networks_messages_as_a_multiset():
    assert RpcNetwork.FINGERPRINT_MULTISET == ("in_flight",)
    a, b = RpcNetwork(), RpcNetwork()
    for m in (HB_RM, DECL, REG):
        a.send(m)
    for m in (REG, HB_RM, DECL):
        b.send(m)
    assert fingerprint_of(a) == fingerprint_of(b)
    b.take(0)
    assert fingerprint_of(a) != fingerprint_of(b)


def test_a_fingerprint_counts_the_ordered_networks_list_as_it_is():
    assert ConnectionOrderedNetwork.FINGERPRINT_MULTISET == ()
    a, b = ConnectionOrderedNetwork(), ConnectionOrderedNetwork()
    a.in_flight = [HB_RM, RESP]
    b.in_flight = [RESP, HB_RM]
    assert fingerprint_of(a) != fingerprint_of(b)


def _keys(n):
    return [connection(m) for m in n.in_flight]


def test_an_ordered_send_returns():
    """A message that sorts before every one in flight walks to the front and is inserted there:
    the call returns (run in a thread, so that a send that never returns fails here)."""
    n = ConnectionOrderedNetwork()
    n.send(HB_RM)
    n.send(REG)
    t = threading.Thread(target=n.send, args=(DECL,), daemon=True)
    t.start()
    t.join(2.0)
    assert not t.is_alive(), "ConnectionOrderedNetwork.send did not return"
    assert n.in_flight == [DECL, HB_RM, REG]


def test_the_ordered_network_groups_its_messages_by_connection_in_sending_order():
    n = ConnectionOrderedNetwork()
    hb2 = HeartbeatRequest(sender="rm", token=30, te=1, inc=3)
    n.send(HB_RM)                      # rm30 -> te1
    assert n.in_flight == [HB_RM]
    n.send(REG)                        # te1 -> rm30 (sorts last)
    assert n.in_flight == [HB_RM, REG]
    n.send(DECL)                       # jm40 -> rm30 (sorts first)
    assert n.in_flight == [DECL, HB_RM, REG]
    n.send(hb2)                        # rm30 -> te1, behind the first
    assert n.in_flight == [DECL, HB_RM, hb2, REG]
    n.send(RESP)                       # rm30 -> te1, behind both
    assert n.in_flight == [DECL, HB_RM, hb2, RESP, REG]
    n.send(ACK)                        # rm30 -> jm40: before rm30 -> te1
    assert n.in_flight == [DECL, ACK, HB_RM, hb2, RESP, REG]
    assert _keys(n) == sorted(_keys(n))
    assert [n.deliverable(i) for i in range(6)] == [True, True, True, False, False, True]
    assert n.take(2) == HB_RM
    assert n.in_flight == [DECL, ACK, hb2, RESP, REG]
    assert [n.deliverable(i) for i in range(5)] == [True, True, True, False, True]


def test_a_lost_message_does_not_hold_the_next_one_back():
    n = ConnectionOrderedNetwork()
    for m in (HB_RM, RESP, REQ):
        n.send(m)
    assert [n.deliverable(i) for i in range(3)] == [True, False, False]
    n.take(0)  # lost or delivered: the next of the connection may go
    assert n.in_flight == [RESP, REQ]
    assert [n.deliverable(i) for i in range(2)] == [True, False]


def test_fencing_tokens_are_checked():
    assert checks_fencing_tokens() is True
    assert rpc.checks_fencing_tokens() is True
