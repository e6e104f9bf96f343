package io.nixlconnect;

import java.io.ByteArrayOutputStream;
import java.util.Base64;
import java.util.HexFormat;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * The {@code nixl_metadata} envelope: {@code "b64:"} + base64(zlib level 6) as Python Dynamo writes,
 * and the legacy form, plain hex of the zlib bytes. Decompression is bounded.
 */
final class NixlMetadataCodec {

    private static final String PREFIX = "b64:";
    private static final String FIELD = "nixl_metadata";

    private NixlMetadataCodec() {
    }

    static String encode(byte[] agentMetadata) {
        return encode(agentMetadata, false);
    }

    /** {@code "b64:"} + base64(zlib level 6), or with {@code hex} the legacy lowercase hex of the zlib bytes. */
    static String encode(byte[] agentMetadata, boolean hex) {
        if (agentMetadata == null || agentMetadata.length == 0) {
            throw new IllegalArgumentException("agent metadata must not be empty");
        }
        Deflater deflater = new Deflater(6);
        try {
            deflater.setInput(agentMetadata);
            deflater.finish();
            ByteArrayOutputStream out = new ByteArrayOutputStream(agentMetadata.length / 2 + 64);
            byte[] chunk = new byte[8192];
            while (!deflater.finished()) {
                int n = deflater.deflate(chunk);
                out.write(chunk, 0, n);
            }
            return hex ? HexFormat.of().formatHex(out.toByteArray())
                    : PREFIX + Base64.getEncoder().encodeToString(out.toByteArray());
        } finally {
            deflater.end();
        }
    }

    /** Decodes and inflates, refusing anything that would inflate beyond {@code maxBytes}. */
    static byte[] decode(String encoded, int maxBytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(Math.min(maxBytes, encoded.length() * 3 + 64));
        inflate(compressed(encoded), maxBytes, out);
        return out.toByteArray();
    }

    /**
     * Checks that {@code encoded} decodes and inflates to 1..{@code maxBytes} bytes, keeping none of them (the
     * inflated bytes pass through one small buffer).
     */
    static void validate(String encoded, int maxBytes) {
        inflate(compressed(encoded), maxBytes, null);
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

    /** Inflates into {@code out} (null: count only), refusing more than {@code maxBytes}. */
    private static void inflate(byte[] compressed, int maxBytes, ByteArrayOutputStream out) {
        Inflater inflater = new Inflater();
        try {
            inflater.setInput(compressed);
            long total = 0;
            byte[] chunk = new byte[16384];
            while (!inflater.finished()) {
                int n = inflater.inflate(chunk);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new InvalidMetadataException(FIELD, "is not a complete zlib stream (truncated)");
                }
                total += n;
                if (total > maxBytes) {
                    throw new InvalidMetadataException(FIELD,
                            "inflates to more than " + maxBytes + " bytes; refused (zlib bomb?)");
                }
                if (out != null) {
                    out.write(chunk, 0, n);
                }
            }
            if (total == 0) {
                throw new InvalidMetadataException(FIELD, "inflates to no bytes");
            }
        } catch (DataFormatException e) {
            throw new InvalidMetadataException(FIELD, "is not zlib-compressed data: " + e.getMessage(), e);
        } finally {
            inflater.end();
        }
    }
}
