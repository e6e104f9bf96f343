package io.nixlconnect.dynamo.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.UUID;

/**
 * Random (version 4) UUIDs for request ids and call-home subjects, from the kernel's random source as Dynamo's (and
 * Python's {@code uuid4}) are. {@link UUID#randomUUID()} mixes every 16 bytes through SHA-1 in Java code: two per call
 * cost ~50 µs per call while the JIT has not compiled it yet (a JVM's first thousand calls), more than a quarter of a
 * loopback round trip. Here 4 KiB of {@code /dev/urandom} are read at a time (one read per 256 ids); where it cannot be
 * read, {@link SecureRandom} fills the buffer instead.
 */
public final class RandomIds {

    private static final int BUFFER = 4096;
    private static final byte[] bytes = new byte[BUFFER];
    private static int at = BUFFER;
    private static InputStream urandom = open();
    private static SecureRandom fallback;

    private RandomIds() {
    }

    private static InputStream open() {
        try {
            return Files.newInputStream(Path.of("/dev/urandom"));
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return null;
        }
    }

    /** A random version 4 UUID, as text. */
    public static String uuid() {
        long most;
        long least;
        synchronized (RandomIds.class) {
            if (at + 16 > BUFFER) {
                refill();
            }
            most = read64(at);
            least = read64(at + 8);
            at += 16;
        }
        most = (most & ~0xF000L) | 0x4000L; // version 4
        least = (least & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L; // IETF variant
        return new UUID(most, least).toString();
    }

    private static long read64(int offset) {
        long value = 0;
        for (int i = 0; i < 8; i++) {
            value = (value << 8) | (bytes[offset + i] & 0xff);
        }
        return value;
    }

    private static void refill() {
        InputStream in = urandom;
        if (in != null) {
            try {
                int done = 0;
                while (done < BUFFER) {
                    int n = in.read(bytes, done, BUFFER - done);
                    if (n < 0) {
                        throw new IOException("end of /dev/urandom");
                    }
                    done += n;
                }
                at = 0;
                return;
            } catch (IOException e) {
                urandom = null;
            }
        }
        if (fallback == null) {
            fallback = new SecureRandom();
        }
        fallback.nextBytes(bytes);
        at = 0;
    }
}
