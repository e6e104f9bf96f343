package io.nixlconnect;

/**
 * The peers' windows this connection has completed transfers with, so that spent metadata (a retry, a duplicate
 * message) is refused before a byte moves. A readable or writable serves one transfer per reader and releases its
 * memory after the last notification; a transfer with its metadata after that reaches freed memory: over UCX's TCP
 * the owner's worker serves any address a peer names, and a stale read killed the owner (SIGSEGV, 3 of 3 runs in
 * {@code NixlStaleReadTest}). A Java fan-out readable says in its key how many readers it serves
 * ({@link NotificationKeys#readersOf}); every other key serves one.
 *
 * <p>Remembers the last {@link #GENERATION} to {@code 2 * GENERATION} windows, as fingerprints (64 bits of the peer's
 * name and the key) in two open-addressing tables of longs: nothing is allocated per operation, and the older table
 * is dropped whole when the newer one is full. Thread-safe.
 */
final class SpentWindows {

    static final int GENERATION = 2048;
    private static final int SLOT_BITS = 12;
    private static final int SLOTS = 1 << SLOT_BITS; // twice GENERATION: at most half full
    private long[] current; // made at the first record: a connector that never reads pays nothing
    private int[] currentCounts;
    private int currentSize;
    private long[] previous;
    private int[] previousCounts;

    /** A transfer to {@code peer}'s window {@code key} completed. */
    synchronized void record(String peer, String key) {
        long fingerprint = fingerprint(peer, key);
        if (current == null) {
            current = new long[SLOTS];
            currentCounts = new int[SLOTS];
        }
        int slot = find(current, fingerprint);
        if (current[slot] == fingerprint) {
            currentCounts[slot]++;
            return;
        }
        int before = previous == null ? 0 : countIn(previous, previousCounts, fingerprint);
        if (currentSize == GENERATION) {
            long[] recycled = previous;
            int[] recycledCounts = previousCounts;
            previous = current;
            previousCounts = currentCounts;
            if (recycled == null) {
                recycled = new long[SLOTS];
                recycledCounts = new int[SLOTS];
            } else {
                java.util.Arrays.fill(recycled, 0);
                java.util.Arrays.fill(recycledCounts, 0);
            }
            current = recycled;
            currentCounts = recycledCounts;
            currentSize = 0;
            slot = find(current, fingerprint);
        }
        current[slot] = fingerprint;
        currentCounts[slot] = before + 1;
        currentSize++;
    }

    /** How many transfers to {@code peer}'s window {@code key} this connection has completed (as far as it remembers). */
    synchronized int completed(String peer, String key) {
        if (current == null) {
            return 0;
        }
        long fingerprint = fingerprint(peer, key);
        int count = countIn(current, currentCounts, fingerprint);
        return count > 0 || previous == null ? count : countIn(previous, previousCounts, fingerprint);
    }

    private static int countIn(long[] table, int[] counts, long fingerprint) {
        int slot = find(table, fingerprint);
        return table[slot] == fingerprint ? counts[slot] : 0;
    }

    /** The slot holding {@code fingerprint}, else the empty one where it would go (linear probing). */
    private static int find(long[] table, long fingerprint) {
        int slot = (int) ((fingerprint * 0x9E3779B97F4A7C15L) >>> (64 - SLOT_BITS));
        while (table[slot] != 0 && table[slot] != fingerprint) {
            slot = (slot + 1) & (SLOTS - 1);
        }
        return slot;
    }

    /** FNV-1a over the peer's name, a separator and the key; never 0 (the empty slot). */
    static long fingerprint(String peer, String key) {
        long hash = 0xcbf29ce484222325L;
        for (int i = 0; i < peer.length(); i++) {
            hash = (hash ^ peer.charAt(i)) * 0x100000001b3L;
        }
        hash = (hash ^ 0xffff) * 0x100000001b3L;
        for (int i = 0; i < key.length(); i++) {
            hash = (hash ^ key.charAt(i)) * 0x100000001b3L;
        }
        return hash == 0 ? 1 : hash;
    }
}
