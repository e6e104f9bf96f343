package io.nixlconnect.transport.nixl;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * Matches incoming notifications, by their exact bytes, with the windows waiting for them.
 *
 * <p>Each notification counts for one waiter (the longest-waiting one for those bytes), which completes once
 * it has as many as it expects (one, or one per reader of a fan-out readable). A notification
 * nobody waits for yet is kept, so a window opened a moment later still sees it; that buffer is
 * bounded in count and bytes and drops its oldest entries first. Futures are completed outside the
 * lock.
 */
final class NotificationDispatcher {

    private final int maxBuffered;
    private final long maxBufferedBytes;
    private final Map<Key, ArrayDeque<Waiter>> waiting = new HashMap<>();
    private final LinkedHashMap<Key, Integer> early = new LinkedHashMap<>();
    private int bufferedCount;
    private long bufferedBytes;
    private long dropped;

    NotificationDispatcher(int maxBuffered, long maxBufferedBytes) {
        this.maxBuffered = maxBuffered;
        this.maxBufferedBytes = maxBufferedBytes;
    }

    /** Told when a peer reports that its transfer for the waited-for notification failed ({@link FailureNotification}). */
    interface FailureListener {
        void peerFailed(String peer, String cause);
    }

    /** A registered wait for {@code expected} copies of one notification. */
    static final class Waiter {
        private final Key key;
        private final int expected;
        private int received; // guarded by the dispatcher
        final CompletableFuture<Void> future = new CompletableFuture<>();
        /** Told of a peer's failure report; the future stays pending (the window decides what it means). */
        volatile FailureListener onPeerFailure;

        private Waiter(Key key, int expected) {
            this.key = key;
            this.expected = expected;
        }
    }

    /** Starts waiting for {@code notification}; completes at once if it already arrived. */
    Waiter await(byte[] notification) {
        return await(notification, 1);
    }

    /** Starts waiting for {@code expected} copies of {@code notification}, counting those that already arrived. */
    Waiter await(byte[] notification, int expected) {
        if (expected < 1) {
            throw new IllegalArgumentException("expected notifications must be >= 1, was " + expected);
        }
        Key key = new Key(notification.clone());
        Waiter waiter = new Waiter(key, expected);
        boolean complete;
        synchronized (this) {
            while (waiter.received < expected && takeEarly(key)) {
                waiter.received++;
            }
            complete = waiter.received == expected;
            if (!complete) {
                waiting.computeIfAbsent(key, k -> new ArrayDeque<>()).add(waiter);
            }
        }
        if (complete) {
            waiter.future.complete(null);
        }
        return waiter;
    }

    /** How many notifications the waiter has received. */
    synchronized int received(Waiter waiter) {
        return waiter.received;
    }

    /** Stops a wait; its future is cancelled unless it completed already. */
    void cancel(Waiter waiter) {
        synchronized (this) {
            ArrayDeque<Waiter> queue = waiting.get(waiter.key);
            if (queue != null && queue.remove(waiter) && queue.isEmpty()) {
                waiting.remove(waiter.key);
            }
        }
        waiter.future.completeExceptionally(new CancellationException("window closed before its notification"));
    }

    /** Hands one received notification to its waiter, or buffers it. */
    void deliver(byte[] notification) {
        Key key = new Key(notification);
        Waiter waiter = null;
        synchronized (this) {
            ArrayDeque<Waiter> queue = waiting.get(key);
            if (queue != null) {
                Waiter first = queue.peek();
                if (++first.received == first.expected) {
                    waiter = queue.poll();
                    if (queue.isEmpty()) {
                        waiting.remove(key);
                    }
                }
            } else {
                buffer(key);
            }
        }
        if (waiter != null) {
            waiter.future.complete(null);
        }
    }

    /**
     * A peer reported that its transfer for {@code key} ended without notifying: the one waiter for it is told, with
     * the peer's name and cause (its own key, should the cause quote it, replaced), unless it waits for several peers
     * (a fan-out readable: another reader may still come). Nothing is buffered: a report for no waiter is dropped.
     *
     * @return whether a waiter was told
     */
    boolean peerFailed(byte[] key, String peer, String cause) {
        Waiter told = null;
        synchronized (this) {
            ArrayDeque<Waiter> queue = waiting.get(new Key(key));
            Waiter first = queue == null ? null : queue.peek();
            if (first != null && first.expected == 1) {
                told = first;
            }
        }
        FailureListener listener = told == null ? null : told.onPeerFailure;
        if (listener == null) {
            return false;
        }
        String keyText = new String(key, java.nio.charset.StandardCharsets.UTF_8);
        listener.peerFailed(peer, keyText.isEmpty() ? cause : cause.replace(keyText, "<notification key>"));
        return true;
    }

    /** Fails every waiter (agent closing) and forgets buffered notifications. */
    void failAll(Throwable cause) {
        List<Waiter> all = new ArrayList<>();
        synchronized (this) {
            waiting.values().forEach(all::addAll);
            waiting.clear();
            early.clear();
            bufferedCount = 0;
            bufferedBytes = 0;
        }
        all.forEach(waiter -> waiter.future.completeExceptionally(cause));
    }

    synchronized int waitingCount() {
        int count = 0;
        for (ArrayDeque<Waiter> queue : waiting.values()) {
            count += queue.size();
        }
        return count;
    }

    synchronized int bufferedCount() {
        return bufferedCount;
    }

    synchronized long droppedCount() {
        return dropped;
    }

    private boolean takeEarly(Key key) {
        Integer count = early.get(key);
        if (count == null) {
            return false;
        }
        if (count == 1) {
            early.remove(key);
        } else {
            early.put(key, count - 1);
        }
        bufferedCount--;
        bufferedBytes -= key.bytes.length;
        return true;
    }

    private void buffer(Key key) {
        if (maxBuffered <= 0 || key.bytes.length > maxBufferedBytes) {
            dropped++;
            return;
        }
        early.merge(key, 1, Integer::sum);
        bufferedCount++;
        bufferedBytes += key.bytes.length;
        Iterator<Map.Entry<Key, Integer>> oldest = early.entrySet().iterator();
        while ((bufferedCount > maxBuffered || bufferedBytes > maxBufferedBytes) && oldest.hasNext()) {
            Map.Entry<Key, Integer> entry = oldest.next();
            bufferedCount--;
            bufferedBytes -= entry.getKey().bytes.length;
            dropped++;
            if (entry.getValue() == 1) {
                oldest.remove();
            } else {
                entry.setValue(entry.getValue() - 1);
            }
        }
    }

    /** Notification bytes with value equality. */
    private static final class Key {
        private final byte[] bytes;
        private final int hash;

        Key(byte[] bytes) {
            this.bytes = bytes;
            this.hash = Arrays.hashCode(bytes);
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Key key && Arrays.equals(bytes, key.bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }
}
