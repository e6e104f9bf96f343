package io.nixlconnect.transport.embedded;

/**
 * Whether this process can copy from one peer endpoint's memory directly (cross-memory attach), found out
 * once per endpoint on the first transfer that could use it, and forgotten when the peer turns out to be
 * another process (restarted on the same port) or a copy fails.
 */
final class SameHostPeer {

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
}
