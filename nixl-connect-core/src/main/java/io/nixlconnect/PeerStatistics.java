package io.nixlconnect;

/**
 * How a connector's transport holds its peers ({@link Connector#peerStatistics()}): what is cached and open now, and
 * what was released since the connector started. In a fleet whose workers come and go, the gauges stay bounded and
 * the counters say why: peers evicted from the bounded cache, connections closed because their peer left or idled.
 *
 * @param cachedPeers           peers whose metadata the transport holds loaded now ({@link Connector#remoteAgentCount()})
 * @param openConnections       connections open to or from peers now
 * @param evictions             cached peers dropped because the peer cache was full, their connections with them
 * @param reconnects            peers whose connection failed and was made anew
 * @param departedPeersClosed   connections or peers closed because the peer closed its end, left or died
 * @param idleConnectionsClosed connections closed after idling past the idle limit
 */
public record PeerStatistics(int cachedPeers, int openConnections, long evictions, long reconnects,
        long departedPeersClosed, long idleConnectionsClosed) {

    /** A closed connector's: nothing cached, nothing open, nothing counted. */
    static final PeerStatistics NONE = new PeerStatistics(0, 0, 0, 0, 0, 0);
}
