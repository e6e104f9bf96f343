package io.nixlconnect.transport.nixl;

import io.nixlconnect.internal.FailureReports;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The NIXL notification by which an active side tells the passive side that its transfer ended without the
 * passive operation's notification (failed, timed out, cancelled): UTF-8 text,
 *
 * <pre>nixl-connect:failed:v1:KEY\nCAUSE</pre>
 *
 * where KEY is the passive operation's notification key (no line break in it) and CAUSE at most
 * {@link FailureReports#MAX_CAUSE_BYTES} bytes. It is sent with {@code genNotif}, on its own, to the agent that
 * published the metadata. A Java passive operation waiting for KEY ends ERRORED at once, naming the sending agent
 * (NIXL says which one it came from) and CAUSE. Python Dynamo's passive operation decodes every notification as
 * UTF-8 and compares it with its own key, which this never equals: it ignores it (docs/interop.md).
 */
final class FailureNotification {

    static final byte[] PREFIX = "nixl-connect:failed:v1:".getBytes(StandardCharsets.US_ASCII);
    /** Reports longer than this are not ours (or not honest): dropped unread. */
    static final int MAX_BYTES = 4096;

    /** A report received: the agent it came from and its cause, made printable, and the key it names. */
    record Received(String peer, byte[] key, String cause) {
    }

    private FailureNotification() {
    }

    /** The report for {@code key}; null where the format cannot carry the key (empty, a line break, too long). */
    static byte[] encode(byte[] key, String cause) {
        if (key.length == 0 || indexOf(key, 0, (byte) '\n') >= 0
                || PREFIX.length + key.length + 1 + FailureReports.MAX_CAUSE_BYTES > MAX_BYTES) {
            return null;
        }
        byte[] text = FailureReports.utf8Bounded(cause, FailureReports.MAX_CAUSE_BYTES);
        byte[] report = Arrays.copyOf(PREFIX, PREFIX.length + key.length + 1 + text.length);
        System.arraycopy(key, 0, report, PREFIX.length, key.length);
        report[PREFIX.length + key.length] = '\n';
        System.arraycopy(text, 0, report, PREFIX.length + key.length + 1, text.length);
        return report;
    }

    /** Whether a received notification is a failure report (its bytes start with the prefix). */
    static boolean isReport(byte[] notification) {
        return notification.length >= PREFIX.length
                && Arrays.equals(notification, 0, PREFIX.length, PREFIX, 0, PREFIX.length);
    }

    /** The report from agent {@code from}; null when it is malformed or too long (the caller drops it). */
    static Received parse(byte[] notification, String from) {
        if (!isReport(notification) || notification.length > MAX_BYTES) {
            return null;
        }
        int newline = indexOf(notification, PREFIX.length, (byte) '\n');
        if (newline <= PREFIX.length) {
            return null; // no key, or no line ending it
        }
        byte[] key = Arrays.copyOfRange(notification, PREFIX.length, newline);
        String cause = FailureReports.printable(notification, newline + 1, notification.length - newline - 1,
                FailureReports.MAX_CAUSE_BYTES);
        byte[] sender = from.getBytes(StandardCharsets.UTF_8);
        return new Received(FailureReports.printable(sender, 0, sender.length, FailureReports.MAX_NAME_BYTES), key, cause);
    }

    private static int indexOf(byte[] bytes, int from, byte wanted) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == wanted) {
                return i;
            }
        }
        return -1;
    }
}
