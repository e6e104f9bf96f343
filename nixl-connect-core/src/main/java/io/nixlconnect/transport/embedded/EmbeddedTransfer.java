package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.RunOutResources;
import io.nixlconnect.transport.EndListener;
import io.nixlconnect.transport.MemoryRegion;
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

/**
 * One posted transfer's life: queued for a connection to its peer, then run on a worker thread, or by the thread that
 * waits for it (a small one); retried once on a fresh connection when a pooled one was stale; ended once as DONE,
 * ERROR or CANCELLED, its listener and future told. Its {@link TransferExchange} says what goes over the connection.
 */
final class EmbeddedTransfer implements TransferHandle {

    private static final long CANCEL_WAIT_SECONDS = 30;
    /** Largest transfer the waiting thread runs itself (see {@link #runOnWaitingThread()}). */
    static final long RUN_ON_WAITING_THREAD_MAX_BYTES = 64 * 1024;

    private final EmbeddedAgent agent;
    /** What the transfer moves, and the requests that move it. */
    private final TransferExchange exchange;
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
    /** How the pool handed this transfer to its workers; null while it waits in the queue for a connection. */
    private volatile PeerPool.Dispatch dispatch;
    /** The agent's list of transfers in flight; guarded by its lock. */
    EmbeddedTransfer previousInAgent;
    EmbeddedTransfer nextInAgent;

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
        this.exchange = new TransferExchange(agent.transport(), op, local, peer, remote, notification, () -> cancelled);
        this.smallEnoughForWaitingThread = exchange.totalBytes() <= RUN_ON_WAITING_THREAD_MAX_BYTES;
        this.leftForWaitingThread = callerWaits && smallEnoughForWaitingThread;
    }

    boolean leftForWaitingThread() {
        return leftForWaitingThread;
    }

    /** The peer's {@code host:port}. */
    String endpoint() {
        return exchange.endpoint();
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
        return new TransferAttributes("embedded", "tcp", exchange.endpoint(), exchange.streams(), null);
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

    /** Ends the transfer ERRORED with {@code failure} unless it has started (or been cancelled): it could not be run. */
    void failToStart(TransportException failure) {
        if (STARTED.compareAndSet(this, false, true)) {
            end(TransferState.ERROR, failure);
        }
    }

    @Override
    public String path() {
        return exchange.path();
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
                    exchange.run(current, reused, sameHost, pool);
                    end(TransferState.DONE, null);
                    return current;
                } catch (StaleConnectionException stale) {
                    if (!reused && !stale.retryable) {
                        throw stale.getCause();
                    }
                    agent.transport().counters().reconnected.increment();
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
                end(TransferState.ERROR, ioFailure(exchange.describe(), e));
            }
            return null;
        } catch (OutOfMemoryError | LinkageError e) {
            // Out of memory or threads, or a class that could not load (out of descriptors to read it with): the
            // transfer ends with it rather than never, and its place in the pool is freed; the next one tries again.
            closeQuietly(current);
            String runOut = RunOutResources.describe(e);
            TransportException failure = new TransportException(exchange.describe() + " failed: "
                    + (runOut != null ? runOut : e.toString()));
            failure.addSuppressed(e);
            end(TransferState.ERROR, failure);
            return null;
        }
    }

    /** Opens, connects and secures (TLS, shared secret) a new connection to the peer. */
    private Link connect() throws IOException {
        return connect(agent.transport(), exchange.peer(), link -> {
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
     * A transfer's I/O failure (the peer died, closed or reset the connection) as the transport's exception, the
     * {@code IOException} kept as a suppressed exception rather than the cause, its words kept but for two phrases.
     * Web frameworks take an {@code EOFException} anywhere in a cause chain, or "broken pipe" or "connection reset by
     * peer" in the root cause's message, for their own HTTP client having gone away: Spring MVC's
     * {@code DisconnectedClientHelper} then answers an empty 200 and logs nothing. A failed peer is not that.
     */
    static TransportException ioFailure(String what, Exception e) {
        String runOut = RunOutResources.describe(e);
        if (runOut != null) {
            TransportException failure = new TransportException(what + " failed: " + runOut);
            failure.addSuppressed(e);
            return failure;
        }
        String reason = e.toString().replaceAll("(?i)connection reset by peer", "connection reset by the peer")
                .replaceAll("(?i)broken pipe", "pipe broken");
        TransportException failure = new TransportException(what + " failed: " + reason);
        failure.addSuppressed(e);
        return failure;
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
        exchange.abortStripes();
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
