"""LeaseRefresher: keeps a held lease alive while the agent's engine runs, held to SPEC L5.

- ``interval_s`` defaults to ``max(1, min(60, ttl_s / 2))``;
- it refreshes once at once, then once per interval;
- a failed refresh (``False`` or an exception) does not stop it, a success resets the count;
- after ``max_consecutive_failures = max(1, floor(ttl_s / interval_s))`` failures in a row it gives up
  (``gave_up``), so ``cap * interval <= ttl``: it never outlives the lease it failed to keep;
- ``run()`` never raises and never loops forever; ``stop()`` ends it;
- ``wait(interval) -> bool`` (True = stop) is injectable, so tests drive it without real sleeps.
"""

from __future__ import annotations

import math
import threading
from typing import Callable


class LeaseRefresher:
    def __init__(
        self,
        refresh: Callable[[], bool],
        *,
        ttl_s: float,
        interval_s: float | None = None,
        wait: Callable[[float], bool] | None = None,
    ) -> None:
        if not (isinstance(ttl_s, (int, float)) and math.isfinite(ttl_s) and ttl_s > 0):
            raise ValueError("ttl_s must be a finite number > 0")
        if interval_s is None:
            interval_s = max(1.0, min(60.0, ttl_s / 2))
        if not (isinstance(interval_s, (int, float)) and math.isfinite(interval_s) and interval_s > 0):
            raise ValueError("interval_s must be a finite number > 0")
        self.refresh = refresh
        self.ttl_s = float(ttl_s)
        self.interval_s = float(interval_s)
        self.max_consecutive_failures = max(1, math.floor(self.ttl_s / self.interval_s))
        self._stop = threading.Event()
        self._wait: Callable[[float], bool] = wait if wait is not None else self._sleep
        self._thread: threading.Thread | None = None
        #: True once it stopped because of max_consecutive_failures failures in a row.
        self.gave_up = False
        #: Failures in a row right now.
        self.consecutive_failures = 0
        #: refresh() calls made.
        self.refreshes = 0
        #: The last exception refresh() raised (None after a success).
        self.last_error: BaseException | None = None

    def _sleep(self, seconds: float) -> bool:
        return self._stop.wait(seconds)

    def run(self) -> None:
        """Refreshes until stop() or the failure cap. Never raises."""
        while not self._stop.is_set():
            self.refreshes += 1
            try:
                ok = self.refresh() is True
                self.last_error = None
            except Exception as e:  # a failed refresh is counted, never raised (L5)
                ok = False
                self.last_error = e
            if ok:
                self.consecutive_failures = 0
            else:
                self.consecutive_failures += 1
                if self.consecutive_failures >= self.max_consecutive_failures:
                    self.gave_up = True
                    return
            try:
                if self._wait(self.interval_s) or self._stop.is_set():
                    return
            except Exception:
                return

    def start(self, on_done: Callable[[LeaseRefresher], None] | None = None) -> LeaseRefresher:
        """Runs run() on a daemon thread; ``on_done(self)`` is called when it ends (gave up or stopped)."""

        def target() -> None:
            try:
                self.run()
            finally:
                if on_done is not None:
                    on_done(self)

        self._thread = threading.Thread(target=target, name="lease-refresher", daemon=True)
        self._thread.start()
        return self

    def stop(self, join_timeout_s: float | None = None) -> None:
        """Ends the loop (at once when it is waiting with the default wait) and joins the thread when there is one."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(join_timeout_s)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()
