package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.PeerCounts;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the transport's peer lifecycle has closed or dropped since it started, for {@link PeerCounts}: connections
 * whose peer closed its end (a pooled one found closed while idle, or an accepted one whose peer closed it between
 * requests), connections closed after idling past their limit (pooled: the peer idle timeout; accepted: the server's
 * idle timeout), peers dropped from a full cache, and pooled connections found stale and replaced.
 */
final class PeerCounters {

    final LongAdder departed = new LongAdder();
    final LongAdder idleClosed = new LongAdder();
    final LongAdder evicted = new LongAdder();
    final LongAdder reconnected = new LongAdder();

    PeerCounts snapshot(int openConnections) {
        return new PeerCounts(openConnections, evicted.sum(), reconnected.sum(), departed.sum(), idleClosed.sum());
    }
}
