package io.nixlconnect.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One live use of a {@link CudaBuffer}, e.g. its registration in a transfer operation. While any use
 * is live the buffer refuses to close. Closing the handle ends the use; closing it again does nothing.
 */
public final class LiveUse implements AutoCloseable {

    private final UseCounter counter;
    private final AtomicBoolean released = new AtomicBoolean();

    LiveUse(UseCounter counter) {
        this.counter = counter;
    }

    /** Ends this use; idempotent. */
    @Override
    public void close() {
        if (released.compareAndSet(false, true)) {
            counter.release();
        }
    }
}
