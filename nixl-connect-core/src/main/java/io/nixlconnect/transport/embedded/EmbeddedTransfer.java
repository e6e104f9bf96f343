package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.EndListener;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferAttributes;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransferState;
import io.nixlconnect.transport.TransportException;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One posted transfer: queued for a connection to its peer, then run on a worker thread, or by the thread that waits
 * for it (a small one).
 */
final class EmbeddedTransfer implements TransferHandle {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedTransfer.class);

    private static final long CANCEL_WAIT_SECONDS = 30;
    /** Largest transfer the waiting thread runs itself (see {@link #runOnWaitingThread()}). */
    static final long RUN_ON_WAITING_THREAD_MAX_BYTES = 64 * 1024;

    private final EmbeddedAgent agent;
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
    /**
     * Small, and posted for a caller that runs it itself ({@link EmbeddedAgent#postTransferForWaitingCaller}): the
     * pool hands it to no worker, {@link #runOnWaitingThread()} runs it.
     */
    private final boolean leftForWaitingThread;
    /** At most {@link #RUN_ON_WAITING_THREAD_MAX_BYTES}: a waiting thread may run it (see {@link #runOnWaitingThread()}). */
    private final boolean smallEnoughForWaitingThread;
    // Plain volatile fields (updated through VarHandles or under this object's monitor, which also replaces a
    // latch): an atomic wrapper, a latch and a future each were one or two more objects per transfer.
    private volatile TransferState state = TransferState.IN_PROGRESS; // written under this
    private volatile boolean started;
    private boolean finished; // guarded by this
    /** Why it failed or was cancelled; set before {@code state} leaves IN_PROGRESS. */
    private volatile TransportException error;
    /** The one {@link #onEnd} listener; {@link #ENDED} once it has been told (or the transfer ended without one). */
    private volatile EndListener listener;
    /** Made only when {@link #completion()} is asked for. */
    private volatile CompletableFuture<Void> completion;
    private volatile boolean cancelled;
    private volatile Link channel;
    private volatile Thread worker;
    private volatile String path;
    /** How the pool handed this transfer to its workers; null while it waits in the queue for a connection. */
    private volatile PeerPool.Dispatch dispatch;
    /** The agent's list of transfers in flight; guarded by its lock. */
    EmbeddedTransfer previousInAgent;
    EmbeddedTransfer nextInAgent;
    /** The stripes of a large transfer while they run (so that cancel stops them all); null otherwise. */
    private volatile StripedTransfer striped;
    /** Connections the bytes went over: more than one for a striped transfer. */
    private volatile int streams = 1;

    private static final EndListener ENDED = failure -> { };
    private static final VarHandle STARTED;
    private static final VarHandle LISTENER;
    private static final VarHandle COMPLETION;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            STARTED = lookup.findVarHandle(EmbeddedTransfer.class, "started", boolean.class);
            LISTENER = lookup.findVarHandle(EmbeddedTransfer.class, "listener", EndListener.class);
            COMPLETION = lookup.findVarHandle(EmbeddedTransfer.class, "completion", CompletableFuture.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * {@code notification} is kept as it is (the caller of {@link io.nixlconnect.transport.TransportAgent#postTransfer}
     * hands it over); {@code local} is copied unless immutable already.
     */
    EmbeddedTransfer(EmbeddedAgent agent, TransferOp op, List<MemoryRegion> local, LoadedPeer peer,
            List<MemoryRegion> remote, byte[] notification, boolean callerWaits) {
        this.agent = agent;
        this.op = op;
        this.local = List.copyOf(local);
        this.peer = peer.metadata();
        this.peerAgent = peer.agentName();
        this.endpoint = peer.endpoint();
        this.remoteAddresses = new long[remote.size()];
        this.lengths = new long[remote.size()];
        long total = 0;
        for (int i = 0; i < remote.size(); i++) {
            remoteAddresses[i] = remote.get(i).address();
            lengths[i] = remote.get(i).length();
            total += lengths[i];
        }
        this.notification = notification;
        this.smallEnoughForWaitingThread = total <= RUN_ON_WAITING_THREAD_MAX_BYTES;
        this.leftForWaitingThread = callerWaits && smallEnoughForWaitingThread;
    }

    boolean leftForWaitingThread() {
        return leftForWaitingThread;
    }

    /** The peer's {@code host:port}. */
    String endpoint() {
        return endpoint;
    }

    @Override
    public TransferState state() {
        return state;
    }

    /**
     * Backend {@code tcp} (its one path), the peer's {@code host:port}, and the connections the bytes went over
     * ({@link StripedTransfer}).
     */
    @Override
    public TransferAttributes attributes() {
        return new TransferAttributes("embedded", "tcp", endpoint, streams, null);
    }

    @Override
    public CompletableFuture<Void> completion() {
        CompletableFuture<Void> made = completion;
        if (made == null) {
            CompletableFuture<Void> fresh = new CompletableFuture<>();
            made = COMPLETION.compareAndSet(this, null, fresh) ? fresh : completion;
            if (state.isTerminal()) {
                settle(made); // end() may have looked before it was here
            }
        }
        return made;
    }

    /** Calls {@code listener} once when the transfer ends, directly: no future stage. At once if it has ended. */
    @Override
    public void onEnd(EndListener endListener) {
        if (!LISTENER.compareAndSet(this, null, endListener)) {
            if (listener != ENDED) {
                throw new IllegalStateException("a transfer takes one end listener");
            }
            endListener.ended(error);
        }
    }

    private void settle(CompletableFuture<Void> future) {
        TransportException failure = error;
        if (failure == null) {
            future.complete(null);
        } else {
            future.completeExceptionally(failure);
        }
    }

    void dispatched(PeerPool.Dispatch handedOver) {
        dispatch = handedOver;
    }

    /**
     * Runs a transfer of at most {@link #RUN_ON_WAITING_THREAD_MAX_BYTES} here if no worker has picked it up yet (see
     * {@link PeerPool.Dispatch}). Not a larger one: an interrupt of the waiting thread would close the connection it
     * streams over, ending the transfer ERRORED. For the same reason an interrupted thread hands a transfer left for
     * it to a worker.
     */
    @Override
    public void runOnWaitingThread() {
        PeerPool.Dispatch handedOver = dispatch;
        if (handedOver == null) {
            return;
        }
        if (leftForWaitingThread && Thread.currentThread().isInterrupted()) {
            handedOver.handToWorker();
        } else if (smallEnoughForWaitingThread) {
            handedOver.runHere();
        }
    }

    @Override
    public String path() {
        return path;
    }

    /**
     * Runs the transfer on the calling worker thread over {@code pooled} (or a new connection).
     *
     * @return a connection fit for reuse, or null
     */
    Link run(Link pooled, PeerPool pool) {
        if (!STARTED.compareAndSet(this, false, true)) {
            return pooled; // cancelled while queued
        }
        SameHostPeer sameHost = pool.sameHost();
        worker = Thread.currentThread();
        Link current = pooled;
        boolean reused = pooled != null;
        try {
            while (true) {
                if (current == null) {
                    current = connect();
                } else {
                    channel = current;
                    if (cancelled) {
                        throw new IOException("cancelled");
                    }
                }
                try {
                    if (Wire.fitsInline(lengths) && sameHost.takesInline()) {
                        executeInline(current, reused, sameHost);
                    } else if (!readDirectly(current, reused, sameHost) && !executeStriped(current, reused, pool)) {
                        execute(current);
                    }
                    end(TransferState.DONE, null);
                    return current;
                } catch (StaleConnectionException stale) {
                    if (!reused && !stale.retryable) {
                        throw stale.getCause();
                    }
                    closeQuietly(current); // a pooled connection the peer had dropped: retry once on a fresh one
                    current = null;
                    reused = false;
                }
            }
        } catch (IOException | RuntimeException e) {
            closeQuietly(current);
            if (cancelled) {
                end(TransferState.CANCELLED, new TransportException("transfer cancelled"));
            } else if (e instanceof TransportException transportException) {
                end(TransferState.ERROR, transportException);
            } else {
                end(TransferState.ERROR, ioFailure(describe(), e));
            }
            return null;
        }
    }

    /** Opens, connects and secures (TLS, shared secret) a new connection to the peer. */
    private Link connect() throws IOException {
        return connect(agent.transport(), peer, link -> {
            channel = link; // so that cancel can close it while connecting
            if (cancelled) {
                throw new IOException("cancelled");
            }
        });
    }

    /** Told of each stage of a connection being opened, the plain socket first, to close it from another thread. */
    interface LinkTracker {
        /** @throws IOException to give up (cancelled): the connection is closed */
        void track(Link link) throws IOException;
    }

    /** Opens, connects and secures (TLS, shared secret) a new connection to {@code peer}. */
    static Link connect(EmbeddedTransport transport, EmbeddedMetadata peer, LinkTracker tracker) throws IOException {
        SocketChannel socket = SocketChannel.open();
        Link plain = Link.plain(socket);
        try {
            tracker.track(plain);
            socket.setOption(StandardSocketOptions.TCP_NODELAY, true);
            socket.setOption(StandardSocketOptions.SO_RCVBUF, 4 << 20);
            socket.setOption(StandardSocketOptions.SO_SNDBUF, 4 << 20);
            socket.connect(new InetSocketAddress(peer.host(), peer.port()));
            Link secured = transport.authentication().client(socket, peer.host(), peer.port());
            tracker.track(secured);
            return secured;
        } catch (IOException | RuntimeException e) {
            plain.close();
            throw e;
        }
    }

    /**
     * A large transfer over several connections ({@link StripedTransfer}), when settings, size and the pool's free
     * connections make it one.
     *
     * @return whether it ran striped (false: nothing was sent; run it on {@code ch} alone)
     */
    private boolean executeStriped(Link ch, boolean reused, PeerPool pool) throws IOException {
        StripedTransfer run = StripedTransfer.plan(agent.transport(), pool, op, local, peer, peerAgent, notification,
                remoteAddresses, lengths);
        if (run == null) {
            return false;
        }
        striped = run; // before it checks cancelled: cancel either sees it (and stops every stripe) or is seen there
        streams = run.streams();
        try {
            path = SameHostPeer.TCP;
            run.execute(ch, reused, () -> cancelled, this::describe);
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
            throw cancelled ? e : new StaleConnectionException(e, false);
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
                        Wire.sendMemory(ch, region.type(), region.address(), lengths[i], agent.transport().staging());
                    }
                }
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
            if (cancelled) {
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
     * not one per block); GPU memory range by range through the staging buffers.
     */
    private void moveLocal(Link ch, boolean read) throws IOException {
        long[] localAddresses = new long[lengths.length];
        boolean hostMemory = true;
        for (int i = 0; i < lengths.length; i++) {
            MemoryRegion region = local.get(i);
            localAddresses[i] = region.address();
            hostMemory &= region.type() == MemoryType.DRAM;
        }
        if (hostMemory) {
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
                Wire.receiveMemory(ch, region.type(), region.address(), lengths[i], agent.transport().staging());
            } else {
                Wire.sendMemory(ch, region.type(), region.address(), lengths[i], agent.transport().staging());
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
            if (cancelled) {
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
                    () -> cancelled || ch.hasUnreadInput());
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
            if (cancelled || !ch.hasUnreadInput()) {
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
            if (cancelled) {
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

    /**
     * A transfer's I/O failure (the peer died, closed or reset the connection) as the transport's exception, the
     * {@code IOException} kept as a suppressed exception rather than the cause, its words kept but for two phrases.
     * Web frameworks take an {@code EOFException} anywhere in a cause chain, or "broken pipe" or "connection reset by
     * peer" in the root cause's message, for their own HTTP client having gone away: Spring MVC's
     * {@code DisconnectedClientHelper} then answers an empty 200 and logs nothing. A failed peer is not that.
     */
    static TransportException ioFailure(String what, Exception e) {
        String reason = e.toString().replaceAll("(?i)connection reset by peer", "connection reset by the peer")
                .replaceAll("(?i)broken pipe", "pipe broken");
        TransportException failure = new TransportException(what + " failed: " + reason);
        failure.addSuppressed(e);
        return failure;
    }

    private String describe() {
        return op + " of " + lengths.length + " range(s) with agent '" + peer.agent() + "' at " + peer.host() + ":"
                + peer.port();
    }

    private void end(TransferState terminal, TransportException failure) {
        synchronized (this) {
            if (state.isTerminal()) {
                return;
            }
            error = failure;
            state = terminal;
            channel = null;
            worker = null;
            finished = true; // before completing: callbacks may cancel, and must not wait for themselves
            notifyAll();
        }
        agent.transferEnded(this);
        // The future (where one was asked for) first: whoever watches it has seen the end by the time the
        // operation's waiters wake.
        CompletableFuture<Void> future = completion;
        if (future != null) {
            settle(future);
        }
        EndListener told = (EndListener) LISTENER.getAndSet(this, ENDED);
        if (told != null) {
            told.ended(failure);
        }
    }

    @Override
    public void cancel() {
        if (state.isTerminal()) {
            return;
        }
        cancelled = true;
        if (STARTED.compareAndSet(this, false, true)) {
            agent.transport().dequeue(this);
            end(TransferState.CANCELLED, new TransportException("transfer cancelled before it started"));
            PeerPool.Dispatch handedOver = dispatch;
            if (leftForWaitingThread && handedOver != null) {
                handedOver.runHere(); // no worker will: this gives its connection back to the pool
            }
            return;
        }
        closeQuietly(channel);
        StripedTransfer stripes = striped;
        if (stripes != null) {
            stripes.abort();
        }
        if (Thread.currentThread() != worker) {
            awaitFinished();
        }
    }

    private synchronized void awaitFinished() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CANCEL_WAIT_SECONDS);
        try {
            while (!finished) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new TransportException("transfer did not stop within " + CANCEL_WAIT_SECONDS + " s of cancel");
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(Link ch) {
        if (ch != null) {
            ch.close();
        }
    }

    /** An I/O failure before the peer answered: on a reused connection, worth one retry. */
    static final class StaleConnectionException extends IOException {
        private static final long serialVersionUID = 1L;

        /** Worth a retry on a fresh connection even when this one was fresh (the peer dropped it on IDENTIFY). */
        final boolean retryable;

        StaleConnectionException(IOException cause, boolean retryable) {
            super(cause);
            this.retryable = retryable;
        }

        @Override
        public synchronized IOException getCause() {
            return (IOException) super.getCause();
        }
    }
}
