"""The paper catalogue (SQLite in the data directory): papers, user lists, feed times and discovered topics.

`papers` holds the Catalog and its papers table; `lists`, `feed` and `topics` its other tables; `db` what they share.
"""

from paperchat.catalog.db import damaged
from paperchat.catalog.papers import Catalog
from paperchat.catalog.topics import DiscoveredTopic

__all__ = ["Catalog", "DiscoveredTopic", "damaged"]
