package io.nixlconnect;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * The {@code nixl_metadata} envelope: {@code "b64:"} + base64(zlib level 6) as Python Dynamo writes,
 * and the legacy form, plain hex of the zlib bytes. Decompression is bounded.
 *
 * <p>Every small operation's metadata goes through here (once or twice), so the zlib state and the work
 * buffers are pooled: a fresh {@link Inflater} and its 16 KiB output chunk were most of the ~50 KB of heap a
 * complete 4 KiB operation allocated. What remains per call is the result (and the base64 text or bytes).
 */
final class NixlMetadataCodec {

    private static final String PREFIX = "b64:";
    private static final String FIELD = "nixl_metadata";
    /** Work buffer per pooled codec; longer outputs grow a copy of it for that call only. */
    private static final int BUFFER_BYTES = 16 * 1024;
    /** Codecs kept for reuse; beyond that many at once, extra ones are created and ended per call. */
    private static final int POOL_SIZE = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());
    private static final ArrayBlockingQueue<Zlib> POOL = new ArrayBlockingQueue<>(POOL_SIZE);
    /**
     * Envelopes decoded lately, one per slot by hash. A peer's metadata repeats in every operation it publishes, and
     * each one's envelope was decoded twice (checked when parsed, decoded when the read starts): an exact match of the
     * text is answered from here. Only envelopes that inflate within one work buffer are remembered.
     */
    private static final int RECENT_SLOTS = 16;
    private static final AtomicReferenceArray<Decoded> RECENT = new AtomicReferenceArray<>(RECENT_SLOTS);

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

    /** An envelope and what it decodes to (handed out only read-only, by {@link #decodeShared}). */
    private record Decoded(String encoded, byte[] bytes) {
    }

    private static Decoded recent(String encoded) {
        Decoded known = RECENT.get(encoded.hashCode() & (RECENT_SLOTS - 1));
        return known != null && known.encoded().equals(encoded) ? known : null;
    }

    /**
     * The remembered envelope whose text is {@code text[start, end)}, or null: lets a parser reuse that string instead
     * of copying the text out again (the slot is found by the same hash {@link String#hashCode()} gives).
     */
    static String recentEnvelope(String text, int start, int end) {
        int hash = 0;
        for (int i = start; i < end; i++) {
            hash = 31 * hash + text.charAt(i);
        }
        Decoded known = RECENT.get(hash & (RECENT_SLOTS - 1));
        if (known == null) {
            return null;
        }
        String encoded = known.encoded();
        return encoded.length() == end - start && text.regionMatches(start, encoded, 0, end - start) ? encoded : null;
    }

    private static void remember(String encoded, byte[] bytes) {
        RECENT.set(encoded.hashCode() & (RECENT_SLOTS - 1), new Decoded(encoded, bytes));
    }

    private static Zlib take() {
        Zlib zlib = POOL.poll();
        return zlib != null ? zlib : new Zlib();
    }

    private static void give(Zlib zlib) {
        zlib.deflater.reset();
        zlib.inflater.reset();
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
            give(zlib);
        }
    }

    /**
     * As {@link #decode}, but the result may be shared with the envelopes remembered here and with other callers:
     * read-only. For a connector loading its peer (every active operation), which only reads it.
     */
    static byte[] decodeShared(String encoded, int maxBytes) {
        Decoded known = recent(encoded);
        if (known != null) {
            if (known.bytes().length > maxBytes) {
                throw tooLarge(maxBytes);
            }
            return known.bytes();
        }
        byte[] bytes = inflate(compressed(encoded), maxBytes, true);
        if (bytes.length <= BUFFER_BYTES) {
            remember(encoded, bytes);
        }
        return bytes;
    }

    /** Decodes and inflates, refusing anything that would inflate beyond {@code maxBytes}; the result is the caller's. */
    static byte[] decode(String encoded, int maxBytes) {
        Decoded known = recent(encoded);
        if (known != null) {
            if (known.bytes().length > maxBytes) {
                throw tooLarge(maxBytes);
            }
            return known.bytes().clone();
        }
        byte[] bytes = inflate(compressed(encoded), maxBytes, true);
        if (bytes.length <= BUFFER_BYTES) {
            remember(encoded, bytes.clone());
        }
        return bytes;
    }

    /**
     * Checks that {@code encoded} decodes and inflates to 1..{@code maxBytes} bytes, keeping none of them beyond one
     * work buffer (larger outputs pass through the pooled buffer, overwriting it).
     */
    static void validate(String encoded, int maxBytes) {
        Decoded known = recent(encoded);
        if (known != null) {
            if (known.bytes().length > maxBytes) {
                throw tooLarge(maxBytes);
            }
            return;
        }
        byte[] bytes = inflate(compressed(encoded), maxBytes, false);
        if (bytes != null) {
            remember(encoded, bytes);
        }
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
     * returning the bytes only when they fit in the work buffer (null otherwise).
     */
    private static byte[] inflate(byte[] compressed, int maxBytes, boolean keep) {
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
            return keep || total == length ? Arrays.copyOf(zlib.buffer, length) : null;
        } catch (DataFormatException e) {
            throw new InvalidMetadataException(FIELD, "is not zlib-compressed data: " + e.getMessage(), e);
        } finally {
            give(zlib);
        }
    }

    private static InvalidMetadataException tooLarge(int maxBytes) {
        return new InvalidMetadataException(FIELD, "inflates to more than " + maxBytes + " bytes; refused (zlib bomb?)");
    }
}
