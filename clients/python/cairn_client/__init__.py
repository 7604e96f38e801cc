"""cairn_client: the Python client of cairn (cairnd's HTTP and WebSocket API).

``Client`` is blocking, over HTTP/1.1 keep-alive; ``AsyncClient`` is asyncio, over one pipelined
WebSocket with reconnect, resend of unacknowledged writes and an HTTP fallback. Both have the same
methods (docs/clients/python.md in the cairn repository).
"""

from .aio import AsyncClient, Stats
from .errors import (
    CairnError, ClientClosed, FeedGatewayChanged, FeedRangeGone, ProblemError, RequestTimeout, TransportError,
)
from .feed import FeedSubscription
from .models import (
    NODE_ID_MAX, Ack, Cell, CellPage, CellWrite, CounterTotal, Edge, EdgePage, EdgeWrite, Entity, EntityPage,
    FeedOp, FeedPage, Increment, NodeDirection, NodeRecord, Query, Series, SeriesPoint, SetOp, SetPage, Token, Top,
    TopRow, difference, intersect, union,
)
from .sync import Client
from ._api import new_idempotency_key

__version__ = "0.1.0"

__all__ = [
    "NODE_ID_MAX", "Ack", "AsyncClient", "CairnError", "Cell", "CellPage", "CellWrite", "Client", "ClientClosed",
    "CounterTotal", "Edge", "EdgePage", "EdgeWrite", "Entity", "EntityPage", "FeedGatewayChanged", "FeedOp",
    "FeedPage", "FeedRangeGone", "FeedSubscription", "Increment", "NodeDirection", "NodeRecord",
    "ProblemError", "Query", "RequestTimeout", "Series", "SeriesPoint", "SetOp", "SetPage", "Stats", "Token", "Top",
    "TopRow", "TransportError", "difference", "intersect", "new_idempotency_key", "union",
]
