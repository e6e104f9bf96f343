package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.TransferOp;
import java.io.IOException;

/**
 * The embedded server's answer to each kind of request, on the connection that sent it: a request is served only
 * from the one live window opened with its credential, of its kind, covering every range; every refusal gets the
 * same answer. Which handler runs, and when a connection is dropped, is the {@link RequestDispatcher}'s part.
 */
final class RequestHandlers {

    private final EmbeddedTransport transport;

    RequestHandlers(EmbeddedTransport transport) {
        this.transport = transport;
    }

    /**
     * NOTIFY: delivers the notification. It reads nothing more and answers at once: the connection still counts as
     * waiting.
     *
     * @return whether the connection is still in step (always)
     */
    boolean notify(ServerConnection connection, Link link, EmbeddedAgent agent, Wire.Head head) throws IOException {
        EmbeddedWindow notified = deliver(link, agent, head.credential());
        if (notified != null) {
            connection.served();
        }
        connection.notified(notified);
        return true;
    }

    /**
     * IDENTIFY: who this process is (same-host copy), or why it declines. It reads nothing more and answers at once:
     * the connection still counts as waiting.
     *
     * @return whether the connection is still in step (always)
     */
    boolean identify(Link link) throws IOException {
        String disabled = transport.sameHostCopyDisabled();
        if (disabled != null) {
            Wire.writeDeclined(link, "same-host copy declined: " + disabled);
        } else {
            Wire.writeHello(link, SameHostIdentity.self());
        }
        return true;
    }

    /**
     * WRITE: moves the bytes in, then delivers the notification — the data has landed: only now may the passive side
     * learn of it.
     *
     * @return whether the connection is still in step
     */
    boolean write(ServerConnection connection, Link link, EmbeddedAgent agent, Wire.Head head) throws IOException {
        if (!moveRanges(connection, link, agent, head, TransferOp.WRITE)) {
            return false;
        }
        connection.notified(deliver(link, agent, head.credential()));
        return true;
    }

    /**
     * One stripe of a large WRITE: the bytes only; the notification comes as a NOTIFY after every stripe's.
     *
     * @return whether the connection is still in step
     */
    boolean writeStripe(ServerConnection connection, Link link, EmbeddedAgent agent, Wire.Head head)
            throws IOException {
        if (!moveRanges(connection, link, agent, head, TransferOp.WRITE)) {
            return false;
        }
        Wire.writeOk(link);
        return true;
    }

