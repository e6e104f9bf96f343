package io.nixlconnect;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * Notification keys, and what may be written down about one instead of the key.
 *
 * <p>A key is 128 bits from {@link SecureRandom}, as 32 lowercase hex digits. The bits are drawn for 64 keys at a
 * time: each {@code nextBytes} call of the platform's generator costs the same buffers and digest whatever its
 * length, and every passive operation needs a key. Bytes are zeroed once handed out.
 *
 * <p>On the embedded transport the key is the window's credential (a bearer token for its memory until the
 * operation ends), so it never goes into a {@code toString()}, an exception message, a log line or an observation:
 * those carry its fingerprint, the first 48 bits of its SHA-256 in hex. Both sides of a transfer compute the same
 * fingerprint, so it still ties their logs and spans together; it cannot be turned back into a 128-bit random key,
 * nor presented in its place.
 */
final class NotificationKeys {

    static final int KEY_BYTES = 16;
    /** Hex digits of a fingerprint. */
    static final int FINGERPRINT_LENGTH = 12;
    private static final int BLOCK_BYTES = 64 * KEY_BYTES;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte[] BLOCK = new byte[BLOCK_BYTES];
    private static int used = BLOCK_BYTES; // guarded by BLOCK
    private static final byte[] HEX_DIGITS = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private NotificationKeys() {
    }

    /**
     * A new key as its 32 ASCII bytes (a passive operation hands them to the transport and makes its string from
     * them: no hex formatter's builder, no encoding back to bytes).
     */
    static byte[] next() {
        byte[] key = new byte[2 * KEY_BYTES];
        synchronized (BLOCK) {
            if (used == BLOCK_BYTES) {
                RANDOM.nextBytes(BLOCK);
                used = 0;
            }
            for (int i = 0; i < KEY_BYTES; i++) {
                int b = BLOCK[used + i];
                key[2 * i] = HEX_DIGITS[(b >> 4) & 0xF];
                key[2 * i + 1] = HEX_DIGITS[b & 0xF];
            }
            Arrays.fill(BLOCK, used, used + KEY_BYTES, (byte) 0);
            used += KEY_BYTES;
        }
        return key;
    }

    /** What ends the key of a fan-out readable, before its reader count ({@link #next(int)}). */
    static final String READERS_MARK = ".r";

    /**
     * A new key for a window that {@code readers} peers transfer with: for more than one, {@link #next()} followed by
     * {@code .r<readers>}, so that a reader can tell a fan-out readable's metadata, which it may read again, from spent
     * metadata ({@link SpentWindows}). Peers treat the key as opaque bytes.
     */
    static byte[] next(int readers) {
        byte[] key = next();
        if (readers <= 1) {
            return key;
        }
        byte[] suffix = (READERS_MARK + readers).getBytes(StandardCharsets.US_ASCII);
        byte[] marked = Arrays.copyOf(key, key.length + suffix.length);
        System.arraycopy(suffix, 0, marked, key.length, suffix.length);
        Arrays.fill(key, (byte) 0);
        return marked;
    }

    /** How many transfers the window of {@code key} serves: the count a fan-out key ends with, else 1. */
    static int readersOf(String key) {
        int mark = key.lastIndexOf(READERS_MARK);
        if (mark < 0 || mark + READERS_MARK.length() == key.length()
                || key.length() - mark - READERS_MARK.length() > 9) {
            return 1;
        }
        int readers = 0;
        for (int i = mark + READERS_MARK.length(); i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < '0' || c > '9') {
                return 1;
            }
            readers = readers * 10 + (c - '0');
        }
        return Math.max(readers, 1);
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
