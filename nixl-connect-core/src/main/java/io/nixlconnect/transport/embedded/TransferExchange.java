package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.embedded.EmbeddedTransfer.StaleConnectionException;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client side of one transfer's exchanges with its peer over a connection: which requests carry it (one round
 * trip for a small one, a same-host direct copy, stripes over several connections, or a request and its bytes), the
 * bytes in and out of local memory, and the peer's answers. A failure before the peer answered is an
 * {@link StaleConnectionException}, for {@link EmbeddedTransfer}'s run to retry on a new connection.
 */
final class TransferExchange {

    /** The transfer's log: its settings name one logger for a transfer, as before it was split. */
    private static final Logger log = LoggerFactory.getLogger(EmbeddedTransfer.class);

    private final EmbeddedTransport transport;
    private final TransferOp op;
    private final List<MemoryRegion> local;
    private final EmbeddedMetadata peer;
    /** The peer's agent name in UTF-8, as every request carries it. */
    private final byte[] peerAgent;
    /** The peer's {@code host:port}: its connection pool's key. */
    private final String endpoint;
    private final long[] remoteAddresses;
    private final long[] lengths;
    private final byte[] notification;
    /** Whether the transfer was cancelled: checked before each step that could otherwise be retried or fall back. */
    private final BooleanSupplier cancelled;
    private volatile String path;
    /** The stripes of a large transfer while they run (so that cancel stops them all); null otherwise. */
    private volatile StripedTransfer striped;
    /** Connections the bytes went over: more than one for a striped transfer. */
    private volatile int streams = 1;

    /** {@code notification} is kept as it is; {@code local} is copied unless immutable already. */
    TransferExchange(EmbeddedTransport transport, TransferOp op, List<MemoryRegion> local, LoadedPeer peer,
            List<MemoryRegion> remote, byte[] notification, BooleanSupplier cancelled) {
        this.transport = transport;
        this.op = op;
        this.local = List.copyOf(local);
        this.peer = peer.metadata();
        this.peerAgent = peer.agentName();
        this.endpoint = peer.endpoint();
        this.remoteAddresses = new long[remote.size()];
        this.lengths = new long[remote.size()];
        for (int i = 0; i < remote.size(); i++) {
            remoteAddresses[i] = remote.get(i).address();
            lengths[i] = remote.get(i).length();
        }
        this.notification = notification;
        this.cancelled = cancelled;
    }

    /** Bytes the transfer moves. */
    long totalBytes() {
        long total = 0;
        for (long length : lengths) {
            total += length;
        }
        return total;
    }

    EmbeddedMetadata peer() {
        return peer;
    }

    /** The peer's {@code host:port}. */
    String endpoint() {
        return endpoint;
    }

    /** The path the bytes took ({@link SameHostPeer#TCP}, {@link SameHostPeer#CROSS_MEMORY_ATTACH}), null before. */
    String path() {
        return path;
    }

    /** Connections the bytes went over: more than one for a striped transfer. */
    int streams() {
        return streams;
    }

    /** Stops every stripe of a striped transfer running now (cancel); nothing otherwise. */
    void abortStripes() {
        StripedTransfer stripes = striped;
        if (stripes != null) {
            stripes.abort();
        }
    }

    /**
     * Moves the transfer's bytes over {@code ch} (and, striped, more connections of {@code pool}) and has the peer
     * deliver its notification, by the first of these that applies: one round trip, a same-host direct copy, stripes,
     * a request and its bytes.
     *
     * @throws StaleConnectionException when {@code ch} failed before the peer answered
     */
    void run(Link ch, boolean reused, SameHostPeer sameHost, PeerPool pool) throws IOException {
        if (Wire.fitsInline(lengths) && sameHost.takesInline()) {
            executeInline(ch, reused, sameHost);
        } else if (!readDirectly(ch, reused, sameHost) && !executeStriped(ch, reused, pool)) {
            execute(ch);
        }
    }

