package io.nixlconnect.transport.embedded;

import java.util.Arrays;

/** Notification bytes (a window's credential) as a map key. */
final class NotificationKey {

    private final byte[] bytes;

    private NotificationKey(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * A key that keeps {@code bytes}, handed over by the caller (who changes them no more): what a window is stored
     * under.
     */
    static NotificationKey of(byte[] bytes) {
        return new NotificationKey(bytes);
    }

    /**
     * A key over {@code bytes} without copying them, for one map lookup by the thread that owns the array (a
     * connection's credential buffer is refilled by its next request): never stored.
     */
    static NotificationKey lookup(byte[] bytes) {
        return new NotificationKey(bytes);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof NotificationKey that && Arrays.equals(bytes, that.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** Never the bytes: they are the window's credential. */
    @Override
    public String toString() {
        return "NotificationKey[" + bytes.length + " bytes]";
    }
}
