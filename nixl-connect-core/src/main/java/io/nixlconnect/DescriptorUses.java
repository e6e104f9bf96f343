package io.nixlconnect;

import java.util.List;

/**
 * Marks an operation's local descriptors in use, and unmarks them. A block list is a run of one buffer's slices: the
 * original is marked once for the whole run ({@link Descriptor#acquireUses}: its monitor once, not once per slice) and
 * each slice alone under its own uncontended monitor ({@link Descriptor#acquireSliceUse}). Either way the original
 * refuses to close, and so to free the memory, while any of them is in use, and each slice refuses to close while it is.
 */
final class DescriptorUses {

    private DescriptorUses() {
    }

    /**
     * Marks every descriptor in use, or none: a refusal (one closed) undoes what was marked, then throws.
     *
     * @throws IllegalStateException if a descriptor, or the original of a slice, is closed
     */
    static void acquire(List<Descriptor> descriptors) {
        int marked = 0;
        try {
            while (marked < descriptors.size()) {
                marked += acquireRun(descriptors, marked);
            }
        } catch (RuntimeException | Error e) {
            release(descriptors, marked);
            throw e;
        }
    }

    /** Marks the run starting at {@code from} (a descriptor alone, or consecutive slices of one original); its length. */
    private static int acquireRun(List<Descriptor> descriptors, int from) {
        Descriptor original = descriptors.get(from).parent();
        if (original == null) {
            descriptors.get(from).acquireUses(1);
            return 1;
        }
        int end = runEnd(descriptors, from, descriptors.size(), original);
        original.acquireUses(end - from);
        int slice = from;
        try {
            for (; slice < end; slice++) {
                descriptors.get(slice).acquireSliceUse();
            }
        } catch (RuntimeException | Error e) {
            for (int i = from; i < slice; i++) {
                descriptors.get(i).releaseSliceUse();
            }
            original.releaseUses(end - from);
            throw e;
        }
        return end - from;
    }

    /** Unmarks the first {@code count} descriptors, marked by {@link #acquire}. */
    static void release(List<Descriptor> descriptors, int count) {
        int from = 0;
        while (from < count) {
            Descriptor original = descriptors.get(from).parent();
            if (original == null) {
                descriptors.get(from).releaseUses(1);
                from++;
                continue;
            }
            int end = runEnd(descriptors, from, count, original);
            for (int i = from; i < end; i++) {
                descriptors.get(i).releaseSliceUse();
            }
            original.releaseUses(end - from);
            from = end;
        }
    }

    /** One past the last of the slices of {@code original} from {@code from} on, before {@code limit}. */
    private static int runEnd(List<Descriptor> descriptors, int from, int limit, Descriptor original) {
        int end = from + 1;
        while (end < limit && descriptors.get(end).parent() == original) {
            end++;
        }
        return end;
    }
}
