package io.nixlconnect.transport.embedded;

import io.nixlconnect.transport.MemoryRegion;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The regions one window publishes, in the order they were published, and the question the server asks of each range
 * a peer requests: which published region holds it. A peer asks for the ranges of the metadata it was handed, in its
 * order: a block list's n-th range is the n-th region, or a piece of it (a stripe's share). So a lookup first tries
 * the region the request's previous range lay in and the one after it — O(1) a range, and nothing sorted when the
 * window opens. Any other range is looked up in an index by start address, built on the first such lookup: a binary
 * search each.
 */
final class PublishedRegions {

    /** In publication order. */
    private final MemoryRegion[] regions;
    /** Made on the first lookup the hint does not answer; immutable once made (a racing thread at worst makes an equal one). */
    private volatile ByStart byStart;

    PublishedRegions(List<MemoryRegion> regions) {
        this.regions = regions.toArray(MemoryRegion[]::new);
    }

    int size() {
        return regions.length;
    }

    MemoryRegion get(int index) {
        return regions[index];
    }

    /** Whether the index by address was made (a lookup the order did not answer). */
    boolean indexed() {
        return byStart != null;
    }

    /**
     * The index (in publication order) of a region holding {@code [address, address + length)}, or -1 when none does.
     *
     * @param hint the index the previous range of the same request lay in, or -1 for a request's first range
     */
    int indexCovering(long address, long length, int hint) {
        if (hint >= 0 && hint < regions.length && regions[hint].contains(address, length)) {
            return hint;
        }
        int next = hint + 1;
        if (next >= 0 && next < regions.length && regions[next].contains(address, length)) {
            return next;
        }
        ByStart index = byStart;
        if (index == null) {
            byStart = index = new ByStart(regions);
        }
        return index.indexCovering(address, length);
    }

    /**
     * The regions sorted by start address, and for each position the region reaching furthest of those up to it: a
     * range lies in some region iff it lies in the furthest-reaching one among those starting at or before it.
     */
    private static final class ByStart {
        private final long[] starts;
        /** Per sorted position, the publication index of the furthest-reaching region up to it. */
        private final int[] furthestUpTo;
        private final MemoryRegion[] regions;

        ByStart(MemoryRegion[] regions) {
            this.regions = regions;
            Integer[] order = new Integer[regions.length];
            Arrays.setAll(order, i -> i);
            Arrays.sort(order, Comparator.comparingLong(i -> regions[i].address()));
            starts = new long[regions.length];
            furthestUpTo = new int[regions.length];
            for (int i = 0; i < order.length; i++) {
                int index = order[i];
                starts[i] = regions[index].address();
                int before = i == 0 ? -1 : furthestUpTo[i - 1];
                furthestUpTo[i] = before >= 0 && endOf(regions[before]) >= endOf(regions[index]) ? before : index;
            }
        }

        int indexCovering(long address, long length) {
            int low = 0;
            int high = starts.length - 1;
            int last = -1; // the last region starting at or before address
            while (low <= high) {
                int middle = (low + high) >>> 1;
                if (starts[middle] <= address) {
                    last = middle;
                    low = middle + 1;
                } else {
                    high = middle - 1;
                }
            }
            if (last < 0) {
                return -1;
            }
            int candidate = furthestUpTo[last];
            return regions[candidate].contains(address, length) ? candidate : -1;
        }

        /** One past the region's last byte, saturated (a region's address plus length never wraps in practice). */
        private static long endOf(MemoryRegion region) {
            long end = region.address() + region.length();
            return end < region.address() ? Long.MAX_VALUE : end;
        }
    }
}
