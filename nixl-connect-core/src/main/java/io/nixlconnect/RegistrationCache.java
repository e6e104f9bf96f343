package io.nixlconnect;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;
import java.util.HashMap;
import java.util.Map;

/**
 * Reference-counted memory registrations of one agent: a region registered by several operations (or
 * held by its descriptor) is registered once and deregistered when the last holder lets go.
 */
final class RegistrationCache {

    private final TransportAgent agent;
    /** The transport's name, for what a refusal says. */
    private final String backend;
    private final Map<MemoryRegion, Entry> entries = new HashMap<>();
    private long registeredBytes;

    RegistrationCache(TransportAgent agent, String backend) {
        this.agent = agent;
        this.backend = backend;
    }

    /** Registers {@code region} (or counts one more holder of its registration) for a holder that keeps the claim as an object. */
    Lease acquire(MemoryRegion region) {
        hold(region);
        return new Lease(region);
    }

    /**
     * Registers {@code region} (or counts one more holder of its registration); the caller owes one {@link #release}
     * of the same region. For holders that track what they hold themselves (operations), without a {@link Lease}.
     */
    void hold(MemoryRegion region) {
        hold(region, 1);
    }

    /** {@code holders} holds of {@code region} at once (a block list's slices of one pool); as many releases owed. */
    void hold(MemoryRegion region, int holders) {
        synchronized (this) {
            Entry entry = entries.get(region);
            if (entry != null) {
                entry.holders += holders;
                return;
            }
        }
        // Registration can be slow (NIXL pins pages); do it outside the lock, then reconcile.
        MemoryRegistration registration;
        try {
            registration = agent.registerMemory(region);
        } catch (TransportException e) {
            throw TransportFailureException.of(backend, "register " + region.length() + " bytes of "
                    + region.type() + " memory", e);
        }
        synchronized (this) {
            Entry entry = entries.get(region);
            if (entry != null) {
                entry.holders += holders;
            } else {
                entries.put(region, new Entry(registration, holders));
                registeredBytes += region.length();
                registration = null;
            }
        }
        if (registration != null) {
            registration.close(); // lost a race to an identical registration
        }
    }

    /** Lets go of one {@link #hold} of {@code region}; the last holder's release deregisters it. */
    void release(MemoryRegion region) {
        release(region, 1);
    }

    /** Lets go of {@code holders} holds of {@code region} at once. */
    void release(MemoryRegion region, int holders) {
        MemoryRegistration toClose = null;
        synchronized (this) {
            Entry entry = entries.get(region);
            if (entry != null && (entry.holders -= holders) <= 0) {
                entries.remove(region);
                registeredBytes -= region.length();
                toClose = entry.registration;
            }
        }
        if (toClose != null) {
            toClose.close();
        }
    }

    synchronized long registeredBytes() {
        return registeredBytes;
    }

    /** Forgets every registration; the agent's close deregisters them. */
    synchronized void clear() {
        entries.clear();
        registeredBytes = 0;
    }

    private static final class Entry {
        final MemoryRegistration registration;
        int holders;

        Entry(MemoryRegistration registration, int holders) {
            this.registration = registration;
            this.holders = holders;
        }
    }

    /** One holder's claim on a registration. Releasing twice is harmless. */
    final class Lease {
        private final MemoryRegion region;
        private boolean released;

        private Lease(MemoryRegion region) {
            this.region = region;
        }

        void release() {
            synchronized (this) {
                if (released) {
                    return;
                }
                released = true;
            }
            RegistrationCache.this.release(region);
        }
    }
}
