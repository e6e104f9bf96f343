package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import java.util.Arrays;

/**
 * A request's ranges, checked against the window one by one as they arrive (each in O(1) when they come in the
 * published order, see {@link PublishedRegions}), with the region each lies in; storage grows with what arrived.
 * One per server connection, {@link #reset} for each request (a small request's ranges then cost no allocation);
 * storage grown beyond {@link #KEPT} ranges by a large request is not kept for the next.
 */
final class RequestedRanges implements Wire.RangeSink {
    static final int KEPT = 16;
    private EmbeddedWindow window;
    /** Inline requests: read every range even after one is refused (there are few), so the connection stays in step. */
    private boolean readAll;
    /** A range lay outside the window (or there is no window). */
    private boolean refused;
    /** Bytes the ranges add up to (stops counting past the inline limit). */
    private long total;
    private long[] addresses = new long[KEPT];
    private long[] lengths = new long[KEPT];
    /** The published region each accepted range lies in. */
    private MemoryRegion[] regions = new MemoryRegion[KEPT];
    private int size;
    /** Where the last accepted range lay (publication index), -1 before the first: where the next is looked for first. */
    private int hint;
    private boolean hostMemoryOnly;

    /** {@code window}: null when the request is refused already (its ranges are then only counted, with {@code readAll}). */
    RequestedRanges reset(EmbeddedWindow window, boolean readAll) {
        this.window = window;
        this.readAll = readAll;
        refused = window == null;
        total = 0;
        Arrays.fill(regions, 0, size, null); // nothing of the previous window is kept reachable
        size = 0;
        hint = -1;
        hostMemoryOnly = true;
        if (addresses.length > KEPT) {
            addresses = new long[KEPT];
            lengths = new long[KEPT];
            regions = new MemoryRegion[KEPT];
        }
        return this;
    }

    @Override
    public boolean accept(long address, long length) {
        if (total <= Wire.INLINE_MAX_BYTES) {
            total += Math.max(0, Math.min(length, Wire.INLINE_MAX_BYTES + 1L)); // negative: refused below
        }
        int index = refused ? -1 : window.regions().indexCovering(address, length, hint);
        if (index < 0) {
            refused = true;
            return readAll;
        }
        if (size == addresses.length) {
            addresses = Arrays.copyOf(addresses, size * 2);
            lengths = Arrays.copyOf(lengths, size * 2);
            regions = Arrays.copyOf(regions, size * 2);
        }
        MemoryRegion region = window.regions().get(index);
        hint = index;
        hostMemoryOnly &= region.type() == MemoryType.DRAM;
        addresses[size] = address;
        lengths[size] = length;
        regions[size] = region;
        size++;
        return true;
    }

    /** Whether every accepted range lies in host memory of the window (GPU memory is staged, not gathered). */
    boolean hostMemoryOnly() {
        return hostMemoryOnly;
    }

    /** The published region accepted range {@code index} lies in. */
    MemoryRegion region(int index) {
        return regions[index];
    }

    /** A range lay outside the window (or there is no window). */
    boolean refused() {
        return refused;
    }

    /** Bytes the ranges add up to, exact up to {@link Wire#INLINE_MAX_BYTES} (past it, only more than that). */
    long total() {
        return total;
    }

    /** The accepted ranges' addresses, the first {@link #size()} valid (storage, not a copy). */
    long[] addresses() {
        return addresses;
    }

    /** The accepted ranges' lengths, the first {@link #size()} valid (storage, not a copy). */
    long[] lengths() {
        return lengths;
    }

    /** How many ranges were accepted (none after a refusal). */
    int size() {
        return size;
    }
}
