package io.nixlconnect;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What may be written down about a notification key instead of the key. On the embedded transport the key is the
 * window's credential (a bearer token for its memory until the operation ends), so it never goes into a
 * {@code toString()}, an exception message, a log line or an observation: those carry its fingerprint, the first
 * 48 bits of its SHA-256 in hex. Both sides of a transfer compute the same fingerprint, so it still ties their
 * logs and spans together; it cannot be turned back into a 128-bit random key, nor presented in its place.
 */
final class NotificationKeys {

    /** Hex digits of a fingerprint. */
    static final int FINGERPRINT_LENGTH = 12;

    private NotificationKeys() {
    }

    static String fingerprint(String notificationKey) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(notificationKey.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, FINGERPRINT_LENGTH / 2);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform provides SHA-256", e);
        }
    }
}
