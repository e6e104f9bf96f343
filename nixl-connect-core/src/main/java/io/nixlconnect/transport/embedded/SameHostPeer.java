package io.nixlconnect.transport.embedded;

import java.util.concurrent.TimeUnit;

/**
 * Whether this process can copy from one peer endpoint's memory directly (cross-memory attach), found out
 * once per endpoint on the first transfer that could use it, and forgotten when the peer turns out to be
 * another process (restarted on the same port) or a copy fails. Also what else this side learned about the
 * endpoint's protocol: whether it takes small transfers in one round trip (READ_INLINE, WRITE_INLINE).
 */
final class SameHostPeer {

    /**
     * How long a peer that dropped an inline request is sent two-round-trip requests only, before inline ones are
     * tried again (it may have been upgraded and restarted on the same port, or the drop had another cause).
     */
    static final long INLINE_RECHECK_NANOS = TimeUnit.SECONDS.toNanos(60);

    /** The path a transfer's bytes took. */
    static final String CROSS_MEMORY_ATTACH = "cross-memory-attach";
    static final String TCP = "tcp";

    /** What is known about the peer: not yet probed, readable at {@code pid}, or TCP only and why. */
    record State(boolean probed, long pid, String tcpReason) {

        static final State UNKNOWN = new State(false, 0, null);

        static State readable(long pid) {
            return new State(true, pid, null);
        }

        static State tcpOnly(String reason) {
            return new State(true, 0, reason);
        }

        boolean crossMemoryAttach() {
            return probed && tcpReason == null;
        }

        /** For health details: the path and, for TCP, why. */
        String describe() {
            if (!probed) {
                return "not probed yet";
            }
            return tcpReason == null ? CROSS_MEMORY_ATTACH + " (pid " + pid + ")" : TCP + " (" + tcpReason + ")";
        }
    }

    private volatile State state;
    /** Until when (System.nanoTime) inline requests are not sent to this peer; 0: they are. */
    private volatile long twoRoundTripsUntil;

    SameHostPeer(String disabledReason) {
        this.state = disabledReason == null ? State.UNKNOWN : State.tcpOnly(disabledReason);
    }

    State state() {
        return state;
    }

    /** Records the outcome of a probe (or of the peer declining). */
    void learned(State learned) {
        state = learned;
    }

    /** A copy failed or the peer changed: fall back to TCP, with the reason, until the next probe decides. */
    void failed(String reason) {
        state = State.tcpOnly(reason);
    }

    /** The peer answered from another pid than the probed one (it restarted): probe again next time. */
    void forget(State seen) {
        if (state == seen) {
            state = State.UNKNOWN;
        }
    }

    /** Whether small transfers go to this peer in one round trip (false for a while after it dropped one). */
    boolean takesInline() {
        long until = twoRoundTripsUntil;
        return until == 0 || System.nanoTime() - until > 0;
    }

    /**
     * The peer dropped a fresh connection on an inline request without answering: an older nixl-connect that does
     * not know the request kind (its server drops a connection on an unknown one). Two round trips for a while.
     */
    void inlineDropped() {
        long until = System.nanoTime() + INLINE_RECHECK_NANOS;
        twoRoundTripsUntil = until == 0 ? 1 : until;
    }

    /** For health details: empty, or that this peer is sent two-round-trip requests only, for now. */
    String describeProtocol() {
        return takesInline() ? "" : "; small transfers in two round trips (the peer dropped a one-round-trip request: "
                + "an older nixl-connect?)";
    }
}
