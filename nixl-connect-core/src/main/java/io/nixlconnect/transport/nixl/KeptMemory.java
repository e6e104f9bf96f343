package io.nixlconnect.transport.nixl;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Memory of windows released at their drain limit, kept allocated until the agent is destroyed (a stalled peer
 * could still reach it over UCX TCP), and what it adds up to (health). The agent decides when: it keeps memory only
 * while its native agent lives and frees all of it once that is destroyed ({@link NixlAgentCore#keepUntilClosed}).
 * Logs under {@link NixlAgentCore}'s logger, where these warnings were before.
 */
final class KeptMemory {

    private static final Logger log = LoggerFactory.getLogger(NixlAgentCore.class);

    private final String agentName;
    private final long maxKeptBytes;
    private final List<AutoCloseable> kept = new ArrayList<>(); // guards the fields below
    private long keptBytes;
    /**
     * Memory kept that its owner would have freed: owned memory of closed descriptors, less pages given back to the
     * system (see {@link NixlSettings#maxKeptBytes()}). {@link #keptBytes} also counts windows over memory still in use.
     */
    private long keptResidentBytes;
    private boolean overKeptCap;

    KeptMemory(String agentName, long maxKeptBytes) {
        this.agentName = agentName;
        this.maxKeptBytes = maxKeptBytes;
    }

    /** A window released at its drain limit: its bytes count once, whatever then holds its memory. */
    void countWindow(long bytes) {
        synchronized (kept) {
            keptBytes += bytes;
        }
    }

    /** Keeps {@code memory} until {@link #freeAll}; warns once each time the resident bytes cross the cap. */
    void keep(AutoCloseable memory, long bytes, long residentBytes) {
        long resident;
        boolean crossed;
        synchronized (kept) {
            kept.add(memory);
            keptBytes += bytes;
            keptResidentBytes += residentBytes;
            resident = keptResidentBytes;
            crossed = !overKeptCap && resident > maxKeptBytes;
            overKeptCap = resident > maxKeptBytes;
        }
        if (crossed) {
            log.warn("NIXL agent {}: {} bytes of memory that closed descriptors owned are kept resident for"
                    + " peers that stalled past the drain limit, over the cap of {} (NixlSettings.maxKeptBytes):"
                    + " GPU memory cannot be given back before the connector closes (host memory is, but for"
                    + " the partial pages at its ends)", agentName, resident, maxKeptBytes);
        }
    }

    /** Frees everything kept and starts counting from zero (the agent was destroyed). */
    void freeAll() {
        List<AutoCloseable> memories;
        synchronized (kept) {
            memories = new ArrayList<>(kept);
            kept.clear();
            keptBytes = 0;
            keptResidentBytes = 0;
            overKeptCap = false;
        }
        free(memories);
    }

    /** Frees memories now, each on its own: one that fails to close is logged and the rest are freed. */
    void free(List<AutoCloseable> memories) {
        for (AutoCloseable memory : memories) {
            try {
                memory.close();
            } catch (Exception e) {
                log.warn("NIXL agent {}: freeing memory kept after a drain limit failed", agentName, e);
            }
        }
    }

    /** The health figures: bytes kept, bytes kept resident, how many memories, and the cap. */
    Map<String, Object> details() {
        Map<String, Object> details = new LinkedHashMap<>();
        synchronized (kept) {
            details.put("bytesKeptAfterDrainLimit", keptBytes);
            details.put("bytesKeptResident", keptResidentBytes);
            details.put("memoryHeldUntilClose", kept.size());
            details.put("maxKeptBytes", maxKeptBytes);
        }
        return details;
    }
}