    /**
     * A large transfer over several connections ({@link StripedTransfer}), when settings, size and the pool's free
     * connections make it one.
     *
     * @return whether it ran striped (false: nothing was sent; run it on {@code ch} alone)
     */
    private boolean executeStriped(Link ch, boolean reused, PeerPool pool) throws IOException {
        StripedTransfer run = StripedTransfer.plan(transport, pool, op, local, peer, peerAgent, notification,
                remoteAddresses, lengths);
        if (run == null) {
            return false;
        }
        striped = run; // before it checks cancelled: cancel either sees it (and stops every stripe) or is seen there
        streams = run.streams();
        try {
            path = SameHostPeer.TCP;
            run.execute(ch, reused, cancelled, this::describe);
            return true;
        } catch (StaleConnectionException stale) {
            streams = 1; // retried, perhaps on one connection
            throw stale;
        } finally {
            striped = null;
        }
    }

    /**
     * READ: request → OK → the ranges' bytes → NOTIFY → OK. WRITE: request (with the notification) → OK → the
     * ranges' bytes → OK once the peer has them and delivered the notification.
     */
    private void execute(Link ch) throws IOException {
        boolean read = op == TransferOp.READ;
        path = SameHostPeer.TCP;
        try {
            Wire.writeRequest(ch, read ? Wire.READ : Wire.WRITE, peerAgent, notification, remoteAddresses, lengths);
            expectOk(ch, " refused by the peer: ");
        } catch (IOException e) {
            // The peer has not answered, so it touched no memory: on a reused connection this is worth a retry.
            throw cancelled.getAsBoolean() ? e : new StaleConnectionException(e, false);
        }
        moveLocal(ch, read);
        if (read) {
            Wire.writeRequest(ch, Wire.NOTIFY, peerAgent, notification);
            expectOk(ch, ": data read, but the notification was refused: ");
        } else {
            expectOk(ch, ": data written, but the peer reported: ");
        }
    }

    /**
     * A small transfer ({@link Wire#fitsInline}) in one round trip. READ_INLINE: request → OK and the bytes; the
     * peer delivers the notification itself once it has handed them over. WRITE_INLINE: the request and the bytes at
     * once → OK after the peer has them and delivered the notification. Taken on the same host too: a direct copy
     * needs a second round trip, which costs more than the socket's copy of at most 64 KiB; the path is TCP.
     *
     * <p>Before the peer's first answer byte, a failure is retried once on a new connection, as for the other
     * requests: a READ_INLINE the peer answered nothing has moved nothing; a WRITE_INLINE's bytes may have landed
     * (the peer reads them before it answers), but a retry cannot write into a window another attempt is still
     * writing: that attempt holds the window's notification claim until it delivered it (the window is then
     * closed, and the retry refused) or failed (the claim is released and its lost connection fails the window;
     * a retry that claims first writes the same bytes in full). A fresh connection dropped without an answer is what a
     * peer of an older version does with a request kind it does not know: such a peer gets two-round-trip
     * requests for a while ({@link SameHostPeer#inlineDropped}), starting with this transfer.
     */
    private void executeInline(Link ch, boolean reused, SameHostPeer sameHost) throws IOException {
        boolean read = op == TransferOp.READ;
        path = SameHostPeer.TCP;
        boolean hostMemory = true;
        for (MemoryRegion region : local) {
            hostMemory &= region.type() == MemoryType.DRAM;
        }
        String refusal;
        try {
            if (read || !hostMemory) {
                Wire.writeRequest(ch, read ? Wire.READ_INLINE : Wire.WRITE_INLINE, peerAgent, notification,
                        remoteAddresses, lengths);
                if (!read) {
                    for (int i = 0; i < lengths.length; i++) {
                        MemoryRegion region = local.get(i);
                        Wire.sendMemory(ch, region.type(), region.address(), lengths[i], transport.staging());
                    }
                }
            } else if (lengths.length == 1) {
                Wire.writeWithMemory(ch, Wire.encodeRequest(ch, Wire.WRITE_INLINE, peerAgent, notification,
                        remoteAddresses, lengths), local.get(0).address(), lengths[0]);
            } else {
                long[] localAddresses = new long[lengths.length];
                for (int i = 0; i < lengths.length; i++) {
                    localAddresses[i] = local.get(i).address();
                }
                Wire.writeWithMemory(ch, Wire.encodeRequest(ch, Wire.WRITE_INLINE, peerAgent, notification,
                        remoteAddresses, lengths), localAddresses, lengths, lengths.length);
            }
            refusal = Wire.readResponse(ch);
        } catch (IOException e) {
            if (cancelled.getAsBoolean()) {
                throw e;
            }
            if (!reused) {
                sameHost.inlineDropped();
                log.info("Embedded transport: {} dropped a one-round-trip {} request without answering (an older "
                        + "nixl-connect?); small transfers to it take two round trips for the next {} s", endpoint, op,
                        TimeUnit.NANOSECONDS.toSeconds(SameHostPeer.INLINE_RECHECK_NANOS));
                throw new StaleConnectionException(e, true);
            }
            throw new StaleConnectionException(e, false); // a pooled connection gone stale: retried on a new one
        }
        if (refusal != null) {
            throw new TransportException(describe() + " refused by the peer: " + refusal);
        }
        if (read) {
            moveLocal(ch, true);
        }
    }

