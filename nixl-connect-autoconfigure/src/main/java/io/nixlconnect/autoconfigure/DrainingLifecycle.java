package io.nixlconnect.autoconfigure;

import org.springframework.context.SmartLifecycle;

/**
 * What {@link NixlConnectorLifecycle} and the Dynamo runtime's lifecycle share: a phase, a running flag, and a stop
 * that drains on its own thread and tells Boot when done, so that Boot's
 * {@code spring.lifecycle.timeout-per-shutdown-phase} bounds the wait and other beans of the phase stop meanwhile.
 * Past that timeout Boot moves on and the context closes the bean, cancelling what is still in flight: keep each grace
 * period below it.
 */
public abstract class DrainingLifecycle implements SmartLifecycle {

    private final int phase;
    private final String stopperThreadName;
    private volatile boolean running;

    protected DrainingLifecycle(int phase, String stopperThreadName) {
        this.phase = phase;
        this.stopperThreadName = stopperThreadName;
    }

    /** Whatever must happen before the bean counts as running; throws to refuse the start. */
    protected abstract void starting();

    /** Drains and closes; called once, by whichever stop comes first. */
    protected abstract void shutdown();

    @Override
    public final void start() {
        starting();
        running = true;
    }

    @Override
    public final void stop(Runnable callback) {
        if (!running) {
            callback.run();
            return;
        }
        running = false;
        Thread stopper = new Thread(() -> {
            try {
                shutdown();
            } finally {
                callback.run();
            }
        }, stopperThreadName);
        stopper.setDaemon(true);
        stopper.start();
    }

    @Override
    public final void stop() {
        if (running) {
            running = false;
            shutdown();
        }
    }

    @Override
    public final boolean isRunning() {
        return running;
    }

    @Override
    public final int getPhase() {
        return phase;
    }
}
