package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.EndListener;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Regions one passive operation exposes. The server {@link #enter enters} a window before touching its
 * memory and {@link #exit exits} after; {@link #close()} refuses new entries, aborts the connections
 * streaming inside and waits for their threads to leave, and revokes every direct-copy grant (cross-memory
 * attach: closing a reader's connection would not stop its copy): it tells each granted reader on its connection,
 * and the reader checks between chunks and stops. A reader that has not answered within {@link #REVOKE_WAIT_NANOS}
 * has its connection closed and the memory is not released to the owner but kept until the agent closes
 * ({@link #releasedWithoutNotification()}), so no granted copy can read memory the owner freed and reused.
 */
final class EmbeddedWindow implements PassiveWindow {

    private static final long CLOSE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** How long a close waits for a granted reader to stop after being told of the revocation (it checks every chunk). */
    static final long REVOKE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final EmbeddedAgent agent;
    private final TransferOp access;
    /** What the window publishes: a request's ranges are checked against these. */
    private final PublishedRegions regions;
    private final NotificationKey notification;
    /** The one {@link #onNotified} listener; {@link #ENDED} once told (or the window ended without one). */
    private volatile EndListener listener;
    /** Set before the window ends: null once its notifications arrived, else why it ended without them. */
    private volatile Throwable failure;
    private volatile boolean ended;
    /** Made only when {@link #notified()} is asked for. */
    private volatile CompletableFuture<Void> notified;
    // Links streaming inside now: nearly always none or one, so one field, and a list only for more (a set's table
    // and nodes, then a list, were allocated for every operation); a link enters at most once at a time, so removal
    // by identity is exact. Guarded by this.
    private Link inside;
    private List<Link> moreInside;
    /**
     * Connections of peers granted a direct copy that have not reported yet, and those told of a revocation; null
     * until the first (a window read inline or over TCP makes neither list). Guarded by this.
     */
    private List<Link> grants;
    private List<Link> revoked;
    /** A granted reader did not stop in time when revoked: the memory is kept until the agent closes. */
    private volatile boolean keptForRevokedReader;
    private final int expected;
    /** Notifications claimed: delivered, or on their way (an inline READ or WRITE still moving its bytes). */
    private int claimed;
    private int received;
    private boolean closed;
    private volatile String path;

    EmbeddedWindow(EmbeddedAgent agent, TransferOp access, List<MemoryRegion> regions, NotificationKey notification,
            int expected) {
        this.agent = agent;
        this.access = access;
        this.regions = new PublishedRegions(regions);
        this.notification = notification;
        this.expected = expected;
    }

    TransferOp access() {
        return access;
    }

    NotificationKey notification() {
        return notification;
    }

    /** The regions it publishes, in publication order. */
    PublishedRegions regions() {
        return regions;
    }

    synchronized boolean enter(Link link) {
        return enter(link, false);
    }

    /**
     * Admits a server thread that streams the memory over {@code link} ({@code grant} false; a close aborts
     * it), or that granted the peer a direct copy ({@code grant} true; a close waits for its report).
     */
    synchronized boolean enter(Link link, boolean grant) {
        if (closed) {
            return false;
        }
        if (grant) {
            if (grants == null) {
                grants = new ArrayList<>(1);
            }
            grants.add(link);
        } else if (inside == null) {
            inside = link;
        } else {
            if (moreInside == null) {
                moreInside = new ArrayList<>(2);
            }
            moreInside.add(link);
        }
        path = grant ? SameHostPeer.CROSS_MEMORY_ATTACH : SameHostPeer.TCP;
        return true;
    }

    synchronized void exit(Link link) {
        exit(link, false);
    }

    /**
     * Lets go of {@code link}'s entry; for a grant, whether the grant was revoked meanwhile (the peer was told on
     * the connection, and the caller must send nothing more on it). A grant's caller holds {@code link}'s monitor,
     * as {@link #revoke} does, so a revocation is written either before the caller answers or not at all.
     */
    synchronized boolean exit(Link link, boolean grant) {
        if (grant) {
            if (grants != null) {
                grants.remove(link);
            }
            notifyAll();
            return revoked != null && revoked.remove(link);
        } else if (inside == link) {
            inside = moreInside == null || moreInside.isEmpty() ? null : moreInside.remove(moreInside.size() - 1);
        } else if (moreInside != null) {
            moreInside.remove(link);
        }
        notifyAll();
        return false;
    }

    /** Already complete, shared: the embedded window is released when {@link #close()} returns. */
    private static final CompletableFuture<Void> RELEASED = CompletableFuture.completedFuture(null);

    /**
     * Complete: {@link #close()} returns only once no server thread is inside and every granted peer stopped or lost
     * its connection; where one did not stop when told, {@link #releasedWithoutNotification()} says so.
     */
    @Override
    public CompletableFuture<Void> released() {
        return RELEASED;
    }

    /** Whether a granted reader did not stop when its grant was revoked: the owner must not free the memory. */
    @Override
    public boolean releasedWithoutNotification() {
        return keptForRevokedReader;
    }

    @Override
    public void keepUntilAgentCloses(AutoCloseable memory) {
        agent.keepUntilClosed(memory);
    }

    @Override
    public String path() {
        return path;
    }

    /**
     * Claims one notification; false when the window takes no more (closed, or every one it waits for is delivered
     * or on its way). A claim is then {@link #deliver delivered}, or {@link #release released} by an inline transfer
     * that failed before its bytes were handed over.
     */
    synchronized boolean claim() {
        if (closed || claimed == expected) {
            return false;
        }
        claimed++;
        return true;
    }

    /** An inline transfer claimed a notification and failed before handing its bytes over: another peer may claim it. */
    synchronized void release() {
        claimed--;
    }

    /**
     * A claimed notification was delivered (answered, or the bytes of an inline READ handed to the peer's socket):
     * after the last one expected, complete and close (the data has landed, the memory is no longer served).
     */
    void deliver() {
        synchronized (this) {
            received++;
            if (received < expected) {
                return;
            }
        }
        shut();
        end(null);
    }

    /**
     * A peer that had started on this window lost its connection before notifying: the window fails with
     * {@code reason}, unless it serves several readers (fan-out) and another may still come.
     */
    void peerLost(String reason) {
        synchronized (this) {
            if (closed || expected > 1) {
                return;
            }
        }
        shut();
        end(new TransportException(reason));
    }

    @Override
    public synchronized int notificationsReceived() {
        return received;
    }

    @Override
    public CompletableFuture<Void> notified() {
        CompletableFuture<Void> made = notified;
        if (made == null) {
            CompletableFuture<Void> fresh = new CompletableFuture<>();
            made = NOTIFIED.compareAndSet(this, null, fresh) ? fresh : notified;
            if (ended) {
                settle(made); // end() may have looked before it was here
            }
        }
        return made;
    }

    /** Calls {@code listener} once when the window ends, directly: no future stage. At once if it has ended. */
    @Override
    public void onNotified(EndListener endListener) {
        if (!LISTENER.compareAndSet(this, null, endListener)) {
            if (listener != ENDED) {
                throw new IllegalStateException("a window takes one end listener");
            }
            endListener.ended(failure);
        }
    }

    /** Ends the window's wait once: {@code why} null when its notifications arrived. */
    private void end(Throwable why) {
        synchronized (this) {
            if (ended) {
                return;
            }
            failure = why;
            ended = true;
        }
        // The future (where one was asked for) first: whoever watches it has seen the end by the time the
        // operation's waiters wake.
        CompletableFuture<Void> future = notified;
        if (future != null) {
            settle(future);
        }
        EndListener told = (EndListener) LISTENER.getAndSet(this, ENDED);
        if (told != null) {
            told.ended(why);
        }
    }

    private void settle(CompletableFuture<Void> future) {
        Throwable why = failure;
        if (why == null) {
            future.complete(null);
        } else {
            future.completeExceptionally(why);
        }
    }

    @Override
    public void close() {
        shut();
        if (!ended) { // the usual close follows delivery: no exception (and stack trace) for nothing
            end(new TransportException("window closed before its notification arrived"));
        }
    }

    private static final EndListener ENDED = why -> { };
    private static final VarHandle LISTENER;
    private static final VarHandle NOTIFIED;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            LISTENER = lookup.findVarHandle(EmbeddedWindow.class, "listener", EndListener.class);
            NOTIFIED = lookup.findVarHandle(EmbeddedWindow.class, "notified", CompletableFuture.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private void shut() {
        List<Link> toAbort;
        List<Link> toRevoke;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            if (inside == null) {
                toAbort = List.of();
            } else {
                toAbort = new ArrayList<>(1 + (moreInside == null ? 0 : moreInside.size()));
                toAbort.add(inside);
                if (moreInside != null) {
                    toAbort.addAll(moreInside);
                }
            }
            toRevoke = hasGrants() ? List.copyOf(grants) : List.of();
        }
        agent.windowClosed(this);
        for (Link link : toAbort) {
            link.abort(); // unblocks the server thread copying into or out of our memory
        }
        for (Link link : toRevoke) {
            revoke(link);
        }
        boolean interrupted = awaitLeft(System.nanoTime() + REVOKE_WAIT_NANOS, false);
        List<Link> unanswered;
        synchronized (this) {
            unanswered = hasGrants() ? List.copyOf(grants) : List.of();
        }
        if (!unanswered.isEmpty()) {
            // The reader did not stop: cut it off, and keep the memory, which its copy could still reach.
            keptForRevokedReader = true;
            for (Link link : unanswered) {
                link.abort();
            }
        }
        interrupted |= awaitLeft(System.nanoTime() + CLOSE_WAIT_NANOS, true);
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Whether a granted reader has not reported yet. Called holding this. */
    private boolean hasGrants() {
        return grants != null && !grants.isEmpty();
    }

    /** Tells a granted reader, on its connection, that its grant is revoked (unless it reported meanwhile). */
    private void revoke(Link link) {
        synchronized (link) {
            synchronized (this) {
                if (grants == null || !grants.contains(link)) {
                    return;
                }
                if (revoked == null) {
                    revoked = new ArrayList<>(1);
                }
                revoked.add(link);
            }
            try {
                Wire.writeRevoked(link);
            } catch (java.io.IOException e) {
                link.abort(); // the reader is gone or its connection broken: nothing more can reach it
            }
        }
    }

    /**
     * Waits until no server thread is inside and (when {@code orThrow}) no grant remains, or (otherwise) the grants
     * are gone too, until {@code deadline}; past it, throws when {@code orThrow}.
     *
     * @return whether the wait was interrupted
     */
    private synchronized boolean awaitLeft(long deadline, boolean orThrow) {
        boolean interrupted = false;
        while (inside != null || hasGrants()) { // inside is null only once moreInside is empty too
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                if (!orThrow) {
                    break;
                }
                throw new TransportException(hasGrants()
                        ? "A peer granted a direct copy of a closed window kept its connection open after it was cut off"
                        : "A server thread did not leave a closed window within 30 s");
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        return interrupted;
    }
}
