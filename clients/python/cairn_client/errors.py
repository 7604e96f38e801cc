"""The exceptions of cairn_client.

Every error of a request is a CairnError: ProblemError when cairnd answered with an RFC 9457
problem (a 4xx or 5xx; FeedRangeGone for the change feed's 410), TransportError when no answer could be
had from cairnd, RequestTimeout when the request's own deadline passed first, ClientClosed when the
client was closed under it. FeedGatewayChanged ends a change feed subscription that reached another
gateway.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional


class CairnError(Exception):
    """The base of every error cairn_client raises for a request."""


class ProblemError(CairnError):
    """cairnd refused the request: its problem+json answer, member by member.

    ``type``, ``title``, ``status`` and ``detail`` are the problem's members; ``field`` names the
    input at fault when one is (a query parameter, a path capture or a body location such as
    ``edges[3].source_id``); ``problem`` is the whole object, with members such as ``seq`` and
    ``shards`` of a 504 ``not-applied-yet``; ``retry_after`` is the Retry-After seconds, if any.
    """

    def __init__(self, status: int, problem: Mapping[str, Any], retry_after: Optional[float] = None,
                 method: str = "", path: str = "") -> None:
        self.status = int(status)
        self.problem = dict(problem)
        self.type = str(self.problem.get("type", "about:blank"))
        self.title = str(self.problem.get("title", ""))
        self.detail = str(self.problem.get("detail", ""))
        self.field = self.problem.get("field")
        self.retry_after = retry_after
        self.method = method
        self.path = path
        where = f" ({method} {path})" if method else ""
        field = f" [field {self.field}]" if self.field else ""
        super().__init__(f"{self.status} {self.slug}: {self.detail or self.title}{field}{where}")

    @property
    def slug(self) -> str:
        """The stable last segment of ``type``, e.g. ``invalid-field`` or ``not-found``."""
        return self.type.rstrip("/").rsplit("/", 1)[-1]


class FeedRangeGone(ProblemError):
    """410 ``feed-range-gone``: the journal no longer holds the ops after the feed's ``from``
    (``journal.retention_seconds`` retired them). ``oldest_seq`` is the oldest seq it still holds: rebuild
    what was missed from the shards' rows, then read the feed again from ``oldest_seq - 1``."""

    def __init__(self, status: int, problem: Mapping[str, Any], retry_after: Optional[float] = None,
                 method: str = "", path: str = "") -> None:
        super().__init__(status, problem, retry_after, method, path)
        oldest = self.problem.get("oldest_seq")
        self.oldest_seq: Optional[int] = oldest if isinstance(oldest, int) and not isinstance(oldest, bool) else None


class FeedGatewayChanged(CairnError):
    """A subscription's pages came from another gateway than its first ones (a load balancer sent the
    reconnect elsewhere): seqs are per gateway, so its position means nothing there. Subscribe to each
    gateway with a client of its own."""


def problem_error(status: int, problem: Mapping[str, Any], retry_after: Optional[float] = None, method: str = "",
                  path: str = "") -> ProblemError:
    """The ProblemError of an answer: FeedRangeGone for a 410 feed-range-gone."""
    if status == 410 and str(problem.get("type", "")).endswith("/feed-range-gone"):
        return FeedRangeGone(status, problem, retry_after, method, path)
    return ProblemError(status, problem, retry_after, method, path)


class TransportError(CairnError):
    """No answer could be had from cairnd: connection refused or lost, TLS failure, a broken answer.

    For a write, ``idempotency_key`` is the key it was sent with: sending the write again with that key
    is safe (cairnd answers the original acknowledgement if the first attempt was journaled).
    """

    def __init__(self, message: str, idempotency_key: Optional[str] = None) -> None:
        super().__init__(message)
        self.idempotency_key = idempotency_key


class RequestTimeout(CairnError, TimeoutError):
    """The request's deadline (the client's ``timeout`` or the call's own) passed before an answer.

    A write that timed out may or may not have been journaled; ``idempotency_key`` is its key, so
    that sending it again with the same key cannot apply it twice.
    """

    def __init__(self, message: str, idempotency_key: Optional[str] = None) -> None:
        super().__init__(message)
        self.idempotency_key = idempotency_key


class ClientClosed(CairnError):
    """The client was closed before the request was answered."""
