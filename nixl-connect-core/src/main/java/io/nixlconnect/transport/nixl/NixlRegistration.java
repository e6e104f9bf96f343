package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;

import java.util.concurrent.atomic.AtomicBoolean;

/** A region registered with a NIXL agent; keeps the descriptor list NIXL needs to deregister it. */
final class NixlRegistration implements MemoryRegistration {

    private final NixlAgentCore agent;
    private final MemoryRegion region;
    private final long dlist;
    private final AtomicBoolean released = new AtomicBoolean();

    NixlRegistration(NixlAgentCore agent, MemoryRegion region, long dlist) {
        this.agent = agent;
        this.region = region;
        this.dlist = dlist;
    }

    @Override
    public MemoryRegion region() {
        return region;
    }

    long dlist() {
        return dlist;
    }

    /** Marks it released by the agent's close, which deregisters it itself. */
    void markReleased() {
        released.set(true);
    }

    @Override
    public void close() {
        if (released.compareAndSet(false, true)) {
            agent.deregister(this, dlist);
        }
    }

    @Override
    public String toString() {
        return "NixlRegistration[" + region + (released.get() ? ", released" : "") + "]";
    }
}
