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

    /**
     * One Deflater (level 6, as zlib's default and Python's) and Inflater with a work buffer, and a buffer for the
     * compressed bytes an envelope decodes to; one user at a time.
     */
    private static final class Zlib {
        final Deflater deflater = new Deflater(6);
        final Inflater inflater = new Inflater();
        byte[] buffer = new byte[BUFFER_BYTES];
        byte[] compressed = new byte[BUFFER_BYTES];

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
        if (zlib.compressed.length != BUFFER_BYTES) {
            zlib.compressed = new byte[BUFFER_BYTES];
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
        return inflate(encoded, maxBytes, true);
    }

    /**
     * Checks that {@code encoded} decodes and inflates to 1..{@code maxBytes} bytes, keeping none of them (the work
     * buffer is overwritten round after round).
     */
    static void validate(String encoded, int maxBytes) {
        inflate(encoded, maxBytes, false);
    }

    /** Decodes the envelope's text into {@code zlib.compressed} (grown for this call if needed); its length. */
    private static int compressed(String encoded, Zlib zlib) {
        if (encoded.isEmpty()) {
            throw new InvalidMetadataException(FIELD, "must not be empty");
        }
        int length;
        if (encoded.startsWith(PREFIX)) {
            length = base64(encoded, zlib);
        } else {
            byte[] bytes = hexDecode(encoded);
            zlib.compressed = bytes;
            length = bytes.length;
        }
        if (length == 0) {
            throw new InvalidMetadataException(FIELD, "holds no data");
        }
        return length;
    }

    private static final byte[] BASE64_VALUES = new byte[128];

    static {
        Arrays.fill(BASE64_VALUES, (byte) -1);
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < alphabet.length(); i++) {
            BASE64_VALUES[alphabet.charAt(i)] = (byte) i;
        }
    }

    /**
     * The base64 after the prefix, decoded into {@code zlib.compressed} without a copy of the text or of the result.
     * Only the canonical padded form is read here (what Python and this codec write: whole groups of four, at most
     * two {@code '='} at the end); anything else goes to the JDK's decoder, which decides (it also takes unpadded
     * text) and words the refusal. So this accepts nothing the JDK refuses and decodes as it does.
     */
    private static int base64(String encoded, Zlib zlib) {
        int start = PREFIX.length();
        int chars = encoded.length() - start;
        int padding = chars == 0 ? 0 : encoded.charAt(encoded.length() - 1) != '=' ? 0
                : encoded.charAt(encoded.length() - 2) != '=' ? 1 : 2;
        if (chars == 0 || chars % 4 != 0) {
            return jdkBase64(encoded, zlib);
        }
        int length = chars / 4 * 3 - padding;
        if (zlib.compressed.length < length) {
            zlib.compressed = new byte[length];
        }
        byte[] out = zlib.compressed;
        int end = encoded.length() - padding;
        int o = 0;
        int bits = 0;
        int count = 0;
        for (int i = start; i < end; i++) {
            char c = encoded.charAt(i);
            int value = c < 128 ? BASE64_VALUES[c] : -1;
            if (value < 0) {
                return jdkBase64(encoded, zlib);
            }
            bits = bits << 6 | value;
            if (++count == 4) {
                out[o++] = (byte) (bits >> 16);
                out[o++] = (byte) (bits >> 8);
                out[o++] = (byte) bits;
                bits = 0;
                count = 0;
            }
        }
        if (count == 3) { // "xxx=": 18 bits, two bytes
            out[o++] = (byte) (bits >> 10);
            out[o++] = (byte) (bits >> 2);
        } else if (count == 2) { // "xx==": 12 bits, one byte
            out[o++] = (byte) (bits >> 4);
        }
        return o;
    }

    private static int jdkBase64(String encoded, Zlib zlib) {
        try {
            byte[] bytes = Base64.getDecoder().decode(encoded.substring(PREFIX.length()));
            zlib.compressed = bytes;
            return bytes.length;
        } catch (IllegalArgumentException e) {
            throw new InvalidMetadataException(FIELD, "is not valid base64 after the 'b64:' prefix: " + e.getMessage(), e);
        }
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
    private static byte @Nullable [] inflate(String encoded, int maxBytes, boolean keep) {
        Zlib zlib = take();
        try {
            int compressed = compressed(encoded, zlib);
            Inflater inflater = zlib.inflater;
            inflater.setInput(zlib.compressed, 0, compressed);
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
