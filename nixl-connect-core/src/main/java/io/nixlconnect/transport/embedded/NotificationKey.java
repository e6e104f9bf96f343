package io.nixlconnect.transport.embedded;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** Notification bytes as a map key. */
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

    @Override
    public String toString() {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
