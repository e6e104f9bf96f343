package io.nixlconnect;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;
import org.jspecify.annotations.Nullable;

/**
 * The {@code nixl_metadata} envelope: {@code "b64:"} + base64(zlib level 6) as Python Dynamo writes,
 * and the legacy form, plain hex of the zlib bytes. Decompression is bounded.
 *
 * <p>Every operation's metadata goes through here, so the zlib state and its work buffer are pooled, not made per
 * call. Nothing decoded is remembered here: a connection keeps its peers' ({@link PeerMetadataCache}).
 */
final class NixlMetadataCodec {

    private static final String PREFIX = "b64:";
    private static final String FIELD = "nixl_metadata";
    /** Work buffer per pooled codec; longer outputs grow a copy of it for that call only. */
    private static final int BUFFER_BYTES = 16 * 1024;
    /** Codecs kept for reuse; beyond that many at once, extra ones are created and ended per call. */
    private static final int POOL_SIZE = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());
    private static final ArrayBlockingQueue<Zlib> POOL = new ArrayBlockingQueue<>(POOL_SIZE);

    private NixlMetadataCodec() {
    }

    /** One Deflater (level 6, as zlib's default and Python's) and Inflater with a work buffer; one user at a time. */
    private static final class Zlib {
        final Deflater deflater = new Deflater(6);
        final Inflater inflater = new Inflater();
        byte[] buffer = new byte[BUFFER_BYTES];

        void end() {
            deflater.end();
            inflater.end();
        }
    }

    private static Zlib take() {
        Zlib zlib = POOL.poll();
        return zlib != null ? zlib : new Zlib();
    }

    /**
     * Back to the pool with the half that was used reset (the other is still fresh): resetting an unused Deflater
     * clears its whole window and hash table, a fifth of a parse's time when every parse did it.
     */
    private static void give(Zlib zlib, boolean deflated) {
        if (deflated) {
            zlib.deflater.reset();
        } else {
            zlib.inflater.reset();
        }
        if (zlib.buffer.length != BUFFER_BYTES) {
            zlib.buffer = new byte[BUFFER_BYTES]; // do not keep a grown buffer around
        }
        if (!POOL.offer(zlib)) {
            zlib.end();
        }
    }

    /** {@code "b64:"} + base64(zlib level 6). */
    static String encode(byte[] agentMetadata) {
        return encode(agentMetadata, false);
    }

    /** The legacy form: lowercase hex of the zlib bytes. */
    static String encodeHex(byte[] agentMetadata) {
        return encode(agentMetadata, true);
    }

    private static String encode(byte[] agentMetadata, boolean hex) {
        if (agentMetadata == null || agentMetadata.length == 0) {
            throw new IllegalArgumentException("agent metadata must not be empty");
        }
        Zlib zlib = take();
        try {
            Deflater deflater = zlib.deflater;
            deflater.setInput(agentMetadata);
            deflater.finish();
            int length = 0;
            while (!deflater.finished()) {
                if (length == zlib.buffer.length) {
                    zlib.buffer = Arrays.copyOf(zlib.buffer, zlib.buffer.length * 2);
                }
                length += deflater.deflate(zlib.buffer, length, zlib.buffer.length - length);
            }
            if (hex) {
                return HexFormat.of().formatHex(zlib.buffer, 0, length);
            }
            byte[] encoded = Base64.getEncoder().encode(ByteBuffer.wrap(zlib.buffer, 0, length)).array();
            byte[] text = new byte[PREFIX.length() + encoded.length];
            PREFIX.getBytes(0, PREFIX.length(), text, 0); // ASCII
            System.arraycopy(encoded, 0, text, PREFIX.length(), encoded.length);
            return new String(text, StandardCharsets.ISO_8859_1);
        } finally {
            give(zlib, true);
        }
    }

    /** Decodes and inflates, refusing anything that would inflate beyond {@code maxBytes}; the result is the caller's. */
    static byte[] decode(String encoded, int maxBytes) {
        return inflate(compressed(encoded), maxBytes, true);
    }

    /**
     * Checks that {@code encoded} decodes and inflates to 1..{@code maxBytes} bytes, keeping none of them (the work
     * buffer is overwritten round after round).
     */
    static void validate(String encoded, int maxBytes) {
        inflate(compressed(encoded), maxBytes, false);
    }

    private static byte[] compressed(String encoded) {
        if (encoded.isEmpty()) {
            throw new InvalidMetadataException(FIELD, "must not be empty");
        }
        byte[] compressed;
        if (encoded.startsWith(PREFIX)) {
            try {
                compressed = Base64.getDecoder().decode(encoded.substring(PREFIX.length()));
            } catch (IllegalArgumentException e) {
                throw new InvalidMetadataException(FIELD, "is not valid base64 after the 'b64:' prefix: " + e.getMessage(), e);
            }
        } else {
            compressed = hexDecode(encoded);
        }
        if (compressed.length == 0) {
            throw new InvalidMetadataException(FIELD, "holds no data");
        }
        return compressed;
    }

    private static byte[] hexDecode(String hex) {
        if (hex.length() % 2 != 0) {
            throw new InvalidMetadataException(FIELD,
                    "is neither 'b64:'-prefixed base64 nor hex (odd number of hex digits)");
        }
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            int high = hexDigit(hex.charAt(2 * i));
            int low = hexDigit(hex.charAt(2 * i + 1));
            if (high < 0 || low < 0) {
                throw new InvalidMetadataException(FIELD,
                        "is neither 'b64:'-prefixed base64 nor hex (bad character at offset " + (2 * i) + ")");
            }
            bytes[i] = (byte) (high << 4 | low);
        }
        return bytes;
    }

    /** ASCII hex digits only, as Python's {@code bytes.fromhex}: {@link Character#digit} also takes non-ASCII digits. */
    private static int hexDigit(char c) {
        return c < 0x80 ? Character.digit(c, 16) : -1;
    }

    /**
     * Inflates, refusing more than {@code maxBytes}: into the result when {@code keep}, else only counting (the
     * work buffer is overwritten round after round, so a large valid document costs no more than its buffer) and
     * returning null.
     */
    private static byte @Nullable [] inflate(byte[] compressed, int maxBytes, boolean keep) {
        Zlib zlib = take();
        try {
            Inflater inflater = zlib.inflater;
            inflater.setInput(compressed);
            long total = 0;
            int length = 0;
            while (!inflater.finished()) {
                if (length == zlib.buffer.length) {
                    if (!keep) {
                        length = 0;
                    } else {
                        if (length >= maxBytes) {
                            throw tooLarge(maxBytes);
                        }
                        zlib.buffer = Arrays.copyOf(zlib.buffer, (int) Math.min((long) maxBytes + 1, 2L * length));
                    }
                }
                int n = inflater.inflate(zlib.buffer, length, zlib.buffer.length - length);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new InvalidMetadataException(FIELD, "is not a complete zlib stream (truncated)");
                }
                length += n;
                total += n;
                if (total > maxBytes) {
                    throw tooLarge(maxBytes);
                }
            }
            if (total == 0) {
                throw new InvalidMetadataException(FIELD, "inflates to no bytes");
            }
            return keep ? Arrays.copyOf(zlib.buffer, length) : null;
        } catch (DataFormatException e) {
            throw new InvalidMetadataException(FIELD, "is not zlib-compressed data: " + e.getMessage(), e);
        } finally {
            give(zlib, false);
        }
    }

    private static InvalidMetadataException tooLarge(int maxBytes) {
        return new InvalidMetadataException(FIELD, "inflates to more than " + maxBytes + " bytes; refused (zlib bomb?)");
    }
}