    /**
     * The local side's bytes, in the ranges' order: received ({@code read}) or sent. Host memory as one stream of
     * scattering reads or gathering writes (a block list costs a call per IOV_MAX blocks, or per what has arrived,
     * not one per block); GPU memory range by range through the staging buffers, and one range as one view.
     */
    private void moveLocal(Link ch, boolean read) throws IOException {
        boolean hostBlockList = lengths.length > 1; // one range goes as one view below, without an array of addresses
        for (int i = 0; i < lengths.length && hostBlockList; i++) {
            hostBlockList = local.get(i).type() == MemoryType.DRAM;
        }
        if (hostBlockList) {
            long[] localAddresses = new long[lengths.length];
            for (int i = 0; i < lengths.length; i++) {
                localAddresses[i] = local.get(i).address();
            }
            if (read) {
                Wire.receiveHostRanges(ch, localAddresses, lengths, lengths.length);
            } else {
                Wire.sendHostRanges(ch, localAddresses, lengths, lengths.length);
            }
            return;
        }
        for (int i = 0; i < lengths.length; i++) {
            MemoryRegion region = local.get(i);
            if (read) {
                Wire.receiveMemory(ch, region.type(), region.address(), lengths[i], transport.staging());
            } else {
                Wire.sendMemory(ch, region.type(), region.address(), lengths[i], transport.staging());
            }
        }
    }

