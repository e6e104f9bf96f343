package io.nixlconnect.internal;

import java.nio.charset.StandardCharsets;

/**
 * Text of a failure report, the message an active side sends its peer when its transfer ended without the peer's
 * notification (see {@code TransportAgent#reportFailure}): bounded when sent, and checked again when received, as it
 * comes from a peer and ends up in exceptions and logs.
 */
public final class FailureReports {

    /** The most UTF-8 bytes of cause a report carries; a longer cause is cut (at a character boundary). */
    public static final int MAX_CAUSE_BYTES = 512;
    /** The most UTF-8 bytes of a peer's name a report carries. */
    public static final int MAX_NAME_BYTES = 256;

    private FailureReports() {
    }

    /**
     * {@code text} in UTF-8, cut to at most {@code maxBytes} at a character boundary (never half a character, so the
     * bytes stay valid UTF-8: Python decodes every notification it receives as UTF-8).
     */
    public static byte[] utf8Bounded(String text, int maxBytes) {
        byte[] all = text.getBytes(StandardCharsets.UTF_8); // unpaired surrogates become '?': always valid UTF-8
        if (all.length <= maxBytes) {
            return all;
        }
        int end = maxBytes;
        while (end > 0 && (all[end] & 0xC0) == 0x80) {
            end--; // all[end] continues a character: cut before that character starts
        }
        return java.util.Arrays.copyOf(all, end);
    }

    /**
     * A peer's text as it may appear in an exception or a log line: decoded as UTF-8 (malformed bytes replaced),
     * control characters (line breaks included, so no forged log lines) replaced by {@code '?'}, at most
     * {@code maxChars} characters.
     */
    public static String printable(byte[] bytes, int offset, int length, int maxChars) {
        String decoded = new String(bytes, offset, length, StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder(Math.min(decoded.length(), maxChars));
        for (int i = 0; i < decoded.length() && out.length() < maxChars; i++) {
            char c = decoded.charAt(i);
            out.append(Character.isISOControl(c) ? '?' : c);
        }
        return out.toString();
    }
}