    /**
     * Serves a request's ranges from the one live window opened with its credential, if every range lies inside
     * it: streams them out (READ) or in (WRITE). Refuses otherwise, touching nothing, with the same answer
     * whatever the reason, so refusals tell a prober nothing.
     *
     * @return whether the ranges were moved (false: refused, and the connection must be dropped)
     */
    boolean moveRanges(ServerConnection connection, Link link, EmbeddedAgent agent, Wire.Head head, TransferOp access)
            throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.enter(access, head.credential(), link);
        if (window == null) {
            refuse(link, access);
            return head.count() == 0;
        }
        try {
            if (!connection.beginRequest()) {
                return false; // evicted meanwhile
            }
            RequestedRanges ranges = connection.ranges.reset(window, false);
            if (!connection.readRanges(link, head.count(), ranges)) {
                refuse(link, access);
                return false;
            }
            connection.started(window); // from here the peer has started on the window
            Wire.writeOk(link);
            if (ranges.hostMemoryOnly()) { // a block list in gathering or scattering calls, not one per block
                if (access == TransferOp.READ) {
                    Wire.sendHostRanges(link, ranges.addresses(), ranges.lengths(), ranges.size());
                } else {
                    Wire.receiveHostRanges(link, ranges.addresses(), ranges.lengths(), ranges.size());
                }
                return true;
            }
            for (int i = 0; i < ranges.size(); i++) {
                long address = ranges.addresses()[i];
                long length = ranges.lengths()[i];
                MemoryRegion region = ranges.region(i);
                if (access == TransferOp.READ) {
                    Wire.sendMemory(link, region.type(), address, length, transport.staging());
                } else {
                    Wire.receiveMemory(link, region.type(), address, length, transport.staging());
                }
            }
            return true;
        } finally {
            window.exit(link);
        }
    }

    /**
     * Grants the peer a direct copy (cross-memory attach) of a READ's ranges, checked exactly as for a READ (the
     * one live window opened with the credential covers each): answers with this pid, keeps the window pinned
     * until the peer reports, then delivers the notification as a NOTIFY would. Declines (the peer then sends
     * a READ) when the setting is off or a range is GPU memory.
     *
     * <p>Once granted, the peer has started on the window exactly as a streamed READ has: if its connection
     * drops before it reports a finished copy (a cancelled or killed reader never reports), the window fails
     * with the peer lost, as on the socket path. A reported abort does not fail it: the peer reports one only
     * when it falls back to streaming the same ranges on this connection (the kernel refused the copy, or the
     * pid it probed is another process now, or the proof did not hold), and that READ needs the window still open.
     *
     * <p>{@code proven}: the reader sent a challenge, and the grant carries this process's proof of it
     * ({@link GrantProof}), in native memory here until the reader reports. An unbound grant (a reader from before
     * proofs, which would copy from whatever pid a peer names) is declined: that reader streams.
     *
     * @return whether the connection is still in step with the peer
     */
    boolean grantRanges(ServerConnection connection, Link link, EmbeddedAgent agent, Wire.Head head, boolean proven)
            throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.enter(TransferOp.READ, head.credential(), link, true);
        if (window == null) {
            refuse(link, TransferOp.READ);
            return head.count() == 0;
        }
        boolean copied;
        boolean revoked;
        GrantProof.Published proof = null;
        try {
            if (!connection.beginRequest()) {
                return false; // evicted meanwhile
            }
            RequestedRanges ranges = connection.ranges.reset(window, false);
            if (!connection.readRanges(link, head.count(), ranges)) {
                refuse(link, TransferOp.READ);
                return false;
            }
            byte[] challenge = proven ? connection.readChallenge(link) : null;
            String declined = proven ? transport.sameHostCopyDisabled() : "this reader's same-host copy is not bound to "
                    + "the process that owns the window (a nixl-connect from before grant proofs): upgrade it";
            if (declined == null && !ranges.hostMemoryOnly()) {
                declined = "GPU memory is staged through the socket";
            }
            // Writes while granted hold the link's monitor: a close may write a revocation on it (EmbeddedWindow#revoke).
            if (declined != null) {
                synchronized (link) {
                    Wire.writeDeclined(link, declined);
                }
                return true;
            }
            long pid = SameHostIdentity.self().pid();
            proof = new GrantProof.Published(GrantProof.compute(head.credential(), challenge, pid, ranges.addresses(),
                    ranges.lengths(), ranges.size()));
            connection.started(window); // from here the peer may copy from the window
            synchronized (link) {
                Wire.writeGrant(link, pid, proof.address());
            }
            // Blocks until the peer has finished copying or stopped (or its process, and so its connection, is
            // gone); closing the window meanwhile revokes the grant, and the peer stops at its next chunk.
            copied = Wire.readCopyOutcome(link);
        } finally {
            synchronized (link) {
                revoked = window.exit(link, true);
            }
            if (proof != null) {
                proof.close(); // the peer reads it before it copies, so before it reports
            }
        }
        if (revoked) {
            return false; // the peer was told its grant is revoked: nothing more is said on this connection
        }
        if (copied) {
            connection.notified(deliver(link, agent, head.credential()));
        } else {
            Wire.writeOk(link);
        }
        return true;
    }

    /**
     * A small READ or WRITE in one round trip (READ_INLINE, WRITE_INLINE): checked exactly as a READ or WRITE (the
     * one live window of that access opened with the credential covers every range, else the same refusal), and it
     * claims the window's notification before a byte moves. Every range is read whether or not the request is served
     * (at most {@link Wire#INLINE_MAX_RANGES}), so a refusal leaves the connection in step.
     *
     * <p>READ: answers OK and the bytes in one write, leaves the window, then delivers the notification itself: the
     * readable completes once its bytes are in the reader's socket, without waiting for the reader to say so.
     * WRITE: the peer sent the bytes right after the request; they are received into the window, then the
     * notification is delivered as for a WRITE (answer OK, then complete the window). Refused, a WRITE's bytes
     * already sent are read and dropped — never written anywhere — outside any window; there are at most
     * {@link Wire#INLINE_MAX_BYTES}. If the bytes cannot be moved (the peer vanished, the window closed and cut the
     * connection), the claim is released and the connection's loss fails the window as for a READ or WRITE.
     *
     * @return whether the connection is still in step with the peer
     */
    boolean serveInline(ServerConnection connection, Link link, EmbeddedAgent agent, Wire.Head head,
            TransferOp access) throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.enter(access, head.credential(), link);
        boolean claimed = false;
        boolean moved = false;
        try {
            // A live window's credential makes this connection busy (not evicted); a refused request's ranges and
            // bytes (bounded: INLINE_MAX_RANGES, INLINE_MAX_BYTES) are read while it still counts as waiting.
            if (window != null && !connection.beginRequest()) {
                return false; // evicted meanwhile
            }
            RequestedRanges ranges = readInlineRanges(connection, link, window, head);
            claimed = !ranges.refused() && window.claim();
            if (!claimed) {
                if (window != null) {
                    window.exit(link);
                    window = null;
                }
                if (access == TransferOp.WRITE) {
                    connection.discard(link, ranges.total());
                }
                refuse(link, access);
                return true;
            }
            connection.unfinished.add(window); // from here the peer has started on the window
            boolean hostMemory = ranges.hostMemoryOnly();
            if (access == TransferOp.READ && hostMemory) {
                Wire.writeWithMemory(link, link.scratch(1).put(Wire.OK).flip(), ranges.addresses(), ranges.lengths(),
                        ranges.size());
            } else if (hostMemory) {
                Wire.receiveHostRanges(link, ranges.addresses(), ranges.lengths(), ranges.size());
            } else {
                if (access == TransferOp.READ) {
                    Wire.writeOk(link);
                }
                for (int i = 0; i < ranges.size(); i++) {
                    MemoryRegion region = ranges.region(i);
                    if (access == TransferOp.READ) {
                        Wire.sendMemory(link, region.type(), ranges.addresses()[i], ranges.lengths()[i], transport.staging());
                    } else {
                        Wire.receiveMemory(link, region.type(), ranges.addresses()[i], ranges.lengths()[i],
                                transport.staging());
                    }
                }
            }
            moved = true;
        } finally {
            if (claimed && !moved) {
                window.release();
            }
            if (window != null) {
                window.exit(link);
            }
        }
        // Outside the window: completing it closes it, and a close waits for the threads inside.
        if (access == TransferOp.READ) {
            window.deliver();
        } else {
            answerThenDeliver(link, window);
        }
        connection.notified(window);
        return true;
    }

    /** Reads every range of an inline request, checking each against {@code window} (null: refused) and the size limit. */
    private static RequestedRanges readInlineRanges(ServerConnection connection, Link link, EmbeddedWindow window, Wire.Head head)
            throws IOException {
        RequestedRanges ranges = connection.ranges.reset(window, true);
        connection.readRanges(link, head.count(), ranges);
        if (ranges.total() > Wire.INLINE_MAX_BYTES) {
            throw new Wire.ProtocolException("inline request of more than " + Wire.INLINE_MAX_BYTES + " bytes");
        }
        return ranges;
    }

    /**
     * A peer reports that its transfer for a window ended without notifying ({@link Wire#FAIL}): the window, if one
     * waits for that credential, ends ERRORED with the peer's words (a fan-out readable waits on for its other
     * readers, as when a reader's connection drops). The report is read within the read timeout, only once the
     * credential named a live window; otherwise the answer is the one any unknown credential gets.
     *
     * @return whether the connection is still in step
     */
    boolean failWindow(ServerConnection connection, Link link, EmbeddedAgent agent, Wire.Head head)
            throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.window(head.credential());
        if (window == null) {
            Wire.writeError(link, "no passive operation waits for this notification (completed, closed or never created)");
            return false; // the report is left unread
        }
        String[] report = connection.readFailureReport(link);
        window.peerLost("the peer '" + report[0] + "' (" + connection.address.getHostAddress()
                + ") reported that its transfer ended without notifying: " + report[1]);
        Wire.writeOk(link);
        connection.served();
        return true;
    }

    private static void refuse(Link link, TransferOp access) throws IOException {
        Wire.writeError(link, access + " refused: no live "
                + (access == TransferOp.READ ? "ReadableOperation" : "WritableOperation")
                + " with this credential covers every requested range");
    }

    /**
     * Delivers a notification: claims the waiting window, answers OK, then completes the window — in that
     * order, so that a passive side which shuts down as soon as it completes cannot cut off the answer.
     *
     * @return the window the notification was for, or null
     */
    private static EmbeddedWindow deliver(Link link, EmbeddedAgent agent, byte[] notification) throws IOException {
        EmbeddedWindow window = agent == null ? null : agent.claim(notification);
        if (window == null) {
            Wire.writeError(link, "no passive operation waits for this notification (completed, closed or never created)");
            return null;
        }
        answerThenDeliver(link, window);
        return window;
    }

    /** Answers OK, then completes the claimed {@code window}, even if the answer cannot reach the peer. */
    private static void answerThenDeliver(Link link, EmbeddedWindow window) throws IOException {
        try {
            Wire.writeOk(link);
        } finally {
            window.deliver(); // the data has landed whether or not the answer reaches the peer
        }
    }
}