    /**
     * A READ from a peer on this host (its IDENTIFY named this host's kernel, once per peer): the peer grants the
     * ranges and keeps them pinned; this side checks that the granted pid is the process that owns the window — it
     * holds, in its own memory, the proof of this request's fresh challenge bound to the credential and the ranges
     * ({@link GrantProof}) — then copies exactly the ranges of the metadata it was handed (the grant names no range)
     * into its own memory with cross-memory attach — nobody writes into another process — and reports, and the peer
     * delivers the notification. Falls back (returns false, the connection still fit for {@link #execute}) when the
     * peer declines, the local memory is GPU memory, the proof does not hold (that peer is read over TCP from then on),
     * or the kernel refuses the copy.
     *
     * @return whether the transfer is done
     */
    private boolean readDirectly(Link ch, boolean reused, SameHostPeer sameHost) throws IOException {
        if (op != TransferOp.READ) {
            return false;
        }
        for (MemoryRegion region : local) {
            if (region.type() != MemoryType.DRAM) {
                return false;
            }
        }
        SameHostPeer.State known = sameHost.state();
        if (!known.probed()) {
            known = probe(ch, reused, sameHost);
        }
        if (!known.crossMemoryAttach()) {
            return false;
        }
        StringBuilder refused = new StringBuilder();
        Wire.Grant grant;
        byte[] challenge = GrantProof.challenge();
        try {
            Wire.writeGrantRequest(ch, peerAgent, notification, remoteAddresses, lengths, challenge);
            grant = Wire.readGrant(ch, refused);
        } catch (IOException e) {
            if (cancelled.getAsBoolean()) {
                throw e;
            }
            if (!reused) {
                // A peer from before grant proofs drops a fresh connection on READ_GRANT: TCP from now on.
                sameHost.failed("peer does not offer proven same-host copy (" + e.getMessage() + ")");
                throw new StaleConnectionException(e, true);
            }
            throw new StaleConnectionException(e, false); // unanswered: the peer touched nothing
        }
        if (grant == null) {
            throw new TransportException(describe() + " refused by the peer: " + refused);
        }
        if (grant.declined() != null) {
            return false; // this request only (GPU memory on the peer's side): stream it
        }
        if (grant.pid() != known.pid()) {
            Wire.writeCopyOutcome(ch, false); // the peer restarted since the probe: probe again next time
            expectOk(ch, ": ");
            sameHost.forget(known);
            return false;
        }
        String unproven = GrantProof.verify(grant.pid(), grant.proofAddress(), notification, challenge,
                remoteAddresses, lengths);
        if (unproven != null) {
            Wire.writeCopyOutcome(ch, false); // nothing was copied: stream from this peer instead, now and from now on
            expectOk(ch, ": ");
            sameHost.failed(unproven);
            log.debug("Embedded transport: no same-host copy from {}: {}", endpoint, unproven);
            return false;
        }
        path = SameHostPeer.CROSS_MEMORY_ATTACH;
        try {
            // The peer says nothing while it grants, unless it revokes the grant (its operation closed): checked
            // before every system call and after the last, so no copy goes on from memory the peer may free and reuse.
            // The whole block list in as few calls as the kernel takes (IOV_MAX iovecs a side), not one per block.
            long[] localAddresses = new long[lengths.length];
            for (int i = 0; i < lengths.length; i++) {
                localAddresses[i] = local.get(i).address();
            }
            CrossMemoryAttach.read((int) grant.pid(), localAddresses, remoteAddresses, lengths,
                    () -> cancelled.getAsBoolean() || ch.hasUnreadInput());
            if (ch.hasUnreadInput()) {
                throw new IOException("revoked");
            }
            // The owner keeps its proof until this side reports: still there, the pid still named the owner
            // throughout (had the owner died and its pid been reused meanwhile, the new process holds no proof).
            String gone = GrantProof.verify(grant.pid(), grant.proofAddress(), notification, challenge,
                    remoteAddresses, lengths);
            if (gone != null) {
                throw new TransportException(describe() + " failed: the granting process changed during the copy ("
                        + gone + ")");
            }
        } catch (CrossMemoryAttach.CopyException e) {
            // The kernel refused (permissions changed) or a range is unmapped: report, then stream instead.
            Wire.writeCopyOutcome(ch, false);
            expectOk(ch, ": ");
            if (e.errno() != CrossMemoryAttach.EFAULT) {
                sameHost.failed(e.getMessage());
            }
            path = null;
            return false;
        } catch (IOException e) {
            if (cancelled.getAsBoolean() || !ch.hasUnreadInput()) {
                throw e;
            }
            Wire.writeCopyOutcome(ch, false); // bytes copied so far are not this transfer's: it fails
            throw new TransportException(describe() + " failed: " + Wire.readResponse(ch));
        }
        Wire.writeCopyOutcome(ch, true);
        expectOk(ch, ": data read, but the notification was refused: ");
        return true;
    }

    /** Asks the peer who it is (a hint: each grant is proven on its own); remembers the outcome for the peer. */
    private SameHostPeer.State probe(Link ch, boolean reused, SameHostPeer sameHost) throws IOException {
        StringBuilder declined = new StringBuilder();
        SameHostIdentity identity;
        try {
            Wire.writeRequest(ch, Wire.IDENTIFY, peerAgent, notification);
            identity = Wire.readHello(ch, declined);
        } catch (IOException e) {
            if (cancelled.getAsBoolean()) {
                throw e;
            }
            if (reused && !(e instanceof Wire.RefusedException)) {
                throw new StaleConnectionException(e, false); // a pooled connection gone stale: learn nothing yet
            }
            // A peer that refuses IDENTIFY (or drops the connection on it) does not offer it here: TCP from now on,
            // on a new connection (which also tells the caller why, if the peer refuses that too).
            sameHost.learned(SameHostPeer.State.tcpOnly("peer does not offer same-host copy (" + e.getMessage() + ")"));
            throw new StaleConnectionException(e, true);
        }
        SameHostPeer.State learned;
        if (identity == null) {
            learned = SameHostPeer.State.tcpOnly(declined.toString());
        } else {
            String unreadable = SameHostIdentity.self().probe(identity);
            learned = unreadable == null ? SameHostPeer.State.readable(identity.pid())
                    : SameHostPeer.State.tcpOnly(unreadable);
        }
        sameHost.learned(learned);
        return learned;
    }

    private void expectOk(Link ch, String context) throws IOException {
        String refusal = Wire.readResponse(ch);
        if (refusal != null) {
            throw new TransportException(describe() + context + refusal);
        }
    }

    /** The transfer in words, for its errors. */
    String describe() {
        return op + " of " + lengths.length + " range(s) with agent '" + peer.agent() + "' at " + peer.host() + ":"
                + peer.port();
    }
}
