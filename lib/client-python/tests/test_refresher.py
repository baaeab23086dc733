"""SPEC L5, held by LeaseRefresher; its wait is injected, so nothing here sleeps."""

from __future__ import annotations

import threading
from typing import Callable

import pytest

from session_lineage import LeaseRefresher


def scripted(results: list[object]) -> tuple[Callable[[], bool], list[int]]:
    """refresh() answering `results` in order (an exception instance is raised), then True."""
    calls: list[int] = []

    def refresh() -> bool:
        calls.append(1)
        r = results.pop(0) if results else True
        if isinstance(r, BaseException):
            raise r
        return bool(r)

    return refresh, calls


def waits(log: list[float], stop_after: int | None = None) -> Callable[[float], bool]:
    def wait(interval: float) -> bool:
        log.append(interval)
        return stop_after is not None and len(log) >= stop_after

    return wait


@pytest.mark.parametrize(("ttl", "interval"), [(30, 15), (1, 1), (0.5, 1), (600, 60), (5, 2.5)])
def test_L5_interval_defaults_to_max_1_min_60_half_ttl(ttl: float, interval: float) -> None:
    assert LeaseRefresher(lambda: True, ttl_s=ttl).interval_s == interval


@pytest.mark.parametrize(("ttl", "interval", "cap"), [(30, 15, 2), (30, 10, 3), (5, 2.5, 2), (1, 1, 1), (0.5, 1, 1), (10, 3, 3)])
def test_L5_the_failure_cap_is_max_1_floor_ttl_over_interval_so_cap_times_interval_fits_the_ttl(ttl: float, interval: float, cap: int) -> None:
    r = LeaseRefresher(lambda: True, ttl_s=ttl, interval_s=interval)
    assert r.max_consecutive_failures == cap
    assert cap == 1 or cap * interval <= ttl


def test_L5_it_refreshes_once_at_once_before_any_wait() -> None:
    order: list[str] = []

    def refresh() -> bool:
        order.append("refresh")
        return True

    def wait(_: float) -> bool:
        order.append("wait")
        return True

    LeaseRefresher(refresh, ttl_s=30, wait=wait).run()
    assert order == ["refresh", "wait"]


def test_L5_a_single_failure_false_or_raised_does_not_stop_it_and_a_success_resets_the_count() -> None:
    # cap 3 (ttl 30, interval 10): two failures, a success, two failures, a success... never three in a row.
    refresh, calls = scripted([False, RuntimeError("node down"), True, False, False, True])
    log: list[float] = []
    r = LeaseRefresher(refresh, ttl_s=30, interval_s=10, wait=waits(log, stop_after=7))
    r.run()
    assert not r.gave_up and len(calls) == 7 and r.consecutive_failures == 0
    assert log == [10] * 7


def test_L5_it_gives_up_after_cap_consecutive_failures_and_never_raises() -> None:
    refresh, calls = scripted([True, False, RuntimeError("x"), ValueError("y"), True])
    r = LeaseRefresher(refresh, ttl_s=30, interval_s=10, wait=waits([]))
    r.run()  # no exception escapes
    assert r.gave_up and len(calls) == 4 and r.consecutive_failures == 3
    assert isinstance(r.last_error, ValueError)


def test_L5_a_refresher_that_never_succeeds_stops_at_the_cap_never_looping_forever() -> None:
    refresh, calls = scripted([False] * 1000)
    r = LeaseRefresher(refresh, ttl_s=5, wait=waits([]))
    r.run()
    assert r.gave_up and len(calls) == r.max_consecutive_failures == 2


def test_L5_stop_ends_the_loop_and_wait_returning_true_stops_it() -> None:
    refresh, calls = scripted([])
    r = LeaseRefresher(refresh, ttl_s=30, wait=waits([], stop_after=3))
    r.run()
    assert not r.gave_up and len(calls) == 3
    refresh2, calls2 = scripted([])
    r2 = LeaseRefresher(refresh2, ttl_s=30, interval_s=1)
    started = threading.Event()

    def signalling() -> bool:
        started.set()
        return refresh2()

    r2.refresh = signalling
    r2.start()
    assert started.wait(10)
    r2.stop(join_timeout_s=10)
    assert r2.stopped and not r2.gave_up and len(calls2) >= 1


def test_L5_the_thread_reports_when_it_gave_up() -> None:
    done = threading.Event()
    seen: list[bool] = []
    r = LeaseRefresher(lambda: False, ttl_s=2, interval_s=1, wait=waits([]))

    def on_done(rr: LeaseRefresher) -> None:
        seen.append(rr.gave_up)
        done.set()

    r.start(on_done=on_done)
    assert done.wait(10) and seen == [True]


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_L5_a_non_positive_or_non_finite_ttl_or_interval_is_refused(bad: float) -> None:
    with pytest.raises(ValueError):
        LeaseRefresher(lambda: True, ttl_s=bad)
    with pytest.raises(ValueError):
        LeaseRefresher(lambda: True, ttl_s=10, interval_s=bad)
