package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.internal.RunOutResources;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * A large READ or WRITE striped over several connections to its peer ({@link EmbeddedSettings#tcpStreams()}). One
 * TCP stream's copies run on one core, and over loopback one stream is held to what one core copies; the stripes'
 * copies run on several.
 *
 * <p>The transfer's bytes, its ranges taken in order as one sequence, are cut into equal contiguous stripes (a stripe
 * may span several ranges, or part of one). Each stripe is an ordinary ranged request with the transfer's credential
 * on its own connection — a READ, or a {@link Wire#WRITE_STRIPE} (a WRITE that delivers no notification) — so the
 * peer checks each exactly as it checks a whole request, and each enters the window on its own connection: a window
 * closed meanwhile aborts every stripe and waits for each to leave. Stripe 0 goes over the transfer's own connection,
 * its request first and alone, so that a stale pooled connection, or a peer from before {@code WRITE_STRIPE}, is
 * retried as an unstriped request would be (nothing has moved yet); the other stripes take connections the peer's
 * pool has free at that moment (idle ones, or new ones under its limit), never waiting for one, and run on worker
 * threads. The notification goes once, as a NOTIFY on the transfer's own connection, after every stripe succeeded.
 * A stripe that fails stops the others (their connections are closed, which tells the peer the transfer failed), and
 * nothing is notified. The caller's thread returns only once every stripe's thread has stopped touching memory.
 *
 * <p>The other stripes' connections stay with the transfer until it ends: handed to another transfer earlier, one
 * that the peer then dropped would tell the peer this transfer's reader was lost.
 */
final class StripedTransfer {

    /**
     * Smallest transfer striped. Measured on 2 cores (docs/benchmarks-history.md): at 16–48 MiB two streams were no
     * faster than one (median) and cost 10–25% more CPU per byte; from 64 MiB on they were faster at no more CPU per
     * byte.
     */
    static final long MIN_BYTES = 64L << 20;
    /** Smallest stripe: a transfer gets at most one stripe per this many bytes. */
    static final long MIN_STRIPE_BYTES = 32L << 20;
    /** Stripe boundaries fall on multiples of this, whole pages of both buffers (when the ranges start on one). */
    private static final long ALIGNMENT = 64 << 10;

    private final EmbeddedTransport transport;
    private final PeerPool pool;
    private final boolean read;
    private final EmbeddedMetadata peer;
    private final byte[] peerAgent;
    private final byte[] notification;
    /** Per stripe: its pieces' local addresses, remote addresses and lengths. */
    private final long[][] localAddresses;
    private final long[][] remoteAddresses;
    private final long[][] lengths;
    /**
     * Per stripe from 1: the connection borrowed for it (null: a permit to open one), then the one it ran on, kept
     * only when it succeeded. Written by the stripe's thread before {@link #stripesDone}, read after it.
     */
    private final Link[] links;
    private final boolean[] succeeded;
    private final CountDownLatch stripesDone;
    /** Every connection a stripe uses or opens, to close them all at once; guarded by itself. */
    private final List<Link> tracked = new ArrayList<>();
    private boolean stopped;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile Supplier<String> describe = () -> "striped transfer";

    private StripedTransfer(EmbeddedTransport transport, PeerPool pool, TransferOp op, List<MemoryRegion> local,
            EmbeddedMetadata peer, byte[] peerAgent, byte[] notification, long[] remote, long[] rangeLengths,
            Link[] borrowed, long total) {
        this.transport = transport;
        this.pool = pool;
        this.read = op == TransferOp.READ;
        this.peer = peer;
        this.peerAgent = peerAgent;
        this.notification = notification;
        int n = borrowed.length + 1;
        this.links = new Link[n];
        System.arraycopy(borrowed, 0, links, 1, borrowed.length);
        this.succeeded = new boolean[n];
        this.stripesDone = new CountDownLatch(n - 1);
        this.localAddresses = new long[n][];
        this.remoteAddresses = new long[n][];
        this.lengths = new long[n][];
        long start = 0;
        for (int k = 0; k < n; k++) {
            long end = k == n - 1 ? total : total / n * (k + 1) / ALIGNMENT * ALIGNMENT;
            cut(k, start, end, local, remote, rangeLengths);
            start = end;
        }
    }

    /**
     * The stripes of a transfer that is to be striped, with the connections borrowed for them; null when it is to
     * go over one connection: striping off, too small, GPU memory on this side (it goes through the staging
     * buffers), a peer that takes no {@code WRITE_STRIPE}, or no connection free in the pool.
     */
    static StripedTransfer plan(EmbeddedTransport transport, PeerPool pool, TransferOp op, List<MemoryRegion> local,
            EmbeddedMetadata peer, byte[] peerAgent, byte[] notification, long[] remote, long[] lengths) {
        int wanted = transport.tcpStreams();
        if (wanted < 2 || (op == TransferOp.WRITE && pool.stripedWritesRefused())) {
            return null;
        }
        long total = 0;
        for (int i = 0; i < lengths.length; i++) {
            if (local.get(i).type() != MemoryType.DRAM) {
                return null;
            }
            total += lengths[i];
        }
        int streams = (int) Math.min(wanted, total / MIN_STRIPE_BYTES);
        if (total < MIN_BYTES || streams < 2) {
            return null;
        }
        Link[] borrowed = pool.borrow(streams - 1);
        if (borrowed.length == 0) {
            return null;
        }
        return new StripedTransfer(transport, pool, op, local, peer, peerAgent, notification, remote, lengths, borrowed,
                total);
    }

    /** Stripe {@code k}: the pieces of the ranges that lie in {@code [start, end)} of their bytes taken in order. */
    private void cut(int k, long start, long end, List<MemoryRegion> local, long[] remote, long[] rangeLengths) {
        int pieces = 0;
        long offset = 0;
        for (long length : rangeLengths) {
            if (Math.max(offset, start) < Math.min(offset + length, end)) {
                pieces++;
            }
            offset += length;
        }
        localAddresses[k] = new long[pieces];
        remoteAddresses[k] = new long[pieces];
        lengths[k] = new long[pieces];
        int piece = 0;
        offset = 0;
        for (int i = 0; i < rangeLengths.length; i++) {
            long from = Math.max(offset, start);
            long to = Math.min(offset + rangeLengths[i], end);
            if (from < to) {
                localAddresses[k][piece] = local.get(i).address() + (from - offset);
                remoteAddresses[k][piece] = remote[i] + (from - offset);
                lengths[k][piece] = to - from;
                piece++;
            }
            offset += rangeLengths[i];
        }
    }

    /** Connections the bytes go over. */
    int streams() {
        return links.length;
    }

    /**
     * Runs every stripe, stripe 0 on {@code main}, then sends the notification on {@code main}. Returns (or throws)
     * only once no stripe's thread touches memory any more; the borrowed connections are back in the pool by then.
     *
     * @throws EmbeddedTransfer.StaleConnectionException when {@code main} failed before the peer answered stripe 0's
     *         request (nothing moved: worth a retry as for any request)
     */
    void execute(Link main, boolean reusedMain, BooleanSupplier cancelled, Supplier<String> description)
            throws IOException {
        describe = description;
        boolean launched = false;
        boolean awaited = false;
        try {
            track(main);
            if (cancelled.getAsBoolean()) {
                throw new IOException("cancelled");
            }
            try {
                Wire.writeRequest(main, read ? Wire.READ : Wire.WRITE_STRIPE, peerAgent, notification,
                        remoteAddresses[0], lengths[0]);
                expectOk(main, " refused by the peer: ");
            } catch (IOException e) {
                if (cancelled.getAsBoolean() || stopped()) {
                    throw e;
                }
                if (!read && !reusedMain) {
                    // A fresh connection dropped unanswered: a peer from before WRITE_STRIPE. One connection from now on.
                    pool.refuseStripedWrites();
                    throw new EmbeddedTransfer.StaleConnectionException(e, true);
                }
                throw new EmbeddedTransfer.StaleConnectionException(e, false);
            }
            launched = true;
            for (int k = 1; k < links.length; k++) {
                launch(k);
            }
            try {
                move(main, 0);
                if (!read) {
                    expectOk(main, ": data written, but the peer reported: ");
                }
                succeeded[0] = true;
            } catch (IOException | RuntimeException e) {
                fail(e, 0);
            }
            awaitStripes();
            awaited = true;
            Throwable failed = failure.get();
            if (failed instanceof IOException io) {
                throw io;
            }
            if (failed != null) {
                throw (RuntimeException) failed;
            }
            Wire.writeRequest(main, Wire.NOTIFY, peerAgent, notification);
            expectOk(main, read ? ": data read, but the notification was refused: "
                    : ": data written, but the notification was refused: ");
        } finally {
            if (launched && !awaited) { // unexpected: the stripes still write into our memory
                abort();
                awaitStripes();
            }
            synchronized (tracked) { // a cancel arriving now must not close connections handed on
                stopped = true;
                tracked.clear();
            }
            for (int k = 1; k < links.length; k++) {
                // Before the launch a borrowed connection goes back as it came; after it, only if its stripe succeeded
                // (its thread set it so); only now, after the notification (see the class comment).
                pool.giveBack(links[k]);
            }
        }
    }

    private void launch(int k) {
        try {
            pool.executor().execute(() -> runStripe(k));
        } catch (RejectedExecutionException | OutOfMemoryError e) {
            if (e instanceof OutOfMemoryError && !RunOutResources.isOutOfThreads(e)) {
                throw (OutOfMemoryError) e;
            }
            if (links[k] != null) {
                links[k].close();
                links[k] = null;
            }
            fail(new IOException(e instanceof OutOfMemoryError ? "stripe " + k + " could not start: "
                    + RunOutResources.threads() : "the transport is closing"), k);
            stripesDone.countDown();
        }
    }

    /** Stripe {@code k} (not 0) on its worker thread. */
    private void runStripe(int k) {
        Link link = links[k];
        boolean reused = link != null;
        try {
            while (true) {
                if (link == null) {
                    link = EmbeddedTransfer.connect(transport, peer, this::track);
                } else {
                    track(link);
                }
                try {
                    Wire.writeRequest(link, read ? Wire.READ : Wire.WRITE_STRIPE, peerAgent, notification,
                            remoteAddresses[k], lengths[k]);
                    expectOk(link, " refused by the peer: ");
                    break;
                } catch (IOException e) {
                    if (!reused || stopped()) {
                        throw e;
                    }
                    link.close(); // a pooled connection the peer had dropped: once more on a fresh one
                    link = null;
                    reused = false;
                }
            }
            move(link, k);
            if (!read) {
                expectOk(link, ": data written, but the peer reported: ");
            }
            succeeded[k] = true;
        } catch (IOException | RuntimeException e) {
            if (link != null) {
                link.close();
            }
            fail(e, k);
        } finally {
            links[k] = succeeded[k] ? link : null;
            stripesDone.countDown();
        }
    }

    private void move(Link link, int k) throws IOException {
        long[] local = localAddresses[k];
        long[] length = lengths[k];
        for (int i = 0; i < local.length; i++) {
            if (read) {
                Wire.receiveMemory(link, local[i], length[i]);
            } else {
                Wire.sendMemory(link, local[i], length[i]);
            }
        }
    }

    private void expectOk(Link link, String context) throws IOException {
        String refusal = Wire.readResponse(link);
        if (refusal != null) {
            throw new TransportException(describe.get() + context + refusal);
        }
    }

    /** The first failure is the transfer's; it stops every other stripe. */
    private void fail(Throwable e, int k) {
        Throwable reported = e instanceof IOException && !(e instanceof EmbeddedTransfer.StaleConnectionException)
                ? new IOException("stripe " + (k + 1) + " of " + links.length + ": " + e, e) : e;
        if (failure.compareAndSet(null, reported)) {
            abort();
        }
    }

    /** Waits for every stripe's thread; interrupted, it stops them and still waits (they write into our memory). */
    private void awaitStripes() {
        boolean interrupted = false;
        while (true) {
            try {
                stripesDone.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
                abort();
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops every stripe (cancel, or one failed): closes each connection in use; none is opened after. */
    void abort() {
        List<Link> toClose;
        synchronized (tracked) {
            stopped = true;
            toClose = new ArrayList<>(tracked);
        }
        for (Link link : toClose) {
            link.abort();
        }
    }

    private boolean stopped() {
        synchronized (tracked) {
            return stopped;
        }
    }

    private void track(Link link) throws IOException {
        synchronized (tracked) {
            if (!stopped) {
                tracked.add(link);
                return;
            }
        }
        throw new IOException("stopped: the transfer was cancelled or another of its stripes failed");
    }
}
