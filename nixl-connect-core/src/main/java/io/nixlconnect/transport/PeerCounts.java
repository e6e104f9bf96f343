package io.nixlconnect.transport;

/**
 * How an agent holds its peers, for health reports and meters: one gauge (what is open now) and counters since the
 * agent was created. A fleet's peers come and go all day; these say whether what they leave behind is released.
 *
 * @param openConnections connections the agent holds open to or from peers now
 * @param evicted         cached peers dropped because the bounded peer cache was full, their connections with them
 * @param reconnected     peers whose connection failed and was made anew
 * @param departed        connections or peers closed because the peer closed its end, left or died
 * @param idleClosed      connections closed after idling past the idle limit
 */
public record PeerCounts(int openConnections, long evicted, long reconnected, long departed, long idleClosed) {

    /** An agent that holds no peer and has counted nothing. */
    public static final PeerCounts NONE = new PeerCounts(0, 0, 0, 0, 0);

    /**
     * @throws IllegalArgumentException if a count is negative
     */
    public PeerCounts {
        if (openConnections < 0 || evicted < 0 || reconnected < 0 || departed < 0 || idleClosed < 0) {
            throw new IllegalArgumentException("peer counts cannot be negative: openConnections=" + openConnections
                    + ", evicted=" + evicted + ", reconnected=" + reconnected + ", departed=" + departed
                    + ", idleClosed=" + idleClosed);
        }
    }
}
