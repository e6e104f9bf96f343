package io.nixlconnect;

import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * Notification keys: 128 bits from {@link SecureRandom} each, as 32 lowercase hex digits. The bits are drawn for 64
 * keys at a time: each {@code nextBytes} call of the platform's generator costs the same buffers and digest whatever
 * its length, and every passive operation needs a key. Bytes are zeroed once handed out.
 */
final class NotificationKeys {

    static final int KEY_BYTES = 16;
    private static final int BLOCK_BYTES = 64 * KEY_BYTES;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte[] BLOCK = new byte[BLOCK_BYTES];
    private static int used = BLOCK_BYTES; // guarded by BLOCK

    private NotificationKeys() {
    }

    static String next() {
        synchronized (BLOCK) {
            if (used == BLOCK_BYTES) {
                RANDOM.nextBytes(BLOCK);
                used = 0;
            }
            String key = HexFormat.of().formatHex(BLOCK, used, used + KEY_BYTES);
            Arrays.fill(BLOCK, used, used + KEY_BYTES, (byte) 0);
            used += KEY_BYTES;
            return key;
        }
    }
}
