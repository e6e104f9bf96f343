package io.nixlconnect.transport.nixl;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * One NIXL agent's posted transfers until they end, and who polls each: the progress loop ({@link #pollRound}) or
 * the thread waiting for it ({@link #pollOnWaitingThread}). Polling runs under the agent's lifecycle read lock with
 * the agent alive: the loop's round holds it (the caller's), the waiting thread takes it for each check.
 */
final class TransfersInFlight {

    /** A waiting thread spins between checks this long: a small same-host transfer ends within it. */
    static final long WAITING_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    /** Then yields between checks until the wait is this long. */
    static final long WAITING_YIELD_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** Then parks an eighth of the wait so far between checks, at most this long. */
    static final long WAITING_MAX_PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(200);

    private final NixlAgentCore core;
    private final ProgressLoop progress;
    private final Set<NixlTransfer> inFlight = ConcurrentHashMap.newKeySet();
    /** How many of {@link #inFlight} their waiting threads poll (see {@link #pollOnWaitingThread}). */
    private final AtomicInteger polledByWaitingThreads = new AtomicInteger();
    /** Transfers whose end the thread waiting for them saw first (see {@link #pollOnWaitingThread}). */
    private final LongAdder endedOnWaitingThreads = new LongAdder();

    TransfersInFlight(NixlAgentCore core, ProgressLoop progress) {
        this.core = core;
        this.progress = progress;
    }

    void add(NixlTransfer transfer) {
        inFlight.add(transfer);
    }

    /** {@code transfer} ended, or was cancelled, elsewhere. */
    void remove(NixlTransfer transfer) {
        inFlight.remove(transfer);
    }

    /** The progress loop's round: polls each transfer no waiting thread polls; returns how many ended. */
    int pollRound() {
        int ended = 0;
        for (NixlTransfer transfer : inFlight) {
            if (transfer.polledByWaitingThread) {
                continue;
            }
            if (transfer.poll()) {
                inFlight.remove(transfer);
                ended++;
            }
        }
        return ended;
    }

    /** Whether a transfer waits for the progress loop to see it end (one its waiting thread polls does not). */
    boolean anyPolledByTheLoop() {
        return inFlight.size() > polledByWaitingThreads.get();
    }

    /**
     * Polls {@code transfer} on the calling thread, which waits for it, until it ends, the thread is interrupted or
     * the agent closes. Python's callers of NIXL poll the same way ({@code check_xfer_state} in a loop); here it
     * spares the hand-off from the progress thread (a completion there, then a wake-up of the parked caller, tens of
     * microseconds on a busy machine). Meanwhile the progress loop leaves the transfer alone and does not spin for it.
     */
    void pollOnWaitingThread(NixlTransfer transfer) {
        Runnable outcome = null;
        long waitStart = System.nanoTime();
        transfer.polledByWaitingThread = true;
        polledByWaitingThreads.incrementAndGet();
        try {
            while (outcome == null && !Thread.currentThread().isInterrupted()) {
                core.lifecycle.readLock().lock();
                try {
                    if (core.handle() == 0) {
                        return; // closing abandons the transfer
                    }
                    outcome = transfer.pollOnce();
                    if (outcome != null) {
                        inFlight.remove(transfer);
                    }
                } finally {
                    core.lifecycle.readLock().unlock();
                }
                if (outcome == null) {
                    pauseBetweenChecks(System.nanoTime() - waitStart);
                }
            }
        } finally {
            polledByWaitingThreads.decrementAndGet();
            transfer.polledByWaitingThread = false;
            // An interrupted wait leaves its transfer to the loop. After a transfer posted with a wake-up (beginRead and a
            // later wait), the wake-up keeps the loop in its spin window for the caller's next post, which then need not
            // unpark it: without it, 64 KiB READs measured 20% slower and spent more CPU per byte.
            if (outcome == null || !transfer.postedForPollingCaller) {
                progress.wake();
            }
        }
        if (outcome != null && outcome != NixlTransfer.ALREADY_ENDED) {
            endedOnWaitingThreads.increment();
            // Outside the agent's lock: the operation's completion callbacks may close the connector from here.
            outcome.run();
        }
    }

    /**
     * Between two checks of a waiting thread's transfer: spins at first, then yields, then parks a growing pause, so
     * that a transfer that waits on its peer (its remote completion, a large copy over TCP) does not keep a core
     * spinning for all of its time: eight readers waiting on two cores took the cores the peers needed (issue 32).
     * A check comes at most {@link #WAITING_MAX_PARK_NANOS} after the transfer ends.
     */
    static void pauseBetweenChecks(long waitedNanos) {
        if (waitedNanos < WAITING_SPIN_NANOS) {
            Thread.onSpinWait();
        } else if (waitedNanos < WAITING_YIELD_NANOS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(Math.min(waitedNanos >> 3, WAITING_MAX_PARK_NANOS));
        }
    }

    /** The completions of the transfers to {@code remote} not ended yet. */
    List<CompletableFuture<Void>> completionsTo(String remote) {
        List<CompletableFuture<Void>> completions = new ArrayList<>();
        for (NixlTransfer transfer : inFlight) {
            if (remote.equals(transfer.remote()) && !transfer.state().isTerminal()) {
                completions.add(transfer.completion());
            }
        }
        return completions;
    }

    /**
     * Transfers to {@code remote} not ended yet, or ended with their request not yet released (one that has ended
     * leaves this set a moment later): while any is, the peer must not be invalidated, since NIXL's request refers to
     * the peer's loaded metadata until it is released.
     */
    long countTo(String remote) {
        return inFlight.stream().filter(transfer -> remote.equals(transfer.remote())
                && (!transfer.state().isTerminal() || transfer.holdsRequest())).count();
    }

    /** The peers that transfers in flight target. */
    Set<String> remotes() {
        Set<String> remotes = new HashSet<>();
        for (NixlTransfer transfer : inFlight) {
            remotes.add(transfer.remote());
        }
        return remotes;
    }

    /** Cancels every transfer in flight ({@code why}: the agent closed, or its progress loop failed). */
    void abandonAll(String why) {
        for (NixlTransfer transfer : inFlight) {
            transfer.abandon(why);
        }
        inFlight.clear();
    }

    int count() {
        return inFlight.size();
    }

    long endedOnWaitingThreads() {
        return endedOnWaitingThreads.sum();
    }
}
