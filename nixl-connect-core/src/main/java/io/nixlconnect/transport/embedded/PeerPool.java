package io.nixlconnect.transport.embedded;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.Executor;

/**
 * Connections to one peer endpoint: at most {@code max} at once, idle ones reused, transfers beyond the
 * limit queued and run by whichever worker frees a connection first (no thread waits idle for one).
 */
final class PeerPool {

    private final int max;
    private final Executor executor;
    private final Deque<Link> idle = new ArrayDeque<>();
    private final Deque<EmbeddedTransfer> waiting = new ArrayDeque<>();
    private int open;
    private boolean closed;

    PeerPool(int max, Executor executor) {
        this.max = max;
        this.executor = executor;
    }

    void submit(EmbeddedTransfer transfer) {
        Link channel;
        synchronized (this) {
            if (!idle.isEmpty()) {
                channel = idle.pop();
            } else if (open < max) {
                open++;
                channel = null;
            } else {
                waiting.add(transfer);
                return;
            }
        }
        executor.execute(() -> drive(transfer, channel));
    }

    private void drive(EmbeddedTransfer first, Link channel) {
        EmbeddedTransfer transfer = first;
        Link current = channel;
        while (transfer != null) {
            current = transfer.run(current);
            synchronized (this) {
                transfer = waiting.poll();
                if (transfer == null) {
                    if (current != null && !closed) {
                        idle.push(current);
                    } else {
                        open--;
                        close(current);
                    }
                }
            }
        }
    }

    synchronized void remove(EmbeddedTransfer transfer) {
        waiting.remove(transfer);
    }

    void close() {
        synchronized (this) {
            closed = true;
            for (Link channel : idle) {
                close(channel);
            }
            open -= idle.size();
            idle.clear();
        }
    }

    private static void close(Link link) {
        if (link != null) {
            link.close();
        }
    }
}
