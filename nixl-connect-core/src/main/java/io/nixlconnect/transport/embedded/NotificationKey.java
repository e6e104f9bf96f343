package io.nixlconnect.transport.embedded;

import java.util.Arrays;

/** Notification bytes (a window's credential) as a map key. */
record NotificationKey(byte[] bytes) {

    NotificationKey {
        bytes = bytes.clone();
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
