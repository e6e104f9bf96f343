package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A region registered with a NIXL agent; keeps the descriptor list NIXL needs to deregister it. A
 * zero-length region is legal on the wire but NIXL refuses it ("region is empty"), so it gets a
 * registration that NIXL never sees ({@code dlist == 0}) and whose close does nothing.
 */
final class NixlRegistration implements MemoryRegistration {

    private final NixlAgentCore agent;
    private final MemoryRegion region;
    private final long dlist;
    private final AtomicBoolean released = new AtomicBoolean();
    /** This region's memory sections of the agent's metadata (its keys), fetched once when first published. */
    private volatile java.util.List<NixlMetadataFormat.Section> sections;

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

    java.util.List<NixlMetadataFormat.Section> sections() {
        return sections;
    }

    void sections(java.util.List<NixlMetadataFormat.Section> fetched) {
        sections = fetched;
    }

    /** Marks it released by the agent's close, which deregisters it itself. */
    void markReleased() {
        released.set(true);
    }

    /** A registration of a zero-length region: nothing to register with NIXL, nothing to release. */
    static NixlRegistration empty(NixlAgentCore agent, MemoryRegion region) {
        return new NixlRegistration(agent, region, 0);
    }

    boolean isEmpty() {
        return dlist == 0;
    }

    @Override
    public void close() {
        if (released.compareAndSet(false, true) && dlist != 0) {
            agent.deregister(this, dlist);
        }
    }

    @Override
    public String toString() {
        return "NixlRegistration[" + region + (released.get() ? ", released" : "") + "]";
    }
}
